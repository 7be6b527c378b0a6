"""Structured planning goals and their resolution against a concrete world.

A :class:`Goal` names objects by id or name; :meth:`Goal.resolve` turns it into a
:class:`ResolvedGoal` with fixed target positions (swap targets are the *initial* positions), which
is the JSON payload the ``score`` cost oracle receives. Resolving once, at planning start, keeps the
cost function stationary while the receding-horizon controller moves objects.
"""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass, field
from typing import TypedDict

from worldforge.core.entities import Position, PositionDict, SceneObject
from worldforge.core.errors import WorldForgeError
from worldforge.core.world import World

GOAL_KINDS: tuple[str, ...] = ("object_at", "object_near", "swap_objects", "spawn_object")
DEFAULT_TOLERANCE = 0.05
DEFAULT_NEAR_OFFSET = Position(0.1, 0.0, 0.0)


def _selector(value: SceneObject | str, field_name: str) -> str:
    if isinstance(value, SceneObject):
        return value.id or value.name
    if not isinstance(value, str) or not value.strip():
        raise WorldForgeError(f"goal.{field_name}: must be an object id or name.")
    return value


def _find(world: World, selector: str, field_name: str) -> SceneObject:
    for obj in world.objects():
        if obj.id == selector:
            return obj
    named = [obj for obj in world.objects() if obj.name == selector]
    if len(named) != 1:
        problem = "matches no object" if not named else f"is ambiguous ({len(named)} objects)"
        raise WorldForgeError(f"goal.{field_name}: {selector!r} {problem} in world {world.id!r}.")
    return named[0]


class GoalDict(TypedDict):
    """:meth:`Goal.to_dict`: what a plan records as its goal (``from_dict`` reads it back)."""

    kind: str
    object: str | None
    reference: str | None
    position: PositionDict | None
    offset: PositionDict | None
    tolerance: float


class OracleTarget(TypedDict):
    """One target of an :class:`OracleGoal`: an object id and the position it should reach."""

    object_id: str
    position: PositionDict


class OracleSpawn(TypedDict):
    """The spawn of an :class:`OracleGoal`: the name to add, where (``None``: anywhere), and how
    many objects of that name the world held when planning started."""

    name: str
    position: PositionDict | None
    baseline_count: int


class OracleGoal(TypedDict):
    """:meth:`ResolvedGoal.to_oracle_dict`: the goal a ``score`` provider (the cost oracle) receives."""

    kind: str
    targets: list[OracleTarget]
    spawn: OracleSpawn | None
    tolerance: float


@dataclass(frozen=True, slots=True)
class Goal:
    """What the planner should achieve. Build with the classmethod constructors."""

    kind: str
    object: str | None = None
    reference: str | None = None
    position: Position | None = None
    offset: Position | None = None
    tolerance: float = DEFAULT_TOLERANCE

    def __post_init__(self) -> None:
        if self.kind not in GOAL_KINDS:
            raise WorldForgeError(f"goal.kind: {self.kind!r} is not one of {', '.join(GOAL_KINDS)}.")
        tol = self.tolerance
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol <= 0:
            raise WorldForgeError("goal.tolerance: must be a finite number > 0.")
        needs_reference = self.kind in ("object_near", "swap_objects")
        if self.object is None:
            raise WorldForgeError(f"goal.object: required for {self.kind}.")
        if needs_reference and self.reference is None:
            raise WorldForgeError(f"goal.reference: required for {self.kind}.")
        if not needs_reference and self.reference is not None:
            raise WorldForgeError(f"goal.reference: not allowed for {self.kind}.")
        if needs_reference and self.reference == self.object:
            raise WorldForgeError("goal.reference: must differ from goal.object.")
        if self.kind == "object_at" and self.position is None:
            raise WorldForgeError("goal.position: required for object_at.")
        if self.kind in ("object_near", "swap_objects") and self.position is not None:
            raise WorldForgeError(f"goal.position: not allowed for {self.kind}.")
        if self.offset is not None and self.kind != "object_near":
            raise WorldForgeError(f"goal.offset: not allowed for {self.kind}.")

    @classmethod
    def object_at(
        cls, obj: SceneObject | str, position: Position, tolerance: float = DEFAULT_TOLERANCE
    ) -> Goal:
        """Relocate ``obj`` to ``position``."""
        return cls("object_at", _selector(obj, "object"), None, position, None, tolerance)

    @classmethod
    def object_near(
        cls,
        obj: SceneObject | str,
        reference: SceneObject | str,
        offset: Position | None = None,
        tolerance: float = DEFAULT_TOLERANCE,
    ) -> Goal:
        """Place ``obj`` at ``reference + offset`` without moving the reference."""
        return cls(
            "object_near",
            _selector(obj, "object"),
            _selector(reference, "reference"),
            None,
            offset or DEFAULT_NEAR_OFFSET,
            tolerance,
        )

    @classmethod
    def swap_objects(
        cls, obj: SceneObject | str, reference: SceneObject | str, tolerance: float = DEFAULT_TOLERANCE
    ) -> Goal:
        """Exchange the positions of two objects."""
        return cls(
            "swap_objects", _selector(obj, "object"), _selector(reference, "reference"), None, None, tolerance
        )

    @classmethod
    def spawn_object(
        cls, name: str, position: Position | None = None, tolerance: float = DEFAULT_TOLERANCE
    ) -> Goal:
        """Add one more object called ``name`` (optionally at ``position``)."""
        return cls("spawn_object", _selector(name, "object"), None, position, None, tolerance)

    def to_dict(self) -> GoalDict:
        return {
            "kind": self.kind,
            "object": self.object,
            "reference": self.reference,
            "position": self.position.to_dict() if self.position else None,
            "offset": self.offset.to_dict() if self.offset else None,
            "tolerance": float(self.tolerance),
        }

    @classmethod
    def from_dict(cls, payload: builtins.object) -> Goal:  # ``object`` is a field name here
        if not isinstance(payload, dict):
            raise WorldForgeError("goal: expected an object.")
        unknown = sorted(set(payload) - {"kind", "object", "reference", "position", "offset", "tolerance"})
        if unknown:
            raise WorldForgeError(f"goal.{unknown[0]}: unknown field.")
        position = payload.get("position")
        offset = payload.get("offset")
        return cls(
            payload.get("kind", ""),
            payload.get("object"),
            payload.get("reference"),
            Position.from_dict(position, "goal.position") if position is not None else None,
            Position.from_dict(offset, "goal.offset") if offset is not None else None,
            payload.get("tolerance", DEFAULT_TOLERANCE),
        )

    def resolve(self, world: World) -> ResolvedGoal:
        """Bind selectors to object ids and compute fixed targets from ``world``'s current state."""
        if self.kind == "spawn_object":
            name = str(self.object)
            baseline = sum(1 for obj in world.objects() if obj.name == name)
            return ResolvedGoal(self, [], SpawnTarget(name, self.position, baseline), [])
        primary = _find(world, str(self.object), "object")
        if self.kind == "object_at":
            assert self.position is not None
            return ResolvedGoal(self, [(primary.id, self.position)], None, [primary.id])
        reference = _find(world, str(self.reference), "reference")
        if primary.id == reference.id:
            raise WorldForgeError("goal.reference: resolves to the same object as goal.object.")
        if self.kind == "object_near":
            off = self.offset or DEFAULT_NEAR_OFFSET
            target = reference.position.offset(off.x, off.y, off.z)
            return ResolvedGoal(
                self, [(primary.id, target)], None, [primary.id], {reference.id: reference.position}
            )
        return ResolvedGoal(
            self,
            [(primary.id, reference.position), (reference.id, primary.position)],
            None,
            [primary.id, reference.id],
        )


