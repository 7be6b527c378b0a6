"""The ``local`` executor: a process pool on this machine.

Workers are forked where the platform allows it (no re-import of ``__main__``, so scripts without a
main guard work), all started up front (the first chunk does not pay for start-up), and they die with
their parent, so a killed run never leaves a worker holding the run's lock.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from concurrent.futures import Executor, ProcessPoolExecutor


def _noop(_: int) -> int:
    return 0


def _worker_init(parent: int) -> None:
    """Workers die with their parent.

    Forked workers inherit the run's lock file descriptor; if the parent is killed (``kill -9``)
    a surviving worker would keep the run locked and ``runs resume`` would refuse it. On Linux
    ``PR_SET_PDEATHSIG`` delivers SIGKILL to the worker when the parent dies.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - exotic libc
            pass
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(1)


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def start_pool(workers: int) -> Executor:
    """A process pool of ``workers`` processes, all started before this returns."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context(method),
        initializer=_worker_init,
        initargs=(os.getpid(),),
    )
    list(pool.map(_noop, range(workers)))
    return pool


__all__ = ["default_workers", "start_pool"]
