"""``worldforge benchmark``: run a preset, print metrics, gate on its budget (exit 1 on violation)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from worldforge.cli._common import argv as _argv
from worldforge.cli._common import check_format, cli_errors, format_option
from worldforge.core.canonical import pretty_json
from worldforge.core.errors import WorldForgeError
from worldforge.workspace import start_run

FORMATS = ("text", "json", "md", "csv")


def _print_presets(fmt: str) -> None:
    from worldforge.benchmark import list_presets

    presets = list_presets()
    if fmt == "json":
        sys.stdout.write(pretty_json({"presets": presets}))
        return
    for preset in presets:
        if "error" in preset:
            typer.echo(f"{preset['name']:16} invalid: {preset['error']}")
        else:
            typer.echo(
                f"{preset['name']:16} {preset['category']:14} {preset['harness']:13} {preset['description']}"
            )


def _run(
    preset_name: str, iterations: int | None, workspace: Path | None, resume: str | None
) -> dict[str, Any]:
    from worldforge.benchmark.harness import (
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

    preset = load_preset(preset_name)
    if iterations is not None and iterations < 1:
        raise WorldForgeError("--iterations: must be >= 1.")

    def execute(run: Any) -> dict[str, Any]:
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
        if resume:
            raise WorldForgeError(
                "--resume-run needs --run-workspace (or workspace_dir in .worldforge/config.yaml)."
            )
        return execute(None)

    config = {"preset": preset_identity(preset), "iterations": iterations or preset.iterations}
    with start_run(workspace, "benchmark", _argv(), config, resume_run_id=resume) as run:
        run.add_input_value("preset", preset_identity(preset))
        scene = preset.inputs.get("scene")
        if isinstance(scene, str) and Path(scene).is_file():
            run.add_input_file("scene", scene)
        return execute(run)


def benchmark_cmd(
    preset: str | None = typer.Option(
        None, "--preset", help="Preset name (see --list-presets) or YAML path."
    ),
    list_presets_flag: bool = typer.Option(False, "--list-presets", help="List presets and exit."),
    run_workspace: Path | None = typer.Option(
        None,
        "--run-workspace",
        help="Record the run under DIR/runs/<run-id>/ (default: config workspace_dir).",
    ),
    fmt: str = format_option("text", FORMATS),
    iterations: int | None = typer.Option(None, "--iterations", help="Override the preset's iterations."),
    resume_run: str | None = typer.Option(None, "--resume-run", hidden=True),
) -> None:
    """Run a benchmark preset: success rate, errors, p50/p95 latency, throughput; exit 1 on violation."""
    with cli_errors():
        check_format(fmt, FORMATS)
        if list_presets_flag:
            _print_presets(fmt)
            return
        if not preset:
            raise WorldForgeError("--preset: required (see `worldforge benchmark --list-presets`).")
        workspace = run_workspace
        if workspace is None:
            from worldforge.config import default_run_workspace

            workspace = default_run_workspace()
        report = _run(preset, iterations, workspace, resume_run)
        from worldforge.benchmark.harness import render_csv, render_markdown

        if fmt == "json":
            sys.stdout.write(pretty_json(report))
        elif fmt == "csv":
            sys.stdout.write(render_csv(report))
        elif fmt == "md":
            sys.stdout.write(render_markdown(report))
        else:
            for r in report["results"]:
                typer.echo(
                    f"{r['provider']}/{r['operation']}: {r['success_count']}/{r['iterations']} ok, "
                    f"{r['error_count']} errors, p50 {r['p50_latency_ms']} ms, p95 {r['p95_latency_ms']} ms, "
                    f"{r['throughput_per_second']}/s"
                )
            typer.echo(
                f"result digest: {report['result_digest']}"
                + (f"  run: {report['run_id']}" if "run_id" in report else "")
            )
        gate = report["gate"]
        if not gate["passed"]:
            for v in gate["violations"]:
                typer.echo(
                    f"budget violation: {v['selector']} {v['provider']}/{v['operation']} {v['metric']} = "
                    f"{v['observed']} (needs {v['condition']})",
                    err=True,
                )
    if not gate["passed"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("benchmark")(benchmark_cmd)


__all__ = ["benchmark_cmd", "register"]
