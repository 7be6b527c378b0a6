"""Execution: where CPU-bound work units run.

An executor is a :class:`concurrent.futures.Executor` (``submit`` returns a future, ``map`` keeps
input order), so suites and stages are written once against the standard library's contract and
the executor is picked by name. ``EXECUTORS`` (the one registry mechanism,
:class:`worldforge.core.registry.Registry`) maps each name to ``module:factory``: the built-ins in
``BUILTIN_EXECUTORS``, equal to the project's ``worldforge.executors`` entry points, and whatever an
installed package adds to that group. A factory takes ``workers`` and keyword options and returns a
started executor. Adding an executor is one module and one line in ``BUILTIN_EXECUTORS`` (and the
same line in ``pyproject.toml``). Modules load only when their executor is asked for, so optional
engines cost nothing when unused.

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

from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from worldforge.core.errors import WorldForgeError
from worldforge.core.registry import Registry
from worldforge.execution.base import (
    NodeFuture,
    StatefulPool,
    auto_chunk,
    ordered_map,
    parallelism,
    stateful_pool,
)

#: What an executor name loads: ``factory(workers, **options)`` returns a started executor.
ExecutorFactory = Callable[..., Executor]
#: The project's own executors by ``module:factory``: the fallback when the installed entry-point
#: record is stale or absent, and equal to ``[project.entry-points."worldforge.executors"]``.
BUILTIN_EXECUTORS: dict[str, str] = {
    "local": "worldforge.execution.local:start_pool",
    # a Ray cluster (the optional ``distributed`` extra; ``address`` option, else ``RAY_ADDRESS``)
    "ray": "worldforge.execution.ray:start_ray",
}
EXECUTOR_ENTRY_POINT_GROUP = "worldforge.executors"


def _checked(name: str, loaded: object) -> ExecutorFactory:
    if not callable(loaded):
        raise WorldForgeError(f"executor {name!r}: {type(loaded).__name__} is not a factory.")
    return loaded


#: Executor name -> factory (built-ins, registrations, the ``worldforge.executors`` group).
EXECUTORS: Registry[ExecutorFactory] = Registry(
    "executor", BUILTIN_EXECUTORS, group=EXECUTOR_ENTRY_POINT_GROUP, check=_checked
)


def executor_names() -> list[str]:
    """The executor names ``create_executor`` accepts."""
    return EXECUTORS.names()


def _unknown(name: str, known: list[str]) -> str:
    return f"--executor: unknown executor {name!r}; choose one of {', '.join(known)}."


def _check_name(name: str) -> None:
    if name not in EXECUTORS:
        raise WorldForgeError(_unknown(name, executor_names()))


def create_executor(name: str, workers: int, **options: Any) -> Executor:
    """A started executor called ``name`` with ``workers`` workers (``WorldForgeError`` if unknown)."""
    return EXECUTORS.load(name, _unknown)(workers, **options)


def executor_for(
    name: str | None, workers: int, address: str | None = None, *, local_pool: bool = True
) -> Executor | None:
    """The executor ``--executor NAME`` (default ``local``) and ``--ray-address`` ask for.

    ``local`` gives a started process pool when ``local_pool`` and ``workers`` > 1, else ``None``
    (the caller works in its own process or starts pools as it goes); any other name is
    :func:`create_executor` with the address. An address without a cluster executor is a usage error.
    """
    name = name or "local"
    _check_name(name)
    if name == "local":
        if address:
            raise WorldForgeError("--ray-address needs --executor ray.")
        return create_executor(name, workers) if local_pool and workers > 1 else None
    return create_executor(name, workers, address=address or None)


__all__ = [
    "BUILTIN_EXECUTORS",
    "EXECUTORS",
    "EXECUTOR_ENTRY_POINT_GROUP",
    "ExecutorFactory",
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
