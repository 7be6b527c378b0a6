"""``worldforge runs``: list, show, diff, verify, resume, prune and bundle run workspaces.

Exit codes follow the project contract: 0 ok; 1 when the answer is "no" (``diff``: results differ,
``verify``: a mismatch, ``resume``: the resumed command failed); 2 for bad input.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from worldforge.cli._common import check_format, cli_errors, format_option
from worldforge.core.canonical import pretty_json
from worldforge.core.errors import GateFailure, WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.workspace import apply_prune, diff_runs, list_runs, load_manifest, plan_prune, resolve_run_dir
from worldforge.workspace.resume import plan_resume
from worldforge.workspace.store import run_summary

runs_app = typer.Typer(
    name="runs",
    help="Inspect, compare, verify, resume, prune and bundle run workspaces (DIR/runs/<run-id>/).",
    no_args_is_help=True,
    add_completion=False,
)

_WS_OPT = typer.Option(
    None,
    "--workspace-dir",
    "-w",
    help="Run workspace (default: .worldforge/config.yaml workspace_dir or .worldforge).",
)


def _workspace(value: Path | None) -> Path:
    if value is not None:
        return value
    from worldforge.config import default_workspace_dir

    return default_workspace_dir()


def _print_json(value: Any) -> None:

    sys.stdout.write(pretty_json(value))


@runs_app.command("list")
def list_cmd(
    workspace_dir: Path | None = _WS_OPT,
    fmt: str = format_option("table", ("table", "json")),
    kind: str | None = typer.Option(None, "--kind", help="Only runs of this kind."),
) -> None:
    """List runs, newest first, with status and digests."""
    with cli_errors():
        check_format(fmt, ("table", "json"))

        rows = list_runs(_workspace(workspace_dir), kind=kind)
        if fmt == "json":
            _print_json({"runs": rows, "run_count": len(rows)})
            return
        from rich.console import Console
        from rich.table import Table

        table = Table(title=f"WorldForge runs ({len(rows)})")
        for column in ("run id", "kind", "status", "items", "result digest", "command"):
            table.add_column(column)
        for row in rows:
            digest = row["result_digest"] or "-"
            table.add_row(
                row["run_id"],
                str(row["kind"]),
                row["status"],
                str(row["item_count"]),
                digest[:19] + "…" if len(digest) > 20 else digest,
                str(row["command"] or ""),
            )
        Console(width=200).print(table)


@runs_app.command("show")
def show_cmd(
    run_id: str = typer.Argument(..., help="Run id, unique prefix, or run directory."),
    workspace_dir: Path | None = _WS_OPT,
    fmt: str = format_option("text", ("text", "json")),
) -> None:
    """Show a run's manifest: status, digests, inputs, datasets and artifacts."""
    with cli_errors():
        check_format(fmt, ("text", "json"))

        run_dir = resolve_run_dir(_workspace(workspace_dir), run_id)
        manifest = load_manifest(run_dir)
        summary = run_summary(run_dir, manifest)  # counts files on disk for unfinished runs
        manifest["effective_status"] = summary["status"]
        items_line, events_line = f"{summary['item_count']}", f"{summary['event_count']}"
        if summary["status"] in ("running", "interrupted"):
            manifest["progress"] = {
                "items_on_disk": summary["item_count"],
                "events_on_disk": summary["event_count"],
            }
            items_line += " on disk (the manifest is updated when the run ends)"
            events_line += " on disk"
        if fmt == "json":
            _print_json(manifest)
            return
        commit = ((manifest.get("environment") or {}).get("git") or {}).get("commit")
        out = [
            f"run {manifest['run_id']}",
            f"  kind:          {manifest.get('kind')}",
            f"  status:        {manifest['effective_status']}",
            f"  command:       {manifest.get('command')}",
            f"  created:       {manifest.get('created_at')}",
            f"  version:       {manifest.get('worldforge_version')}  git {commit}",
            f"  input_digest:  {manifest.get('input_digest')}",
            f"  result_digest: {manifest.get('result_digest')}",
            f"  items:         {items_line}",
            f"  events:        {events_line}",
            f"  claim:         {manifest.get('claim_boundary')}",
        ]
        if manifest.get("error"):
            out.append(
                f"  error:         {manifest['error'].get('type')}: {manifest['error'].get('message')}"
            )
        out.append("  inputs:")
        out += [f"    {e['name']}  {e['digest']}" for e in manifest.get("inputs") or []] or ["    (none)"]
        out.append("  dataset manifests:")
        out += [
            f"    {r.get('id')}  {r.get('sha256') or r.get('digest')}"
            for r in manifest.get("dataset_manifests") or []
        ] or ["    (none)"]
        out.append("  artifacts:")
        out += [
            f"    {a['path']}  {a['sha256']}  {a['size']} B  {a['media_type']}"
            for a in manifest.get("artifacts") or []
        ] or ["    (none)"]
        typer.echo("\n".join(out))


