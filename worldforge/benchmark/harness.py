"""Benchmark harnesses, metrics and the budget gate.

Two harnesses:

* ``providers`` — each (provider, operation) runs ``iterations`` samples (``concurrency`` at a time)
  against the scene of the preset's ``inputs.scene`` fixture: ``predict`` a move, ``score`` candidate
  plans, ``generate`` a reply, ``embed`` a text. World setup happens outside the timed region.
* ``pcg-pipeline`` — the Science Birds level pipeline on mock letter replies: ``extract`` →
  ``convert`` → ``simulate`` → ``render`` timed per stage, plus ``level`` (all four) whose throughput
  is levels per second. Each level is recorded as an item with per-stage digests, so ``runs diff``
  names the stage that changed.

Metrics per (provider, operation): success rate, error count, retry count (provider ``retry``
events), mean/p50/p95/min/max latency over successful samples (percentiles by linear interpolation
at ``q·(n−1)``), throughput = successes / wall seconds of that operation. Timings never enter the
result digest: :func:`result_payload` keeps only counts and output digests, so two runs with the
same inputs have the same result digest whatever the machine load.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, NotRequired, TypedDict, TypeVar

from worldforge.benchmark.presets import Preset
from worldforge.benchmark.scene import BenchmarkScene, load_scene
from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_bytes, digest_payload, digest_text
from worldforge.core.entities import Action, Position
from worldforge.core.errors import ProviderError, StageError, WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.forge import WorldForge
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.levels.convert import convert
from worldforge.pcg.levels.extract import Extraction, extract_code
from worldforge.pcg.sim.physics import simulate
from worldforge.pcg.sim.render import render_png
from worldforge.providers.events import ProviderEvent
from worldforge.providers.mock_letters import letter_reply

BENCHMARK_SCHEMA_VERSION = 1
METRIC_SEMANTICS = (
    "Latencies are wall-clock milliseconds per successful sample on this machine (p50/p95 by linear "
    "interpolation); throughput is successes per wall-clock second of the operation. They are a local "
    "regression signal, not a cross-machine or quality claim. The result digest covers counts and "
    "output digests only, never timings."
)
ItemRecorder = Callable[[str, str, JSONObject], object]
_T = TypeVar("_T")


class OpMetrics(TypedDict):
    """The metrics of one (provider, operation): a row of the report's ``results``."""

    provider: str
    operation: str
    iterations: int
    concurrency: int
    success_count: int
    error_count: int
    retry_count: int
    success_rate: float | None
    average_latency_ms: float | None
    p50_latency_ms: float | None
    p95_latency_ms: float | None
    min_latency_ms: float | None
    max_latency_ms: float | None
    throughput_per_second: float | None
    output_digest: str
    errors: list[str]


class BudgetViolation(TypedDict):
    """One budget threshold a result missed (``provider``/``operation`` ``None``: nothing matched)."""

    selector: str
    provider: str | None
    operation: str | None
    metric: str
    observed: float | None
    threshold: float
    condition: str


class BudgetGate(TypedDict):
    """The budget gate's verdict over every result."""

    passed: bool
    budget_count: int
    checked_result_count: int
    violation_count: int
    violations: list[BudgetViolation]


class BenchmarkReport(TypedDict):
    """``reports/report.json`` of a benchmark run (``run_id`` only when the run was recorded)."""

    schema_version: int
    preset: JSONObject
    claim_boundary: str
    metric_semantics: str
    results: list[OpMetrics]
    gate: BudgetGate
    result_digest: str
    run_id: NotRequired[str]


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolation percentile at ``q·(n−1)`` (``None`` for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class _Op:
    """Accumulates samples of one (provider, operation)."""

    def __init__(self, provider: str, operation: str, concurrency: int) -> None:
        self.provider = provider
        self.operation = operation
        self.concurrency = concurrency
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.outputs: list[str] = []
        self.iterations = 0
        self.wall_s = 0.0
        self.retries = 0

    def summary(self) -> OpMetrics:
        ok = len(self.latencies)
        return {
            "provider": self.provider,
            "operation": self.operation,
            "iterations": self.iterations,
            "concurrency": self.concurrency,
            "success_count": ok,
            "error_count": len(self.errors),
            "retry_count": self.retries,
            "success_rate": round(ok / self.iterations, 6) if self.iterations else None,
            "average_latency_ms": _round(sum(self.latencies) / ok) if ok else None,
            "p50_latency_ms": _round(percentile(self.latencies, 0.5)),
            "p95_latency_ms": _round(percentile(self.latencies, 0.95)),
            "min_latency_ms": _round(min(self.latencies)) if ok else None,
            "max_latency_ms": _round(max(self.latencies)) if ok else None,
            "throughput_per_second": _round(ok / self.wall_s) if self.wall_s > 0 and ok else None,
            "output_digest": digest_payload(self.outputs),
            "errors": self.errors[:5],
        }


def _timed(op: _Op, call: Callable[[], _T], describe: Callable[[_T], object]) -> _T | None:
    start = time.perf_counter()
    try:
        value = call()
    except (ProviderError, WorldForgeError, StageError, TimeoutError) as exc:
        op.errors.append(sanitize_text(f"{type(exc).__name__}: {exc}")[:300])
        op.outputs.append("error:" + type(exc).__name__)
        return None
    op.latencies.append(max((time.perf_counter() - start) * 1000.0, 0.001))
    op.outputs.append(digest_payload(describe(value)))
    return value


def _describe(value: object) -> object:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, (str, int, float, bool, list, dict)) or value is None:
        return value
    return repr(type(value).__name__)


