"""A run's status and the typed payloads of the events the framework itself writes to ``events.jsonl``.

Suites and providers may log any event type (``Run.emit``), but the events the framework's own
code writes and reads back have one model each, tagged with its literal ``TYPE``: the run's
lifecycle (``run.*``), ``item.completed`` and ``artifact.written`` (what ``runs resume`` rebuilds a
run from), ``gateway.exchange`` (every model exchange of a trial), ``suite.*`` and ``stage.*``.
An emitter builds the model and hands it to ``Run.emit_event`` (:mod:`worldforge.workspace.run`), so a
payload field has one name and one type wherever it is written or read.

The models live in ``core``, below every emitter (the gateway, the suites, the folder stages of
``pcg``, which may not import the workspace) and below the workspace that writes and reads them,
and serialize to exactly the payloads written before they existed: ``to_dict`` omits an optional
field that is ``None``, as the writers always left it out, so ``from_dict(d).to_dict() == d``.
``from_dict`` refuses a payload with a missing, unknown or mistyped field, naming it.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import Enum, StrEnum
from typing import Any, ClassVar, Literal, Protocol, TypeVar, Union, get_args, get_origin, get_type_hints

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.errors import WorldForgeError

_E = TypeVar("_E", bound="_Event")


class RunStatus(StrEnum):
    """A run's ``status``. String-valued, so the manifest and event payloads spell it as before."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


_HINTS: dict[type, dict[str, object]] = {}


def _hints(cls: type) -> dict[str, object]:
    """A model's resolved field annotations (computed once per model)."""
    if cls not in _HINTS:
        # ``JSON`` is recursive: its inner forward reference resolves in this namespace.
        _HINTS[cls] = get_type_hints(cls, localns={"JSON": JSON})
    return _HINTS[cls]


def _matches(value: object, hint: object) -> bool:
    """Whether a JSON value fits a field's annotation (the shapes these models use, nothing more)."""
    origin = get_origin(hint)
    if hint is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_matches(value, arg) for arg in get_args(hint))
    if hint is type(None):
        return value is None
    if isinstance(hint, type) and issubclass(hint, Enum):
        return isinstance(value, str) and value in {member.value for member in hint}
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is list:
        (item,) = get_args(hint)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    raise TypeError(f"event field annotation {hint!r} is not one the event models use")


def _enum_of(hint: object) -> type[Enum] | None:
    for arg in (hint, *get_args(hint)):
        if isinstance(arg, type) and issubclass(arg, Enum):
            return arg
    return None


@dataclass(frozen=True)
class _Event:
    """Shared ``to_dict``/``from_dict``: a field whose default is ``None`` is optional and omitted
    when unset; every other field is required."""

    TYPE: ClassVar[str]

    def to_dict(self) -> JSONObject:
        """The event's ``payload`` as written to ``events.jsonl``."""
        out: JSONObject = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            out[f.name] = value.value if isinstance(value, Enum) else value
        return out

    @classmethod
    def from_dict(cls: type[_E], data: Mapping[str, object]) -> _E:
        """Read a payload of this event type; ``WorldForgeError`` naming a bad field."""
        where = f"event {cls.TYPE}"
        if not isinstance(data, Mapping):
            raise WorldForgeError(f"{where}: payload is not a JSON object.")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise WorldForgeError(f"{where}: unknown field {unknown[0]!r}.")
        values: dict[str, object] = {}
        for name, f in known.items():
            hint = _hints(cls)[name]
            if name not in data:
                if f.default is None:
                    continue
                raise WorldForgeError(f"{where}: field {name!r} is missing.")
            value = data[name]
            if not _matches(value, hint):
                raise WorldForgeError(f"{where}: field {name!r} has the wrong type ({type(value).__name__}).")
            enum = _enum_of(hint)
            values[name] = enum(value) if enum is not None and value is not None else value
        return cls(**values)


# ---------------------------------------------------------------------- the run's lifecycle


@dataclass(frozen=True)
class RunStarted(_Event):
    """The first line of every run: identity, sanitized argv and the config digest."""

    TYPE: ClassVar[Literal["run.started"]] = "run.started"
    run_id: str
    kind: str
    argv: list[str]
    config_digest: str
    worldforge_version: str


@dataclass(frozen=True)
class RunResumed(_Event):
    """``runs resume`` reopened the run: how often, from what status, and what it kept."""

    TYPE: ClassVar[Literal["run.resumed"]] = "run.resumed"
    attempt: int
    previous_status: RunStatus
    reused_items: int
    repaired_bytes: int
    argv: list[str]


@dataclass(frozen=True)
class RunFinished(_Event):
    """The run completed: its input and result digests and the digest over its items."""

    TYPE: ClassVar[Literal["run.finished"]] = "run.finished"
    status: RunStatus
    input_digest: str
    result_digest: str
    item_count: int
    items_digest: str


