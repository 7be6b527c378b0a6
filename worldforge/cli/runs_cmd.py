"""``worldforge runs``: list, show, diff, verify, resume, prune and bundle run workspaces.

Exit codes follow the project contract: 0 ok; 1 when the answer is "no" (``diff``: results differ,
or with ``--fail-on-regression`` a program regressed; ``verify``: a mismatch; ``resume``: the
resumed command failed); 2 for bad input.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from worldforge.cli._common import (
    check_format,
    cli_errors,
    format_option,
    legacy_workspace_option,
    workspace_choice,
    workspace_option,
)
from worldforge.core.canonical import pretty_json
from worldforge.core.errors import GateFailure, WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.core.run_events import RunStatus
from worldforge.workspace import apply_prune, list_runs, plan_prune, resolve_run_dir
from worldforge.workspace.diff import RunDiffReport
from worldforge.workspace.records import read_run_manifest
from worldforge.workspace.resume import plan_resume
from worldforge.workspace.store import run_summary

if TYPE_CHECKING:  # imported where they are used, so ``worldforge --help`` stays fast
    from worldforge.evidence.attest_verify import AttestationCheck
    from worldforge.workspace.verify import VerifyReport

runs_app = typer.Typer(
    name="runs",
    help="Inspect, compare, verify, resume, prune and bundle run workspaces (DIR/runs/<run-id>/).",
    no_args_is_help=True,
    add_completion=False,
)

_WS_OPT = workspace_option("Run workspace (default: .worldforge/config.yaml workspace_dir or .worldforge).")
_WS_LEGACY = legacy_workspace_option("--workspace-dir")


def _workspace(value: Path | None, legacy: Path | None = None) -> Path:
    chosen = workspace_choice(value, legacy, "--workspace-dir")
    if chosen is not None:
        return chosen
    from worldforge.config import default_workspace_dir

    return default_workspace_dir()


def _print_json(value: object) -> None:

    sys.stdout.write(pretty_json(value))


@runs_app.command("list")
def list_cmd(
    workspace: Path | None = _WS_OPT,
    workspace_dir: Path | None = _WS_LEGACY,
    fmt: str = format_option("table", ("table", "json")),
    kind: str | None = typer.Option(None, "--kind", help="Only runs of this kind."),
) -> None:
    """List runs, newest first, with status and digests."""
    with cli_errors():
        check_format(fmt, ("table", "json"))

        rows = list_runs(_workspace(workspace, workspace_dir), kind=kind)
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
    workspace: Path | None = _WS_OPT,
    workspace_dir: Path | None = _WS_LEGACY,
    fmt: str = format_option("text", ("text", "json")),
) -> None:
    """Show a run's manifest: status, digests, inputs, datasets and artifacts."""
    with cli_errors():
        check_format(fmt, ("text", "json"))

        run_dir = resolve_run_dir(_workspace(workspace, workspace_dir), run_id)
        manifest = read_run_manifest(run_dir)
        summary = run_summary(run_dir, manifest)  # counts files on disk for unfinished runs
        shown = {**manifest.to_dict(), "effective_status": summary["status"]}
        items_line, events_line = f"{summary['item_count']}", f"{summary['event_count']}"
        if summary["status"] in (RunStatus.RUNNING, RunStatus.INTERRUPTED):
            shown["progress"] = {
                "items_on_disk": summary["item_count"],
                "events_on_disk": summary["event_count"],
            }
            items_line += " on disk (the manifest is updated when the run ends)"
            events_line += " on disk"
        if fmt == "json":
            _print_json(shown)
            return
        git = manifest.environment["git"]
        commit = git["commit"] if git is not None else None
        out = [
            f"run {manifest.run_id}",
            f"  kind:          {manifest.kind}",
            f"  status:        {summary['status']}",
            f"  command:       {manifest.command}",
            f"  created:       {manifest.created_at}",
            f"  version:       {manifest.worldforge_version}  git {commit}",
            f"  input_digest:  {manifest.input_digest}",
            f"  result_digest: {manifest.result_digest}",
            f"  items:         {items_line}",
            f"  events:        {events_line}",
            f"  claim:         {manifest.claim_boundary}",
        ]
        if manifest.error is not None:
            out.append(f"  error:         {manifest.error.type}: {manifest.error.message}")
        out.append("  inputs:")
        out += [f"    {e['name']}  {e['digest']}" for e in manifest.inputs] or ["    (none)"]
        out.append("  dataset manifests:")
        out += [
            f"    {r.get('id')}  {r.get('sha256') or r.get('digest')}" for r in manifest.dataset_manifests
        ] or ["    (none)"]
        out.append("  artifacts:")
        out += [
            f"    {a['path']}  {a['sha256']}  {a['size']} B  {a['media_type']}"
            for a in manifest.artifacts or []
        ] or ["    (none)"]
        typer.echo("\n".join(out))


