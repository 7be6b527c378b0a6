"""The executor protocol and registry (see the package docstring)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar, runtime_checkable

from worldforge.core.errors import WorldForgeError

T = TypeVar("T")
R = TypeVar("R")

EXECUTORS = ("local", "ray")


class NodeFuture(Future[Any]):
    """A future that also says which machine ran its unit (``node``: informational, never digested)."""

    node: str | None = None


@runtime_checkable
class Executor(Protocol):
    """What the pipeline needs from an executor: ``concurrent.futures``-style ``submit`` and
    ``shutdown``, plus its ``name`` and a ``parallelism`` hint (how many units run at once)."""

    name: str

    @property
    def parallelism(self) -> int: ...

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]: ...

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None: ...


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
    limit = window or max(2, 4 * executor.parallelism)
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


def auto_chunk(n_jobs: int, parallelism: int, *, most: int = 16) -> int:
    """A chunk size that gives every worker about four chunks (fewer submissions, balanced tail)."""
    return max(1, min(most, n_jobs // max(1, parallelism * 4)))


def get_executor(name: str, *, workers: int | None = None, address: str | None = None) -> Executor:
    """An executor by name: ``local`` (process pool of ``workers``) or ``ray`` (cluster at
    ``address``, else ``RAY_ADDRESS``, else a private local cluster)."""
    if name == "local":
        from worldforge.execution.local import LocalExecutor

        return LocalExecutor(workers)
    if name == "ray":
        from worldforge.execution.ray import RayExecutor

        return RayExecutor(address=address or os.environ.get("RAY_ADDRESS") or None, workers=workers)
    raise WorldForgeError(f"--executor must be one of {', '.join(EXECUTORS)}, got {name!r}.")


__all__ = ["EXECUTORS", "Executor", "NodeFuture", "auto_chunk", "get_executor", "ordered_map"]
