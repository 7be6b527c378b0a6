"""A bare AWS secret access key (40 base64 characters, no name, no prefix) is redacted by the
sanitizer and detected by the bundle gate, each on its own; the project's evidence never is.

Keys come from AWS's documentation and from a seeded generator; the look-alikes that must survive are
what runs are made of: commit hashes, ``sha256:`` digests, run ids, UUIDs and base64 images. The
end-to-end tests run the main job (``eval --suite science-birds --provider mock``), bundle it and
measure the rule on the HTML report and the bundle, then bundle a run that holds a key.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import random
import re
import string
import uuid
import zipfile
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.leakforms import EVIDENCE_SHAPES
from worldforge.cli.app import app
from worldforge.core.redact import sanitize_text, sanitize_with_ledger
from worldforge.core.redact.shapes import SHAPE_RULES, aws_secret_shaped
from worldforge.evidence import bundle as bundle_module
from worldforge.evidence.bundle import build_bundle
from worldforge.evidence.detect import KnownValues, shannon_entropy
from worldforge.evidence.detect_shapes import bare_key_findings, secret_key_shaped
from worldforge.evidence.files import Cleaned
from worldforge.evidence.gate import scan_document
from worldforge.workspace import start_run
from worldforge.workspace.ids import new_run_id

ALPHABET = string.ascii_letters + string.digits + "+/"
AWS_EXAMPLE = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented example secret key
LEDGER_RULE = "aws-secret-key"
GATE_RULE = "provider-token/aws-secret-key"


def _key(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(40))


SEEDED_KEYS = tuple(_key(random.Random(seed)) for seed in range(2024, 2032))
KEYS = (AWS_EXAMPLE, *SEEDED_KEYS)


def redacted_by_rule(text: str) -> int:
    """How many spans the sanitizer redacted under the AWS secret key id."""
    return sum(entry.count for entry in sanitize_with_ledger(text, "f")[1] if entry.rule == LEDGER_RULE)


def gate_hits(text: str) -> list[tuple[int, str]]:
    return [hit for hit in scan_document(text, KnownValues()) if hit[1].endswith(GATE_RULE)]


def rule_hits(text: str) -> int:
    """Hits of the sanitizer's shape rule and of the gate's shape rule on the text as written."""
    (rule,) = SHAPE_RULES
    sanitizer, pos = 0, 0
    while (match := rule.pattern.search(text, pos)) is not None:
        sanitizer += rule.replace(match) is not None
        pos = match.end()
    return sanitizer + len(list(bare_key_findings(text, shannon_entropy)))


CONTEXTS = (
    "{k}",
    "first line\n{k}\nlast line\n",
    "x = {k}",
    "x={k}",
    "AWS_CREDS={k}",
    "value: {k}",
    "note: '{k}'",
    'label="{k}"',
    '{{"note": "{k}"}}',
    "stdout: uploaded with {k} as configured",
    "('AKIA', '{k}')",
    "<td>{k}</td>",
    "| cell | {k} |",
    "the key is {k}.",
)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("context", CONTEXTS)
def test_a_bare_key_is_redacted_and_detected(key: str, context: str) -> None:
    text = context.format(k=key)
    out, ledger = sanitize_with_ledger(text, "out.log")
    assert key not in out, out
    assert LEDGER_RULE in {entry.rule for entry in ledger}
    assert all(key not in json.dumps(entry.to_dict()) for entry in ledger)
    assert sanitize_text(out) == out
    found = scan_document(text, KnownValues())
    assert (text[: text.index(key)].count("\n") + 1, GATE_RULE) in found


@pytest.mark.parametrize("key", KEYS)
def test_escaped_spellings_are_redacted_and_detected(key: str) -> None:
    """JSON with ``\\n`` and ``\\/`` escapes, HTML entities: decoded views hold the bare key."""
    for text in (
        json.dumps({"stdout": f"done\n{key}\n"}),
        json.dumps({"out": key}).replace("/", "\\/"),
        html.escape(f"<pre>'{key}'</pre>"),
    ):
        assert key not in sanitize_text(text), text
        assert key.replace("/", "\\/") not in sanitize_text(text), text
        assert gate_hits(text), text


@pytest.mark.parametrize(
    "text",
    [
        hashlib.sha1(b"commit").hexdigest(),
        "commit " + hashlib.sha1(b"commit").hexdigest().upper(),
        "sha256:" + hashlib.sha256(b"x").hexdigest(),
        hashlib.sha256(b"y").hexdigest(),
        str(uuid.UUID(int=2**127 + 12345)),
        "getAttributeValueFromElementByName2Times",  # an identifier: words, not a key
        "src/worldforge/core/redact/Rules1/abc/xy",  # a path of plain names
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        f"A{AWS_EXAMPLE}",  # inside a longer run of base64: part of something else
        f"{AWS_EXAMPLE}Z",
        f"{AWS_EXAMPLE}==",
        f"mock_{AWS_EXAMPLE}--swap",
        f"data:image/png;base64,{AWS_EXAMPLE}{AWS_EXAMPLE}",
        *EVIDENCE_SHAPES,
    ],
)
def test_evidence_and_look_alikes_are_not_keys(text: str) -> None:
    assert redacted_by_rule(text) == 0 and gate_hits(text) == [] and rule_hits(text) == 0


def test_run_ids_are_not_keys() -> None:
    run_ids = [new_run_id() for _ in range(200)]
    text = "\n".join(run_ids) + "\n" + json.dumps({"run_ids": run_ids, "runs": {r: r for r in run_ids}})
    assert redacted_by_rule(text) == 0 and gate_hits(text) == [] and rule_hits(text) == 0


def _wrapped_base64_with_key_shaped_tail() -> tuple[str, str]:
    """MIME base64 (76 per line) whose last line is 40 characters shaped like a key."""
    rng = random.Random(7)
    while True:
        data = rng.randbytes(57 * 3 + 30)
        wrapped = base64.encodebytes(data).decode("ascii")
        tail = wrapped.splitlines()[-1]
        if aws_secret_shaped(tail) and secret_key_shaped(tail, shannon_entropy):
            return wrapped, tail


def test_the_last_line_of_wrapped_base64_is_not_a_key() -> None:
    wrapped, tail = _wrapped_base64_with_key_shaped_tail()
    assert len(tail) == 40 and redacted_by_rule(tail) == 1 and gate_hits(tail)  # alone, it would be
    for text in (
        wrapped,
        f"body:\n{wrapped}",
        json.dumps({"attachment": wrapped}),
        wrapped.replace("\n", "\r\n"),
    ):
        assert redacted_by_rule(text) == 0 and gate_hits(text) == [], text


def test_recognition_rate_on_seeded_random_keys() -> None:
    """Measured on 10,000 seeded random keys: both recognise at least 99.7 %, and what they miss is
    almost only keys with no digit or one case missing (about one in 700), which the shape needs."""
    rng = random.Random(20240611)
    keys = [_key(rng) for _ in range(10_000)]
    mixed = [k for k in keys if re.search("[0-9]", k) and re.search("[a-z]", k) and re.search("[A-Z]", k)]
    redactor_misses = [k for k in keys if not aws_secret_shaped(k)]
    gate_misses = [k for k in keys if not secret_key_shaped(k, shannon_entropy)]
    assert len(redactor_misses) <= 30 and len(gate_misses) <= 30
    assert sum(not aws_secret_shaped(k) for k in mixed) <= 5
    assert sum(not secret_key_shaped(k, shannon_entropy) for k in mixed) <= 5
    assert sanitize_text("\n".join(mixed[:200])).count("[redacted]") >= 199


ROOT = Path(__file__).resolve().parents[2]


def test_no_benign_sample_of_the_adopted_corpus_is_a_key() -> None:
    """gitleaks' benign look-alikes (no gitleaks pattern matches them): neither rule fires on one,
    as written or under a key named after its rule."""
    corpus = json.loads((ROOT / "tests" / "fixtures" / "secrets" / "gitleaks_samples.json").read_text())
    benign = [sample["text"] for sample in corpus["false_positives"] if sample["kind"] == "benign"]
    assert len(benign) == 153
    for text in benign:
        for form in (text, f"value = {text}", json.dumps({"v": text})):
            assert redacted_by_rule(form) == 0 and gate_hits(form) == [], form


def test_the_projects_sources_and_docs_hold_no_key_shape() -> None:
    """Code, docstrings and documentation: identifiers, paths, digests and examples, never a key."""
    paths = [*sorted((ROOT / "worldforge").rglob("*.py")), *sorted((ROOT / "docs").rglob("*.md"))]
    assert len(paths) > 100
    hits = {p.relative_to(ROOT).as_posix(): rule_hits(p.read_text(encoding="utf-8")) for p in paths}
    assert {name: n for name, n in hits.items() if n} == {}


# ------------------------------------------------------------------------------ properties


@settings(max_examples=150, deadline=None)
@given(
    digest=st.text(alphabet="0123456789abcdef", min_size=40, max_size=40),
    upper=st.booleans(),
    context=st.sampled_from(["{h}", "commit {h}", '{{"sha": "{h}"}}', "x = {h}\n", "<code>{h}</code>"]),
)
def test_property_40_hex_is_never_a_key(digest: str, upper: bool, context: str) -> None:
    text = context.format(h=digest.upper() if upper else digest)
    assert redacted_by_rule(text) == 0 and gate_hits(text) == [] and rule_hits(text) == 0


@settings(max_examples=150, deadline=None)
@given(
    data=st.binary(max_size=64),
    context=st.sampled_from(["sha256:{d}", "{d}", '"input_digest": "sha256:{d}"']),
)
def test_property_sha256_digests_are_never_keys(data: bytes, context: str) -> None:
    text = context.format(d=hashlib.sha256(data).hexdigest())
    assert sanitize_text(text) == text and gate_hits(text) == [] and rule_hits(text) == 0


@settings(max_examples=150, deadline=None)
@given(
    data=st.binary(min_size=46, max_size=3000),
    encoding=st.sampled_from(["standard", "urlsafe", "mime"]),
    context=st.sampled_from(
        ['<img src="data:image/png;base64,{b}">', "{b}", '{{"image": "{b}"}}', "blob:\n{b}\nend"]
    ),
)
def test_property_base64_blobs_never_hold_a_key(data: bytes, encoding: str, context: str) -> None:
    """Base64 longer than 60 characters (images in the HTML report, blobs), also wrapped at 76."""
    if encoding == "mime":
        blob = base64.encodebytes(data).decode("ascii")
    else:
        blob = (base64.b64encode if encoding == "standard" else base64.urlsafe_b64encode)(data).decode(
            "ascii"
        )
    assert len(blob) > 60
    for text in (context.format(b=blob), json.dumps({"html": context.format(b=blob)})):
        assert redacted_by_rule(text) == 0 and gate_hits(text) == [] and rule_hits(text) == 0


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    seed=st.integers(min_value=0, max_value=2**64),
    before=st.sampled_from(
        ["", "x = ", "x=", "value: ", "note: '", '{"v": "', "<td>", "printed: ", "line one\n"]
    ),
    after=st.sampled_from(["", "'", '"}', "</td>", ".", " and more", "\nline three"]),
)
def test_property_a_key_in_text_is_redacted_and_detected(seed: int, before: str, after: str) -> None:
    """Uniformly random keys with upper case, lower case and a digit (the shape both rules need)."""
    key = _key(random.Random(seed))
    assume(re.search("[0-9]", key) and re.search("[a-z]", key) and re.search("[A-Z]", key))
    text = f"{before}{key}{after}"
    out = sanitize_text(text)
    assert key not in out and out == f"{before}[redacted]{after}"
    assert gate_hits(text)


# ------------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The main job, run once for this module: its run directory and its bundle (with a zip)."""
    root = tmp_path_factory.mktemp("main-job")
    ws = root / "ws"
    runner = CliRunner()
    args = ["eval", "--suite", "science-birds", "--provider", "mock", "--run-workspace", str(ws)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    (run_dir,) = sorted((ws / "runs").iterdir())
    out = root / "bundle"
    bundled = runner.invoke(app, ["runs", "bundle", run_dir.name, "-w", str(ws), "--zip", "-o", str(out)])
    assert bundled.exit_code == 0, bundled.output
    return run_dir, out


def _texts(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text("utf-8", "replace")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_the_main_job_report_and_bundle_hold_no_bare_key(main_job: tuple[Path, Path]) -> None:
    run_dir, out = main_job
    report = (run_dir / "reports" / "report.html").read_text(encoding="utf-8")
    assert report.count("data:image/png;base64,") >= 10  # the inline images are measured too
    assert redacted_by_rule(report) == 0 and gate_hits(report) == []
    texts = {f"run/{k}": v for k, v in _texts(run_dir).items()} | {
        f"bundle/{k}": v for k, v in _texts(out).items()
    }
    with zipfile.ZipFile(out.with_name("bundle.zip")) as archive:
        texts |= {f"zip/{i.filename}": archive.read(i).decode("utf-8", "replace") for i in archive.infolist()}
    hits = {name: rule_hits(text) for name, text in texts.items()}
    assert sum(hits.values()) == 0, {name: n for name, n in hits.items() if n}
    manifest = json.loads((out / "evidence_manifest.json").read_text(encoding="utf-8"))
    assert [r for r in manifest["redactions"] if r["rule"] == LEDGER_RULE] == []
    assert manifest["gate"]["passed"] is True and manifest["safe_to_attach"] is True
    assert "safe_to_attach: `true`" in (out / "issue.md").read_text(encoding="utf-8")


def _run_with_key(ws: Path, key: str) -> str:
    with start_run(ws, "evaluation", ["worldforge", "eval", "--suite", "x"], {"note": "n"}) as run:
        run.record_item("item/a", "sha256:" + "0" * 64, {"reply": f"Here you go:\n{key}\n", "score": 0.5})
        run.write_artifact("logs/provider.log", f"trial 3 printed\n{key}\ndone\n")
        run.write_artifact("reports/extra.html", f"<pre>output: {html.escape(key)}</pre>")
        run.complete({"score": 0.5})
    return run.run_id


@pytest.mark.slow
def test_a_run_holding_a_bare_key_bundles_redacted(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_id = _run_with_key(ws, AWS_EXAMPLE)
    result = build_bundle(ws, [run_id], tmp_path / "b", make_zip=True, issue=True)
    assert result.safe_to_attach and result.zip_path is not None
    blobs = [p.read_bytes() for p in result.output_dir.rglob("*") if p.is_file()]
    blobs.append(result.zip_path.read_bytes())
    with zipfile.ZipFile(result.zip_path) as archive:
        blobs += [archive.read(info) for info in archive.infolist()]
    assert all(AWS_EXAMPLE.encode() not in blob for blob in blobs)
    ledger = {(r["file"], r["rule"]) for r in result.manifest["redactions"]}
    assert (f"runs/{run_id}/logs/provider.log", LEDGER_RULE) in ledger
    assert (f"runs/{run_id}/reports/extra.html", LEDGER_RULE) in ledger
    log = (result.output_dir / "runs" / run_id / "logs" / "provider.log").read_text()
    assert log == "trial 3 printed\n[redacted]\ndone\n"


def _no_redaction(source: str, text: str, rendered: str | None = None, memo: object = None) -> Cleaned:
    return Cleaned(text.encode("utf-8"), [], "text")


@pytest.mark.slow
def test_a_bare_key_the_sanitizer_misses_is_refused_by_the_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    key = SEEDED_KEYS[0]
    run_id = _run_with_key(ws, key)
    monkeypatch.setattr(bundle_module, "clean_file", _no_redaction)  # a redactor blind spot
    out = tmp_path / "b"
    result = CliRunner().invoke(app, ["runs", "bundle", run_id, "-w", str(ws), "--zip", "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert key not in result.output and not out.with_name("b.zip").exists()
    manifest = json.loads((out / "evidence_manifest.json").read_text())
    assert manifest["safe_to_attach"] is False
    assert {"file": f"runs/{run_id}/logs/provider.log", "line": 2, "rule": GATE_RULE} in manifest["gate"][
        "findings"
    ]
    issue = (out / "issue.md").read_text()
    assert "safe_to_attach: `false`" in issue
    assert f"`runs/{run_id}/logs/provider.log`, line 2: check `{GATE_RULE}`" in issue
    assert key not in issue and key not in json.dumps(manifest)
