"""The words of an evidence bundle: each run's story, ``summary.md`` and ``issue.md``.

Separate from :mod:`worldforge.evidence.bundle` (which decides what is copied, redacted, listed and
digested) because these texts are for the person who opens the issue: what was run, what should
have happened, what happened instead, and the first step to take. Everything here that comes from
a run is passed through the sanitizer, like the files themselves.

Both texts state the bundle gate's verdict, never an assumption: they are written with the gate's
findings in hand (see :func:`worldforge.evidence.bundle.build_bundle`), so a refused bundle says it
is not safe to attach and which file, line and check refused it (never the text that was found).
"""

from __future__ import annotations

import json
from pathlib import Path

from worldforge.core.canonical import JSON
from worldforge.core.redact import SANITIZER_VERSION, sanitize_text
from worldforge.core.run_events import RunStatus
from worldforge.evidence.manifest import (
    FileRecord,
    FindingRecord,
    FixtureDigest,
    GateRecord,
    RedactionRecord,
    RunStory,
)
from worldforge.workspace.layout import RESULT_PATH
from worldforge.workspace.records import RunManifest
from worldforge.workspace.store import effective_status


def _result_payload(run_dir: Path) -> JSON:
    try:
        return json.loads((run_dir / RESULT_PATH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_story(run_dir: Path, manifest: RunManifest) -> RunStory:
    """Command, expected signal, observed failure and first triage step for one run."""
    run_id = manifest.run_id
    status = effective_status(run_dir, manifest)
    result = _result_payload(run_dir)
    expected = (
        f"`{manifest.command}` completes (status `completed`), writes a result digest, and "
        f"`worldforge runs verify {run_id}` passes."
    )
    signal = result.get("expected_signal") if isinstance(result, dict) else None
    if isinstance(signal, str):
        expected = signal
    error = manifest.error
    if status == RunStatus.FAILED:
        observed = (
            f"Run failed: {error.type}: {error.message}"
            if error is not None
            else "Run failed: error: no message recorded"
        )
        triage = f"Open `runs/{run_id}/events.jsonl` at the `run.failed` event and rerun the command above."
    elif status == RunStatus.INTERRUPTED:
        reason = error.message if error is not None else "no terminal event"
        observed = f"Run was interrupted after {manifest.event_count} events ({reason})."
        triage = f"Resume it with `worldforge runs resume {run_id}`; completed items are reused."
    elif status == RunStatus.RUNNING:
        observed = "Run was still in progress when the bundle was made."
        triage = "Wait for the run to finish, then bundle it again."
    else:
        failed: int | None = None
        if isinstance(result, dict):
            for key in ("failed_count", "failed", "failure_count"):
                count = result.get(key)
                if isinstance(count, int) and not isinstance(count, bool):
                    failed = count
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
        "kind": manifest.kind,
        "status": status.value,
        "command": sanitize_text(manifest.command),
        "input_digest": manifest.input_digest,
        "result_digest": manifest.result_digest,
        "claim_boundary": manifest.claim_boundary,
        "expected_signal": sanitize_text(expected),
        "observed_failure": sanitize_text(observed),
        "first_triage_step": triage,
    }


def summary_md(
    runs: list[RunStory],
    files: list[FileRecord],
    redactions: list[RedactionRecord],
    source_date: str | None,
    fixture_digests: list[FixtureDigest] | None = None,
    *,
    gate: GateRecord,
) -> str:
    """The bundle's overview; ``gate`` is the manifest's ``gate`` record, whose verdict it states."""
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
        f"- Safe to attach: {_verdict_line(gate)}",
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
    lines += ["", "## Gate verdict", "", *_verdict_details(gate)]
    lines += [
        "",
        "## Claim boundary",
        "",
        "This bundle copies evidence of the listed runs with secrets, signed-URL parameters and "
        "host-local paths redacted in place; the gate verdict above says whether anything was left. "
        "Excluded files are listed with their reason and digest. It uploads nothing and makes no "
        "quality, fidelity or safety claim beyond each run's own claim boundary.",
        "",
    ]
    return "\n".join(lines)


def issue_md(
    run: RunStory,
    files: list[FileRecord],
    redactions: list[RedactionRecord],
    *,
    gate: GateRecord,
) -> str:
    """The issue template for one run; its safe-to-attach notes state ``gate``'s verdict."""
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
        *_issue_verdict(gate, included),
        f"- The included files were sanitized in place ({redaction_total} redactions; the ledger in "
        "`evidence_manifest.json` lists rule, file and line, never the secret).",
        f"- {excluded} file(s) were excluded (binary, oversize, local-only or changed since the run); "
        "each stays listed in `evidence_manifest.json` with its reason and source digest.",
        *(
            ["- Check the bundle offline with `worldforge runs verify <bundle-dir-or-zip>` before attaching."]
            if gate.get("passed")
            else []
        ),
        "",
        "### First triage step",
        "",
        run["first_triage_step"],
        "",
    ]
    return "\n".join(lines)