def _diff_text(result: dict[str, Any], markdown: bool) -> str:
    a, b = result["a"], result["b"]
    verdict = "identical results" if result["identical_results"] else "results differ"
    if markdown:
        lines = [f"# Run diff: `{a['run_id']}` vs `{b['run_id']}`", "", f"**{verdict}**", ""]
        if result["causes"]:
            lines += [f"Causes: {', '.join(result['causes'])}", ""]
        lines += ["| section | path | change | reason | a | b |", "| --- | --- | --- | --- | --- | --- |"]
        for ch in result["changes"]:
            lines.append(
                f"| {ch['section']} | `{ch['path']}` | {ch['change']} | {ch['reason'] or ''} | "
                f"`{json.dumps(ch['a'])}` | `{json.dumps(ch['b'])}` |"
            )
        return "\n".join(lines) + "\n"
    lines = [
        f"a: {a['run_id']} ({a['status']})  result {a['result_digest']}",
        f"b: {b['run_id']} ({b['status']})  result {b['result_digest']}",
        verdict,
    ]
    if result["causes"]:
        lines.append("causes: " + ", ".join(result["causes"]))
    for ch in result["changes"]:
        lines.append(
            f"  [{ch['reason'] or 'same'}] {ch['section']}: {ch['path']} {ch['change']}: "
            f"{json.dumps(ch['a'])} -> {json.dumps(ch['b'])}"
        )
    return "\n".join(lines) + "\n"


@runs_app.command("diff")
def diff_cmd(
    run_a: str = typer.Argument(..., help="Baseline run id or directory."),
    run_b: str = typer.Argument(..., help="Candidate run id or directory."),
    workspace_dir: Path | None = _WS_OPT,
    fmt: str = format_option("text", ("text", "json", "md")),
    show_all: bool = typer.Option(False, "--all", help="Also list unchanged entries."),
) -> None:
    """Compare two runs with reason codes; exit 0 when result digests are equal, 1 when they differ."""
    with cli_errors():
        check_format(fmt, ("text", "json", "md"))

        ws = _workspace(workspace_dir)
        result = diff_runs(resolve_run_dir(ws, run_a), resolve_run_dir(ws, run_b), include_all=show_all)
        if fmt == "json":
            _print_json(result)
        else:
            sys.stdout.write(_diff_text(result, markdown=fmt == "md"))
    raise typer.Exit(0 if result["identical_results"] else 1)


