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
from typing import Any, Protocol, runtime_checkable

from worldforge.core.canonical import ensure_json_native
from worldforge.core.digests import digest_payload
from worldforge.core.entities import Action, BBox, Position, SceneObject, slugify
from worldforge.core.errors import WorldForgeError, WorldStateError

WORLD_SCHEMA_VERSION = 1
_WORLD_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def validate_world_id(world_id: object) -> str:
    """World ids become file names under the state dir, so path tricks are rejected."""
    if not isinstance(world_id, str) or not _WORLD_ID_RE.match(world_id) or world_id in (".", ".."):
        raise WorldStateError(f"world id {world_id!r}: must match [A-Za-z0-9][A-Za-z0-9_.-]*.")
    return world_id


def validate_world_state(state: object, field_name: str = "world") -> dict[str, Any]:
    """Check a snapshot's shape and return it; errors name the offending field."""
    if not isinstance(state, Mapping):
        raise WorldStateError(f"{field_name}: expected an object.")
    for key in ("schema_version", "id", "name", "provider", "step", "objects"):
        if key not in state:
            raise WorldStateError(f"{field_name}.{key}: missing.")
    if state["schema_version"] != WORLD_SCHEMA_VERSION:
        raise WorldStateError(
            f"{field_name}.schema_version: expected {WORLD_SCHEMA_VERSION}, got {state['schema_version']!r}."
        )
    validate_world_id(state["id"])
    step = state["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise WorldStateError(f"{field_name}.step: must be an integer >= 0.")
    if not isinstance(state["objects"], list):
        raise WorldStateError(f"{field_name}.objects: must be a list.")
    seen: set[str] = set()
    for index, obj in enumerate(state["objects"]):
        parsed = SceneObject.from_dict(obj, f"{field_name}.objects[{index}]")
        if not parsed.id or parsed.id in seen:
            raise WorldStateError(f"{field_name}.objects[{index}].id: missing or duplicate id {parsed.id!r}.")
        seen.add(parsed.id)
    ensure_json_native(dict(state), field_name)
    return dict(state)


class Prediction(Protocol):
    """A provider's prediction as the domain layer sees it (``PredictionResult`` is one): the next
    world state :meth:`World.predict` loads, and the scores callers report."""

    @property
    def world_state(self) -> dict[str, Any]: ...

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
        self, world_state: dict[str, Any], action: Action, steps: int = 1, provider: str = "mock"
    ) -> Prediction: ...

    def plan(self, world: World, goal: Any, provider: str, **options: Any) -> PlanLike: ...


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
        metadata: dict[str, Any] | None = None,
        max_history: int | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise WorldForgeError("world name: must be a non-empty string.")
        self.name = name
        self.id = validate_world_id(world_id or slugify(name))
        self.provider = provider
        self.description = description
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.step = 0
        self.object_counter = 0
        self._objects: list[SceneObject] = []
        self._forge = forge
        if max_history is not None and max_history < 1:
            raise WorldForgeError("max_history: must be >= 1.")
        self._max_history = max_history
        self._history: list[dict[str, Any]] = []
        self._record("world initialized", None)

    # -- objects ---------------------------------------------------------------------------------
    def add_object(
        self,
        obj: SceneObject | str,
        position: Position | None = None,
        *,
        bbox: BBox | None = None,
        is_graspable: bool = True,
        metadata: dict[str, Any] | None = None,
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
    def to_state(self) -> dict[str, Any]:
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

    def to_dict(self) -> dict[str, Any]:
        payload = self.to_state()
        payload["history"] = [dict(entry) for entry in self._history]
        return payload

    @classmethod
    def from_dict(cls, payload: object, *, forge: WorldRuntime | None = None) -> World:
        state = validate_world_state(payload)
        world = cls(
            state["name"],
            state["provider"],
            forge=forge,
            world_id=state["id"],
            description=str(state.get("description", "")),
            metadata=dict(state.get("metadata") or {}),
        )
        world._load_state(state)
        history = payload.get("history") if isinstance(payload, Mapping) else None
        if isinstance(history, list):
            for index, entry in enumerate(history):
                if not isinstance(entry, dict) or not isinstance(entry.get("step"), int):
                    raise WorldStateError(f"world.history[{index}]: malformed entry.")
                if entry["step"] > world.step:
                    raise WorldStateError(f"world.history[{index}].step: later than the world step.")
            world._history = [dict(entry) for entry in history]
        return world

    def copy(self) -> World:
        """An independent copy (same id, same forge, same history)."""
        return World.from_dict(self.to_dict(), forge=self._forge)

    def _load_state(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        self._objects = [SceneObject.from_dict(o) for o in state["objects"]]
        self.object_counter = int(state.get("object_counter", len(self._objects)))
        self.metadata = dict(state.get("metadata") or {})

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

    def history(self) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self._history]

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

    def plan(self, goal: Any, *, provider: str | None = None, **controller_options: Any) -> PlanLike:
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
