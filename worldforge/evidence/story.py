"""The words of an evidence bundle: each run's story, ``summary.md`` and ``issue.md``.

Separate from :mod:`worldforge.evidence.bundle` (which decides what is copied, redacted, listed and
digested) because these texts are for the person who opens the issue: what was run, what should
have happened, what happened instead, and the first step to take. Everything here that comes from
a run is passed through the sanitizer, like the files themselves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from worldforge.core.redact import SANITIZER_VERSION, sanitize_text
from worldforge.workspace.layout import RESULT_PATH
from worldforge.workspace.store import effective_status


def _result_payload(run_dir: Path) -> Any:
    try:
        return json.loads((run_dir / RESULT_PATH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_story(run_dir: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Command, expected signal, observed failure and first triage step for one run."""
    run_id = str(manifest.get("run_id"))
    status = effective_status(run_dir, manifest)
    result = _result_payload(run_dir)
    expected = (
        f"`{manifest.get('command')}` completes (status `completed`), writes a result digest, and "
        f"`worldforge runs verify {run_id}` passes."
    )
    if isinstance(result, dict) and isinstance(result.get("expected_signal"), str):
        expected = result["expected_signal"]
    error = manifest.get("error") or {}
    if status == "failed":
        observed = f"Run failed: {error.get('type', 'error')}: {error.get('message', 'no message recorded')}"
        triage = f"Open `runs/{run_id}/events.jsonl` at the `run.failed` event and rerun the command above."
    elif status == "interrupted":
        reason = error.get("message", "no terminal event")
        observed = f"Run was interrupted after {manifest.get('event_count')} events ({reason})."
        triage = f"Resume it with `worldforge runs resume {run_id}`; completed items are reused."
    elif status == "running":
        observed = "Run was still in progress when the bundle was made."
        triage = "Wait for the run to finish, then bundle it again."
    else:
        failed = None
        if isinstance(result, dict):
            for key in ("failed_count", "failed", "failure_count"):
                if isinstance(result.get(key), int) and not isinstance(result.get(key), bool):
                    failed = result[key]
                    break
        observed = (
            f"Run completed; {failed} item(s) or scenario(s) failed."
            if failed
            else "Run completed; no failure recorded."
        )
        triage = (
            f"Run `worldforge runs verify runs/{run_id}` inside the bundle, then compare against a "
            f"baseline with `worldforge runs diff <baseline-run> {run_id}`."
        )
    return {
        "run_id": run_id,
        "kind": manifest.get("kind"),
        "status": status,
        "command": sanitize_text(str(manifest.get("command") or "")),
        "input_digest": manifest.get("input_digest"),
        "result_digest": manifest.get("result_digest"),
        "claim_boundary": manifest.get("claim_boundary"),
        "expected_signal": sanitize_text(expected),
        "observed_failure": sanitize_text(observed),
        "first_triage_step": triage,
    }


def summary_md(
    runs: list[dict[str, Any]],
    files: list[dict[str, Any]],
    redactions: list[dict[str, Any]],
    source_date: str | None,
    fixture_digests: list[dict[str, Any]] | None = None,
) -> str:
    lines = ["# WorldForge Evidence Bundle", ""]
    lines += [
        f"- Runs: {len(runs)}",
        f"- Source date: {source_date or 'unknown'}",
        f"- Sanitizer: {SANITIZER_VERSION}",
    ]
    included = sum(1 for f in files if f["included"])
    lines += [
        f"- Files: {included} included, {len(files) - included} excluded",
        f"- Redactions: {sum(r['count'] for r in redactions)}",
        "",
    ]
    lines += [
        "## Runs",
        "",
        "| Run | Kind | Status | Result digest | Command |",
        "| --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        lines.append(
            f"| `{run['run_id']}` | {run['kind']} | {run['status']} | `{run['result_digest']}` | "
            f"`{run['command']}` |"
        )
    lines += [
        "",
        "## Files",
        "",
        "| Path | Included | Safe to attach | SHA-256 | Reason |",
        "| --- | --- | --- | --- | --- |",
    ]
    for record in files:
        digest = record["sha256"] or record["source_sha256"]
        lines.append(
            f"| `{record['path']}` | {str(record['included']).lower()} | "
            f"{str(record['safe_to_attach']).lower()} | `{digest}` | {record['reason']} |"
        )
    if fixture_digests:
        lines += [
            "",
            "## Fixture digests",
            "",
            "| Run | Input | Path | SHA-256 | In bundle |",
            "| --- | --- | --- | --- | --- |",
        ]
        for fixture in fixture_digests:
            lines.append(
                f"| `{fixture['run_id']}` | {sanitize_text(str(fixture['name']))} | "
                f"`{sanitize_text(str(fixture['path']))}` | `{fixture['sha256']}` | "
                f"{'`' + fixture['bundled_as'] + '`' if fixture['bundled_as'] else 'no'} |"
            )
    rules: dict[str, int] = {}
    for entry in redactions:
        rules[entry["rule"]] = rules.get(entry["rule"], 0) + entry["count"]
    if rules:
        lines += ["", "## Redactions by rule", "", "| Rule | Count |", "| --- | --- |"]
        lines += [f"| {rule} | {count} |" for rule, count in sorted(rules.items())]
    lines += [
        "",
        "## Claim boundary",
        "",
        "This bundle copies checkout-safe evidence of the listed runs with secrets, signed-URL parameters "
        "and host-local paths redacted in place; excluded files are listed with their reason and digest. "
        "It uploads nothing and makes no quality, fidelity or safety claim beyond each run's own "
        "claim boundary.",
        "",
    ]
    return "\n".join(lines)


def issue_md(run: dict[str, Any], files: list[dict[str, Any]], redactions: list[dict[str, Any]]) -> str:
    included = sum(1 for f in files if f["included"])
    excluded = len(files) - included
    redaction_total = sum(r["count"] for r in redactions)
    lines = [
        f"## WorldForge run issue: `{run['run_id']}`",
        "",
        "### Command",
        "",
        f"`{run['command']}`",
        "",
        "### Expected signal",
        "",
        run["expected_signal"],
        "",
        "### Observed failure",
        "",
        run["observed_failure"],
        "",
        "### Digests",
        "",
        f"- status: `{run['status']}`",
        f"- input_digest: `{run['input_digest']}`",
        f"- result_digest: `{run['result_digest']}`",
        "",
        "### Safe-to-attach notes",
        "",
        f"- safe_to_attach: `true` for the {included} included files: they were sanitized in place "
        f"({redaction_total} redactions; the ledger in `evidence_manifest.json` lists rule, file and line, "
        "never the secret).",
        f"- {excluded} file(s) were excluded (binary, oversize, local-only or changed since the run); "
        "each stays listed in `evidence_manifest.json` with its reason and source digest.",
        "- Check the bundle offline with `worldforge runs verify <bundle-dir-or-zip>` before attaching.",
        "",
        "### First triage step",
        "",
        run["first_triage_step"],
        "",
    ]
    return "\n".join(lines)


__all__ = ["issue_md", "run_story", "summary_md"]
