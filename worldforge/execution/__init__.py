"""Execution: where CPU-bound work units run.

An executor is a :class:`concurrent.futures.Executor` (``submit`` returns a future, ``map`` keeps
input order), so suites and stages are written once against the standard library's contract and
the executor is picked by name. ``EXECUTORS`` maps each name to ``module:factory``; a factory takes
``workers`` and keyword options and returns a started executor. Adding an executor is one module
and one line here. Modules load only when their executor is asked for, so optional engines cost
nothing when unused.
"""

from __future__ import annotations

import importlib
from concurrent.futures import Executor
from typing import Any

from worldforge.core.errors import WorldForgeError

#: Executor name -> ``module:factory``.
EXECUTORS: dict[str, str] = {
    "local": "worldforge.execution.local:start_pool",
}


def executor_names() -> list[str]:
    """The executor names ``create_executor`` accepts."""
    return sorted(EXECUTORS)


def create_executor(name: str, workers: int, **options: Any) -> Executor:
    """A started executor called ``name`` with ``workers`` workers (``WorldForgeError`` if unknown)."""
    target = EXECUTORS.get(name)
    if target is None:
        raise WorldForgeError(
            f"--executor: unknown executor {name!r}; choose one of {', '.join(executor_names())}."
        )
    module_name, factory_name = target.split(":")
    factory = getattr(importlib.import_module(module_name), factory_name)
    executor: Executor = factory(workers, **options)
    return executor


__all__ = ["EXECUTORS", "create_executor", "executor_names"]
