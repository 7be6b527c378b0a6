"""A bundle carries no digest of an original it holds only redacted: such a digest next to the rest
of the file lets anyone confirm a guessed low-entropy password offline."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.evidence.bundle import build_bundle, verify_bundle_dir
from worldforge.evidence.withhold import WITHHELD, preimage_digests, strip_digests, withhold
from worldforge.workspace import start_run

ZERO = "sha256:" + "0" * 64
PASSWORD = "hunter2"  # a dictionary password: any digest over a file holding it is an oracle
LOG = f"connecting\npassword: {PASSWORD}\ndone\n"


def _all_digest_strings(root: Path) -> set[str]:
    found: set[str] = set()
    for path in root.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            for token in text.replace('"', " ").replace("`", " ").split():
                if token.startswith("sha256:") and len(token) >= 71:
                    found.add(token[:71])
    return found


def _make_run(ws: Path) -> tuple[str, dict[str, str]]:
    record = {"score": 1.0, "reply": f"the admin password: {PASSWORD}"}
    with start_run(ws, "evaluation", ["worldforge", "eval"], {"suite": "planning"}) as run:
        run.add_input_value("suite", {"id": "planning"})
        run.emit("provider.event", {"message": f"retrying with password: {PASSWORD}"})
        run.record_item("planning/a", ZERO, record)
        run.record_item("planning/b", ZERO, {"score": 0.5, "reply": "nothing secret"})
        run.write_artifact("logs/provider.log", LOG, "text/plain")
        run.write_artifact("logs/clean.log", "all fine\n", "text/plain")
        run.complete({"passed": 2}, claim_boundary="contract check only")
    run_dir = next((ws / "runs").iterdir())
    oracles = {
        "log": digest_bytes(LOG.encode()),
        "record": digest_payload(record),
        "clean": digest_bytes(b"all fine\n"),
    }
    item = next(p for p in (run_dir / "items").iterdir() if "planning-a" in p.name or "a." in p.name)
    oracles["item_file"] = digest_bytes(item.read_bytes())
    return run.run_id, oracles


def test_no_digest_of_a_redacted_original_leaves_the_machine(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    run_id, oracles = _make_run(ws)
    run_dir = ws / "runs" / run_id
    events = (run_dir / "events.jsonl").read_bytes().split(b"\n")
    result = build_bundle(ws, [run_id], tmp_path / "bundle", make_zip=True)
    out = result.output_dir
    blob = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert PASSWORD.encode() not in blob
    present = _all_digest_strings(out)
    for name in ("log", "record"):
        assert oracles[name] not in present, name
    # The chain link after a redacted event line and every later one hash that line transitively.
    redacted_lines = [i for i, line in enumerate(events) if PASSWORD.encode() in line]
    for line in events[redacted_lines[0] :]:
        if line:
            assert digest_bytes(line) not in present
    # Digests of what the bundle holds unchanged stay: they are evidence.
    assert oracles["clean"] in present
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert manifest["result_digest"] in present and manifest["input_digest"] in present
    records = {f["path"]: f for f in result.manifest["files"]}
    assert records[f"runs/{run_id}/logs/provider.log"]["source_sha256"] == WITHHELD
    assert records[f"runs/{run_id}/logs/clean.log"]["source_sha256"] == oracles["clean"]
    assert result.safe_to_attach and result.zip_path is not None
    assert verify_bundle_dir(out).ok


def test_a_bundle_without_redactions_keeps_every_digest(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with start_run(ws, "evaluation", ["worldforge", "eval"], {"suite": "planning"}) as run:
        run.record_item("planning/a", ZERO, {"score": 1.0})
        run.write_artifact("logs/clean.log", "all fine\n", "text/plain")
        run.complete({"passed": 1}, claim_boundary="contract check only")
    result = build_bundle(ws, [run.run_id], tmp_path / "bundle")
    assert WITHHELD.encode() not in b"".join(
        p.read_bytes() for p in result.output_dir.rglob("*") if p.is_file()
    )
    for record in result.manifest["files"]:
        if record["included"]:
            assert record["source_sha256"] == record["sha256"]
    assert verify_bundle_dir(result.output_dir).ok


def test_chain_digests_are_withheld_from_the_first_changed_line_on() -> None:
    source = b"a\nb\nc\nd\n"
    bundled = b"a\nB\nc\nd\n"
    found = preimage_digests("runs/x/events.jsonl", source, bundled)
    assert found == {digest_bytes(source), *(digest_bytes(x) for x in (b"b", b"c", b"d"))}
    assert digest_bytes(b"a") not in found
    assert preimage_digests("runs/x/events.jsonl", source, source) == set()


def test_withholding_reaches_a_fixed_point_across_files() -> None:
    secret_file = b"token: [redacted]\n"
    original = b"token: hunter2\n"
    index = f'{{"file": "{digest_bytes(original)}"}}\n'.encode()
    outer = f'{{"index": "{digest_bytes(index)}"}}\n'.encode()
    sources = {"a.txt": original, "index.json": index, "outer.json": outer}
    written = {"a.txt": secret_file, "index.json": index, "outer.json": outer}
    changes, withheld = withhold(sources, written)
    # index.json changed only because a.txt's digest left it; its own digest is withheld in turn,
    # which changes outer.json, whose digest goes too.
    assert withheld == {digest_bytes(original), digest_bytes(index), digest_bytes(outer)}
    assert WITHHELD.encode() in changes["index.json"] and WITHHELD.encode() in changes["outer.json"]
    assert "a.txt" not in changes


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.sampled_from(["", "sha256:"]))
def test_strip_digests_takes_out_exactly_the_withheld_ones(noise: bytes, prefix: str) -> None:
    keep, drop = digest_bytes(b"keep"), digest_bytes(b"drop")
    text = noise + f" {prefix}{drop.removeprefix('sha256:')} {keep} ".encode() + noise
    out = strip_digests(text, {drop})
    assert drop.removeprefix("sha256:").encode() not in out
    assert keep.encode() in out
    assert strip_digests(text, set()) == text
