"""Capabilities, the provider protocol and the typed results providers return.

A provider is any object with ``name``, ``capabilities`` and ``runtime_manifest()`` plus one method
per capability it declares:

* ``predict(world_state: dict, action: dict, steps: int) -> PredictionResult``
* ``score_actions(world_state: dict, goal: dict, candidates: list[list[dict]]) -> ScoreResult``
  (a cost oracle: one finite cost per candidate action sequence, lower is better)
* ``generate(messages: list[dict[str, str]], *, options: dict) -> GenerationResult``
  (chat turns ``{"role": "user"|"assistant"|"system", "content": str}``)
* ``embed(text: str) -> EmbeddingResult``

Providers that derive from :class:`BaseProvider` emit one :class:`ProviderEvent` per call through
:meth:`BaseProvider.instrumented`; the :class:`~worldforge.forge.WorldForge` binds its event
dispatcher to them (``bind_event_handler``). Capability names are validated: a typo is an error,
never a silent "unsupported".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar, runtime_checkable

from worldforge.core.canonical import ensure_json_native
from worldforge.core.digests import digest_payload
from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.providers.events import EventSink, ProviderEvent

T = TypeVar("T")


class Capability(StrEnum):
    """What a provider can do. ``plan`` is reserved (no built-in provider implements it)."""

    PREDICT = "predict"
    SCORE = "score"
    GENERATE = "generate"
    EMBED = "embed"
    REASON = "reason"
    POLICY = "policy"
    TRANSFER = "transfer"
    PLAN = "plan"


CAPABILITY_NAMES: tuple[str, ...] = tuple(c.value for c in Capability)


def prefixed_options(prefix: str, keys: Iterable[str], options: Any = None) -> dict[str, Any]:
    """Settings from suite/CLI options: ``<prefix>_<key>`` (``ollama_host``) wins over ``key``."""
    opts = dict(options or {})
    values: dict[str, Any] = {}
    for key in keys:
        for name in (f"{prefix}_{key}", key):
            if opts.get(name) is not None:
                values[key] = opts[name]
                break
    return values


def validate_capability(name: Any) -> str:
    """Return ``name`` if it is a known capability; otherwise raise naming the known ones."""
    if isinstance(name, Capability):
        return name.value
    if not isinstance(name, str) or name not in CAPABILITY_NAMES:
        raise WorldForgeError(
            f"Unknown provider capability {name!r}. Known capabilities: {', '.join(CAPABILITY_NAMES)}."
        )
    return name


def normalize_capabilities(names: Iterable[Any]) -> tuple[str, ...]:
    """Validate capability names and return them deduplicated in canonical order."""
    wanted = {validate_capability(n) for n in names}
    return tuple(c for c in CAPABILITY_NAMES if c in wanted)


def _require_json_dict(value: Any, field_name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WorldForgeError(f"{field_name}: must be an object.")
    ensure_json_native(value, field_name)
    return value


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """Text produced by the ``generate`` capability. ``metadata`` is JSON-native (model, seed, token
    counts, ...) and may enter digested item records, so it must not contain timings."""

    provider: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise WorldForgeError("generation.text: must be a string.")
        _require_json_dict(self.metadata, "generation.metadata")

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "text": self.text, "metadata": dict(self.metadata)}


@dataclass(frozen=True, slots=True)
class PredictionResult:
    """Next world state from the ``predict`` capability; scores are probabilities in [0, 1]."""

    provider: str
    world_state: dict[str, Any]
    physics_score: float
    confidence: float
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _require_json_dict(self.world_state, "prediction.world_state")
        for name in ("physics_score", "confidence"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise WorldForgeError(f"prediction.{name}: must be a number.")
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise WorldForgeError(f"prediction.{name}: must be finite and in [0, 1], got {value!r}.")
        _require_json_dict(self.metadata, "prediction.metadata")


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """Costs for candidate action sequences from the ``score`` capability (the MPC cost oracle)."""

    provider: str
    scores: list[float]
    best_index: int
    lower_is_better: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.scores, list) or not self.scores:
            raise WorldForgeError("score.scores: must be a non-empty list.")
        for index, value in enumerate(self.scores):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise WorldForgeError(f"score.scores[{index}]: must be a finite number.")
        if not 0 <= self.best_index < len(self.scores):
            raise WorldForgeError("score.best_index: out of range.")
        _require_json_dict(self.metadata, "score.metadata")

    def costs(self) -> list[float]:
        """Scores as costs (lower is better) whatever the provider's orientation."""
        return [float(s) if self.lower_is_better else -float(s) for s in self.scores]


@dataclass(frozen=True, slots=True)
class EmbeddingResult:
    """A fixed-length float vector from the ``embed`` capability."""

    provider: str
    vector: list[float]
    model: str = ""

    def __post_init__(self) -> None:
        if not self.vector or not all(isinstance(v, float) and math.isfinite(v) for v in self.vector):
            raise WorldForgeError("embedding.vector: must be a non-empty list of finite floats.")


