"""Provider registry: the project's built-in families, user registrations and the
``worldforge.providers`` entry-point group, on the one registry mechanism
(:class:`worldforge.core.registry.Registry`).

Names may be parameterized as ``name:arg`` (``mock:v2``, ``ollama:qwen2.5``, ``openai:gpt-4o-mini``).
The registry looks up what is registered for ``name``: a
:class:`~worldforge.providers.base.ProviderFamily` (every built-in; a plugin may publish one too) is
built with the argument and the run's options (``ollama_host``, ``openai_base_url``,
``max_connections`` ...), so a provider is built once, with the servers and limits the command line
chose, and never reconfigured afterwards; any other callable keeps the plain ``factory()`` /
``factory(arg)`` signature. Built-ins are named by ``module:attr`` and load on first use, so this
module imports no provider and listing providers never imports a client library.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from worldforge.core.errors import WorldForgeError
from worldforge.core.registry import BUILTIN, Registration, Registry
from worldforge.providers.base import ProviderFamily
from worldforge.providers.openai_settings import check_base_urls

ProviderFactory = Callable[..., Any]
ENTRY_POINT_GROUP = "worldforge.providers"
DISABLE_ENTRY_POINTS_ENV = "WORLDFORGE_DISABLE_ENTRY_POINTS"
#: The project's own provider families: the fallback when the installed entry-point record is
#: stale or absent, and equal to ``[project.entry-points."worldforge.providers"]`` (a test says so).
BUILTIN_PROVIDERS: dict[str, str] = {
    "mock": "worldforge.providers.mock:FAMILY",
    "ollama": "worldforge.providers.ollama:FAMILY",
    "openai": "worldforge.providers.openai_compat:FAMILY",
}
_NAME_RE = re.compile(r"^[a-z][a-z0-9_.-]*$")
Registered = ProviderFamily | ProviderFactory


class ProviderInfoDict(TypedDict):
    """:meth:`ProviderInfo.to_dict`: one row of ``worldforge providers list --format json``."""

    name: str
    source: str
    description: str
    argument: str
    capabilities: list[str] | None


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """What ``worldforge providers list`` shows for one registered provider family."""

    name: str
    source: str  # builtin | registered | entry-point
    description: str
    parameterized: str  # "" | "optional" | "required"
    capabilities: tuple[str, ...] | None = None  # None: only known once instantiated

    def to_dict(self) -> ProviderInfoDict:
        return {
            "name": self.name,
            "source": self.source,
            "description": self.description,
            "argument": self.parameterized,
            "capabilities": list(self.capabilities) if self.capabilities is not None else None,
        }


def split_provider_name(full_name: str) -> tuple[str, str | None]:
    """``"ollama:qwen2.5"`` -> ``("ollama", "qwen2.5")``; ``"mock"`` -> ``("mock", None)``."""
    if not isinstance(full_name, str) or not full_name.strip():
        raise WorldForgeError("provider name: must be a non-empty string.")
    base, sep, arg = full_name.strip().partition(":")
    if not _NAME_RE.match(base):
        raise WorldForgeError(f"provider name {full_name!r}: must look like 'name' or 'name:argument'.")
    if sep and not arg:
        raise WorldForgeError(f"provider name {full_name!r}: empty argument after ':'.")
    return base, (arg if sep else None)


def check_provider_options(options: Mapping[str, Any]) -> None:
    """Check the run options that built-in providers read, before any provider is built.

    A suite calls this while validating its options, so a malformed ``--openai-base-url`` fails
    before a run is created even when no ``openai:`` provider is asked for yet.
    """
    if options.get("openai_base_url") is not None:
        check_base_urls(options["openai_base_url"])


def _checked(name: str, loaded: object) -> Registered:
    """What a provider name loads must be a :class:`ProviderFamily` or a factory."""
    if isinstance(loaded, ProviderFamily) or callable(loaded):
        return loaded
    raise WorldForgeError(
        f"provider {name!r}: {type(loaded).__name__} is neither a ProviderFamily nor callable."
    )


def _builtin_family(registry: Registry[Registered], reg: Registration[Registered]) -> ProviderFamily:
    family = registry.resolve(reg)
    if not isinstance(family, ProviderFamily):
        raise WorldForgeError(f"built-in provider {reg.name!r}: {reg.reference} is not a ProviderFamily.")
    return family


def builtin_capabilities() -> dict[str, tuple[str, ...]]:
    """Declared capabilities of the built-in families, read from their provider classes (importing
    their modules, never a client library)."""
    registry = ProviderRegistry(discover_entry_points=False)
    return {name: registry.family(name).declared_capabilities for name in BUILTIN_PROVIDERS}


class ProviderRegistry:
    """Maps provider family names to families or factories; thread-safe."""

    def __init__(self, *, discover_entry_points: bool | None = None) -> None:
        if discover_entry_points is None:
            discover_entry_points = not os.environ.get(DISABLE_ENTRY_POINTS_ENV)
        self._registry: Registry[Registered] = Registry(
            "provider",
            BUILTIN_PROVIDERS,
            group=ENTRY_POINT_GROUP,
            discover=discover_entry_points,
            check=_checked,
        )

    def register(
        self,
        name: str,
        factory: ProviderFactory | ProviderFamily | str,
        *,
        replace: bool = False,
        description: str = "",
    ) -> None:
        """Register a family for this process: a factory, a :class:`ProviderFamily` or a lazy
        ``"module:attr"`` reference to either."""
        base, arg = split_provider_name(name)
        if arg is not None:
            raise WorldForgeError(f"register provider {name!r}: register the family name without ':'.")
        if not (callable(factory) or isinstance(factory, (ProviderFamily, str))):
            raise WorldForgeError(f"register provider {name!r}: factory must be callable.")
        self._registry.register(
            base, factory, replace=replace, description=description or "registered provider"
        )

    def is_known(self, full_name: str) -> bool:
        base, _ = split_provider_name(full_name)
        return base in self._registry

    def names(self) -> list[str]:
        return self._registry.names()

    def family(self, name: str) -> ProviderFamily:
        """The built-in family ``name`` (its description, argument rule and capabilities)."""
        reg = self._registry.get(name)
        if reg is None or reg.source != BUILTIN:
            raise WorldForgeError(f"provider {name!r} is not a built-in family.")
        return _builtin_family(self._registry, reg)

    def infos(self) -> list[ProviderInfo]:
        """Every family; built-ins described by their :class:`ProviderFamily`, others by what they
        were registered with (a plugin is not imported just to be listed)."""
        infos: list[ProviderInfo] = []
        for reg in self._registry.registrations():
            if reg.source == BUILTIN:
                family = _builtin_family(self._registry, reg)
                infos.append(
                    ProviderInfo(
                        reg.name,
                        reg.source,
                        family.description,
                        family.argument,
                        family.declared_capabilities,
                    )
                )
            else:
                infos.append(ProviderInfo(reg.name, reg.source, reg.description, "optional"))
        return infos

    def create(self, full_name: str, options: Mapping[str, Any] | None = None) -> Any:
        """Instantiate ``full_name``; unknown names raise a :class:`WorldForgeError` listing known ones.

        ``options`` (the run's) go to a :class:`ProviderFamily`; a plain factory keeps its
        ``factory()`` / ``factory(arg)`` signature.
        """
        base, arg = split_provider_name(full_name)
        loaded = self._registry.load(
            base, lambda _name, known: f"Unknown provider '{full_name}'. Known providers: {', '.join(known)}."
        )
        if isinstance(loaded, ProviderFamily):
            provider: Any = loaded.create(base, arg, options)
        else:
            provider = loaded(arg) if arg is not None else loaded()
        if not hasattr(provider, "capabilities"):
            raise WorldForgeError(f"provider factory for {base!r} returned an object without 'capabilities'.")
        if not getattr(provider, "name", None):
            try:
                provider.name = full_name
            except AttributeError:
                raise WorldForgeError(f"provider {full_name!r} has no 'name'.") from None
        return provider


__all__ = [
    "BUILTIN_PROVIDERS",
    "DISABLE_ENTRY_POINTS_ENV",
    "ENTRY_POINT_GROUP",
    "ProviderFactory",
    "ProviderInfo",
    "ProviderInfoDict",
    "ProviderRegistry",
    "builtin_capabilities",
    "check_provider_options",
    "split_provider_name",
]
