"""The bundle gate: an independent detector re-scans every bundle; anything found fails closed.

The detector must catch what the redactor misses (simulated here by switching redaction off), name
file, line and rule without the secret, keep no zip, and exit 1; and it must never flag the project's
own evidence (digests, run ids, UUIDs, versions) or the redactor's placeholders.
"""

from __future__ import annotations

import base64
import html
import json
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.leakforms import EVIDENCE_SHAPES, FORMS
from worldforge.cli.app import app
from worldforge.evidence import bundle as bundle_module
from worldforge.evidence.detect import KnownValues, looks_generated, scan_name, scan_text, shannon_entropy
from worldforge.evidence.files import Cleaned
from worldforge.evidence.gate import scan_document
from worldforge.workspace import start_run

LEAK = "ghp_Zq81Lk27Wx93Hp1Rt7Ys3Vb9Nc4Md6Fg0Jk2"


def _make_run(ws: Path) -> str:
    with start_run(ws, "evaluation", ["worldforge", "eval", "--suite", "x"], {"note": "n"}) as run:
        run.write_artifact("logs/provider.log", f"request failed\nused {LEAK} for the call\n")
        run.write_artifact("reports/data.json", json.dumps({"score": 1.0}))
        run.complete({"score": 1.0})
    return run.run_id


def _no_redaction(source: str, text: str, rendered: str | None = None, memo: object = None) -> Cleaned:
    return Cleaned(text.encode("utf-8"), [], "text")


def test_gate_fails_closed_when_redaction_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    run_id = _make_run(ws)
    monkeypatch.setattr(bundle_module, "clean_file", _no_redaction)  # a redactor blind spot
    result = CliRunner().invoke(
        app, ["runs", "bundle", run_id, "-w", str(ws), "--zip", "-o", str(tmp_path / "b"), "--format", "json"]
    )
    assert result.exit_code == 1, result.output
    assert LEAK not in result.output
    manifest = json.loads((tmp_path / "b" / "evidence_manifest.json").read_text())
    assert manifest["safe_to_attach"] is False and manifest["gate"]["passed"] is False
    assert not (tmp_path / "b.zip").exists(), "a zip was left behind for an unsafe bundle"
    finding = next(f for f in manifest["gate"]["findings"] if f["file"].endswith("logs/provider.log"))
    assert finding == {"file": f"runs/{run_id}/logs/provider.log", "line": 2, "rule": "provider-token/github"}
    flagged = next(f for f in manifest["files"] if f["path"].endswith("logs/provider.log"))
    assert flagged["safe_to_attach"] is False
    assert LEAK not in json.dumps(manifest)
    assert f"runs/{run_id}/logs/provider.log:2: provider-token/github" in result.output


def test_gate_passes_a_clean_bundle_and_says_so(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_id = _make_run(ws)
    result = CliRunner().invoke(
        app, ["runs", "bundle", run_id, "-w", str(ws), "--zip", "-o", str(tmp_path / "b")]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "b" / "evidence_manifest.json").read_text())
    assert manifest["gate"]["passed"] is True and manifest["gate"]["finding_count"] == 0
    assert manifest["gate"]["scanned_files"] == manifest["included_count"] + 1
    assert (tmp_path / "b.zip").is_file()


# ---------------------------------------------------------------------------- the detector


@pytest.mark.parametrize("form", FORMS, ids=[f.id for f in FORMS])
def test_detector_finds_every_planted_form(form: object) -> None:
    findings = scan_document(form.text, KnownValues())  # type: ignore[attr-defined]
    assert findings, f"{form.id}: the gate would let it through"  # type: ignore[attr-defined]


@pytest.mark.parametrize("shape", EVIDENCE_SHAPES)
def test_detector_never_flags_evidence(shape: str) -> None:
    for text in (shape, json.dumps({"value": shape}), html.escape(json.dumps({"v": shape}))):
        assert scan_document(text, KnownValues()) == []


