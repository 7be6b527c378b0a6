"""Provider events: one structured record per provider call attempt.

Events are how a run's event log, provenance ``event_count`` and benchmark retry counts learn what
providers did, so they are validated at construction and their free text is sanitized *before* it
reaches any sink (an event may end up in an evidence bundle attached to a public issue).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from worldforge.core.canonical import JSONObject, ensure_json_native
from worldforge.core.digests import is_digest
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact import sanitize_text, sanitize_value

EVENT_PHASES: tuple[str, ...] = ("success", "failure", "retry", "budget_exceeded")

EventSink = Callable[["ProviderEvent"], None]


def sanitize_message(message: str) -> str:
    """Sanitize free text with the project's one sanitizer; there is no unsanitized fallback."""
    return sanitize_text(message)


def _sanitize_metadata(metadata: JSONObject) -> JSONObject:
    cleaned = sanitize_value(metadata)
    if not isinstance(cleaned, dict):  # a dict sanitizes to a dict; anything else fails closed
        raise WorldForgeError("provider event metadata did not sanitize to a mapping")
    return cleaned


@dataclass(frozen=True, slots=True)
class ProviderEvent:
    """One provider call attempt.

    ``input_digest`` is the canonical-JSON digest of the call's input so a reviewer can match an
    event to the item that caused it without the event carrying the (possibly sensitive) input.
    ``duration_ms`` is wall-clock and therefore never part of a digested payload.
    """

    provider: str
    operation: str
    phase: str
    attempt: int = 1
    duration_ms: float = 0.0
    input_digest: str | None = None
    message: str = ""
    max_attempts: int = 1
    metadata: JSONObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("provider", "operation"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise WorldForgeError(f"provider_event.{name}: must be a non-empty string.")
        phase = self.phase.lower() if isinstance(self.phase, str) else self.phase
        if phase not in EVENT_PHASES:
            raise WorldForgeError(
                f"provider_event.phase: {self.phase!r} is not one of {', '.join(EVENT_PHASES)}."
            )
        object.__setattr__(self, "phase", phase)
        if isinstance(self.attempt, bool) or not isinstance(self.attempt, int) or self.attempt < 1:
            raise WorldForgeError("provider_event.attempt: must be an integer >= 1.")
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise WorldForgeError("provider_event.max_attempts: must be an integer.")
        if self.max_attempts < self.attempt:
            object.__setattr__(self, "max_attempts", self.attempt)
        duration = float(self.duration_ms)
        if not math.isfinite(duration) or duration < 0:
            raise WorldForgeError("provider_event.duration_ms: must be a finite number >= 0.")
        object.__setattr__(self, "duration_ms", round(duration, 3))
        if self.input_digest is not None and not is_digest(self.input_digest):
            raise WorldForgeError("provider_event.input_digest: expected 'sha256:<64 hex>'.")
        object.__setattr__(self, "message", sanitize_message(str(self.message)))
        if not isinstance(self.metadata, dict):
            raise WorldForgeError("provider_event.metadata: must be an object.")
        ensure_json_native(self.metadata, "provider_event.metadata")
        object.__setattr__(self, "metadata", _sanitize_metadata(dict(self.metadata)))

    def to_dict(self) -> JSONObject:
        payload: JSONObject = {
            "provider": self.provider,
            "operation": self.operation,
            "phase": self.phase,
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "duration_ms": self.duration_ms,
            "message": self.message,
            "metadata": dict(self.metadata),
        }
        if self.input_digest is not None:
            payload["input_digest"] = self.input_digest
        return payload


class InMemoryEventSink:
    """Collects events in a list (thread-safe); handy for tests and report event counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.events: list[ProviderEvent] = []

    def __call__(self, event: ProviderEvent) -> None:
        with self._lock:
            self.events.append(event)

    def __len__(self) -> int:
        with self._lock:
            return len(self.events)


class CountingEventSink:
    """Counts events without keeping them (the forge uses one for provenance ``event_count``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def __call__(self, event: ProviderEvent) -> None:
        with self._lock:
            self._count += 1

    @property
    def count(self) -> int:
        with self._lock:
            return self._count


class EventDispatcher:
    """Fans one event out to every sink, in registration order.

    A sink that raises propagates: silently losing events would make a run's event log disagree
    with its provenance ``event_count``.
    """

    def __init__(self, sinks: list[EventSink] | None = None) -> None:
        self._lock = threading.Lock()
        self._sinks: list[EventSink] = list(sinks or [])
        self._counter = CountingEventSink()

    def add(self, sink: EventSink) -> None:
        if not callable(sink):
            raise WorldForgeError("event sink: must be callable with one ProviderEvent argument.")
        with self._lock:
            self._sinks.append(sink)

    def remove(self, sink: EventSink) -> None:
        with self._lock:
            if sink in self._sinks:
                self._sinks.remove(sink)

    @property
    def count(self) -> int:
        """Number of events dispatched so far (whatever the sinks did with them)."""
        return self._counter.count

    def __call__(self, event: ProviderEvent) -> None:
        self._counter(event)
        with self._lock:
            sinks = list(self._sinks)
        for sink in sinks:
            sink(event)


__all__ = [
    "EVENT_PHASES",
    "CountingEventSink",
    "EventDispatcher",
    "EventSink",
    "InMemoryEventSink",
    "ProviderEvent",
    "sanitize_message",
]
