"""The typed ``evidence_manifest.json``: what the writer writes is what the reader accepts, byte for
byte, and a manifest that does not fit the model is refused naming the field."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from worldforge.core.canonical import pretty_json
from worldforge.core.errors import WorldForgeError
from worldforge.evidence.bundle import build_bundle, verify_bundle_dir
from worldforge.evidence.manifest import EVIDENCE_MANIFEST, parse_evidence_manifest
from worldforge.workspace import start_run

ZERO = "sha256:" + "0" * 64


def _bundle(tmp_path: Path, *, issue: bool = False) -> Path:
    with start_run(tmp_path / "ws", "evaluation", ["worldforge", "eval"], {"suite": "planning"}) as run:
        run.record_item("planning/a", ZERO, {"score": 1.0})
        run.write_artifact("logs/provider.log", "token=abcdef1234567890\n", "text/plain")
        run.complete({"passed": 1}, claim_boundary="contract check only")
    result = build_bundle(tmp_path / "ws", [run.run_id], tmp_path / "bundle", issue=issue)
    assert result.safe_to_attach
    text = (result.output_dir / EVIDENCE_MANIFEST).read_text(encoding="utf-8")
    assert result.manifest == json.loads(text)  # what the builder returns is what it wrote
    return result.output_dir


@pytest.mark.parametrize("issue", [False, True])
def test_the_written_manifest_fits_the_model_and_reads_back_unchanged(tmp_path: Path, issue: bool) -> None:
    bundle = _bundle(tmp_path, issue=issue)
    text = (bundle / EVIDENCE_MANIFEST).read_text(encoding="utf-8")
    manifest = parse_evidence_manifest(json.loads(text))
    assert pretty_json(manifest) == text
    assert ("issue_template" in manifest) is issue and manifest["gate"]["passed"]
    assert any(f.get("method") == "text" and f["redaction_count"] for f in manifest["files"])


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda m: m["files"][0].update(sha256=5), "files[0].sha256: expected str or null"),
        (lambda m: m["runs"][0].pop("run_id"), "runs[0].run_id: missing"),
        (lambda m: m.update(bundle_kind="archive"), "bundle_kind: expected one of 'evidence', 'issue-run'"),
        (lambda m: m["gate"].update(findings={}), "gate.findings: expected a list"),
        (lambda m: m["redactions"][0].update(line=True), "redactions[0].line: expected int"),
    ],
)
def test_a_field_that_does_not_fit_is_named_by_the_reader_and_by_verify(
    tmp_path: Path, change: Callable[[dict[str, Any]], object], named: str
) -> None:
    bundle = _bundle(tmp_path)
    data = json.loads((bundle / EVIDENCE_MANIFEST).read_text(encoding="utf-8"))
    change(data)
    with pytest.raises(WorldForgeError, match="^" + re.escape(f"bundle.json: {named}.") + "$"):
        parse_evidence_manifest(data, source="bundle.json")
    (bundle / EVIDENCE_MANIFEST).write_text(pretty_json(data), encoding="utf-8")
    report = verify_bundle_dir(bundle)
    assert not report.ok
    assert [(p.code, p.message) for p in report.problems] == [
        ("manifest-malformed", f"{EVIDENCE_MANIFEST}: {named}.")
    ]
