"""summary.md and issue.md state the verdict the bundle gate reached, in agreement with the manifest.

A bundle the gate refuses must say so where a reader looks first: issue.md (printed by ``runs bundle``)
and summary.md say it is not safe to attach and which file, line and check refused it, never the
text; a bundle the gate passes says that. The texts are scanned too, so a finding in them, or in the
zip written afterwards, rewrites them with the final verdict.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from worldforge.cli.app import app
from worldforge.evidence import bundle as bundle_module
from worldforge.evidence.bundle import build_bundle, verify_bundle_dir
from worldforge.evidence.detect import KnownValues
from worldforge.evidence.files import Cleaned
from worldforge.evidence.gate import GateFinding, gate_record, scan_document
from worldforge.evidence.story import LISTED_FINDINGS, issue_md, summary_md
from worldforge.workspace import start_run

#: The sanitizer keeps a bare ``pass = …`` (``pass`` also names test outcomes); the gate flags it.
BLIND_SPOT = "pass = Xk29vLq8Zr4Tw"
GITHUB = "ghp_Zq81Lk27Wx93Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk2"


def _make_run(ws: Path, log: str) -> str:
    with start_run(ws, "evaluation", ["worldforge", "eval", "--suite", "x"], {"note": "n"}) as run:
        run.write_artifact("logs/provider.log", log)
        run.write_artifact("reports/data.json", json.dumps({"score": 1.0}))
        run.complete({"score": 1.0})
    return run.run_id


def _texts(out: Path) -> tuple[str, str, dict[str, Any]]:
    manifest = json.loads((out / "evidence_manifest.json").read_text(encoding="utf-8"))
    return (out / "issue.md").read_text(), (out / "summary.md").read_text(), manifest


def _listed(finding: dict[str, Any]) -> str:
    """How the texts name one finding (file, line, check)."""
    where = f" in `{finding['container']}`" if finding.get("container") else ""
    place = "its file name" if finding["line"] == 0 else f"line {finding['line']}"
    return f"`{finding['file']}`{where}, {place}: check `{finding['rule']}`"


def _assert_refused(out: Path, secret: str) -> dict[str, Any]:
    issue, summary, manifest = _texts(out)
    assert manifest["safe_to_attach"] is False and manifest["gate"]["passed"] is False
    findings = manifest["gate"]["findings"]
    assert findings and manifest["gate"]["finding_count"] == len(findings)
    assert "safe_to_attach: `false`: **do not attach this bundle.**" in issue
    assert "safe_to_attach: `true`" not in issue and "before attaching" not in issue
    assert f"{len(findings)} place(s)" in issue
    assert re.search(
        r"^- Safe to attach: \*\*no\*\*: the bundle gate \(`wf-detect/1`\) refused", summary, re.M
    )
    assert f"with {len(findings)} finding(s)" in summary
    assert "Refused: the bundle gate" in summary and "**not safe to attach**" in summary
    assert "Safe to attach: yes" not in summary and "Passed:" not in summary
    for finding in findings:
        assert _listed(finding) in issue and _listed(finding) in summary
    for text in (issue, summary, json.dumps(manifest)):
        assert secret not in text
    # The Files table of summary.md and the manifest agree on every flagged file.
    records = {r["path"]: r for r in manifest["files"]}
    for path in {f["file"] for f in findings}:
        assert records[path]["safe_to_attach"] is False
        assert records[path]["reason"].startswith("flagged by the bundle gate: ")
        if path not in ("summary.md", "issue.md"):  # the table lists the files it summarises
            assert f"| `{path}` | true | false |" in summary
    return manifest


def test_a_passing_bundle_says_it_is_safe(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_id = _make_run(ws, "request failed after 3 retries\n")
    result = build_bundle(ws, [run_id], tmp_path / "b", issue=True, make_zip=True)
    issue, summary, manifest = _texts(result.output_dir)
    assert manifest["safe_to_attach"] is True and manifest["gate"]["passed"] is True
    assert result.zip_path is not None and result.zip_path.is_file()
    scanned = manifest["gate"]["scanned_files"]
    assert scanned == manifest["included_count"] + 1
    assert (
        f"- safe_to_attach: `true`: the bundle gate (`wf-detect/1`) re-scanned the "
        f"{manifest['included_count'] - 2} included files" in issue
    )
    assert "before attaching" in issue and "do not attach" not in issue
    assert (
        f"- Safe to attach: yes (the bundle gate, `wf-detect/1`, found nothing in {scanned} files)" in summary
    )
    assert "Passed: the bundle gate" in summary and "Refused" not in summary
    assert all(r["safe_to_attach"] for r in manifest["files"] if r["included"])
    assert verify_bundle_dir(result.output_dir).ok


def test_content_the_sanitizer_keeps_and_the_gate_flags_refuses_the_bundle(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_id = _make_run(ws, f"request failed\nretry with {BLIND_SPOT}\n")
    out = tmp_path / "b"
    result = CliRunner().invoke(app, ["runs", "bundle", run_id, "-w", str(ws), "--zip", "-o", str(out)])
    assert result.exit_code == 1, result.output
    manifest = _assert_refused(out, "Xk29vLq8Zr4Tw")
    assert manifest["gate"]["findings"] == [
        {"file": f"runs/{run_id}/logs/provider.log", "line": 2, "rule": "generic-keyword"}
    ]
    assert not (tmp_path / "b.zip").exists()
    # ``runs bundle`` prints issue.md: the reader sees the refusal, with the file, line and check.
    assert "safe_to_attach: `false`" in result.stdout
    assert f"`runs/{run_id}/logs/provider.log`, line 2: check `generic-keyword`" in result.stdout
    assert "Xk29vLq8Zr4Tw" not in result.output
    assert verify_bundle_dir(out).ok  # the texts rewritten with the verdict are the ones listed


def _no_redaction(source: str, text: str, rendered: str | None = None, memo: object = None) -> Cleaned:
    return Cleaned(text.encode("utf-8"), [], "text")


def test_a_redactor_blind_spot_is_refused_in_the_texts_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    run_id = _make_run(ws, f"request failed\nused {GITHUB} for the call\n")
    monkeypatch.setattr(bundle_module, "clean_file", _no_redaction)
    result = build_bundle(ws, [run_id], tmp_path / "b", issue=True)
    manifest = _assert_refused(result.output_dir, GITHUB)
    assert {"file": f"runs/{run_id}/logs/provider.log", "line": 2, "rule": "provider-token/github"} in (
        manifest["gate"]["findings"]
    )
    assert not result.safe_to_attach


def test_a_finding_in_the_texts_themselves_is_stated_by_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The texts are written, then scanned; what the gate finds in them is written into them."""
    ws = tmp_path / "ws"
    run_id = _make_run(ws, "request failed\n")
    scan_files = bundle_module.scan_files

    def flag_summary(files: dict[str, bytes], known: KnownValues) -> list[GateFinding]:
        found = scan_files(files, known)
        return [*found, GateFinding("summary.md", 3, "generic-keyword")] if "summary.md" in files else found

    monkeypatch.setattr(bundle_module, "scan_files", flag_summary)
    result = build_bundle(ws, [run_id], tmp_path / "b", issue=True, make_zip=True)
    manifest = _assert_refused(result.output_dir, "\0")
    assert manifest["gate"]["findings"] == [{"file": "summary.md", "line": 3, "rule": "generic-keyword"}]
    assert result.zip_path is None and not (tmp_path / "b.zip").exists()
    assert verify_bundle_dir(result.output_dir).ok


