"""Provider registry: built-in factories, user registrations and the ``worldforge.providers``
entry-point group.

Names may be parameterized as ``name:arg`` (``mock:v2``, ``ollama:qwen2.5``, ``openai:gpt-4o-mini``).
The registry looks up the factory registered for ``name`` and calls ``factory(arg)``; a bare ``name``
calls ``factory()``.
Built-ins are imported lazily so listing providers never imports a client library.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from worldforge.core.errors import WorldForgeError
from worldforge.providers.mock import MockProvider

ProviderFactory = Callable[..., Any]
ENTRY_POINT_GROUP = "worldforge.providers"
DISABLE_ENTRY_POINTS_ENV = "WORLDFORGE_DISABLE_ENTRY_POINTS"
_NAME_RE = re.compile(r"^[a-z][a-z0-9_.-]*$")


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """What ``worldforge providers list`` shows for one registered provider family."""

    name: str
    source: str  # builtin | registered | entry-point
    description: str
    parameterized: str  # "" | "optional" | "required"
    capabilities: tuple[str, ...] | None = None  # None: only known once instantiated

    def to_dict(self) -> dict[str, Any]:
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


def _lazy_mock(arg: str | None = None) -> Any:

    return MockProvider(arg or "")


def _lazy_module_provider(name: str, module_name: str, example: str) -> ProviderFactory:
    """A factory that imports ``module_name`` only when the provider is asked for (its client
    library is heavy or optional) and calls its ``create_provider(model)``."""

    def factory(arg: str | None = None) -> Any:
        if not arg:
            raise WorldForgeError(f"provider '{name}' needs a model: use '{name}:<model>' (e.g. {example}).")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                raise WorldForgeError(f"provider '{name}' is not available in this installation.") from None
            raise
        create = getattr(module, "create_provider", None)
        if create is None:
            raise WorldForgeError(f"{module_name} defines no create_provider.")
        return create(arg)

    return factory


_lazy_ollama = _lazy_module_provider("ollama", "worldforge.providers.ollama", "ollama:qwen2.5")
_lazy_openai = _lazy_module_provider(
    "openai", "worldforge.providers.openai_compat", "openai:qwen2.5:32b-instruct-fp16"
)


_BUILTINS: dict[str, tuple[ProviderFactory, str, str]] = {
    "mock": (
        _lazy_mock,
        "Deterministic reference provider; mock:<variant> selects another generator.",
        "optional",
    ),
    "ollama": (_lazy_ollama, "Local LLM through an Ollama server; ollama:<model>.", "required"),
    "openai": (
        _lazy_openai,
        "Any OpenAI-compatible chat server (Ollama /v1, llama.cpp, vLLM, OpenAI); openai:<model>.",
        "required",
    ),
}
#: Declared capabilities of built-ins, so listing providers needs no client import.
BUILTIN_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "mock": ("predict", "score", "generate", "embed"),
    "ollama": ("generate",),
    "openai": ("generate",),
}


class ProviderRegistry:
    """Maps provider family names to factories; thread-safe."""

    def __init__(self, *, discover_entry_points: bool | None = None) -> None:
        self._lock = threading.Lock()
        self._factories: dict[str, tuple[ProviderFactory, str, str, str]] = {
            name: (factory, "builtin", desc, arg) for name, (factory, desc, arg) in _BUILTINS.items()
        }
        if discover_entry_points is None:
            discover_entry_points = not os.environ.get(DISABLE_ENTRY_POINTS_ENV)
        self._discover = discover_entry_points
        self._entry_points_loaded = False

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded or not self._discover:
            return
        self._entry_points_loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in self._factories:
                continue

            def factory(arg: str | None = None, _ep: Any = ep) -> Any:
                loaded = _ep.load()
                return loaded(arg) if arg is not None else loaded()

            self._factories[ep.name] = (factory, "entry-point", f"entry point {ep.value}", "optional")

    def register(
        self, name: str, factory: ProviderFactory, *, replace: bool = False, description: str = ""
    ) -> None:
        base, arg = split_provider_name(name)
        if arg is not None:
            raise WorldForgeError(f"register provider {name!r}: register the family name without ':'.")
        if not callable(factory):
            raise WorldForgeError(f"register provider {name!r}: factory must be callable.")
        with self._lock:
            self._load_entry_points()
            if base in self._factories and not replace:
                raise WorldForgeError(
                    f"provider {base!r} is already registered; pass replace=True to override it."
                )
            self._factories[base] = (factory, "registered", description or "registered provider", "optional")

    def is_known(self, full_name: str) -> bool:
        base, _ = split_provider_name(full_name)
        with self._lock:
            self._load_entry_points()
            return base in self._factories

    def names(self) -> list[str]:
        with self._lock:
            self._load_entry_points()
            return sorted(self._factories)

    def infos(self) -> list[ProviderInfo]:
        with self._lock:
            self._load_entry_points()
            return [
                ProviderInfo(
                    name, source, desc, arg, BUILTIN_CAPABILITIES.get(name) if source == "builtin" else None
                )
                for name, (_, source, desc, arg) in sorted(self._factories.items())
            ]

    def create(self, full_name: str) -> Any:
        """Instantiate ``full_name``; unknown names raise a :class:`WorldForgeError` listing known ones."""
        base, arg = split_provider_name(full_name)
        with self._lock:
            self._load_entry_points()
            entry = self._factories.get(base)
            known = sorted(self._factories)
        if entry is None:
            raise WorldForgeError(f"Unknown provider '{full_name}'. Known providers: {', '.join(known)}.")
        factory = entry[0]
        provider = factory(arg) if arg is not None else factory()
        if not hasattr(provider, "capabilities"):
            raise WorldForgeError(f"provider factory for {base!r} returned an object without 'capabilities'.")
        if not getattr(provider, "name", None):
            try:
                provider.name = full_name
            except AttributeError:
                raise WorldForgeError(f"provider {full_name!r} has no 'name'.") from None
        return provider


__all__ = [
    "BUILTIN_CAPABILITIES",
    "DISABLE_ENTRY_POINTS_ENV",
    "ENTRY_POINT_GROUP",
    "ProviderFactory",
    "ProviderInfo",
    "ProviderRegistry",
    "split_provider_name",
]
