"""The one place heavy third-party libraries are imported: lazily, on first use.

``import worldforge`` and ``worldforge --help`` must stay fast and must not load torch,
transformers, Ray or Box2D; first-party modules import each other at module level, and reach these
libraries only through the functions below. A missing optional library is a one-line
:class:`~worldforge.core.errors.WorldForgeError` naming the extra that installs it, never an
``ImportError`` traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from worldforge.core.errors import WorldForgeError

#: Library -> the ``pip install`` that provides it.
EXTRAS: dict[str, str] = {
    "torch": "pip install 'worldforge[ml]' (torch==2.13.0, the CPU build)",
    "transformers": "pip install 'worldforge[ml]'",
    "ray": "pip install 'worldforge[distributed]'",
    "Box2D": "pip install worldforge (ufal-pybox2d)",
}


def load(name: str) -> ModuleType:
    """Import ``name`` (a module of one of :data:`EXTRAS`' libraries) or fail naming the extra."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        root = name.split(".")[0]
        if (exc.name or "").split(".")[0] != root:
            raise  # the library is there but one of its own dependencies is broken: show that
        hint = EXTRAS.get(root, f"pip install {root}")
        raise WorldForgeError(f"{root} is not installed; {hint}.") from None


def torch() -> ModuleType:
    return load("torch")


def transformers() -> ModuleType:
    return load("transformers")


def ray() -> ModuleType:
    return load("ray")


def box2d() -> ModuleType:
    return load("Box2D")


__all__ = ["EXTRAS", "box2d", "load", "ray", "torch", "transformers"]
