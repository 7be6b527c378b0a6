"""One call per level (reply/program/XML -> stability + image) and an order-preserving process pool.

Levels are independent and the physics is CPU-bound, so throughput scales with processes, not
threads. Everything that crosses the process boundary is a plain, picklable value (strings, numbers,
bytes, the frozen :class:`LevelOutcome`), and results come back in input order whatever the
completion order, so batch output is byte-identical to a serial run.

Stage failures (``Code not found.``, the converter's official errors, an empty level) are data: they
are returned in the outcome with the failing stage, never raised, so one bad trial never aborts a
batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Literal, TypedDict

from worldforge.core.errors import StageError, WorldForgeError
from worldforge.execution.local import default_workers
from worldforge.pcg.levels.convert import convert
from worldforge.pcg.levels.extract import DroppedCallFields, extract_code
from worldforge.pcg.sim.physics import StabilitySummary, simulate
from worldforge.pcg.sim.render import render_png

InputKind = Literal["reply", "program", "xml"]
STAGES = ("extract", "convert", "simulate", "render")


class LevelSummary(TypedDict):
    """:meth:`LevelOutcome.summary`: whether a level made it, where it failed, its stability."""

    ok: bool
    failed_stage: str | None
    error: str | None
    total_blocks: int
    moving_blocks: int
    destroyed_blocks: int
    stability: float | None


@dataclass(frozen=True)
class LevelOutcome:
    """What happened to one input. ``failed_stage``/``error`` are ``None`` on success."""

    program: str | None = None
    xml: str | None = None
    failed_stage: str | None = None
    error: str | None = None
    total_blocks: int = 0
    moving_blocks: int = 0
    destroyed_blocks: int = 0
    stability: float | None = None
    simulation: StabilitySummary | None = field(default=None, repr=False)
    png: bytes | None = field(default=None, repr=False)
    dropped: tuple[DroppedCallFields, ...] = ()

    @property
    def ok(self) -> bool:
        return self.failed_stage is None

    def summary(self) -> LevelSummary:
        """JSON-native summary without the PNG and per-block details."""
        return {
            "ok": self.ok,
            "failed_stage": self.failed_stage,
            "error": self.error,
            "total_blocks": self.total_blocks,
            "moving_blocks": self.moving_blocks,
            "destroyed_blocks": self.destroyed_blocks,
            "stability": self.stability,
        }


def run_level(
    xml: str | bytes,
    *,
    trials: int = 1,
    render: bool = True,
    details: bool = False,
    base: LevelOutcome | None = None,
) -> LevelOutcome:
    """Simulate (and render the post-simulation image of) one level XML."""

    text = xml.decode("utf-8") if isinstance(xml, bytes) else xml
    out = replace(base, xml=text) if base is not None else LevelOutcome(xml=text)
    try:
        result = simulate(text, trials=trials)
    except (WorldForgeError, StageError) as exc:
        return replace(out, failed_stage="simulate", error=str(exc))
    out = replace(
        out,
        total_blocks=result.total_blocks,
        moving_blocks=result.moving_blocks,
        destroyed_blocks=result.destroyed_blocks,
        stability=result.stability,
        simulation=result.to_dict() if details else None,
    )
    if render:
        out = replace(out, png=render_png(result))
    return out


def run_program(program: str, *, trials: int = 1, render: bool = True, details: bool = False) -> LevelOutcome:
    """convert -> simulate -> render for one ``drop_block`` program."""

    try:
        xml = convert(program)
    except StageError as exc:
        return LevelOutcome(program=program, failed_stage="convert", error=str(exc))
    return run_level(xml, trials=trials, render=render, details=details, base=LevelOutcome(program=program))


def run_reply(reply: str, *, trials: int = 1, render: bool = True, details: bool = False) -> LevelOutcome:
    """extract -> convert -> simulate -> render for one LLM reply."""

    ex = extract_code(reply)
    dropped = tuple(d.to_dict() for d in ex.dropped)
    if ex.program is None:
        return LevelOutcome(failed_stage="extract", error=ex.error, dropped=dropped)
    out = run_program(ex.program, trials=trials, render=render, details=details)
    return replace(out, dropped=dropped)


_RUNNERS: dict[str, Callable[..., LevelOutcome]] = {
    "reply": run_reply,
    "program": run_program,
    "xml": run_level,
}


def _work(args: tuple[str, str, int, bool, bool]) -> LevelOutcome:
    kind, text, trials, render, details = args
    return _RUNNERS[kind](text, trials=trials, render=render, details=details)


def iter_batch(
    items: Sequence[str],
    *,
    kind: InputKind = "program",
    workers: int | None = None,
    trials: int = 1,
    render: bool = True,
    details: bool = False,
) -> Iterator[LevelOutcome]:
    """Yield outcomes in input order; ``workers=1`` runs in this process (no pool)."""
    if kind not in _RUNNERS:
        raise WorldForgeError(f"kind must be one of {sorted(_RUNNERS)}, got {kind!r}.")
    n_workers = default_workers() if workers is None else workers
    if n_workers < 1:
        raise WorldForgeError(f"--workers must be >= 1, got {n_workers}.")
    jobs = [(kind, text, trials, render, details) for text in items]
    if n_workers == 1 or len(jobs) <= 1:
        for job in jobs:
            yield _work(job)
        return
    chunksize = max(1, min(16, len(jobs) // (n_workers * 4)))
    with ProcessPoolExecutor(max_workers=min(n_workers, len(jobs))) as pool:
        yield from pool.map(_work, jobs, chunksize=chunksize)


def run_batch(
    items: Sequence[str],
    *,
    kind: InputKind = "program",
    workers: int | None = None,
    trials: int = 1,
    render: bool = True,
    details: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[LevelOutcome]:
    """Run many inputs through the pipeline with a process pool; results are in input order."""
    results: list[LevelOutcome] = []
    for outcome in iter_batch(
        items, kind=kind, workers=workers, trials=trials, render=render, details=details
    ):
        results.append(outcome)
        if progress is not None:
            progress(1)
    return results


__all__ = [
    "STAGES",
    "LevelOutcome",
    "LevelSummary",
    "iter_batch",
    "run_batch",
    "run_level",
    "run_program",
    "run_reply",
]