@runs_app.command("verify")
def verify_cmd(
    target: str = typer.Argument(..., help="Run id, run directory, bundle directory or bundle zip."),
    workspace_dir: Path | None = _WS_OPT,
    fmt: str = format_option("text", ("text", "json")),
) -> None:
    """Recompute artifact, input and result digests and the event chain offline; exit 1 on any mismatch."""
    with cli_errors():
        check_format(fmt, ("text", "json"))
        import zipfile

        from worldforge.evidence.bundle import verify_target

        candidate = Path(target)
        if candidate.is_file() and not zipfile.is_zipfile(candidate):
            # A file that is not a readable zip is a damaged bundle (cut short in transfer, say):
            # a failed verification, not an unknown run id.
            unreadable = "not a readable zip archive (truncated or not a bundle)"
            if fmt == "json":
                _print_json(
                    {
                        "ok": False,
                        "kind": "bundle-zip",
                        "target": candidate.name,
                        "problems": [
                            {"code": "unreadable-zip", "path": candidate.name, "message": unreadable}
                        ],
                    }
                )
            else:
                typer.echo(f"FAILED: bundle-zip {candidate.name}: {unreadable}")
            raise typer.Exit(1)
        report = verify_target(_workspace(workspace_dir), target)
        if fmt == "json":
            _print_json(report.to_dict())
        else:
            head = "OK" if report.ok else "FAILED"
            checked = ", ".join(f"{v} {k}" for k, v in sorted(report.checked.items()))
            typer.echo(f"{head}: {report.kind} {report.target} (status {report.status}; checked {checked})")
            for problem in report.problems:
                typer.echo(f"  {problem.code}: {problem.path}: {problem.message}")
    raise typer.Exit(0 if report.ok else 1)


def _invoke(plan: Any) -> int:
    """Run a :class:`~worldforge.workspace.resume.ResumePlan` in this process; returns the exit code.

    typer ships its own copy of click, so its exceptions are not ``click``'s: exits and usage
    errors are recognised by ``typer.Exit`` and by shape (``exit_code`` + ``show``).
    """
    args = list(plan.args)
    saved = sys.argv
    sys.argv = [plan.program, *args]
    try:
        if plan.is_script:
            import runpy

            try:
                runpy.run_path(plan.program, run_name="__main__")
            except SystemExit as exc:
                return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            return 0
        from worldforge.cli.app import app

        try:
            # With standalone_mode=False a command's typer.Exit code is *returned*, not raised,
            # so the return value is the resumed command's exit status.
            result = app(args, prog_name="worldforge", standalone_mode=False)
        except typer.Exit as exc:
            return int(getattr(exc, "exit_code", 0))
        except typer.Abort:
            return 1
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:
            show, code = getattr(exc, "show", None), getattr(exc, "exit_code", None)
            if callable(show) and isinstance(code, int):  # a click usage error
                show()
                return code
            raise
        return result if isinstance(result, int) else 0
    finally:
        sys.argv = saved


@runs_app.command("resume")
def resume_cmd(
    run_id: str = typer.Argument(..., help="Interrupted or failed run id."),
    workspace_dir: Path | None = _WS_OPT,
) -> None:
    """Continue an interrupted or failed run in place, reusing completed items whose inputs still match."""
    with cli_errors():
        plan = plan_resume(_workspace(workspace_dir), run_id)
        previous = os.getcwd()
        if plan.cwd is not None:
            os.chdir(plan.cwd)
        try:
            code = _invoke(plan)
        finally:
            os.chdir(previous)
    raise typer.Exit(code)


@runs_app.command("prune")
def prune_cmd(
    workspace_dir: Path | None = _WS_OPT,
    max_age_days: int | None = typer.Option(
        None, "--max-age-days", help="Delete runs older than N days (0 = any age)."
    ),
    keep_latest: int | None = typer.Option(None, "--keep-latest", help="Always keep the newest N runs."),
    kinds: list[str] = typer.Option([], "--kind", help="Only consider runs of this kind (repeatable)."),
    young_hours: float | None = typer.Option(None, "--min-age-hours", help="Safety window for young runs."),
    apply: bool = typer.Option(False, "--apply", help="Delete for real (default: dry run)."),
    fmt: str = format_option("table", ("table", "json")),
) -> None:
    """Plan (and with --apply, perform) deletion of old runs inside DIR/runs only."""
    with cli_errors():
        check_format(fmt, ("table", "json"))
        from worldforge.config import load_config

        retention = load_config().retention
        ws = _workspace(workspace_dir)
        plan = plan_prune(
            ws,
            max_age_days=retention.max_age_days if max_age_days is None else max_age_days,
            keep_latest=retention.keep_latest if keep_latest is None else keep_latest,
            kinds=tuple(kinds),
            young_hours=retention.young_hours if young_hours is None else young_hours,
        )
        if apply:
            plan = apply_prune(ws, plan)
        if fmt == "json":
            _print_json(plan)
            return
        mode = "apply" if apply else "dry run"
        typer.echo(
            f"prune ({mode}): {plan['delete_count']} of {plan['candidate_count']} runs, "
            f"{plan['delete_bytes']} bytes"
        )
        for c in plan["candidates"]:
            typer.echo(f"  {c['action']:8} {c['run_id']}  {c['kind']:12} {c['status']:11} {c['reason']}")


