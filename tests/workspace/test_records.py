"""Typed run records: the manifest and item files round-trip byte for byte, and bad ones are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from worldforge.cli.app import app
from worldforge.core.canonical import pretty_json
from worldforge.core.errors import WorldForgeError
from worldforge.workspace import start_run
from worldforge.workspace.records import ItemFile, RunManifest, read_item_file, read_item_files

REF = Path(__file__).parents[1] / "fixtures" / "reference-levels"


def _runs(workspace: Path) -> list[Path]:
    return sorted((workspace / "runs").iterdir())


def _round_trips(run_dir: Path) -> RunManifest:
    raw = (run_dir / "run_manifest.json").read_text()
    model = RunManifest.from_dict(json.loads(raw))
    assert pretty_json(model.to_dict()) == raw
    for item in sorted((run_dir / "items").glob("*.json")):
        body = item.read_text()
        assert pretty_json(ItemFile.from_dict(json.loads(body)).to_dict()) == body
    return model


def test_manifests_of_every_kind_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in (
        ["eval", "--suite", "planning", "--provider", "mock"],
        ["eval", "--suite", "science-birds", "--provider", "mock", "--characters", "B", "--trials", "2"],
        ["pcg", "convert", str(REF / "result_22.program.txt")],
        ["pcg", "simulate", str(REF / "result_22.xml")],
    ):
        result = runner.invoke(app, [*args, "--run-workspace", "ws"])
        assert result.exit_code == 0, result.output
    models = [_round_trips(run) for run in _runs(tmp_path / "ws")]
    assert [m.kind for m in models] == ["evaluation", "evaluation", "pcg-convert", "pcg-simulate"]
    assert all(m.status == "completed" and m.result_digest and m.items is not None for m in models)
    assert models[1].items is not None and models[1].items.count == 4  # two programs x two trials


def test_failed_and_resumed_manifests_round_trip(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        with start_run(tmp_path, kind="evaluation", argv=["worldforge", "x"], config={"a": 1}) as run:
            run.record_item("one", "sha256:" + "0" * 64, {"v": 1})
            raise RuntimeError("disk on fire")
    (run_dir,) = _runs(tmp_path)
    failed = _round_trips(run_dir)
    assert failed.status == "failed" and failed.error is not None
    assert (failed.error.type, failed.error.message) == ("RuntimeError", "disk on fire")
    with start_run(
        tmp_path, kind="evaluation", argv=["worldforge", "x"], config={"a": 1}, resume_run_id=run.run_id
    ) as run:
        assert run.completed_items() == {"one": {"v": 1}}
        run.complete({"ok": True})
    resumed = _round_trips(run_dir)
    assert resumed.status == "completed" and resumed.error is None and resumed.resume_count == 1
    assert run.record.result_digest == resumed.result_digest


def test_unknown_schema_and_missing_fields_are_named(tmp_path: Path) -> None:
    with start_run(tmp_path, kind="evaluation", argv=["worldforge", "x"], config={}) as run:
        run.complete({})
    data = run.manifest
    with pytest.raises(WorldForgeError, match="schema_version 2 is newer"):
        RunManifest.from_dict({**data, "schema_version": 2})
    with pytest.raises(WorldForgeError, match=r"m\.json: field 'config_digest' is missing"):
        RunManifest.from_dict({k: v for k, v in data.items() if k != "config_digest"}, source="m.json")
    with pytest.raises(WorldForgeError, match="field 'record' is missing"):
        ItemFile.from_dict({"item_id": "a", "input_digest": "x", "record_digest": "y"})


def test_entries_and_environment_of_another_shape_are_named(tmp_path: Path) -> None:
    with start_run(tmp_path, kind="evaluation", argv=["worldforge", "x"], config={}) as run:
        run.add_input_value("suite", {"id": "planning"})
        run.complete({})
    data = run.manifest
    no_digest = [{k: v for k, v in data["inputs"][0].items() if k != "digest"}]
    with pytest.raises(WorldForgeError, match=r"m\.json: inputs\[0\]: field 'digest' is missing or not str"):
        RunManifest.from_dict({**data, "inputs": no_digest}, source="m.json")
    bad_git = {**data["environment"], "git": {"commit": 7, "dirty": False}}
    with pytest.raises(WorldForgeError, match=r"field 'environment\.git\.commit' is neither str nor null"):
        RunManifest.from_dict({**data, "environment": bad_git}, source="m.json")
    with pytest.raises(WorldForgeError, match=r"field 'dataset_manifests' is not a list of objects"):
        RunManifest.from_dict({**data, "dataset_manifests": ["levels.json"]}, source="m.json")


def test_item_files_are_read_by_id_and_a_broken_one_is_skipped(tmp_path: Path) -> None:
    with start_run(tmp_path, kind="evaluation", argv=["worldforge", "x"], config={}) as run:
        for name in ("a", "b", "c"):
            run.record_item(name, "sha256:" + "0" * 64, {"v": name})
        run.complete({})
    paths = sorted((run.dir / "items").glob("*.json"))
    paths[0].write_text("{not json", encoding="utf-8")
    body = json.loads(paths[1].read_text(encoding="utf-8"))
    paths[1].write_text(json.dumps({k: v for k, v in body.items() if k != "record_digest"}), encoding="utf-8")
    kept = {json.loads(p.read_text())["item_id"] for p in paths[2:]}
    items = read_item_files(run.dir)
    assert set(items) == kept and len(kept) == 1
    assert [item.record for item in items.values()] == [{"v": next(iter(kept))}]
    with pytest.raises(WorldForgeError, match=r"unreadable \(JSONDecodeError\)"):
        read_item_file(paths[0])
    with pytest.raises(WorldForgeError, match="field 'record_digest' is missing"):
        read_item_file(paths[1])