@dataclass(frozen=True)
class RunFailed(_Event):
    """The run stopped (``failed`` or ``interrupted``): the exception's type and sanitized message."""

    TYPE: ClassVar[Literal["run.failed"]] = "run.failed"
    status: RunStatus
    type: str
    message: str


# ---------------------------------------------------------------------- items and artifacts


@dataclass(frozen=True)
class ItemCompleted(_Event):
    """An item record was written (before this line, so a logged item always has its file)."""

    TYPE: ClassVar[Literal["item.completed"]] = "item.completed"
    item_id: str
    input_digest: str
    record_digest: str
    path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class ArtifactWritten(_Event):
    """A file of the run was written atomically: its run-relative path, digest, size and type."""

    TYPE: ClassVar[Literal["artifact.written"]] = "artifact.written"
    path: str
    sha256: str
    size: int
    media_type: str


# ---------------------------------------------------------------------- model exchanges


@dataclass(frozen=True)
class GatewayExchange(_Event):
    """One request of a trial to the model gateway and what answered it.

    ``request`` … ``error`` are the recorded exchange exactly as the item record keeps it
    (sanitized, no timing); ``duration_ms``, ``budget``, ``after_trial_end`` and ``retry_after``
    exist only here, in the log, because they depend on the clock or on scheduling.
    """

    TYPE: ClassVar[Literal["gateway.exchange"]] = "gateway.exchange"
    item_id: str
    index: int
    source: str
    request: JSONObject
    request_digest: str
    response: JSONObject | None = None
    response_digest: str | None = None
    altered: bool | None = None
    error: JSONObject | None = None
    duration_ms: float | None = None
    budget: JSONObject | None = None
    after_trial_end: bool | None = None
    retry_after: str | None = None

    @classmethod
    def of(
        cls, item_id: str, index: int, source: str, exchange: Mapping[str, object], **extra: object
    ) -> GatewayExchange:
        """The event for a recorded exchange (``Recorder.exchange``) plus the log-only ``extra``."""
        return cls.from_dict({"item_id": item_id, "index": index, "source": source, **extra, **exchange})


# ---------------------------------------------------------------------- suites and stages


@dataclass(frozen=True)
class SuiteStarted(_Event):
    """A suite began its items."""

    TYPE: ClassVar[Literal["suite.started"]] = "suite.started"
    suite_id: str
    items: int


@dataclass(frozen=True)
class SuiteFinished(_Event):
    """A suite finished; the digest of its result payload."""

    TYPE: ClassVar[Literal["suite.finished"]] = "suite.finished"
    suite_id: str
    result_digest: str


@dataclass(frozen=True)
class StageStarted(_Event):
    """A folder stage (``pcg stage``) began."""

    TYPE: ClassVar[Literal["stage.started"]] = "stage.started"
    stage: str


@dataclass(frozen=True)
class StageFinished(_Event):
    """A folder stage finished."""

    TYPE: ClassVar[Literal["stage.finished"]] = "stage.finished"
    stage: str


FrameworkEvent = (
    RunStarted
    | RunResumed
    | RunFinished
    | RunFailed
    | ItemCompleted
    | ArtifactWritten
    | GatewayExchange
    | SuiteStarted
    | SuiteFinished
    | StageStarted
    | StageFinished
)

#: Every framework event model by its type tag.
EVENT_MODELS: dict[str, type[FrameworkEvent]] = {model.TYPE: model for model in get_args(FrameworkEvent)}


class EventRecorder(Protocol):
    """What an emitter below the workspace needs of a run: somewhere to append an event.

    :class:`worldforge.workspace.run.Run` is one; the gateway and the folder stages take this
    instead, so they depend on the one method they call (and a test may hand them a list).
    """

    def emit(self, event_type: str, payload: JSONObject | None = None) -> None:
        """Append an event of ``event_type`` with a JSON-native ``payload``."""


def parse_event(event_type: str, payload: Mapping[str, object]) -> FrameworkEvent | None:
    """The typed payload of a framework event, ``None`` for an event type the framework does not own
    (a suite's or provider's own events); ``WorldForgeError`` for a malformed framework event."""
    model = EVENT_MODELS.get(event_type)
    return None if model is None else model.from_dict(payload)


__all__ = [
    "EVENT_MODELS",
    "EventRecorder",
    "RunStatus",
    "ArtifactWritten",
    "FrameworkEvent",
    "GatewayExchange",
    "ItemCompleted",
    "RunFailed",
    "RunFinished",
    "RunResumed",
    "RunStarted",
    "StageFinished",
    "StageStarted",
    "SuiteFinished",
    "SuiteStarted",
    "parse_event",
]