#: Findings listed in the texts; ``evidence_manifest.json`` (``gate.findings``) holds all of them.
LISTED_FINDINGS = 50


def _where(finding: FindingRecord) -> str:
    """``file`` (in ``zip``), line or name, and the check: what a reader needs to find the cause."""
    inside = f" in `{finding['container']}`" if finding.get("container") else ""
    place = "its file name" if finding["line"] == 0 else f"line {finding['line']}"
    return f"`{finding['file']}`{inside}, {place}: check `{finding['rule']}`"


def _finding_lines(gate: GateRecord, indent: str = "") -> list[str]:
    findings = list(gate.get("findings") or [])
    lines = [f"{indent}- {_where(f)}" for f in findings[:LISTED_FINDINGS]]
    if len(findings) > LISTED_FINDINGS:
        lines.append(f"{indent}- and {len(findings) - LISTED_FINDINGS} more")
    return lines


def _verdict_line(gate: GateRecord) -> str:
    detector = gate.get("detector")
    if gate.get("passed"):
        return f"yes (the bundle gate, `{detector}`, found nothing in {gate.get('scanned_files')} files)"
    return (
        f"**no**: the bundle gate (`{detector}`) refused this bundle with {gate.get('finding_count')} "
        "finding(s), listed under Gate verdict; do not attach any part of it"
    )


def _verdict_details(gate: GateRecord) -> list[str]:
    detector = gate.get("detector")
    if gate.get("passed"):
        return [
            f"Passed: the bundle gate (`{detector}`), a second detector independent of the sanitizer, "
            f"re-scanned {gate.get('scanned_files')} files, their names and their decoded views and found "
            "nothing secret- or host-shaped. The bundle is safe to attach.",
        ]
    return [
        f"Refused: the bundle gate (`{detector}`) found text shaped like a secret or a host path that "
        "the sanitizer left in place, so this bundle is **not safe to attach** and no zip is kept. "
        "Each finding names the file, the line and the check, never the text:",
        "",
        *_finding_lines(gate),
        "",
        "`evidence_manifest.json` lists every finding under `gate.findings`. Remove the cause from the "
        "run (rotate a secret that was written there), then bundle it again.",
    ]


def _issue_verdict(gate: GateRecord, included: int) -> list[str]:
    detector = gate.get("detector")
    if gate.get("passed"):
        return [
            f"- safe_to_attach: `true`: the bundle gate (`{detector}`) re-scanned the {included} included "
            "files, their names and the manifest and found nothing.",
        ]
    return [
        f"- safe_to_attach: `false`: **do not attach this bundle.** The bundle gate (`{detector}`) found "
        f"{gate.get('finding_count')} place(s) where text shaped like a secret or a host path remains "
        "(file, line and check; never the text):",
        *_finding_lines(gate, indent="  "),
        "- Remove the cause from the run (rotate a secret that was written there) and bundle it again; "
        "`evidence_manifest.json` lists every finding under `gate.findings`.",
    ]


__all__ = ["LISTED_FINDINGS", "issue_md", "run_story", "summary_md"]