@dataclass(frozen=True, slots=True)
class SpawnTarget:
    """A ``spawn_object`` goal bound to a world: the name to add, where (``None``: the provider's
    default), and how many objects of that name the world held when planning started."""

    name: str
    position: Position | None
    baseline_count: int


@dataclass(frozen=True, slots=True)
class ResolvedGoal:
    """A goal bound to object ids with fixed targets; ``anchors`` must stay where they are."""

    goal: Goal
    targets: list[tuple[str, Position]]
    spawn: SpawnTarget | None
    controllable: list[str]
    anchors: dict[str, Position] = field(default_factory=dict)

    @property
    def tolerance(self) -> float:
        return float(self.goal.tolerance)

    def to_oracle_dict(self) -> OracleGoal:
        """The JSON payload a ``score`` provider receives as ``goal``."""
        spawn: OracleSpawn | None = None
        if self.spawn is not None:
            pos = self.spawn.position
            spawn = {
                "name": self.spawn.name,
                "position": pos.to_dict() if pos is not None else None,
                "baseline_count": self.spawn.baseline_count,
            }
        return {
            "kind": self.goal.kind,
            "targets": [{"object_id": oid, "position": pos.to_dict()} for oid, pos in self.targets],
            "spawn": spawn,
            "tolerance": self.tolerance,
        }

    def target_errors(self, world: World) -> dict[str, float]:
        """Euclidean distance of each target object to its target (inf when it vanished)."""
        by_id = {obj.id: obj for obj in world.objects()}
        return {
            oid: (by_id[oid].position.distance_to(pos) if oid in by_id else math.inf)
            for oid, pos in self.targets
        }

    def spawned_count(self, world: World) -> int:
        if self.spawn is None:
            return 0
        count = sum(1 for obj in world.objects() if obj.name == self.spawn.name)
        return count - self.spawn.baseline_count

    def satisfied(self, world: World) -> bool:
        """True when every target is within tolerance, anchors stayed and any spawn happened."""
        if self.spawn is not None and self.spawned_count(world) < 1:
            return False
        if any(err > self.tolerance for err in self.target_errors(world).values()):
            return False
        by_id = {obj.id: obj for obj in world.objects()}
        return all(
            oid in by_id and by_id[oid].position.distance_to(pos) <= self.tolerance
            for oid, pos in self.anchors.items()
        )


__all__ = [
    "DEFAULT_NEAR_OFFSET",
    "DEFAULT_TOLERANCE",
    "GOAL_KINDS",
    "Goal",
    "GoalDict",
    "OracleGoal",
    "OracleSpawn",
    "OracleTarget",
    "ResolvedGoal",
    "SpawnTarget",
]
