"""Running a benchmark preset end to end: the service ``worldforge benchmark`` calls.

The command line parses flags and prints; this module loads the preset, runs its harness, checks the
budget and (with a workspace) records the run: the preset as an input, one item per finished unit of
the pcg harness (reused on resume), the report in three formats, ``results/summary.json`` and a
result digest. The run keeps its :class:`BenchmarkRequest` (outside every digest), so
``runs resume`` rebuilds it and calls :func:`run_benchmark` again with the run's id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from worldforge.benchmark.harness import (
    BenchmarkReport,
    evaluate_budget,
    preset_identity,
    render_csv,
    render_markdown,
    report_payload,
    result_payload,
    run_pcg,
    run_providers,
)
from worldforge.benchmark.presets import load_preset
from worldforge.core.canonical import pretty_json
from worldforge.core.errors import WorldForgeError
from worldforge.workspace import Run, start_run

#: The run kind a benchmark records; ``runs resume`` answers it with :func:`run_benchmark`.
BENCHMARK_KIND = "benchmark"


class BenchmarkRequestRecord(TypedDict):
    """A benchmark request as JSON: what :meth:`BenchmarkRequest.to_record` writes."""

    preset: str
    iterations: int | None


@dataclass(frozen=True)
class BenchmarkRequest:
    """One benchmark: a preset by name or YAML path (a relative path is relative to where the
    command ran) and, optionally, its iterations overridden."""

    preset: str
    iterations: int | None = None

    def to_record(self) -> BenchmarkRequestRecord:
        """The request as JSON (what a run records)."""
        return {"preset": self.preset, "iterations": self.iterations}

    @classmethod
    def from_record(cls, data: object) -> BenchmarkRequest:
        """The request :meth:`to_record` wrote; ``WorldForgeError`` for any other shape."""
        if not isinstance(data, Mapping) or set(data) != {"preset", "iterations"}:
            raise WorldForgeError("benchmark request: expected an object with 'preset' and 'iterations'.")
        preset, iterations = data["preset"], data["iterations"]
        if not isinstance(preset, str) or not preset:
            raise WorldForgeError("benchmark request: 'preset' must be a non-empty string.")
        if iterations is not None and (not isinstance(iterations, int) or isinstance(iterations, bool)):
            raise WorldForgeError("benchmark request: 'iterations' must be a whole number or null.")
        return cls(preset=preset, iterations=iterations)


def run_benchmark(
    request: BenchmarkRequest,
    workspace: Path | None,
    argv: Sequence[str] = (),
    resume_run: str | None = None,
) -> BenchmarkReport:
    """Run the preset (recorded in ``workspace`` when given, resuming ``resume_run``) and return the
    report payload: results, budget gate, result digest and, when recorded, ``run_id``."""
    preset = load_preset(request.preset)
    iterations = request.iterations
    if iterations is not None and iterations < 1:
        raise WorldForgeError("--iterations: must be >= 1.")

    def execute(run: Run | None) -> BenchmarkReport:
        if preset.harness == "providers":
            results = run_providers(preset, iterations=iterations, event_sink=run.event_sink if run else None)
        else:
            results = run_pcg(
                preset,
                iterations=iterations,
                record_item=run.record_item if run else None,
                completed=run.completed_items() if run else None,
            )
        gate = evaluate_budget(results, preset.budget)
        report = report_payload(preset, results, gate)
        if run is not None:
            run.write_artifact("reports/report.json", pretty_json(report), "application/json")
            run.write_artifact("reports/report.md", render_markdown(report), "text/markdown")
            run.write_artifact("reports/report.csv", render_csv(report), "text/csv")
            summary = {
                "preset": preset.name,
                "gate_passed": gate["passed"],
                "violation_count": gate["violation_count"],
                "result_count": len(results),
                "error_count": sum(r["error_count"] for r in results),
            }
            run.write_artifact("results/summary.json", pretty_json(summary), "application/json")
            run.complete(result_payload(preset, results), claim_boundary=preset.claim_boundary)
            report["run_id"] = run.run_id
        return report

    if workspace is None:
        if resume_run:
            raise WorldForgeError(
                "--resume-run needs --workspace (or workspace_dir in .worldforge/config.yaml)."
            )
        return execute(None)

    config = {"preset": preset_identity(preset), "iterations": iterations or preset.iterations}
    recorded = request.to_record()
    with start_run(workspace, BENCHMARK_KIND, list(argv), config, resume_run, request=recorded) as run:
        run.add_input_value("preset", preset_identity(preset))
        scene = preset.inputs.get("scene")
        if isinstance(scene, str) and Path(scene).is_file():
            run.add_input_file("scene", scene)
        return execute(run)


__all__ = ["BENCHMARK_KIND", "BenchmarkRequest", "BenchmarkRequestRecord", "run_benchmark"]
