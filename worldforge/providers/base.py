"""Capabilities, the provider protocol and the typed results providers return.

A provider is any object with ``name``, ``capabilities`` and ``runtime_manifest()`` plus one method
per capability it declares:

* ``predict(world_state: WorldState, action: ActionDict, steps: int) -> PredictionResult``
* ``score_actions(world_state: WorldState, goal: Mapping[str, object], candidates:
  list[list[ActionDict]]) -> ScoreResult`` (a cost oracle: one finite cost per candidate action
  sequence, lower is better; ``goal`` is the planner's, read by the oracle that understands it)
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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar, runtime_checkable

from worldforge.core.canonical import JSON, JSONObject, json_object
from worldforge.core.digests import digest_payload
from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.core.world import WorldState
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


def prefixed_options(
    prefix: str, keys: Iterable[str], options: Mapping[str, object] | None = None
) -> dict[str, Any]:
    """Settings from suite/CLI options: ``<prefix>_<key>`` (``ollama_host``) wins over ``key``."""
    opts = dict(options or {})
    values: dict[str, Any] = {}
    for key in keys:
        for name in (f"{prefix}_{key}", key):
            if opts.get(name) is not None:
                values[key] = opts[name]
                break
    return values


def validate_capability(name: object) -> str:
    """Return ``name`` if it is a known capability; otherwise raise naming the known ones."""
    if isinstance(name, Capability):
        return name.value
    if not isinstance(name, str) or name not in CAPABILITY_NAMES:
        raise WorldForgeError(
            f"Unknown provider capability {name!r}. Known capabilities: {', '.join(CAPABILITY_NAMES)}."
        )
    return name


def normalize_capabilities(names: Iterable[object]) -> tuple[str, ...]:
    """Validate capability names and return them deduplicated in canonical order."""
    wanted = {validate_capability(n) for n in names}
    return tuple(c for c in CAPABILITY_NAMES if c in wanted)


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """Text produced by the ``generate`` capability. ``metadata`` is JSON-native (model, seed, token
    counts, ...) and may enter digested item records, so it must not contain timings."""

    provider: str
    text: str
    metadata: JSONObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise WorldForgeError("generation.text: must be a string.")
        json_object(self.metadata, "generation.metadata")

    def to_dict(self) -> JSONObject:
        return {"provider": self.provider, "text": self.text, "metadata": dict(self.metadata)}


@dataclass(frozen=True, slots=True)
class PredictionResult:
    """Next world state from the ``predict`` capability; scores are probabilities in [0, 1]."""

    provider: str
    world_state: WorldState
    physics_score: float
    confidence: float
    metadata: JSONObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        json_object(self.world_state, "prediction.world_state")
        for name in ("physics_score", "confidence"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise WorldForgeError(f"prediction.{name}: must be a number.")
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise WorldForgeError(f"prediction.{name}: must be finite and in [0, 1], got {value!r}.")
        json_object(self.metadata, "prediction.metadata")


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """Costs for candidate action sequences from the ``score`` capability (the MPC cost oracle)."""

    provider: str
    scores: list[float]
    best_index: int
    lower_is_better: bool = True
    metadata: JSONObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.scores, list) or not self.scores:
            raise WorldForgeError("score.scores: must be a non-empty list.")
        for index, value in enumerate(self.scores):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise WorldForgeError(f"score.scores[{index}]: must be a finite number.")
        if not 0 <= self.best_index < len(self.scores):
            raise WorldForgeError("score.best_index: out of range.")
        json_object(self.metadata, "score.metadata")

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

    def runtime_manifest(self) -> JSONObject | None: ...


def provider_capabilities(provider: object) -> tuple[str, ...]:
    """Validated capabilities of a provider, in canonical order."""
    caps = getattr(provider, "capabilities", None)
    if caps is None:
        raise WorldForgeError(f"provider {getattr(provider, 'name', provider)!r}: has no 'capabilities'.")
    return normalize_capabilities(caps)


def require_capability(provider: object, capability: str) -> None:
    """Raise :class:`WorldForgeError` naming the provider and the missing capability."""
    cap = validate_capability(capability)
    if cap not in provider_capabilities(provider):
        raise WorldForgeError(
            f"Provider '{getattr(provider, 'name', '?')}' does not support the '{cap}' capability."
        )


@dataclass(frozen=True, slots=True)
class Prefetch:
    """Work a provider's ``generate`` needs that a worker process can do ahead of the call.

    ``function`` is a module-level, pure function (so an executor can pickle it) and ``args`` its
    arguments; the value it returns goes back to the provider through
    :meth:`BaseProvider.accept_prefetched`, after which the call is answered from it. A reply must
    be byte-identical whether or not its work was prefetched.
    """

    function: Callable[..., Any]
    args: tuple[Any, ...]


class BaseProvider:
    """Convenience base: capability bookkeeping and event emission around every call.

    Subclasses set ``name`` and ``_capabilities`` and wrap each capability method body in
    :meth:`instrumented`, which times the call, digests its input and emits a ``success`` or
    ``failure`` event. Providers that retry emit ``retry`` events with :meth:`emit_event`.

    The typed attributes below are what callers (the model gateway, suites) may ask of a provider
    without knowing which one it is; their defaults describe a provider without model servers.
    """

    name: str = "provider"
    _capabilities: tuple[str, ...] = ()
    emits_events: bool = True
    #: ``n`` choices come from one request (the model gateway then splits a completion cap across
    #: them); ``False``: the gateway asks once per choice.
    native_choices: bool = False
    #: Modules whose code writes this provider's replies (their versions enter the model identity,
    #: so a change of that code invalidates cached replies); empty for replies a server writes.
    reply_code: tuple[str, ...] = ()
    #: The forge's dispatcher (a class default, so a subclass that skips ``__init__`` emits nothing).
    _event_handler: EventSink | None = None

    def __init__(self) -> None:
        self._event_handler: EventSink | None = None

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset(normalize_capabilities(self._capabilities))

    @property
    def connection_capacity(self) -> int | None:
        """Requests this provider's model servers take at once (``None``: no servers to wait on,
        so calls are made in the caller's thread)."""
        return None

    def prefetch(self, options: Mapping[str, object]) -> Prefetch | None:
        """The work ``generate(..., options=options)`` needs that may be done ahead in a worker
        process (``None``: nothing)."""
        return None

    def accept_prefetched(self, work: Prefetch, value: object) -> None:
        """Keep the ``value`` that ``work`` (from :meth:`prefetch`) returned for the coming call."""

    def supports(self, capability: str) -> bool:
        return validate_capability(capability) in self.capabilities

    def runtime_manifest(self) -> JSONObject | None:
        return None

    def bind_event_handler(self, handler: EventSink | None) -> None:
        """Route this provider's events to ``handler`` (the forge's dispatcher)."""
        self._event_handler = handler

    def emit_attempt(
        self, phase: str, attempt: int, retries: int, started: float, digest: str, message: str, **meta: JSON
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
        metadata: JSONObject | None = None,
    ) -> None:
        handler = self._event_handler
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

    def instrumented(self, operation: str, input_payload: object, call: Callable[[], T]) -> T:
        """Run ``call`` and emit one event describing it; exceptions are re-raised unchanged."""
        return run_instrumented(self.name, operation, input_payload, call, self.emit_event)


