"""One registry mechanism: a name maps to an object or to a lazy ``"module:attr"`` reference, and
installed packages add names through an entry-point group.

Providers, suites, executors and sandboxes are all found this way (each layer keeps one
:class:`Registry` of its own kind), so "how is a name found" has one answer:

1. **Built-ins**, the project's own: a table in the layer that owns the kind. The same table is
   declared as the project's entry points in ``pyproject.toml`` (a test keeps the two equal); the
   table is what the code trusts, so a stale or absent installation record (a source checkout, an
   editable install from before an entry point was added) still finds every built-in.
2. **Registrations** made in this process (:meth:`Registry.register`).
3. **Entry points** of the kind's group, from other installed distributions. One may neither
   shadow a built-in nor a registration; a registry whose kind is a security boundary refuses them
   (``plugins=False``).

References load on first use (``importlib``), so naming a built-in never imports its module: a
heavy or optional dependency costs nothing until the name is used. This module sits in ``core``
because every layer above builds one; it imports nothing of the project but its errors.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, cast

from worldforge.core.errors import WorldForgeError

T = TypeVar("T")

#: Where a registration came from (what ``providers list`` shows as its source).
BUILTIN = "builtin"
REGISTERED = "registered"
ENTRY_POINT = "entry-point"
#: The distribution whose entry points are the built-ins (its stale ones are ignored, never loaded).
PROJECT_DISTRIBUTION = "worldforge"


class EntryPointLike(Protocol):
    """What the registry reads of an ``importlib.metadata.EntryPoint`` (tests hand in their own)."""

    name: str
    value: str

    def load(self) -> object: ...


@dataclass(frozen=True, slots=True)
class Registration(Generic[T]):
    """One registered name: the object itself, a ``"module:attr"`` reference or an entry point
    (both loaded on first use), and where it came from."""

    name: str
    source: str
    target: T | str | None
    description: str = ""
    entry_point: EntryPointLike | None = None

    @property
    def reference(self) -> str | None:
        """The ``module:attr`` this name loads, if it is a reference (``None`` for an object)."""
        if self.entry_point is not None:
            return self.entry_point.value
        return self.target if isinstance(self.target, str) else None


def load_reference(reference: str, *, what: str) -> object:
    """Import ``module`` of ``"module:attr"`` and return ``attr`` (dots walk attributes).

    A module that is not installed is a one-line :class:`WorldForgeError` naming ``what`` needed
    it; an import error inside an installed module propagates, since hiding it would hide a bug.
    """
    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise WorldForgeError(f"{what}: {reference!r} is not a 'module:attr' reference.")
    try:
        loaded: object = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise WorldForgeError(f"{what} is not available in this installation.") from None
        raise
    for part in attr.split("."):
        if not hasattr(loaded, part):
            raise WorldForgeError(f"{what}: {module_name} defines no {attr}.")
        loaded = getattr(loaded, part)
    return loaded


def _installed_entry_points(group: str) -> list[EntryPointLike]:
    from importlib.metadata import entry_points  # looked up per call: tests and plugins patch it

    return list(entry_points(group=group))


def _distribution_name(point: EntryPointLike) -> str | None:
    dist = getattr(point, "dist", None)  # a stdlib EntryPoint knows its distribution; fakes do not
    name = getattr(dist, "name", None)
    return name if isinstance(name, str) else None


class Registry(Generic[T]):
    """Names of one kind (``"provider"``, ``"suite"`` ...) to objects of type ``T``; thread-safe.

    ``check`` turns whatever a name loads into a ``T`` (or raises :class:`WorldForgeError`), so
    a plugin's wrong object fails where it is loaded, with the name in the message.
    ``cache_entry_points=False`` reads the group again on every lookup (a process-wide registry
    whose plugins may be installed or patched while it lives).
    """

    def __init__(
        self,
        kind: str,
        builtins: Mapping[str, T | str],
        *,
        group: str | None = None,
        plugins: bool = True,
        discover: bool = True,
        cache_entry_points: bool = True,
        check: Callable[[str, object], T] | None = None,
        descriptions: Mapping[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._check = check
        self._discover = discover and plugins and group is not None
        self._cache = cache_entry_points
        self._lock = threading.RLock()
        notes = descriptions or {}
        self._builtins: dict[str, Registration[T]] = {
            name: Registration(name, BUILTIN, target, notes.get(name, ""))
            for name, target in builtins.items()
        }
        self._registered: dict[str, Registration[T]] = {}
        self._plugins: dict[str, Registration[T]] | None = None

    # -- what is known ---------------------------------------------------------------------------
    def builtin_references(self) -> dict[str, str]:
        """``name -> "module:attr"`` of the built-ins given as references (what the project
        declares as its entry points)."""
        return {name: reg.target for name, reg in self._builtins.items() if isinstance(reg.target, str)}

    def _entry_points(self) -> dict[str, Registration[T]]:
        if not self._discover or self.group is None:
            return {}
        if self._cache and self._plugins is not None:
            return self._plugins
        found: dict[str, Registration[T]] = {}
        for point in _installed_entry_points(self.group):
            if point.name in self._builtins or point.name in found:
                continue  # a built-in is the project's own table; the first plugin of a name wins
            if _distribution_name(point) == PROJECT_DISTRIBUTION:
                continue  # a stale record of a built-in this version no longer has
            found[point.name] = Registration(
                point.name, ENTRY_POINT, None, f"entry point {point.value}", entry_point=point
            )
        self._plugins = found
        return found

    def registrations(self) -> list[Registration[T]]:
        """Every known name, sorted, in lookup order's precedence (built-in, registered, entry point)."""
        with self._lock:
            merged = {**self._entry_points(), **self._registered, **self._builtins}
        return [merged[name] for name in sorted(merged)]

    def names(self) -> list[str]:
        return [reg.name for reg in self.registrations()]

    def get(self, name: str) -> Registration[T] | None:
        with self._lock:
            return self._builtins.get(name) or self._registered.get(name) or self._entry_points().get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    # -- changing it -----------------------------------------------------------------------------
    def register(
        self,
        name: str,
        target: T | str,
        *,
        replace: bool = False,
        replace_builtin: bool = True,
        description: str = "",
    ) -> None:
        """Register ``target`` (an object or a ``"module:attr"`` reference) under ``name`` for this
        process. An existing name needs ``replace=True``; ``replace_builtin=False`` keeps built-ins
        fixed even then."""
        with self._lock:
            if name in self._builtins and not replace_builtin:
                raise WorldForgeError(f"{self.kind} {name!r} is built in and cannot be replaced.")
            taken = name in self._builtins or name in self._registered
            if taken and not replace:
                raise WorldForgeError(
                    f"{self.kind} {name!r} is already registered; pass replace=True to override it."
                )
            self._builtins.pop(name, None)
            self._registered[name] = Registration(name, REGISTERED, target, description)

    def unregister(self, name: str) -> None:
        """Forget a process-local registration (built-ins and entry points stay)."""
        with self._lock:
            self._registered.pop(name, None)

    # -- loading ---------------------------------------------------------------------------------
    def load(self, name: str, unknown: Callable[[str, list[str]], str]) -> T:
        """What ``name`` stands for, loaded; ``unknown(name, known_names)`` is the one-line error
        for a name nobody registered."""
        reg = self.get(name)
        if reg is None:
            raise WorldForgeError(unknown(name, self.names()))
        return self.resolve(reg)

    def resolve(self, reg: Registration[T]) -> T:
        """Load one registration's target (import a reference, load an entry point) and check it."""
        target = reg.target
        loaded: object
        if reg.entry_point is not None:
            loaded = reg.entry_point.load()
        elif isinstance(target, str):
            loaded = load_reference(target, what=f"{self.kind} {reg.name!r}")
        else:
            loaded = target
        return self._check(reg.name, loaded) if self._check is not None else cast(T, loaded)


def choices(names: Iterable[str]) -> str:
    """``a, b or c``: the names a one-line error offers."""
    listed = list(names)
    return listed[0] if len(listed) == 1 else f"{', '.join(listed[:-1])} or {listed[-1]}"


__all__ = [
    "BUILTIN",
    "ENTRY_POINT",
    "PROJECT_DISTRIBUTION",
    "REGISTERED",
    "EntryPointLike",
    "Registration",
    "Registry",
    "choices",
    "load_reference",
]
