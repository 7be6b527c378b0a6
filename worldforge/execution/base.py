"""Helpers every executor shares: an order-preserving chunked map and the node a unit ran on."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class NodeFuture(Future[Any]):
    """A future that also says which machine ran its unit (``node``: informational, never digested)."""

    node: str | None = None


class StatefulPool(Protocol):
    """Workers that each build an expensive state once (a model's weights) and then serve many
    calls: ``submit(fn, *args)`` runs ``fn(state, *args)`` in one of them. An executor that can host
    such workers offers ``actor_pool(factory, *args, count=None)``; the ``local`` pool does not (its
    callers keep the state in their own process)."""

    @property
    def size(self) -> int: ...

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]: ...

    def shutdown(self) -> None: ...


def stateful_pool(executor: Executor | None, factory: Callable[..., Any], *args: Any) -> StatefulPool | None:
    """The executor's pool of ``factory(*args)`` holders, or ``None`` when it offers none."""
    make = getattr(executor, "actor_pool", None)
    return make(factory, *args) if callable(make) else None


def parallelism(executor: Executor | None) -> int:
    """How many units the executor runs at once (its ``parallelism``, a pool's worker count, else 1)."""
    if executor is None:
        return 1
    value = getattr(executor, "parallelism", None) or getattr(executor, "_max_workers", None)
    return max(1, int(value or 1))


def _apply_chunk(fn: Callable[[Any], Any], jobs: Sequence[Any]) -> list[Any]:
    return [fn(job) for job in jobs]


def ordered_map(
    executor: Executor | None,
    fn: Callable[[T], R],
    jobs: Sequence[T],
    *,
    chunk: int = 1,
    window: int | None = None,
    on_node: Callable[[int, str | None], None] | None = None,
) -> Iterator[R]:
    """``fn(job)`` for every job, yielded in input order whatever the completion order.

    Jobs travel ``chunk`` at a time (one submission per chunk: scheduling costs are per
    submission). At most ``window`` chunks are in flight (default: four per unit of parallelism),
    so a large folder never queues every level at once and results are written while later ones
    still run. ``executor=None`` runs in this process. ``on_node(index, node)`` hears where each
    job ran.
    """
    if executor is None:
        for job in jobs:
            yield fn(job)
        return
    size = max(1, chunk)
    chunks = [jobs[i : i + size] for i in range(0, len(jobs), size)]
    limit = window or max(2, 4 * parallelism(executor))
    pending: dict[int, Future[Any]] = {}
    next_submit = 0
    for index in range(len(chunks)):
        while next_submit < len(chunks) and len(pending) < limit:
            pending[next_submit] = executor.submit(_apply_chunk, fn, chunks[next_submit])
            next_submit += 1
        future = pending.pop(index)
        results = future.result()
        node = getattr(future, "node", None)
        for offset, result in enumerate(results):
            if on_node is not None:
                on_node(index * size + offset, node)
            yield result


def auto_chunk(n_jobs: int, workers: int, *, most: int = 16) -> int:
    """A chunk size that gives every worker about four chunks (fewer submissions, balanced tail)."""
    return max(1, min(most, n_jobs // max(1, workers * 4)))


__all__ = ["NodeFuture", "StatefulPool", "auto_chunk", "ordered_map", "parallelism", "stateful_pool"]
