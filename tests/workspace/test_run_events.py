"""Typed framework events: every model round-trips its payload exactly, and bad payloads are named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge.core.canonical import canonical_json
from worldforge.core.errors import WorldForgeError
from worldforge.core.run_events import (
    EVENT_MODELS,
    GatewayExchange,
    ItemCompleted,
    RunFailed,
    RunResumed,
    RunStatus,
    parse_event,
)
from worldforge.workspace import start_run
from worldforge.workspace.records import RunManifest, schema_version_problem
from worldforge.workspace.verify import verify_run

FIXTURE = Path(__file__).parents[1] / "fixtures" / "workspace-v1"

_text = st.text(max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "argv": st.lists(_text, max_size=4),
    "request": st.dictionaries(_text, _json, max_size=3),
    "response": st.dictionaries(_text, _json, max_size=3),
    "error": st.dictionaries(_text, _json, max_size=3),
    "budget": st.dictionaries(_text, _json, max_size=3),
    "status": st.sampled_from([s.value for s in RunStatus]),
    "previous_status": st.sampled_from([s.value for s in RunStatus]),
    "duration_ms": st.floats(0, 1e6, allow_nan=False),
    "altered": st.booleans(),
    "after_trial_end": st.booleans(),
}
_INTS = {"attempt", "reused_items", "repaired_bytes", "item_count", "size", "items", "index"}


def _payloads(event_type: str) -> st.SearchStrategy[dict[str, Any]]:
    """Payloads of one event type: every required field, and any subset of the optional ones."""
    from dataclasses import fields

    model = EVENT_MODELS[event_type]
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for f in fields(model):
        value = _FIELD_VALUES.get(f.name, st.integers(0, 10**9) if f.name in _INTS else _text)
        (optional if f.default is None else required)[f.name] = value
    return st.fixed_dictionaries(required, optional=optional)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("event_type", sorted(EVENT_MODELS))
def test_property_every_event_model_round_trips_its_payload(event_type: str, data: st.DataObject) -> None:
    payload = data.draw(_payloads(event_type))
    event = parse_event(event_type, payload)
    assert event is not None and event.TYPE == event_type
    assert event.to_dict() == payload
    assert canonical_json(event.to_dict()) == canonical_json(payload)


def _framework_lines(run_dir: Path) -> list[tuple[bytes, dict[str, Any]]]:
    lines = (run_dir / "events.jsonl").read_bytes().splitlines()
    return [(raw, json.loads(raw)) for raw in lines if json.loads(raw)["type"] in EVENT_MODELS]


def test_events_written_before_the_models_existed_read_back_byte_for_byte() -> None:
    """The fixture's logs were written by the code before these models: every framework event in
    them parses, and the line rebuilt from the model's payload has the very same bytes."""
    seen: set[str] = set()
    for run_dir in sorted((FIXTURE / "runs").iterdir()):
        for raw, line in _framework_lines(run_dir):
            event = parse_event(line["type"], line["payload"])
            assert event is not None
            assert canonical_json({**line, "payload": event.to_dict()}) == raw
            seen.add(line["type"])
    assert {"run.started", "run.finished", "run.failed", "item.completed", "artifact.written"} <= seen
    assert {"gateway.exchange", "suite.started", "suite.finished", "stage.started", "stage.finished"} <= seen


def test_a_resumed_run_logs_typed_lifecycle_events(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        with start_run(tmp_path, kind="evaluation", argv=["worldforge", "x"], config={}) as run:
            run.record_item("one", "sha256:" + "0" * 64, {"v": 1})
            raise RuntimeError("stop")
    with start_run(tmp_path, "evaluation", ["worldforge", "x"], {}, resume_run_id=run.run_id) as again:
        again.complete({"ok": True})
    events = [parse_event(line["type"], line["payload"]) for _, line in _framework_lines(again.dir)]
    failed = next(e for e in events if isinstance(e, RunFailed))
    resumed = next(e for e in events if isinstance(e, RunResumed))
    assert (failed.status, failed.type, failed.message) == (RunStatus.FAILED, "RuntimeError", "stop")
    assert (resumed.attempt, resumed.previous_status, resumed.reused_items) == (1, RunStatus.FAILED, 1)
    assert sum(isinstance(e, ItemCompleted) for e in events) == 1
    assert verify_run(again.dir).ok


def test_bad_framework_payloads_are_named_and_other_events_are_left_alone() -> None:
    good = {"item_id": "a", "input_digest": "x", "record_digest": "y", "path": "p", "sha256": "z", "size": 1}
    with pytest.raises(WorldForgeError, match="item.completed: field 'size' is missing"):
        ItemCompleted.from_dict({k: v for k, v in good.items() if k != "size"})
    with pytest.raises(WorldForgeError, match="field 'size' has the wrong type"):
        ItemCompleted.from_dict({**good, "size": True})
    with pytest.raises(WorldForgeError, match="unknown field 'extra'"):
        ItemCompleted.from_dict({**good, "extra": 1})
    with pytest.raises(WorldForgeError, match="field 'status' has the wrong type"):
        RunFailed.from_dict({"status": "paused", "type": "E", "message": "m"})
    assert parse_event("provider.event", {"anything": 1}) is None
    recorded = {"request": {"n": 1}, "request_digest": "d"}
    exchange = GatewayExchange.of("item", 0, "model", recorded, duration_ms=1.5)
    assert exchange.to_dict() == {
        "item_id": "item",
        "index": 0,
        "source": "model",
        "request": {"n": 1},
        "request_digest": "d",
        "duration_ms": 1.5,
    }


def test_one_schema_version_rule_for_the_reader_and_for_verify(tmp_path: Path) -> None:
    with start_run(tmp_path, kind="evaluation", argv=["worldforge", "x"], config={}) as run:
        run.complete({})
    assert schema_version_problem(1) is None
    for version in (2, 0, "1", True, None):
        problem = schema_version_problem(version)
        assert problem is not None
        with pytest.raises(WorldForgeError) as refused:
            RunManifest.from_dict({**run.manifest, "schema_version": version}, source="m.json")
        assert str(refused.value) == f"m.json: {problem}."
        (run.dir / "run_manifest.json").write_text(json.dumps({**run.manifest, "schema_version": version}))
        report = verify_run(run.dir)
        assert [(p.code, p.message) for p in report.problems] == [("schema-version", problem)]