def run_instrumented(
    provider_name: str,
    operation: str,
    input_payload: object,
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


@dataclass(frozen=True, slots=True)
class ProviderFamily:
    """A provider family as the registry builds it, declared next to its class.

    The provider registry names a family by ``module:attr`` (the project's own in its
    ``worldforge.providers`` entry points); what ``providers list`` shows comes from here, so the
    description, the argument rule and the capabilities have one home, the provider's module.
    ``build(argument, options)`` gets the suffix of ``name:argument`` (``""`` without one) and the
    run's options, so a provider is built once with the servers and limits the command line chose.
    """

    provider_class: type[BaseProvider]
    build: Callable[[str, Mapping[str, Any] | None], BaseProvider]
    description: str
    #: ``"optional"`` or ``"required"``: whether ``name:argument`` needs its argument.
    argument: str = "optional"
    #: A full name to suggest when a required argument is missing (``ollama:qwen2.5``).
    example: str = ""

    @property
    def declared_capabilities(self) -> tuple[str, ...]:
        """What every provider of this family declares, read from its class (no instance needed;
        named apart from a provider's ``capabilities`` so a family is never taken for a provider)."""
        return normalize_capabilities(self.provider_class._capabilities)

    def create(self, name: str, argument: str | None, options: Mapping[str, Any] | None) -> BaseProvider:
        """Build ``name[:argument]``; a missing required argument is a one-line error with an example."""
        if self.argument == "required" and not argument:
            raise WorldForgeError(
                f"provider '{name}' needs a model: use '{name}:<model>' (e.g. {self.example})."
            )
        return self.build(argument or "", options)


__all__ = [
    "CAPABILITY_NAMES",
    "BaseProvider",
    "Capability",
    "EmbeddingResult",
    "GenerationResult",
    "Prefetch",
    "PredictionResult",
    "Provider",
    "ProviderFamily",
    "ScoreResult",
    "normalize_capabilities",
    "provider_capabilities",
    "require_capability",
    "run_instrumented",
    "validate_capability",
]
