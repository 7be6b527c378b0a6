"""``worldforge benchmark``: run a preset, print metrics, gate on its budget (exit 1 on violation)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from worldforge.cli._common import argv as _argv
from worldforge.cli._common import (
    check_format,
    cli_errors,
    format_option,
    legacy_workspace_option,
    workspace_choice,
    workspace_option,
)
from worldforge.core.canonical import pretty_json
from worldforge.core.errors import WorldForgeError

if TYPE_CHECKING:
    from worldforge.benchmark.harness import BenchmarkReport

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


def benchmark_cmd(
    preset: str | None = typer.Option(
        None, "--preset", help="Preset name (see --list-presets) or YAML path."
    ),
    list_presets_flag: bool = typer.Option(False, "--list-presets", help="List presets and exit."),
    workspace: Path | None = workspace_option(
        "Record the run under DIR/runs/<run-id>/ (default: config workspace_dir)."
    ),
    run_workspace: Path | None = legacy_workspace_option("--run-workspace"),
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
        workspace = workspace_choice(workspace, run_workspace, "--run-workspace")
        if workspace is None:
            from worldforge.config import default_run_workspace

            workspace = default_run_workspace()
        from worldforge.benchmark.service import BenchmarkRequest, run_benchmark

        request = BenchmarkRequest(preset=preset, iterations=iterations)
        passed = print_report(run_benchmark(request, workspace, _argv(), resume_run), fmt)
    if not passed:
        raise typer.Exit(1)


def print_report(report: BenchmarkReport, fmt: str) -> bool:
    """Print a benchmark report in ``fmt`` (budget violations on stderr); whether the gate passed.
    ``benchmark`` and ``runs resume`` both print through here."""
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
    for v in gate["violations"] if not gate["passed"] else ():
        typer.echo(
            f"budget violation: {v['selector']} {v['provider']}/{v['operation']} {v['metric']} = "
            f"{v['observed']} (needs {v['condition']})",
            err=True,
        )
    return bool(gate["passed"])


def register(app: typer.Typer) -> None:
    app.command("benchmark")(benchmark_cmd)


__all__ = ["benchmark_cmd", "print_report", "register"]