def _diff_text(result: RunDiffReport, markdown: bool) -> str:
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
    workspace: Path | None = _WS_OPT,
    workspace_dir: Path | None = _WS_LEGACY,
    fmt: str = format_option("text", ("text", "json", "md", "html")),
    show_all: bool = typer.Option(False, "--all", help="Also list unchanged entries."),
    fail_on_regression: bool = typer.Option(
        False,
        "--fail-on-regression",
        help="Exit 1 only when a science-birds program's Δ prompt score interval lies wholly below 0.",
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the output to this file."),
    resamples: int | None = typer.Option(
        None, "--uncertainty-resamples", help="Letter-bootstrap draws (default 10,000)."
    ),
    seed: int | None = typer.Option(None, "--uncertainty-seed", help="Seed of the letter bootstrap."),
) -> None:
    """Compare two runs with reason codes; exit 0 when result digests are equal, 1 when they differ.

    For science-birds runs, also each program's change with a paired letter-bootstrap interval; with
    --fail-on-regression only a regression decides the exit code."""
    with cli_errors():
        check_format(fmt, ("text", "json", "md", "html"))
        from worldforge.core.io import atomic_write_text
        from worldforge.suites.science_birds.compare_view import run_diff

        ws = _workspace(workspace, workspace_dir)
        result = run_diff(
            resolve_run_dir(ws, run_a),
            resolve_run_dir(ws, run_b),
            include_all=show_all,
            resamples=resamples,
            seed=seed,
        )
        if fmt == "json":
            text = pretty_json(result.to_dict())
        elif fmt == "html":
            text = result.html()
        else:
            markdown = fmt == "md"
            text = _diff_text(result.digests, markdown=markdown) + result.comparison_text(markdown)
        if output is not None:
            atomic_write_text(output, text)
            typer.echo(f"wrote {output}")
        else:
            sys.stdout.write(text)
    raise typer.Exit(result.exit_code(fail_on_regression))


@runs_app.command("verify")
def verify_cmd(
    target: str = typer.Argument(..., help="Run id, run directory, bundle directory or bundle zip."),
    workspace: Path | None = _WS_OPT,
    workspace_dir: Path | None = _WS_LEGACY,
    fmt: str = format_option("text", ("text", "json")),
    keys: list[Path] = typer.Option(
        [],
        "--key",
        help="Public key (PEM) the attestation must be signed by (repeatable; default: attest.trusted_keys).",
    ),
) -> None:
    """Recompute artifact, input and result digests and the event chain offline, and check the
    attestation (signature, Statement, every subject); exit 1 on any mismatch."""
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
        ws = _workspace(workspace, workspace_dir)
        report = verify_target(ws, target)
        attestation = _check_attestation(ws, target, report, keys)
        if fmt == "json":
            extra = {} if attestation is None else {"signature": attestation.signature}
            _print_json({**report.to_dict(), **extra, **_attestation_json(attestation)})
        else:
            head = "OK" if report.ok else "FAILED"
            checked = ", ".join(f"{v} {k}" for k, v in sorted(report.checked.items()))
            typer.echo(f"{head}: {report.kind} {report.target} (status {report.status}; checked {checked})")
            if attestation is not None:
                typer.echo(_attestation_line(attestation))
            for problem in report.problems:
                typer.echo(f"  {problem.code}: {problem.path}: {problem.message}")
    raise typer.Exit(0 if report.ok else 1)


def _check_attestation(
    ws: Path, target: str, report: VerifyReport, key_paths: list[Path]
) -> AttestationCheck | None:
    """Check the target's attestation with ``--key`` (else ``attest.trusted_keys``); its problems join
    the report's. ``None`` when there is no attestation and no key was given: nothing to say."""
    from worldforge.config import load_config
    from worldforge.evidence.attest_verify import check_target, trusted_keys

    keys = trusted_keys(key_paths or load_config().attest.trusted_keys)
    flagged = frozenset(problem.path for problem in report.problems)
    check = check_target(ws, target, keys, require=bool(key_paths), flagged=flagged)
    report.problems.extend(check.problems)
    return check if check.present or key_paths else None


def _attestation_json(check: AttestationCheck | None) -> dict[str, object]:
    return {} if check is None else {"attestation": check.to_dict()}