def _provider_calls(
    forge: WorldForge, provider: str, scene: BenchmarkScene
) -> dict[str, Callable[[], object]]:
    """One zero-argument call per operation; world setup happens here, outside the timed region."""

    world = forge.create_world("benchmark-scene", provider)
    for name, (x, y, z) in scene.objects:
        world.add_object(name, Position(x, y, z))
    state = world.to_state()
    cube = world.find_object(scene.predict_object)
    move = Action.move_to(*scene.target_xyz, object_id=cube.id)
    steps = scene.steps
    goal: JSONObject = {"targets": [{"object_id": cube.id, "position": scene.target}]}
    candidates = [[move.to_dict()], [Action.noop().to_dict()]]
    prompt, text = scene.generate_prompt, scene.embed_text
    return {
        "predict": lambda: forge.predict(state, move, steps, provider),
        "score": lambda: forge.score_actions(provider, world_state=state, goal=goal, candidates=candidates),
        "generate": lambda: forge.generate(provider, [{"role": "user", "content": prompt}]),
        "embed": lambda: forge.embed(provider, text),
    }


def _run_op(op: _Op, call: Callable[[], object], n: int, concurrency: int) -> None:
    start = time.perf_counter()
    if concurrency == 1:
        for _ in range(n):
            op.iterations += 1
            _timed(op, call, _describe)
    else:
        op.iterations = n
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(lambda _: _timed(op, call, _describe), range(n)))
        op.outputs.sort()  # completion order is not deterministic; the output digest must be
    op.wall_s = time.perf_counter() - start


def run_providers(
    preset: Preset,
    *,
    iterations: int | None = None,
    event_sink: Callable[[ProviderEvent], None] | None = None,
) -> list[OpMetrics]:
    """Run the ``providers`` harness; returns one metrics dict per (provider, operation)."""

    scene = load_scene(preset.inputs)
    retries: dict[tuple[str, str], int] = {}

    def count_retries(event: ProviderEvent) -> None:
        if event.phase == "retry":
            key = (event.provider, event.operation)
            retries[key] = retries.get(key, 0) + 1

    forge = WorldForge(event_sinks=[count_retries, *([event_sink] if event_sink else [])])
    n = iterations or preset.iterations
    results = []
    for provider in preset.providers:
        if not forge.has_provider(provider):
            raise WorldForgeError(
                f"{preset.source or preset.name}: providers: unknown provider {provider!r} "
                f"(available: {', '.join(forge.provider_names())})."
            )
        calls = _provider_calls(forge, provider, scene)
        for operation in preset.operations:
            op = _Op(provider, operation, preset.concurrency)
            _run_op(op, calls[operation], n, preset.concurrency)
            op.retries = retries.get((provider, operation), 0)
            results.append(op.summary())
    return results


def _program_of(extraction: Extraction) -> str | None:
    return extraction.program


def _identity(value: str) -> str:
    return value


def _int_input(inputs: Mapping[str, object], key: str, default: int) -> int:
    """A whole-number preset input (``int()`` of a number or numeric string, as YAML may give)."""
    value = inputs.get(key, default)
    if isinstance(value, (int, float, str)):
        return int(value)
    raise WorldForgeError(f"preset inputs.{key}: expected a whole number, got {value!r}.")