def test_a_zip_the_gate_refuses_rewrites_the_texts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    run_id = _make_run(ws, "request failed\n")
    log = f"runs/{run_id}/logs/provider.log"

    def zip_finding(zip_path: Path, known: KnownValues) -> list[GateFinding]:
        return [GateFinding(log, 1, "provider-token/aws-secret-key", zip_path.name)]

    monkeypatch.setattr(bundle_module, "scan_zip", zip_finding)
    result = build_bundle(ws, [run_id], tmp_path / "b", issue=True, make_zip=True)
    assert result.zip_path is None and not (tmp_path / "b.zip").exists()
    manifest = _assert_refused(result.output_dir, "\0")
    assert manifest["gate"]["findings"] == [
        {"file": log, "line": 1, "rule": "provider-token/aws-secret-key", "container": "b.zip"}
    ]
    issue = (result.output_dir / "issue.md").read_text()
    assert f"`{log}` in `b.zip`, line 1: check `provider-token/aws-secret-key`" in issue
    assert verify_bundle_dir(result.output_dir).ok


RULE_NAMES = (
    "provider-token/github",
    "provider-token/aws",
    "provider-token/aws-secret-key",
    "generic-keyword",
    "generic-keyword/table-column",
    "generic-keyword/password-input",
    "private-key",
    "url-credentials/userinfo",
    "url-credentials/signed-param",
    "host-path/home",
    "host-path/tmp",
    "known-value/secret",
    "known-value/path",
    "known-value/login",
    "name/provider-token/github",
    "base64/generic-keyword/basic-pair",
)


def test_the_verdict_wording_never_trips_the_gate() -> None:
    """The words that state a verdict are scanned with the bundle: they must not be a finding."""
    findings = [
        GateFinding(
            f"runs/20261124T101500.123Z-3f2a9c1b7d4e/logs/log-{i}.txt", i, rule, "b.zip" if i % 2 else ""
        )
        for i, rule in enumerate(RULE_NAMES)
    ]
    story = {
        "run_id": "20261124T101500.123Z-3f2a9c1b7d4e",
        "kind": "evaluation",
        "status": "completed",
        "command": "worldforge eval --suite x",
        "input_digest": "sha256:" + "0" * 64,
        "result_digest": "sha256:" + "1" * 64,
        "expected_signal": "completes",
        "observed_failure": "Run completed; no failure recorded.",
        "first_triage_step": "Run `worldforge runs verify` inside the bundle.",
    }
    for gate in (gate_record([], 4), gate_record(findings, 4)):
        texts = (summary_md([story], [], [], None, gate=gate), issue_md(story, [], [], gate=gate))
        for text in texts:
            assert scan_document(text, KnownValues()) == [], text
        assert ("**not safe to attach**" in texts[0]) is (not gate["passed"])


def test_a_long_refusal_lists_the_first_findings_and_counts_the_rest() -> None:
    findings = [GateFinding(f"runs/r/f{i:03}.log", 1, "generic-keyword") for i in range(LISTED_FINDINGS + 7)]
    story = {"run_id": "r", "command": "c", "status": "failed", "input_digest": None, "result_digest": None}
    story |= {"expected_signal": "e", "observed_failure": "o", "first_triage_step": "t"}
    issue = issue_md(story, [], [], gate=gate_record(findings, 1))
    assert f"{LISTED_FINDINGS + 7} place(s)" in issue
    assert "`runs/r/f049.log`, line 1" in issue and "`runs/r/f050.log`" not in issue
    assert "- and 7 more" in issue