def _attestation_line(check: AttestationCheck) -> str:
    """One line: how many Statements and subjects, and what the signature check concluded."""
    if not check.present:
        return "attestation: none (nothing signed)"
    signature = {
        "verified": "signature verified (keyid " + ", ".join(k[:16] for k in check.keyids) + ")",
        "unchecked": "signature not checked (no --key and no attest.trusted_keys)"
        + ("" if check.keyids else "; the envelopes are unsigned"),
        "unsigned": "signature missing",
        "invalid": "signature INVALID",
    }[check.signature]
    return f"attestation: {check.envelopes} envelope(s), {check.subjects} subject(s); {signature}"


@runs_app.command("resume")
def resume_cmd(
    run_id: str = typer.Argument(..., help="Interrupted or failed run id."),
    workspace: Path | None = _WS_OPT,
    workspace_dir: Path | None = _WS_LEGACY,
) -> None:
    """Continue an interrupted or failed run in place, reusing completed items whose inputs still match.

    The run's recorded request goes to its service again (run it from the directory the run started
    in); a run recorded without a request is refused with the command to rerun.
    """
    with cli_errors():
        from worldforge.cli.resume import resume_recorded

        code = resume_recorded(plan_resume(_workspace(workspace, workspace_dir), run_id))
    raise typer.Exit(code)


@runs_app.command("prune")
def prune_cmd(
    workspace: Path | None = _WS_OPT,
    workspace_dir: Path | None = _WS_LEGACY,
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
        ws = _workspace(workspace, workspace_dir)
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
    workspace: Path | None = _WS_OPT,
    workspace_dir: Path | None = _WS_LEGACY,
    every: bool = typer.Option(False, "--all", help="Bundle every run of the workspace."),
    output: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Bundle directory (default DIR/issue-bundles/<id>, or DIR/evidence-bundles/<UTC time>).",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a non-empty output directory."),
    make_zip: bool = typer.Option(False, "--zip", help="Also write a byte-reproducible <output>.zip."),
    attest: bool = typer.Option(
        False, "--attest", help="Write attestations.intoto.jsonl: in-toto Statements in DSSE envelopes."
    ),
    sign_key: Path | None = typer.Option(
        None, "--sign-key", help="Ed25519 or ECDSA P-256 private key (PEM) that signs the attestation."
    ),
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
        ws = _workspace(workspace, workspace_dir)
        signer = _attest_hook(ws, refs, attest, sign_key)  # bad key or run: exit 2, nothing written
        issue = len(refs) == 1
        if issue:
            run_dir = resolve_run_dir(ws, refs[0])
            refs = [run_dir.name]
            out = output or ws / "issue-bundles" / run_dir.name
        else:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            out = output or ws / "evidence-bundles" / stamp
        result = build_bundle(
            ws, refs, out, overwrite=overwrite, make_zip=make_zip, issue=issue, attest=signer
        )
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
                    "attestation": _bundle_attestation(result.output_dir, attest, sign_key),
                }
            )
        elif issue:
            sys.stdout.write((result.output_dir / "issue.md").read_text(encoding="utf-8"))
            typer.echo(f"\nbundle: {where}" + (f"\nzip: {zipped}" if zipped else ""), err=True)
            if attest:
                said = _bundle_attestation(result.output_dir, attest, sign_key)
                typer.echo(f"attestation: {said}", err=True)
        else:
            typer.echo(f"wrote {where}")
            typer.echo(f"manifest: {where}/evidence_manifest.json")
            typer.echo(f"summary: {where}/summary.md")
            if zipped:
                typer.echo(f"zip: {zipped}")
            if attest:
                typer.echo(f"attestation: {_bundle_attestation(result.output_dir, attest, sign_key)}")
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


def _attest_hook(ws: Path, refs: list[str], attest: bool, sign_key: Path | None) -> Any:
    """The bundle builder's ``attest`` hook, after every check that could refuse it (exit 2)."""
    if sign_key is not None and not attest:
        raise WorldForgeError("a signing key (--sign-key) needs --attest as well.")
    if not attest:
        return None
    from worldforge.evidence.attest import attest_bundle, check_runs
    from worldforge.evidence.keys import load_signing_key

    key = load_signing_key(sign_key) if sign_key is not None else None
    check_runs(ws, refs)
    return lambda bundle_dir, manifest, written: attest_bundle(bundle_dir, manifest, key, written)


def _bundle_attestation(bundle_dir: Path, attest: bool, sign_key: Path | None) -> str | None:
    """What the bundle's attestation is, in a few words (no key path: it stays on this machine)."""
    if not attest:
        return None
    from worldforge.workspace.layout import ATTESTATION_NAME

    if not (bundle_dir / ATTESTATION_NAME).is_file():
        return "not written (the gate refused the bundle)"
    return f"{ATTESTATION_NAME} ({'signed' if sign_key is not None else 'unsigned'})"


def register(app: typer.Typer) -> None:
    app.add_typer(runs_app, name="runs")


__all__ = ["register", "runs_app"]
