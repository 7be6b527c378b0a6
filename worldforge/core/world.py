"""``World``: a named scene of objects with a step counter and an auditable history.

A world is plain data plus a reference to the :class:`~worldforge.forge.WorldForge` that executes
provider calls on it. Its snapshot (:meth:`World.to_state`) is JSON-native with
``schema_version: 1``; object ids are ``<slug(name)>-<counter>`` so two worlds built the same way
have byte-identical snapshots and digests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict, runtime_checkable

from worldforge.core.canonical import JSONObject, ensure_json_native, json_object
from worldforge.core.digests import digest_payload
from worldforge.core.entities import Action, ActionDict, BBox, Position, SceneObject, SceneObjectDict, slugify
from worldforge.core.errors import WorldForgeError, WorldStateError

WORLD_SCHEMA_VERSION = 1
_WORLD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def validate_world_id(world_id: object) -> str:
    """World ids become file names under the state dir, so path tricks are rejected."""
    if not isinstance(world_id, str) or not _WORLD_ID_RE.match(world_id) or world_id in (".", ".."):
        raise WorldStateError(f"world id {world_id!r}: must match [A-Za-z0-9][A-Za-z0-9_.-]*.")
    return world_id


class WorldState(TypedDict):
    """:meth:`World.to_state`: the JSON-native snapshot providers receive and ``predict`` returns
    (:func:`validate_world_state` reads one back from a file or a provider)."""

    schema_version: int
    id: str
    name: str
    provider: str
    description: str
    step: int
    object_counter: int
    objects: list[SceneObjectDict]
    metadata: JSONObject


class HistoryEntry(TypedDict):
    """One entry of :meth:`World.history`: what changed at which step, and the resulting digest."""

    step: int
    summary: str
    action: ActionDict | None
    state_digest: str


class WorldDict(WorldState):
    """:meth:`World.to_dict`: the snapshot plus its history (what a saved world holds)."""

    history: list[HistoryEntry]


def validate_world_state(state: object, field_name: str = "world") -> WorldState:
    """Check a snapshot's shape and return it as a :class:`WorldState`; errors name the offending
    field.

    A snapshot may omit ``description`` (read as ``""``), ``object_counter`` (the number of
    objects) and ``metadata`` (``{}``); the returned state has them, its objects in their
    :meth:`SceneObject.to_dict` form, and no keys beyond the snapshot's own."""
    if not isinstance(state, Mapping):
        raise WorldStateError(f"{field_name}: expected an object.")
    for key in ("schema_version", "id", "name", "provider", "step", "objects"):
        if key not in state:
            raise WorldStateError(f"{field_name}.{key}: missing.")
    if state["schema_version"] != WORLD_SCHEMA_VERSION:
        raise WorldStateError(
            f"{field_name}.schema_version: expected {WORLD_SCHEMA_VERSION}, got {state['schema_version']!r}."
        )
    world_id = validate_world_id(state["id"])
    step = state["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise WorldStateError(f"{field_name}.step: must be an integer >= 0.")
    if not isinstance(state["objects"], list):
        raise WorldStateError(f"{field_name}.objects: must be a list.")
    seen: set[str] = set()
    objects: list[SceneObjectDict] = []
    for index, obj in enumerate(state["objects"]):
        parsed = SceneObject.from_dict(obj, f"{field_name}.objects[{index}]")
        if not parsed.id or parsed.id in seen:
            raise WorldStateError(f"{field_name}.objects[{index}].id: missing or duplicate id {parsed.id!r}.")
        seen.add(parsed.id)
        objects.append(parsed.to_dict())
    ensure_json_native(dict(state), field_name)
    name, provider = state["name"], state["provider"]
    if not isinstance(name, str):
        raise WorldStateError(f"{field_name}.name: must be a string.")
    if not isinstance(provider, str):
        raise WorldStateError(f"{field_name}.provider: must be a string.")
    counter = state.get("object_counter", len(objects))
    if isinstance(counter, bool) or not isinstance(counter, int) or counter < 0:
        raise WorldStateError(f"{field_name}.object_counter: must be an integer >= 0.")
    metadata = state.get("metadata")
    return {
        "schema_version": WORLD_SCHEMA_VERSION,
        "id": world_id,
        "name": name,
        "provider": provider,
        "description": str(state.get("description", "")),
        "step": step,
        "object_counter": counter,
        "objects": objects,
        "metadata": dict(json_object(metadata, f"{field_name}.metadata")) if metadata else {},
    }


class Prediction(Protocol):
    """A provider's prediction as the domain layer sees it (``PredictionResult`` is one): the next
    world state :meth:`World.predict` loads, and the scores callers report."""

    @property
    def world_state(self) -> WorldState: ...

    @property
    def physics_score(self) -> float: ...

    @property
    def confidence(self) -> float: ...


class PlanLike(Protocol):
    """What :meth:`World.execute_plan` replays: the actions and the provider that planned them
    (the planner's ``Plan`` is one; the domain layer never imports the planner above it)."""

    @property
    def actions(self) -> list[Action]: ...

    @property
    def provider(self) -> str: ...


@runtime_checkable
class WorldRuntime(Protocol):
    """What a :class:`World` needs from its runtime: provider prediction and planning.

    The facade (:class:`~worldforge.forge.WorldForge`) implements it; the world depends on this
    protocol only, so the domain layer never imports the facade or the planner above it.
    """

    def predict(
        self, world_state: WorldState, action: Action, steps: int = 1, provider: str = "mock"
    ) -> Prediction: ...

    def plan(self, world: World, goal: object, provider: str, **options: Any) -> PlanLike: ...


def _history_entry(entry: object, index: int, world_step: int) -> HistoryEntry:
    """One saved history entry, checked: a step no later than the world's, a summary, the action
    (or ``None``) and the state digest."""
    if not isinstance(entry, Mapping):
        raise WorldStateError(f"world.history[{index}]: malformed entry.")
    step, summary, digest, action = (entry.get(k) for k in ("step", "summary", "state_digest", "action"))
    if not isinstance(step, int) or not isinstance(summary, str) or not isinstance(digest, str):
        raise WorldStateError(f"world.history[{index}]: malformed entry.")
    if step > world_step:
        raise WorldStateError(f"world.history[{index}].step: later than the world step.")
    parsed = None if action is None else Action.from_dict(action, f"world.history[{index}].action").to_dict()
    return {"step": step, "summary": summary, "action": parsed, "state_digest": digest}


@dataclass(frozen=True, slots=True)
class PlanExecution:
    """Result of replaying a plan on a copy of a world (the original is not mutated)."""

    world: World
    predictions: list[Prediction] = field(default_factory=list)

    def final_world(self) -> World:
        return self.world


class World:
    """A scene bound to a provider. Mutating methods append to ``history``."""

    def __init__(
        self,
        name: str,
        provider: str = "mock",
        *,
        forge: WorldRuntime | None = None,
        world_id: str | None = None,
        description: str = "",
        metadata: JSONObject | None = None,
        max_history: int | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise WorldForgeError("world name: must be a non-empty string.")
        self.name = name
        self.id = validate_world_id(world_id or slugify(name))
        self.provider = provider
        self.description = description
        self.metadata: JSONObject = dict(metadata or {})
        self.step = 0
        self.object_counter = 0
        self._objects: list[SceneObject] = []
        self._forge = forge
        if max_history is not None and max_history < 1:
            raise WorldForgeError("max_history: must be >= 1.")
        self._max_history = max_history
        self._history: list[HistoryEntry] = []
        self._record("world initialized", None)

    # -- objects ---------------------------------------------------------------------------------
    def add_object(
        self,
        obj: SceneObject | str,
        position: Position | None = None,
        *,
        bbox: BBox | None = None,
        is_graspable: bool = True,
        metadata: JSONObject | None = None,
    ) -> SceneObject:
        """Add an object (a :class:`SceneObject` or a name + position); returns it with its id."""
        if isinstance(obj, str):
            pos = position or Position(0.0, 0.5, 0.0)
            obj = SceneObject(obj, pos, bbox or BBox.around(pos), "", is_graspable, dict(metadata or {}))
        self.object_counter += 1
        if not obj.id:
            obj = SceneObject(
                obj.name,
                obj.position,
                obj.bbox,
                f"{slugify(obj.name)}-{self.object_counter}",
                obj.is_graspable,
                dict(obj.metadata),
            )
        if any(existing.id == obj.id for existing in self._objects):
            raise WorldForgeError(f"object id {obj.id!r} already exists in world {self.id!r}.")
        self._objects.append(obj)
        self._record(f"added object {obj.id}", None)
        return obj

    def objects(self) -> list[SceneObject]:
        return list(self._objects)

    @property
    def object_count(self) -> int:
        return len(self._objects)

    def get_object(self, object_id: str) -> SceneObject:
        for obj in self._objects:
            if obj.id == object_id:
                return obj
        raise WorldForgeError(f"world {self.id!r} has no object with id {object_id!r}.")

    def find_object(self, name: str) -> SceneObject:
        """The unique object called ``name`` (ambiguous or missing names are errors)."""
        matches = [obj for obj in self._objects if obj.name == name]
        if len(matches) != 1:
            what = "no" if not matches else f"{len(matches)}"
            raise WorldForgeError(f"world {self.id!r} has {what} object(s) named {name!r}.")
        return matches[0]

    def remove_object(self, object_id: str) -> None:
        obj = self.get_object(object_id)
        self._objects.remove(obj)
        self._record(f"removed object {obj.id}", None)

    # -- snapshots -------------------------------------------------------------------------------
    def to_state(self) -> WorldState:
        """The JSON-native snapshot providers receive (no history, no timestamps)."""
        return {
            "schema_version": WORLD_SCHEMA_VERSION,
            "id": self.id,
            "name": self.name,
            "provider": self.provider,
            "description": self.description,
            "step": self.step,
            "object_counter": self.object_counter,
            "objects": [obj.to_dict() for obj in self._objects],
            "metadata": dict(self.metadata),
        }

    def state_digest(self) -> str:
        return digest_payload(self.to_state())

    def to_dict(self) -> WorldDict:
        return {**self.to_state(), "history": self.history()}

    @classmethod
    def from_dict(cls, payload: object, *, forge: WorldRuntime | None = None) -> World:
        state = validate_world_state(payload)
        world = cls(
            state["name"],
            state["provider"],
            forge=forge,
            world_id=state["id"],
            description=state["description"],
            metadata=state["metadata"],
        )
        world._load_state(state)
        history = payload.get("history") if isinstance(payload, Mapping) else None
        if isinstance(history, list):
            world._history = [_history_entry(entry, index, world.step) for index, entry in enumerate(history)]
        return world

    def copy(self) -> World:
        """An independent copy (same id, same forge, same history)."""
        return World.from_dict(self.to_dict(), forge=self._forge)

    def _load_state(self, state: WorldState) -> None:
        self.step = state["step"]
        self._objects = [SceneObject.from_dict(o) for o in state["objects"]]
        self.object_counter = state["object_counter"]
        self.metadata = dict(state["metadata"])

    def _record(self, summary: str, action: Action | None) -> None:
        self._history.append(
            {
                "step": self.step,
                "summary": summary,
                "action": action.to_dict() if action else None,
                "state_digest": self.state_digest(),
            }
        )
        if self._max_history is not None and len(self._history) > self._max_history:
            del self._history[: len(self._history) - self._max_history]

    def history(self) -> list[HistoryEntry]:
        return [entry.copy() for entry in self._history]

    # -- provider-backed operations --------------------------------------------------------------
    @property
    def forge(self) -> WorldRuntime:
        """The runtime that serves this world's provider calls (a :class:`WorldRuntime`)."""
        if self._forge is None:
            raise WorldForgeError(
                f"world {self.id!r} is not bound to a forge: create it with "
                "WorldForge().create_world(...) or pass forge=WorldForge()."
            )
        return self._forge

    def predict(self, action: Action, steps: int = 1, provider: str | None = None) -> Prediction:
        """Advance the world through ``provider``'s ``predict``; returns the ``PredictionResult``."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise WorldForgeError("steps: must be a positive integer.")
        name = provider or self.provider
        result = self.forge.predict(self.to_state(), action, steps=steps, provider=name)
        state = validate_world_state(result.world_state, "prediction.world_state")
        self._load_state(state)
        self.provider = name
        self._record(f"predicted via {name}", action)
        return result

    def plan(self, goal: object, *, provider: str | None = None, **controller_options: Any) -> PlanLike:
        """Plan towards ``goal`` with the forge's planner (the facade's is
        :class:`~worldforge.planning.mpc.LatentMPCController`).

        The world itself is not changed; see :meth:`execute_plan`.
        """
        return self.forge.plan(self, goal, provider or self.provider, **controller_options)

    def execute_plan(self, plan: PlanLike, provider: str | None = None) -> PlanExecution:
        """Replay ``plan.actions`` through ``predict`` on a copy of this world."""
        name = provider or plan.provider or self.provider
        sandbox = self.copy()
        predictions = [sandbox.predict(action, 1, name) for action in plan.actions]
        return PlanExecution(sandbox, predictions)


__all__ = [
    "WORLD_SCHEMA_VERSION",
    "PlanExecution",
    "PlanLike",
    "Prediction",
    "World",
    "WorldRuntime",
    "validate_world_id",
    "validate_world_state",
]
