"""Benchmark presets, metrics, the budget gate and the CLI (exit 1 on violation, run workspaces)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from worldforge.benchmark import (
    evaluate_budget,
    list_presets,
    load_preset,
    percentile,
    run_pcg,
    run_providers,
)
from worldforge.benchmark.harness import result_payload
from worldforge.benchmark.presets import parse_budget, parse_preset
from worldforge.cli.app import app
from worldforge.core.errors import WorldForgeError
from worldforge.workspace import load_manifest, verify_run

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_percentile_linear_interpolation() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([10.0, 20.0, 30.0, 40.0, 50.0], 0.95) == pytest.approx(48.0)
    assert percentile([3.0, 1.0, 2.0], 0.0) == 1.0


def test_presets_listed_and_valid() -> None:
    names = [p["name"] for p in list_presets()]
    assert {"mock-smoke", "pcg-pipeline"} <= set(names)
    assert all("error" not in p for p in list_presets())
    smoke = load_preset("mock-smoke")
    assert smoke.harness == "providers" and smoke.providers == ("mock",) and smoke.iterations == 5
    assert load_preset(str(REPO / "presets" / "pcg-pipeline.yaml")).harness == "pcg-pipeline"
    with pytest.raises(WorldForgeError, match="unknown preset 'nope'"):
        load_preset("nope")


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"iterationz": 3}, "iterationz: unknown key"),
        ({"harness": "gpu"}, "harness: 'gpu' is not one of"),
        ({"operations": ["teleport"]}, "operations: each must be one of"),
        ({"iterations": 0}, "iterations: expected an integer in \\[1, 100000\\]"),
        ({"budget": [{"provider": "mock"}]}, r"budget\[0\]: needs at least one threshold"),
        ({"budget": [{"max_p99_latency_ms": 1}]}, r"budget\[0\]\.max_p99_latency_ms: unknown budget key"),
        ({"budget": [{"min_success_rate": 2}]}, "within"),
    ],
)
def test_preset_validation(patch: dict[str, object], message: str) -> None:
    import yaml

    data = yaml.safe_load((REPO / "presets" / "mock-smoke.yaml").read_text())
    data.update(patch)
    with pytest.raises(WorldForgeError, match=message):
        parse_preset(data, "presets/mock-smoke.yaml")


def test_mock_smoke_metrics_and_deterministic_result_digest() -> None:
    preset = load_preset("mock-smoke")
    first = run_providers(preset)
    second = run_providers(preset, iterations=5)
    assert [(r["provider"], r["operation"]) for r in first] == [
        ("mock", "predict"),
        ("mock", "score"),
        ("mock", "generate"),
        ("mock", "embed"),
    ]
    for r in first:
        assert r["success_count"] == 5 and r["error_count"] == 0 and r["success_rate"] == 1.0
        assert r["min_latency_ms"] <= r["p50_latency_ms"] <= r["p95_latency_ms"] <= r["max_latency_ms"]
        assert r["throughput_per_second"] > 0
    assert result_payload(preset, first) == result_payload(preset, second)
    assert evaluate_budget(first, preset.budget)["passed"] is True


def test_budget_violations_are_reported() -> None:
    results = [
        {
            "provider": "mock",
            "operation": "predict",
            "success_rate": 0.8,
            "error_count": 1,
            "p95_latency_ms": 12.0,
            "throughput_per_second": None,
        }
    ]
    budget = parse_budget(
        [
            {"provider": "mock", "min_success_rate": 1.0, "max_error_count": 0, "max_p95_latency_ms": 20},
            {"operation": "level", "min_throughput_per_second": 1},
            {"provider": "mock", "min_throughput_per_second": 1},
        ],
        "b",
    )
    gate = evaluate_budget(results, budget)
    assert gate["passed"] is False
    assert [(v["metric"], v["observed"], v["condition"]) for v in gate["violations"]] == [
        ("success_rate", 0.8, ">= 1.0"),
        ("error_count", 1, "<= 0"),
        ("matching_results", 0, ">= 1 matching result"),
        ("throughput_per_second", None, ">= 1"),
    ]


def test_pcg_pipeline_harness_records_stage_digests() -> None:
    preset = parse_preset({**_yaml("pcg-pipeline"), "inputs": {"letters": "IL", "trials_per_letter": 1}}, "x")
    recorded: list[tuple[str, str, dict[str, object]]] = []
    results = run_pcg(preset, record_item=lambda i, d, r: recorded.append((i, d, r)))
    by_op = {r["operation"]: r for r in results}
    assert set(by_op) == {"extract", "convert", "simulate", "render", "level"}
    assert by_op["level"]["iterations"] == 2 and by_op["level"]["success_count"] == 2
    assert by_op["level"]["throughput_per_second"] > 0
    assert [i for i, _, _ in recorded] == ["I/0", "L/0"]
    stages = recorded[0][2]["stages"]
    assert isinstance(stages, dict) and list(stages) == ["extract", "convert", "simulate", "render"]
    again = run_pcg(preset)
    assert [r["output_digest"] for r in again] == [r["output_digest"] for r in results]


def _yaml(name: str) -> dict[str, object]:
    import yaml

    data = yaml.safe_load((REPO / "presets" / f"{name}.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_cli_run_workspace_and_gate_exit_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    ws = tmp_path / "ws"
    result = runner.invoke(
        app, ["benchmark", "--preset", "mock-smoke", "--run-workspace", str(ws), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    run_dir = ws / "runs" / report["run_id"]
    manifest = load_manifest(run_dir)
    assert manifest["kind"] == "benchmark" and manifest["status"] == "completed"
    assert manifest["result_digest"] == report["result_digest"]
    assert {a["path"] for a in manifest["artifacts"]} >= {
        "reports/report.json",
        "reports/report.md",
        "reports/report.csv",
        "results/summary.json",
    }
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert sum(1 for e in events if e["type"] == "provider.event") == 20
    assert verify_run(run_dir).ok
    strict = _yaml("mock-smoke")
    strict["name"] = "strict"
    strict["budget"] = [{"provider": "mock", "max_p50_latency_ms": 0}]
    (tmp_path / "strict.yaml").write_text(json.dumps(strict))
    result = runner.invoke(app, ["benchmark", "--preset", str(tmp_path / "strict.yaml")])
    assert result.exit_code == 1
    assert "budget violation: mock/* mock/predict p50_latency_ms" in result.output
    (tmp_path / "other.yaml").write_text(json.dumps(strict))
    result = runner.invoke(app, ["benchmark", "--preset", str(tmp_path / "other.yaml")])
    assert result.exit_code == 2 and "does not match the file name" in result.output
    assert runner.invoke(app, ["benchmark"]).exit_code == 2
    listed = runner.invoke(app, ["benchmark", "--list-presets", "--format", "json"])
    assert listed.exit_code == 0 and "pcg-pipeline" in listed.output
