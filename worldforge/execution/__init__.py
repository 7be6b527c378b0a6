"""Where the CPU-bound work units of a run execute: this machine's process pool or a Ray cluster.

A work unit is a plain function of plain, picklable values (a level's XML, an item's reply) that
returns a plain value; it never touches the run workspace. The driver submits units, collects their
results and alone writes files, records and events, so a run's records and digests do not depend
on which executor ran it, nor on the order in which units finished.

``get_executor("local", workers=N)`` is a process pool on this machine; ``get_executor("ray",
address=...)`` connects to a Ray cluster (the optional ``distributed`` extra; ``ray`` is imported
only here, on request).
"""

from __future__ import annotations

from worldforge.execution.base import (
    EXECUTORS,
    Executor,
    NodeFuture,
    auto_chunk,
    get_executor,
    ordered_map,
)

__all__ = ["EXECUTORS", "Executor", "NodeFuture", "auto_chunk", "get_executor", "ordered_map"]
