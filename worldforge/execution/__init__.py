"""Execution: where CPU-bound work units run.

An executor is a :class:`concurrent.futures.Executor` (``submit`` returns a future, ``map`` keeps
input order), so suites and stages are written once against the standard library's contract and
the executor is picked by name. ``EXECUTORS`` maps each name to ``module:factory``; a factory takes
``workers`` and keyword options and returns a started executor. Adding an executor is one module
and one line here. Modules load only when their executor is asked for, so optional engines cost
nothing when unused.

Results never depend on the executor: a work unit is a plain function of plain values that returns
a plain value and never touches the run workspace; the driver consumes results by item
(:func:`ordered_map` keeps input order whatever the completion order) and alone writes files,
records and events. Work that needs an expensive state (a model's weights) goes to
:func:`stateful_pool`: executors that can keep workers alive (Ray actors) build the state once per
worker; the others leave it to the caller's process.

Untrusted submission code runs elsewhere in this package: :mod:`.sandbox` (bubblewrap around warm
trial hosts, :mod:`.trial_host`) and :mod:`.environments` (per-submission Python environments).
"""

from __future__ import annotations

import importlib
from concurrent.futures import Executor
from typing import Any

from worldforge.core.errors import WorldForgeError
from worldforge.execution.base import (
    NodeFuture,
    StatefulPool,
    auto_chunk,
    ordered_map,
    parallelism,
    stateful_pool,
)

#: Executor name -> ``module:factory``.
EXECUTORS: dict[str, str] = {
    "local": "worldforge.execution.local:start_pool",
    # a Ray cluster (the optional ``distributed`` extra; ``address`` option, else ``RAY_ADDRESS``)
    "ray": "worldforge.execution.ray:start_ray",
}


def executor_names() -> list[str]:
    """The executor names ``create_executor`` accepts."""
    return sorted(EXECUTORS)


def _target(name: str) -> str:
    target = EXECUTORS.get(name)
    if target is None:
        raise WorldForgeError(
            f"--executor: unknown executor {name!r}; choose one of {', '.join(executor_names())}."
        )
    return target


def create_executor(name: str, workers: int, **options: Any) -> Executor:
    """A started executor called ``name`` with ``workers`` workers (``WorldForgeError`` if unknown)."""
    module_name, factory_name = _target(name).split(":")
    factory = getattr(importlib.import_module(module_name), factory_name)
    executor: Executor = factory(workers, **options)
    return executor


def executor_for(
    name: str | None, workers: int, address: str | None = None, *, local_pool: bool = True
) -> Executor | None:
    """The executor ``--executor NAME`` (default ``local``) and ``--ray-address`` ask for.

    ``local`` gives a started process pool when ``local_pool`` and ``workers`` > 1, else ``None``
    (the caller works in its own process or starts pools as it goes); any other name is
    :func:`create_executor` with the address. An address without a cluster executor is a usage error.
    """
    name = name or "local"
    _target(name)
    if name == "local":
        if address:
            raise WorldForgeError("--ray-address needs --executor ray.")
        return create_executor(name, workers) if local_pool and workers > 1 else None
    return create_executor(name, workers, address=address or None)


__all__ = [
    "EXECUTORS",
    "NodeFuture",
    "auto_chunk",
    "create_executor",
    "executor_for",
    "executor_names",
    "ordered_map",
    "parallelism",
    "StatefulPool",
    "stateful_pool",
]
