"""The ``local`` executor: a process pool on this machine (``fork`` where available)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from worldforge.core.errors import WorldForgeError


def default_workers() -> int:
    """Usable cores (the CPU affinity mask when the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


class LocalExecutor:
    """``workers`` processes, started lazily on the first submit; ``workers=1`` runs in-process."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = default_workers() if workers is None else workers
        if self.workers < 1:
            raise WorldForgeError(f"--workers must be >= 1, got {self.workers}.")
        self._pool: ProcessPoolExecutor | None = None

    @property
    def parallelism(self) -> int:
        return self.workers

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if self.workers == 1:
            future: Future[Any] = Future()
            try:
                future.set_result(fn(*args, **kwargs))
            except Exception as exc:  # noqa: BLE001 - delivered through the future, as a pool does
                future.set_exception(exc)
            return future
        if self._pool is None:
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(method))
        return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
            self._pool = None


__all__ = ["LocalExecutor", "default_workers"]