@runs_app.command("bundle")
def bundle_cmd(
    run_ids: list[str] = typer.Argument(
        None, help="Run ids or unique prefixes (one: an issue bundle; several: one evidence bundle)."
    ),
    workspace_dir: Path | None = _WS_OPT,
    every: bool = typer.Option(False, "--all", help="Bundle every run of the workspace."),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Bundle directory (default DIR/issue-bundles/<id>, or DIR/evidence-bundles/<UTC time>).",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a non-empty output directory."),
    make_zip: bool = typer.Option(False, "--zip", help="Also write a byte-reproducible <output>.zip."),
    fmt: str = format_option("md", ("md", "json")),
) -> None:
    """Write a sanitized evidence bundle: one run gives an issue bundle (with issue.md); several ids
    or --all give one release-review bundle of those runs (manifest and summary.md).

    Either way every copied file is sanitized, listed with its digests, and re-scanned by the
    independent gate; a finding marks the bundle unsafe, keeps no zip and exits 1.
    """
    with cli_errors():
        check_format(fmt, ("md", "json"))
        from worldforge.evidence.bundle import build_bundle

        refs = list(run_ids or [])
        if every and refs:
            raise WorldForgeError("runs bundle: give run ids or --all, not both.")
        if not every and not refs:
            raise WorldForgeError("runs bundle: give a run id, several run ids, or --all.")
        ws = _workspace(workspace_dir)
        issue = len(refs) == 1
        if issue:
            run_dir = resolve_run_dir(ws, refs[0])
            refs = [run_dir.name]
            out = output or ws / "issue-bundles" / run_dir.name
        else:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            out = output or ws / "evidence-bundles" / stamp
        result = build_bundle(ws, refs, out, overwrite=overwrite, make_zip=make_zip, issue=issue)
        m = result.manifest
        where = sanitize_text(str(result.output_dir))  # printed lines leave the machine in issues too
        zipped = sanitize_text(str(result.zip_path)) if result.zip_path else None
        if fmt == "json":
            _print_json(
                {
                    "run_ids": [row["run_id"] for row in m["runs"]],
                    "bundle_kind": m["bundle_kind"],
                    "output_dir": where,
                    "zip_path": zipped,
                    "safe_to_attach": m["safe_to_attach"],
                    "run_count": m["run_count"],
                    "included_count": m["included_count"],
                    "excluded_count": m["excluded_count"],
                    "redaction_count": m["redaction_count"],
                    "bundle_digest": m["bundle_digest"],
                    "first_triage_step": m.get("first_triage_step"),
                    "gate": m.get("gate"),
                }
            )
        elif issue:
            sys.stdout.write((result.output_dir / "issue.md").read_text(encoding="utf-8"))
            typer.echo(f"\nbundle: {where}" + (f"\nzip: {zipped}" if zipped else ""), err=True)
        else:
            typer.echo(f"wrote {where}")
            typer.echo(f"manifest: {where}/evidence_manifest.json")
            typer.echo(f"summary: {where}/summary.md")
            if zipped:
                typer.echo(f"zip: {zipped}")
            typer.echo(
                f"runs: {m['run_count']}  included: {m['included_count']}  "
                f"excluded: {m['excluded_count']}  redactions: {m['redaction_count']}  "
                f"safe_to_attach: {str(m['safe_to_attach']).lower()}"
            )
        if not result.safe_to_attach:
            for line in result.gate_lines():
                typer.echo(f"gate: {line}", err=True)
            raise GateFailure(
                "runs bundle: the bundle gate found secret- or host-shaped text; nothing is marked safe."
            )


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")


__all__ = ["register", "runs_app"]