def pcg_levels(inputs: Mapping[str, object]) -> list[tuple[str, int, str]]:
    """``(letter, trial_seed, reply)`` for the preset's letters and trials (mock letter replies)."""

    letters = str(inputs.get("letters", "".join(LETTERS)))
    trials = _int_input(inputs, "trials_per_letter", 1)
    variant = str(inputs.get("variant", ""))
    return [
        (letter, seed, letter_reply(letter, seed, variant)) for letter in letters for seed in range(trials)
    ]


def run_pcg(
    preset: Preset,
    *,
    iterations: int | None = None,
    record_item: ItemRecorder | None = None,
    completed: Mapping[str, object] | None = None,
) -> list[OpMetrics]:
    """Run the ``pcg-pipeline`` harness (in this process, so stage timings are comparable)."""

    sim_trials = _int_input(preset.inputs, "simulation_trials", 1)
    ops = {name: _Op("pcg", name, 1) for name in ("extract", "convert", "simulate", "render", "level")}
    levels = pcg_levels(preset.inputs)
    n = iterations or preset.iterations
    done = completed or {}
    for round_index in range(n):
        for letter, seed, reply in levels:
            item_id = f"{letter}/{seed}" + (f"/{round_index}" if n > 1 else "")
            if item_id in done:
                continue
            stages: JSONObject = {}
            level_start = time.perf_counter()
            ops["level"].iterations += 1
            ok = False
            ops["extract"].iterations += 1
            extracted = _timed(ops["extract"], partial(extract_code, reply), _program_of)
            program = extracted.program if extracted is not None else None
            if program is None and extracted is not None:
                ops["extract"].latencies.pop()
                ops["extract"].errors.append(f"extract: {extracted.error}")
            if program is not None:
                stages["extract"] = {"digest": digest_text(program)}
                ops["convert"].iterations += 1
                xml = _timed(ops["convert"], partial(convert, program), _identity)
                if xml is not None:
                    stages["convert"] = {"digest": digest_text(xml)}
                    ops["simulate"].iterations += 1
                    sim = _timed(ops["simulate"], partial(simulate, xml, trials=sim_trials), _describe)
                    if sim is not None:
                        stages["simulate"] = {
                            "digest": digest_payload(sim.to_dict()),
                            "stability": sim.stability,
                        }
                        ops["render"].iterations += 1
                        png = _timed(ops["render"], partial(render_png, sim), digest_bytes)
                        if png is not None:
                            stages["render"] = {"digest": digest_bytes(png)}
                            ok = True
            elapsed = (time.perf_counter() - level_start) * 1000.0
            ops["level"].wall_s += elapsed / 1000.0
            if ok:
                ops["level"].latencies.append(elapsed)
                ops["level"].outputs.append(digest_payload(stages))
            else:
                ops["level"].errors.append(f"{item_id}: pipeline stopped after {list(stages) or ['start']}")
                ops["level"].outputs.append("error")
            if record_item is not None:
                record_item(
                    item_id, digest_text(reply), {"letter": letter, "seed": seed, "ok": ok, "stages": stages}
                )
    for name, op in ops.items():
        if name != "level":
            op.wall_s = sum(op.latencies) / 1000.0
    return [ops[name].summary() for name in preset.operations if name in ops]


def evaluate_budget(results: list[OpMetrics], budget: tuple[JSONObject, ...]) -> BudgetGate:
    """Check every budget entry against matching results; a missing observed value violates."""
    violations: list[BudgetViolation] = []
    checked = 0
    for entry in budget:
        selector = f"{entry.get('provider', '*')}/{entry.get('operation', '*')}"
        matching = [
            r
            for r in results
            if entry.get("provider") in (None, r["provider"])
            and entry.get("operation") in (None, r["operation"])
        ]
        if not matching:
            violations.append(
                {
                    "selector": selector,
                    "provider": None,
                    "operation": None,
                    "metric": "matching_results",
                    "observed": 0,
                    "threshold": 1,
                    "condition": ">= 1 matching result",
                }
            )
            continue
        for result in matching:
            checked += 1
            for key, threshold in entry.items():
                if key in ("provider", "operation") or not isinstance(threshold, (int, float)):
                    continue  # beside the selector keys ``parse_budget`` admits numbers only
                metric = key.split("_", 1)[1]
                value = result.get(metric)
                # Budget keys name numeric metrics only (``parse_budget``); ``None``: not measured.
                observed = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
                is_min = key.startswith("min_")
                ok = observed is not None and (observed >= threshold if is_min else observed <= threshold)
                if not ok:
                    violations.append(
                        {
                            "selector": selector,
                            "provider": result["provider"],
                            "operation": result["operation"],
                            "metric": metric,
                            "observed": observed,
                            "threshold": threshold,
                            "condition": f"{'>=' if is_min else '<='} {threshold}",
                        }
                    )
    return {
        "passed": not violations,
        "budget_count": len(budget),
        "checked_result_count": checked,
        "violation_count": len(violations),
        "violations": violations,
    }