@runtime_checkable
class Provider(Protocol):
    """The structural protocol every provider satisfies."""

    name: str

    @property
    def capabilities(self) -> frozenset[str]: ...

    def runtime_manifest(self) -> dict[str, Any] | None: ...


def provider_capabilities(provider: Any) -> tuple[str, ...]:
    """Validated capabilities of a provider, in canonical order."""
    caps = getattr(provider, "capabilities", None)
    if caps is None:
        raise WorldForgeError(f"provider {getattr(provider, 'name', provider)!r}: has no 'capabilities'.")
    return normalize_capabilities(caps)


def require_capability(provider: Any, capability: str) -> None:
    """Raise :class:`WorldForgeError` naming the provider and the missing capability."""
    cap = validate_capability(capability)
    if cap not in provider_capabilities(provider):
        raise WorldForgeError(
            f"Provider '{getattr(provider, 'name', '?')}' does not support the '{cap}' capability."
        )


class BaseProvider:
    """Convenience base: capability bookkeeping and event emission around every call.

    Subclasses set ``name`` and ``_capabilities`` and wrap each capability method body in
    :meth:`instrumented`, which times the call, digests its input and emits a ``success`` or
    ``failure`` event. Providers that retry emit ``retry`` events with :meth:`emit_event`.
    """

    name: str = "provider"
    _capabilities: tuple[str, ...] = ()
    emits_events: bool = True

    def __init__(self) -> None:
        self._event_handler: EventSink | None = None

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset(normalize_capabilities(self._capabilities))

    def supports(self, capability: str) -> bool:
        return validate_capability(capability) in self.capabilities

    def runtime_manifest(self) -> dict[str, Any] | None:
        return None

    def bind_event_handler(self, handler: EventSink | None) -> None:
        """Route this provider's events to ``handler`` (the forge's dispatcher)."""
        self._event_handler = handler

    def emit_attempt(
        self, phase: str, attempt: int, retries: int, started: float, digest: str, message: str, **meta: Any
    ) -> None:
        """One ``generate`` attempt of a retrying client (``retry`` / ``success`` / ``failure``),
        timed from ``started`` (``time.monotonic()``)."""
        self.emit_event(
            "generate",
            phase,
            attempt=attempt,
            max_attempts=int(retries) + 1,
            duration_ms=(time.monotonic() - started) * 1000.0,
            input_digest=digest,
            message=message,
            metadata=meta,
        )

    def emit_event(
        self,
        operation: str,
        phase: str,
        *,
        attempt: int = 1,
        max_attempts: int = 1,
        duration_ms: float = 0.0,
        input_digest: str | None = None,
        message: str = "",
        metadata: dict[str, Any] | None = None,
    ) -> None:
        handler = getattr(self, "_event_handler", None)
        if handler is None:
            return
        handler(
            ProviderEvent(
                provider=self.name,
                operation=operation,
                phase=phase,
                attempt=attempt,
                max_attempts=max(attempt, max_attempts),
                duration_ms=duration_ms,
                input_digest=input_digest,
                message=message,
                metadata=metadata or {},
            )
        )

    def instrumented(self, operation: str, input_payload: Any, call: Callable[[], T]) -> T:
        """Run ``call`` and emit one event describing it; exceptions are re-raised unchanged."""
        return run_instrumented(self.name, operation, input_payload, call, self.emit_event)


def run_instrumented(
    provider_name: str,
    operation: str,
    input_payload: Any,
    call: Callable[[], T],
    emit: Callable[..., None],
) -> T:
    """Time ``call``, then emit a success/failure event through ``emit`` (``BaseProvider.emit_event``
    signature). Shared by :class:`BaseProvider` and the forge's wrapper for third-party providers."""
    try:
        input_digest: str | None = digest_payload(input_payload)
    except WorldForgeError:
        input_digest = None
    started = time.perf_counter()
    try:
        result = call()
    except Exception as exc:
        emit(
            operation,
            "failure",
            duration_ms=(time.perf_counter() - started) * 1000.0,
            input_digest=input_digest,
            message=f"{type(exc).__name__}: {exc}",
        )
        if isinstance(exc, (WorldForgeError, ProviderError)):
            raise
        raise ProviderError(f"provider '{provider_name}' {operation} failed: {exc}") from exc
    emit(
        operation,
        "success",
        duration_ms=(time.perf_counter() - started) * 1000.0,
        input_digest=input_digest,
    )
    return result


__all__ = [
    "CAPABILITY_NAMES",
    "BaseProvider",
    "Capability",
    "EmbeddingResult",
    "GenerationResult",
    "PredictionResult",
    "Provider",
    "ScoreResult",
    "normalize_capabilities",
    "provider_capabilities",
    "require_capability",
    "run_instrumented",
    "validate_capability",
]