@pytest.mark.parametrize(
    "text",
    [
        "[redacted]",
        '{"api_key": "[redacted]", "token_budget": 25000, "max_tokens": 512}',
        "Authorization: Bearer [redacted]",
        "<home>/projects/wf and <tmp>/pytest-of-<user>/x",
        "password_file: secrets.txt",
        "the tokenizer configuration and the password reset flow",
        '{"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}',
        "mock_sk-learn-compatible-estimator--object-swap.json",
        "-----BEGIN PRIVATE KEY-----[redacted]-----END PRIVATE KEY-----",
        "postgres://[redacted]@db:5432/app",
        "https://b.s3.amazonaws.com/k?X-Amz-Signature=[redacted]&X-Amz-Expires=60",
    ],
)
def test_detector_near_misses(text: str) -> None:
    assert scan_text(text, KnownValues()) == []


def test_known_values_in_every_encoding() -> None:
    known = KnownValues.from_environment(
        {"OPENAI_API_KEY": "kv-Zq81Lk27Wx93", "HOME": "/srv/people/dana", "USER": "dana", "PWD": "/srv/x/y"},
        cwd="/srv/build/checkout",
    )
    assert known.secrets == ("kv-Zq81Lk27Wx93",)
    assert known.paths == ("/srv/build/checkout", "/srv/people/dana")
    for value in ("kv-Zq81Lk27Wx93", "/srv/build/checkout", "/srv/people/dana"):
        for encoded in (
            value,
            json.dumps(value)[1:-1],
            html.escape(value),
            urllib.parse.quote(value, safe=""),
            urllib.parse.quote_plus(value),
            base64.b64encode(value.encode()).decode(),
            base64.b64encode(b"prefix:" + value.encode()).decode(),
        ):
            assert scan_text(f"x {encoded} y", known), (value, encoded)
    assert [f.rule for f in scan_text("/opt/dana/x", known)] == ["known-value/login"]
    assert scan_text("dana wrote the report", known) == []  # a login name is only a finding in a path


def test_names_are_scanned() -> None:
    assert [f.rule for f in scan_name(f"items/mock_{LEAK}--swap.json")] == ["provider-token/github"]
    assert scan_name("items/mock--object-swap.578646c13e65.json") == []


def test_entropy_threshold_separates_words_from_generated_values() -> None:
    assert shannon_entropy("aaaaaaaa") == 0.0
    assert not looks_generated("correcthorse") and not looks_generated("not_a_secret")
    assert looks_generated("Tr0ub4dor&3") and looks_generated("qXvBnMzLkJhGfDsA")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.sampled_from([*EVIDENCE_SHAPES, "score", "letter A", "passed", "trial 3", "stability 0.97", "\n"]),
        max_size=30,
    )
)
def test_property_evidence_text_is_never_flagged(parts: list[str]) -> None:
    text = " ".join(parts)
    assert scan_text(text, KnownValues()) == []


@settings(max_examples=100, deadline=None)
@given(
    body=st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", min_size=36, max_size=36
    ),
    before=st.sampled_from(["", "x ", '{"k": "', "key=", "<td>", "| "]),
    after=st.sampled_from(["", " y", '"}', "&z=1", "</td>", " |"]),
)
def test_property_provider_tokens_are_found_in_any_context(body: str, before: str, after: str) -> None:
    text = f"{before}ghp_{body}{after}"
    findings = scan_text(text, KnownValues())
    assert any(f.rule == "provider-token/github" for f in findings)
    for finding in findings:
        assert f"ghp_{body}" not in json.dumps(finding.__dict__)


def test_a_science_birds_run_bundles_safe(tmp_path: Path) -> None:
    """The flagship run (gateway session, exchanges, level images, reports) passes the gate: a file
    named ``session.json`` is a file, not a secret-named setting."""
    ws = tmp_path / "ws"
    runner = CliRunner()
    args = ["eval", "--suite", "science-birds", "--provider", "mock", "--run-workspace", str(ws)]
    result = runner.invoke(app, [*args, "--characters", "A-B", "--trials", "2", "--workers", "1"])
    assert result.exit_code in (0, 1), result.output
    run_id = sorted(p.name for p in (ws / "runs").iterdir())[-1]
    bundled = runner.invoke(app, ["runs", "bundle", run_id, "--workspace-dir", str(ws)])
    assert bundled.exit_code == 0, bundled.output
    manifest_path = next((ws / "issue-bundles").glob("*/evidence_manifest.json"))
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    assert manifest["safe_to_attach"] is True
    assert any(f["source"].endswith("gateway/session.json") for f in manifest["files"])
