"""Import plumbing shared by the package's public faces: lazy exports and relocated modules.

Two needs, one home:

* ``lazy_exports`` gives a package the PEP 562 ``__getattr__``/``__dir__`` pair that imports a name's
  defining module only when the name is first used, so ``import worldforge`` and the CLI's start-up
  never pay for torch, Box2D or Pillow.
* ``RELOCATED`` lists every module that moved to a new home, and ``install_relocations`` lets the old
  dotted path keep working for one release: importing it returns an alias module whose names are the
  new module's, with a ``DeprecationWarning`` naming the new path. This is the only place old paths
  live; the rest of the code base imports the new ones.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

#: Old dotted module path -> its new home (relocated in 0.2; the old paths go away in 0.3).
RELOCATED: dict[str, str] = {
    "worldforge.evaluation.builtin": "worldforge.suites.contract",
    "worldforge.evaluation.science_birds": "worldforge.suites.science_birds.suite",
    "worldforge.evaluation.science_birds_config": "worldforge.suites.science_birds.config",
    "worldforge.evaluation.science_birds_report": "worldforge.suites.science_birds.report",
    "worldforge.evaluation.science_birds_run": "worldforge.suites.science_birds.run",
    "worldforge.evaluation.science_birds_scores": "worldforge.suites.science_birds.scores",
    "worldforge.evaluation.science_birds_stages": "worldforge.suites.science_birds.stages",
    "worldforge.pcg.classifier": "worldforge.pcg.similarity.classifier",
    "worldforge.pcg.classifier_input": "worldforge.pcg.similarity.classifier_input",
    "worldforge.pcg.convert": "worldforge.pcg.levels.convert",
    "worldforge.pcg.diversity": "worldforge.pcg.scoring.diversity",
    "worldforge.pcg.drop_plan": "worldforge.pcg.levels.drop_plan",
    "worldforge.pcg.extract": "worldforge.pcg.levels.extract",
    "worldforge.pcg.folder": "worldforge.pcg.competition.stages",
    "worldforge.pcg.folder_scoring": "worldforge.pcg.competition.scoring",
    "worldforge.pcg.glyphs": "worldforge.pcg.levels.glyphs",
    "worldforge.pcg.level": "worldforge.pcg.levels.level",
    "worldforge.pcg.physics": "worldforge.pcg.sim.physics",
    "worldforge.pcg.pipeline": "worldforge.pcg.sim.pipeline",
    "worldforge.pcg.png": "worldforge.pcg.sim.png",
    "worldforge.pcg.render": "worldforge.pcg.sim.render",
    "worldforge.pcg.score_report": "worldforge.pcg.scoring.report",
    # ``worldforge.pcg.scoring`` and ``worldforge.pcg.programs`` became packages that re-export the
    # old modules' names, so they need no alias.
}


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


class _AliasLoader(importlib.abc.Loader):
    """Fills the old module with the new module's names (and forwards any later attribute)."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        target = importlib.import_module(self.new)
        warnings.warn(
            f"{module.__name__} moved to {self.new}; the old path is kept for one release.",
            DeprecationWarning,
            stacklevel=2,
        )
        for name, value in vars(target).items():
            if not (name.startswith("__") and name.endswith("__")):
                module.__dict__[name] = value
        module.__dict__["__all__"] = list(getattr(target, "__all__", ()))
        module.__dict__["__doc__"] = f"Relocated: see {self.new}."
        module.__dict__["__getattr__"] = lambda name: getattr(target, name)


class _RelocationFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = RELOCATED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install_relocations() -> None:
    """Let the old module paths in :data:`RELOCATED` import (idempotent)."""
    if not any(isinstance(finder, _RelocationFinder) for finder in sys.meta_path):
        sys.meta_path.append(_RelocationFinder())


__all__ = ["RELOCATED", "install_relocations", "lazy_exports"]
