"""Run workspaces: layout, manifest schema, independent digest recomputation, event chain, locks,
failure/interrupt states, resume (including after ``kill -9``), concurrency, diff and prune."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge.core.errors import WorldForgeError
from worldforge.workspace import (
    RunLock,
    apply_prune,
    diff_runs,
    list_runs,
    load_manifest,
    plan_prune,
    start_run,
    verify_run,
)
from worldforge.workspace.ids import RUN_ID_RE, new_run_id, run_id_time

REPO = Path(__file__).resolve().parents[2]
ZERO = "sha256:" + "0" * 64


def sha_bytes(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sha_json(value: Any) -> str:
    return sha_bytes(rfc8785.dumps(value))


def make_run(ws: Path, provider: str = "mock", items: int = 3, **config: Any) -> Path:
    with start_run(
        ws, "evaluation", ["worldforge", "eval", "--provider", provider], {"providers": [provider], **config}
    ) as run:
        run.add_input_value("suite", {"id": "planning", "version": "planning:1"})
        for i in range(items):
            run.record_item(
                f"planning/{i}",
                sha_json({"i": i}),
                {
                    "score": i / 2,
                    "stages": {"plan": {"digest": sha_json([i]), "input_digest": sha_json({"i": i})}},
                },
            )
        run.write_artifact("reports/report.md", "# report\n", "text/markdown")
        run.complete({"scores": [i / 2 for i in range(items)]}, claim_boundary="contract check only")
    return run.dir


def test_run_id_format_and_order() -> None:
    a = new_run_id(datetime(2026, 1, 1, 12, 0, 0, 5000, tzinfo=UTC))
    b = new_run_id(datetime(2026, 1, 1, 12, 0, 0, 6000, tzinfo=UTC))
    assert RUN_ID_RE.match(a) and a.startswith("20260101T120000.005Z-")
    assert a < b
    assert len(a.split("-")[1]) == 12  # 48 random bits
    assert run_id_time(a) == datetime(2026, 1, 1, 12, 0, 0, 5000, tzinfo=UTC)
    assert len({new_run_id() for _ in range(2000)}) == 2000


def test_layout_manifest_schema_and_independent_digests(tmp_path: Path) -> None:
    fixture = tmp_path / "prompt.txt"
    fixture.write_bytes(b"build a tower\n")
    with start_run(
        tmp_path / "ws",
        "evaluation",
        ["worldforge", "eval", "--suite", "planning"],
        {"suite": "planning", "providers": ["mock"]},
    ) as run:
        file_digest = run.add_input_file("program:zero-shot/prompts/0.txt", fixture)
        value_digest = run.add_input_value("suite", {"id": "planning"})
        run.add_dataset_refs([{"id": "mock-fixtures", "sha256": ZERO, "entry_count": 1}])
        run.emit("stage.started", {"stage": "eval"})
        run.record_item("planning/object-relocation", ZERO, {"score": 1.0, "passed": True})
        run.write_artifact("reports/report.json", '{"ok": true}\n', "application/json")
        result_digest = run.complete({"passed": 1, "failed": 0}, claim_boundary="not a quality claim")
    run_dir = run.dir
    assert run_dir.parent == tmp_path / "ws" / "runs"
    manifest = json.loads((run_dir / "run_manifest.json").read_text())
    assert set(manifest) >= {
        "schema_version",
        "run_id",
        "kind",
        "status",
        "argv",
        "worldforge_version",
        "environment",
        "inputs",
        "dataset_manifests",
        "input_digest",
        "result_digest",
        "artifacts",
        "event_count",
        "claim_boundary",
    }
    assert manifest["schema_version"] == 1 and manifest["status"] == "completed"
    assert manifest["argv"] == ["worldforge", "eval", "--suite", "planning"]
    assert manifest["claim_boundary"] == "not a quality claim"
    # Independent recomputation with hashlib + rfc8785 only.
    assert file_digest == sha_bytes(b"build a tower\n")
    assert value_digest == sha_json({"id": "planning"})
    assert result_digest == manifest["result_digest"] == sha_json({"passed": 1, "failed": 0})
    assert manifest["input_digest"] == sha_json(
        {
            "kind": "evaluation",
            "config": {"suite": "planning", "providers": ["mock"]},
            "inputs": [
                {"name": "program:zero-shot/prompts/0.txt", "digest": file_digest},
                {"name": "suite", "digest": value_digest},
            ],
            "dataset_manifests": [ZERO],
        }
    )
    for entry in manifest["artifacts"]:
        data = (run_dir / entry["path"]).read_bytes()
        assert entry["sha256"] == sha_bytes(data) and entry["size"] == len(data)
    assert {a["path"] for a in manifest["artifacts"]} >= {"reports/report.json", "results/result.json"}
    # No absolute host paths anywhere in the manifest.
    text = (run_dir / "run_manifest.json").read_text()
    assert str(tmp_path) not in text and "/tmp/" not in text
    assert [e["path"] for e in manifest["inputs"] if e["kind"] == "file"] == ["<external>/prompt.txt"]
    # Event chain: canonical lines, seq, prev = sha256 of the previous line.
    lines = (run_dir / "events.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""
    events = [json.loads(line) for line in lines[:-1]]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "run.started" and events[-1]["type"] == "run.finished"
    assert events[0]["prev"] is None
    for previous, line, event in zip(lines, lines[1:-1], events[1:], strict=False):
        assert event["prev"] == sha_bytes(previous)
        assert rfc8785.dumps(event) == line
    assert manifest["event_count"] == len(events)
    assert {"item.completed", "artifact.written", "stage.started"} <= {e["type"] for e in events}
    report = verify_run(run_dir)
    assert report.ok, report.to_dict()


def test_provider_events_reach_the_log(tmp_path: Path) -> None:
    from worldforge.providers.events import ProviderEvent

    with start_run(tmp_path, "evaluation", ["worldforge"], {}) as run:
        run.event_sink(
            ProviderEvent(
                provider="mock", operation="predict", phase="success", message="ok token=abcdef123456"
            )
        )
        run.complete({})
    events = [json.loads(x) for x in (run.dir / "events.jsonl").read_text().splitlines()]
    provider = [e for e in events if e["type"] == "provider.event"]
    assert provider[0]["payload"]["provider"] == "mock"
    assert "abcdef123456" not in (run.dir / "events.jsonl").read_text()


def test_exception_marks_failed_and_keyboard_interrupt_marks_interrupted(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), start_run(tmp_path, "evaluation", ["worldforge"], {}) as run:
        raise RuntimeError("boom at /home/alice/x")
    manifest = load_manifest(run.dir)
    assert manifest["status"] == "failed" and manifest["error"]["type"] == "RuntimeError"
    assert "alice" not in json.dumps(manifest)
    assert verify_run(run.dir).ok
    with pytest.raises(KeyboardInterrupt), start_run(tmp_path, "evaluation", ["worldforge"], {}) as run2:
        raise KeyboardInterrupt
    assert load_manifest(run2.dir)["status"] == "interrupted"
    last = json.loads((run2.dir / "events.jsonl").read_text().splitlines()[-1])
    assert last["type"] == "run.failed" and last["payload"]["status"] == "interrupted"
    with start_run(tmp_path, "evaluation", ["worldforge"], {}) as run3:
        pass  # never completed
    assert load_manifest(run3.dir)["status"] == "failed"


def test_lock_blocks_second_writer(tmp_path: Path) -> None:
    with start_run(tmp_path, "evaluation", ["worldforge"], {}) as run:
        assert RunLock.is_locked(run.dir)
        with pytest.raises(WorldForgeError, match="being written by another process"):
            RunLock(run.dir)
        report = verify_run(run.dir)
        assert [p.code for p in report.problems] == ["run-in-progress"]
        run.complete({})
    assert not RunLock.is_locked(run.dir)


def test_verify_detects_flipped_byte_truncation_and_edits(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    assert verify_run(run_dir).ok
    report_path = run_dir / "reports" / "report.md"
    original = report_path.read_bytes()
    report_path.write_bytes(bytes([original[0] ^ 1]) + original[1:])
    assert [p.code for p in verify_run(run_dir).problems] == ["artifact-digest-mismatch"]
    report_path.write_bytes(original)
    events = run_dir / "events.jsonl"
    data = events.read_bytes()
    events.write_bytes(data[:-20])
    codes = {p.code for p in verify_run(run_dir).problems}
    assert "truncated-line" in codes and "missing-terminal-event" in codes
    lines = data.split(b"\n")
    lines[2] = lines[2].replace(b'"seq":3', b'"seq":3 ')
    events.write_bytes(b"\n".join(lines))
    assert "event-chain" in {p.code for p in verify_run(run_dir).problems}
    events.write_bytes(data)
    result = run_dir / "results" / "result.json"
    result.write_text('{"scores": [9]}\n')
    codes = {p.code for p in verify_run(run_dir).problems}
    assert {"artifact-digest-mismatch", "result-digest-mismatch"} <= codes


def test_resume_reuses_items_and_matches_uninterrupted_digest(tmp_path: Path) -> None:
    reference = make_run(tmp_path / "ref", items=4)
    ws = tmp_path / "ws"
    argv = ["worldforge", "eval", "--provider", "mock"]
    with pytest.raises(KeyboardInterrupt), start_run(ws, "evaluation", argv, {"providers": ["mock"]}) as run:
        run.add_input_value("suite", {"id": "planning", "version": "planning:1"})
        for i in range(2):
            run.record_item(
                f"planning/{i}",
                sha_json({"i": i}),
                {
                    "score": i / 2,
                    "stages": {"plan": {"digest": sha_json([i]), "input_digest": sha_json({"i": i})}},
                },
            )
        raise KeyboardInterrupt
    run_id = run.run_id
    assert verify_run(run.dir).status == "interrupted"
    computed = []
    with start_run(ws, "evaluation", argv, {"providers": ["mock"]}, resume_run_id=run_id) as resumed:
        resumed.add_input_value("suite", {"id": "planning", "version": "planning:1"})
        done = resumed.completed_items()
        assert sorted(done) == ["planning/0", "planning/1"]
        for i in range(4):
            if f"planning/{i}" in done:
                continue
            computed.append(i)
            resumed.record_item(
                f"planning/{i}",
                sha_json({"i": i}),
                {
                    "score": i / 2,
                    "stages": {"plan": {"digest": sha_json([i]), "input_digest": sha_json({"i": i})}},
                },
            )
        resumed.write_artifact("reports/report.md", "# report\n", "text/markdown")
        resumed.complete({"scores": [i / 2 for i in range(4)]}, claim_boundary="contract check only")
    assert computed == [2, 3]
    assert resumed.dir == run.dir
    manifest = load_manifest(run.dir)
    assert manifest["status"] == "completed" and manifest["resume_count"] == 1
    assert manifest["result_digest"] == load_manifest(reference)["result_digest"]
    assert manifest["items"] == load_manifest(reference)["items"]
    types = [json.loads(x)["type"] for x in (run.dir / "events.jsonl").read_text().splitlines()]
    assert "run.resumed" in types and types[-1] == "run.finished"
    assert verify_run(run.dir).ok, verify_run(run.dir).to_dict()
    assert diff_runs(reference, run.dir)["identical_results"] is True


def test_resume_refuses_drift_and_completed_runs(tmp_path: Path) -> None:
    argv = ["worldforge", "eval"]
    with pytest.raises(RuntimeError), start_run(tmp_path, "evaluation", argv, {"providers": ["mock"]}) as run:
        run.add_input_value("suite", {"id": "planning"})
        raise RuntimeError("x")
    with (
        pytest.raises(WorldForgeError, match="input 'suite' changed"),
        start_run(tmp_path, "evaluation", argv, {"providers": ["mock"]}, resume_run_id=run.run_id) as again,
    ):
        again.add_input_value("suite", {"id": "planning-v2"})
    with (
        pytest.raises(WorldForgeError, match="configuration changed"),
        start_run(tmp_path, "evaluation", argv, {"providers": ["other"]}, resume_run_id=run.run_id),
    ):
        pass
    done = make_run(tmp_path)
    with (
        pytest.raises(WorldForgeError, match="already completed"),
        start_run(tmp_path, "evaluation", argv, {"providers": ["mock"]}, resume_run_id=done.name),
    ):
        pass


DRIVER = textwrap.dedent(
    """
    import hashlib, json, sys, time
    from worldforge.workspace import start_run
    ws, n, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    resume = sys.argv[4] if len(sys.argv) > 4 else None
    def d(v): return "sha256:" + hashlib.sha256(json.dumps(v).encode()).hexdigest()
    with start_run(ws, "evaluation", ["driver", ws], {"n": n}, resume_run_id=resume) as run:
        print(run.run_id, flush=True)
        run.add_input_value("n", n)
        done = run.completed_items()
        for i in range(n):
            if f"item-{i}" in done:
                continue
            time.sleep(delay)
            run.record_item(f"item-{i}", d(i), {"value": i * i})
        run.complete({"values": [i * i for i in range(n)]})
    """
)


def _driver(tmp_path: Path) -> Path:
    path = tmp_path / "driver.py"
    path.write_text(DRIVER)
    return path


def test_kill_minus_nine_then_verify_and_resume(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ws = tmp_path / "ws"
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(ws), "40", "0.05"], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    run_dir = ws / "runs" / run_id
    deadline = time.time() + 30
    while time.time() < deadline and len(list((run_dir / "items").glob("*.json"))) < 5:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    report = verify_run(run_dir)
    assert report.status == "interrupted"
    assert "missing-terminal-event" in {p.code for p in report.problems}
    assert list_runs(ws)[0]["status"] == "interrupted"
    # the manifest was last written at start; listings count what the killed run left on disk
    on_disk = len(list((run_dir / "items").glob("*.json")))
    assert on_disk >= 5 and list_runs(ws)[0]["item_count"] == on_disk
    assert list_runs(ws)[0]["event_count"] == (run_dir / "events.jsonl").read_bytes().count(b"\n") > on_disk
    out = subprocess.run(
        [sys.executable, str(driver), str(ws), "40", "0", run_id],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert out.stdout.strip() == run_id
    clean = subprocess.run(
        [sys.executable, str(driver), str(tmp_path / "clean"), "40", "0"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    clean_dir = tmp_path / "clean" / "runs" / clean.stdout.strip()
    assert verify_run(run_dir).ok, verify_run(run_dir).to_dict()
    assert load_manifest(run_dir)["result_digest"] == load_manifest(clean_dir)["result_digest"]
    assert load_manifest(run_dir)["items"] == load_manifest(clean_dir)["items"]


def test_eight_concurrent_runs_share_one_workspace(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ws = tmp_path / "ws"
    procs = [
        subprocess.Popen(
            [sys.executable, str(driver), str(ws), "15", "0"], stdout=subprocess.PIPE, text=True, env=env
        )
        for _ in range(8)
    ]
    ids = [p.communicate()[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(ids)) == 8
    rows = list_runs(ws)
    assert len(rows) == 8 and {r["status"] for r in rows} == {"completed"}
    for run_id in ids:
        assert verify_run(ws / "runs" / run_id).ok
    assert len({r["result_digest"] for r in rows}) == 1


def test_diff_identical_provider_change_and_stage_reason(tmp_path: Path) -> None:
    a = make_run(tmp_path)
    b = make_run(tmp_path)
    same = diff_runs(a, b)
    assert same["identical_results"] is True and same["change_count"] == 0
    assert diff_runs(a, b, include_all=True)["changes"]
    c = make_run(tmp_path, provider="other", items=3)
    changed = diff_runs(a, c)
    assert changed["identical_results"] is True  # same items and results: provider did not matter
    assert "provider-changed" in changed["reasons"]

    def staged(ws: Path, plan_digest: str, score_digest: str, score_version: str = "1") -> Path:
        with start_run(ws, "evaluation", ["w"], {"providers": ["mock"]}) as run:
            run.record_item(
                "level-1",
                ZERO,
                {
                    "stages": {
                        "plan": {"digest": plan_digest},
                        "score": {"digest": score_digest, "version": score_version},
                    }
                },
            )
            run.complete({"score": score_digest})
        return run.dir

    x = staged(tmp_path, sha_json(1), sha_json(2))
    y = staged(tmp_path, sha_json(1), sha_json(3))
    result = diff_runs(x, y)
    stage_changes = [ch for ch in result["changes"] if ch["section"] == "stages"]
    assert [(ch["path"], ch["reason"]) for ch in stage_changes] == [
        ("items/level-1/stages/score", "same-inputs-different-results")
    ]
    assert result["identical_results"] is False
    assert result["changes"][-1]["reason"] == "same-inputs-different-results"
    z = staged(tmp_path, sha_json(9), sha_json(4), score_version="2")
    stage_changes = [
        (ch["path"], ch["reason"]) for ch in diff_runs(y, z)["changes"] if ch["section"] == "stages"
    ]
    assert stage_changes == [
        ("items/level-1/stages/plan", "same-inputs-different-results"),
        ("items/level-1/stages/score", "code-version-changed"),
    ]


def test_diff_names_the_first_pipeline_stage_that_changed(tmp_path: Path) -> None:
    """Records are stored with sorted keys; the diff still walks the level pipeline in run order, so
    a changed generation is the cause and everything after it is downstream."""
    pipeline = ("generate", "extract", "convert", "simulate", "render", "classify")

    def run_with(seed: int, order: list[str] | None = None) -> Path:
        stages = {n: {"digest": sha_json([n, seed]), "input_digest": sha_json([n, seed])} for n in pipeline}
        record: dict[str, Any] = {"stages": stages, **({"stage_order": order} if order else {})}
        with start_run(tmp_path / "ws", "evaluation", ["w"], {"providers": ["mock"]}) as run:
            run.record_item("A/0", ZERO, record)
            run.complete({"seed": seed})
        return run.dir

    changes = diff_runs(run_with(42), run_with(43))["changes"]
    stage_changes = [
        (ch["path"].rsplit("/", 1)[1], ch["reason"]) for ch in changes if ch["section"] == "stages"
    ]
    assert stage_changes[0][0] == "generate" and stage_changes[0][1] != "upstream-stage-changed"
    assert [name for name, _ in stage_changes] == list(pipeline)
    assert {reason for _, reason in stage_changes[1:]} == {"upstream-stage-changed"}
    # an explicit order in the record wins over the built-in one
    custom = ["render", "classify", "generate", "extract", "convert", "simulate"]
    changes = diff_runs(run_with(1, custom), run_with(2, custom))["changes"]
    assert [ch["path"].rsplit("/", 1)[1] for ch in changes if ch["section"] == "stages"] == custom


def _identity_run(ws: Path, model: str, calls: int) -> Path:
    """A run whose provider identity is ``model``; ``calls`` provider events (0 = all cached)."""
    from worldforge.providers.events import ProviderEvent

    with start_run(ws, "evaluation", ["w"], {"providers": ["mock"]}) as run:
        run.add_input_value("evaluation", {"providers": ["mock"], "models": {"mock": {"model": model}}})
        for _ in range(calls):
            run.event_sink(ProviderEvent(provider="mock", operation="generate", phase="success"))
        run.record_item("level-1", ZERO, {"stages": {"generate": {"digest": sha_json(1)}}})
        run.complete({"score": 1})
    return run.dir


def test_diff_provider_change_comes_from_identity_not_event_counts(tmp_path: Path) -> None:
    # A rerun served from the stage cache calls no provider: not a provider change.
    fresh, cached = _identity_run(tmp_path, "v1", calls=3), _identity_run(tmp_path, "v1", calls=0)
    rerun = diff_runs(fresh, cached)
    assert rerun["identical_results"] is True and rerun["causes"] == []
    assert "provider-changed" not in rerun["reasons"]
    events = [ch for ch in rerun["changes"] if ch["path"] == "provider events"]
    assert events == [
        {
            "section": "providers",
            "path": "provider events",
            "change": "modified",
            "a": {"mock": 3},
            "b": {},
            "reason": "provider-events-differ",
        }
    ]
    # The same name with another model identity is a provider change, even with equal call counts.
    other = diff_runs(fresh, _identity_run(tmp_path, "v2", calls=3))
    assert other["causes"][0] == "provider-changed"
    assert [ch["path"] for ch in other["changes"] if ch["reason"] == "provider-changed"] == [
        "provider identity: inputs.evaluation.models",
        "input_digest",
    ]
    assert not any(ch["path"] == "provider events" for ch in other["changes"])


def test_prune_dry_run_and_apply(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    runs = [make_run(ws, items=1) for _ in range(4)]
    future = datetime.now(UTC) + timedelta(days=40)
    plan = plan_prune(ws, max_age_days=30, keep_latest=1, now=future)
    assert [c["action"] for c in plan["candidates"]] == ["keep", "delete", "delete", "delete"]
    assert all(r.exists() for r in runs)  # dry run deletes nothing
    young = plan_prune(ws, max_age_days=30, keep_latest=1)
    assert {c["reason"] for c in young["candidates"][1:]} == {"skip-young (younger than 24 h)"}
    with start_run(ws, "benchmark", ["w"], {}) as live:
        plan = plan_prune(ws, max_age_days=0, keep_latest=0, kinds=("evaluation",))
        assert {c["run_id"]: c["reason"] for c in plan["candidates"]}[live.run_id] == "skip-kind"
        applied = apply_prune(ws, plan)
        live.complete({})
    assert applied["delete_count"] == 4 and not any(r.exists() for r in runs)
    assert live.dir.exists()
    with pytest.raises(WorldForgeError):
        apply_prune(ws, applied)


_CHAIN_RUN: dict[str, Path] = {}


def _chain_run() -> Path:
    """One finished run shared by the property test (examples copy it before tampering)."""
    import tempfile

    if "dir" not in _CHAIN_RUN:
        _CHAIN_RUN["dir"] = make_run(Path(tempfile.mkdtemp(prefix="wf-chain-")), items=2)
    return _CHAIN_RUN["dir"]


@settings(max_examples=60, deadline=None)
@given(position=st.floats(min_value=0, max_value=1, exclude_max=True), bit=st.integers(0, 7))
def test_property_any_flipped_bit_in_the_event_log_is_detected(position: float, bit: int) -> None:
    import shutil
    import tempfile

    source = _chain_run()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / source.name
        shutil.copytree(source, run_dir)
        events = run_dir / "events.jsonl"
        data = bytearray(events.read_bytes())
        index = int(position * len(data))
        data[index] ^= 1 << bit
        events.write_bytes(bytes(data))
        report = verify_run(run_dir)
        assert not report.ok
        assert {p.code for p in report.problems} & {
            "event-chain",
            "truncated-line",
            "missing-terminal-event",
            "event-count-mismatch",
            "status-mismatch",
            "manifest-event-mismatch",
        }


def test_sigterm_marks_interrupted(tmp_path: Path) -> None:
    driver = _driver(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ws = tmp_path / "ws"
    proc = subprocess.Popen(
        [sys.executable, str(driver), str(ws), "200", "0.05"],
        stdout=subprocess.PIPE,
        text=True,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    run_dir = ws / "runs" / run_id
    deadline = time.time() + 30
    while time.time() < deadline and len(list((run_dir / "items").glob("*.json"))) < 2:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    manifest = load_manifest(run_dir)
    assert manifest["status"] == "interrupted"
    last = json.loads((run_dir / "events.jsonl").read_text().splitlines()[-1])
    assert last["type"] == "run.failed" and last["payload"]["status"] == "interrupted"
    assert verify_run(run_dir).ok  # a clean interrupt is a consistent, resumable run


def _manifest_run(ws: Path, **changes: Any) -> Path:
    with start_run(ws, "evaluation", ["w"], {"providers": ["mock"], **changes.get("config", {})}) as run:
        run.add_dataset_refs(changes.get("datasets", [{"id": "levels", "sha256": ZERO}]))
        record = {"cohort_digest": changes.get("cohort", sha_json("cohort-1")), "score": 1}
        run.record_item("level-1", ZERO, record)
        run.complete({"score": changes.get("score", 1)})
    return run.dir


def test_diff_reason_codes_for_datasets_cohorts_code_and_config(tmp_path: Path) -> None:
    base = _manifest_run(tmp_path)
    dataset = _manifest_run(tmp_path, datasets=[{"id": "levels", "sha256": sha_json("v2")}], score=2)
    result = diff_runs(base, dataset)
    assert result["causes"][0] == "dataset-changed" and result["changes"][-1]["reason"] == "dataset-changed"
    cohort = _manifest_run(tmp_path, cohort=sha_json("cohort-2"), score=3)
    reasons = {(ch["path"], ch["reason"]) for ch in diff_runs(base, cohort)["changes"]}
    assert ("items/level-1#cohort_digest", "cohort-changed") in reasons
    config = _manifest_run(tmp_path, config={"trials": 3}, score=4)
    assert diff_runs(base, config)["causes"] == ["config-changed"]
    manifest_path = config / "run_manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["worldforge_version"] = "9.9.9"
    manifest_path.write_text(json.dumps(manifest))
    assert "code-version-changed" in diff_runs(base, config)["causes"]
    same_inputs = _manifest_run(tmp_path, score=5)
    nondeterminism = diff_runs(base, same_inputs)
    assert nondeterminism["changes"][-1]["reason"] == "same-inputs-different-results"


def test_prune_refuses_symlinks_out_of_runs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    make_run(ws, items=1)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    (ws / "runs" / "20000101T000000.000Z-000000000000").symlink_to(outside)
    plan = plan_prune(ws, max_age_days=0, keep_latest=0)
    applied = apply_prune(ws, plan)
    by_id = {c["run_id"]: c for c in applied["candidates"]}
    assert by_id["20000101T000000.000Z-000000000000"]["reason"] == "refused: outside DIR/runs"
    assert (outside / "keep.txt").exists()


def test_verify_reports_added_files_links_and_an_item_swapped_for_a_directory(tmp_path: Path) -> None:
    """What a completed run did not write is named: a stray file, a link to a directory (reported,
    not walked into: its target's files are not the run's) and an item record replaced by a folder."""
    run_dir = make_run(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not part of the run\n")
    (run_dir / "reports" / "extra.md").write_text("added later\n")
    (run_dir / "linked").symlink_to(outside, target_is_directory=True)
    problems = {(p.code, p.path) for p in verify_run(run_dir).problems}
    assert problems == {("unindexed-file", "reports/extra.md"), ("unindexed-file", "linked")}
    (run_dir / "reports" / "extra.md").unlink()
    (run_dir / "linked").unlink()
    item = next((run_dir / "items").glob("*.json"))
    item.unlink()
    item.mkdir()
    codes = {p.code for p in verify_run(run_dir).problems}
    assert "artifact-missing" in codes and "items-digest-mismatch" in codes