def preset_identity(preset: Preset) -> JSONObject:
    """The preset without its on-disk location: what a result depends on."""
    data = preset.to_dict()
    data.pop("source", None)
    return data


def result_payload(preset: Preset, results: list[OpMetrics]) -> JSONObject:
    """Deterministic payload for the run's result digest (no timings, no gate)."""
    return {
        "schema_version": BENCHMARK_SCHEMA_VERSION,
        "preset": preset.name,
        "preset_digest": digest_payload(preset_identity(preset)),
        "results": [
            {
                "provider": r["provider"],
                "operation": r["operation"],
                "iterations": r["iterations"],
                "success_count": r["success_count"],
                "error_count": r["error_count"],
                "output_digest": r["output_digest"],
            }
            for r in results
        ],
    }


def report_payload(preset: Preset, results: list[OpMetrics], gate: BudgetGate) -> BenchmarkReport:
    return {
        "schema_version": BENCHMARK_SCHEMA_VERSION,
        "preset": preset_identity(preset),
        "claim_boundary": preset.claim_boundary,
        "metric_semantics": METRIC_SEMANTICS,
        "results": results,
        "gate": gate,
        "result_digest": digest_payload(result_payload(preset, results)),
    }


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown; ``report`` is a :class:`BenchmarkReport` or one read back from a run's
    ``reports/report.json`` (bundles re-render it), so a malformed one raises ``KeyError``."""
    preset = report["preset"]
    lines = [
        f"# Benchmark: {preset['name']}",
        "",
        preset["description"],
        "",
        f"Claim boundary: {report['claim_boundary']}",
        "",
        f"Metric semantics: {report['metric_semantics']}",
        "",
        f"Result digest: `{report['result_digest']}`",
        "",
        "| provider | operation | ok/n | errors | retries | avg ms | p50 ms | p95 ms | throughput/s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in report["results"]:
        lines.append(
            f"| {r['provider']} | {r['operation']} | {r['success_count']}/{r['iterations']} | "
            f"{r['error_count']} | {r['retry_count']} | {r['average_latency_ms']} | {r['p50_latency_ms']} | "
            f"{r['p95_latency_ms']} | {r['throughput_per_second']} |"
        )
    gate = report["gate"]
    lines += [
        "",
        "## Budget gate",
        "",
        f"Status: {'passed' if gate['passed'] else 'failed'} "
        f"({gate['budget_count']} budgets, {gate['checked_result_count']} results checked, "
        f"{gate['violation_count']} violations)",
    ]
    if gate["violations"]:
        lines += [
            "",
            "| selector | provider | operation | metric | observed | condition |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for v in gate["violations"]:
            lines.append(
                f"| {v['selector']} | {v['provider']} | {v['operation']} | {v['metric']} | "
                f"{v['observed']} | {v['condition']} |"
            )
    return "\n".join(lines) + "\n"


def render_csv(report: Mapping[str, Any]) -> str:
    """The report's results as CSV (input as :func:`render_markdown`'s)."""
    import csv
    import io

    columns = [
        "provider",
        "operation",
        "iterations",
        "concurrency",
        "success_count",
        "error_count",
        "retry_count",
        "success_rate",
        "average_latency_ms",
        "p50_latency_ms",
        "p95_latency_ms",
        "min_latency_ms",
        "max_latency_ms",
        "throughput_per_second",
        "output_digest",
    ]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for r in report["results"]:
        writer.writerow(["" if r.get(c) is None else r.get(c) for c in columns])
    return buffer.getvalue()


__all__ = [
    "BENCHMARK_SCHEMA_VERSION",
    "METRIC_SEMANTICS",
    "BenchmarkReport",
    "BudgetGate",
    "BudgetViolation",
    "OpMetrics",
    "evaluate_budget",
    "pcg_levels",
    "percentile",
    "preset_identity",
    "render_csv",
    "render_markdown",
    "report_payload",
    "result_payload",
    "run_pcg",
    "run_providers",
]
