"""Benchmarks: presets (``presets/*.yaml``), harnesses, metrics and the budget gate."""

from worldforge.benchmark.harness import (
    evaluate_budget,
    percentile,
    render_markdown,
    report_payload,
    result_payload,
    run_pcg,
    run_providers,
)
from worldforge.benchmark.presets import Preset, list_presets, load_preset

__all__ = [
    "Preset",
    "evaluate_budget",
    "list_presets",
    "load_preset",
    "percentile",
    "render_markdown",
    "report_payload",
    "result_payload",
    "run_pcg",
    "run_providers",
]
