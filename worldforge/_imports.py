"""Import plumbing shared by the package's public faces.

``lazy_exports`` gives a package the PEP 562 ``__getattr__``/``__dir__`` pair that imports a name's
defining module only when the name is first used, so ``import worldforge`` and the CLI's start-up
never pay for torch, Box2D or Pillow.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], Sequence[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name imports its module on first use."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
