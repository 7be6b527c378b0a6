"""Domain entities shared by worlds, providers, planners and suites.

Everything here is an immutable value with a JSON-native ``to_dict``/``from_dict`` pair, because
world snapshots travel through provider calls, digests and reports. Identities are deterministic:
object ids come from names and a per-world counter (see :class:`worldforge.core.world.World`),
never from ``uuid4``, so identical inputs give byte-identical snapshots and digests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from worldforge.core.canonical import JSONObject, json_object
from worldforge.core.errors import WorldForgeError

ACTION_KINDS: tuple[str, ...] = ("move_to", "spawn_object", "noop")
DEFAULT_HALF_EXTENT = 0.05
_SLUG_RE = re.compile(r"[^a-z0-9]+")


def _finite(value: object, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorldForgeError(f"{field_name}: expected a number, got {type(value).__name__}.")
    number = float(value)
    if not math.isfinite(number):
        raise WorldForgeError(f"{field_name}: must be finite, got {value!r}.")
    return number


def _mapping(value: object, field_name: str) -> Mapping[object, object]:
    if not isinstance(value, Mapping):
        raise WorldForgeError(f"{field_name}: expected an object, got {type(value).__name__}.")
    return value


def slugify(name: str) -> str:
    """Lower-case ``[a-z0-9-]`` form of a name, used to derive deterministic object ids."""
    slug = _SLUG_RE.sub("-", name.lower()).strip("-")
    return slug or "object"


class PositionDict(TypedDict):
    """:meth:`Position.to_dict`: the coordinates every snapshot, action and goal carries."""

    x: float
    y: float
    z: float


@dataclass(frozen=True, slots=True)
class Position:
    """A point in world coordinates (metres). Components are finite floats."""

    x: float = 0.0
    y: float = 0.0
    z: float = 0.0

    def __post_init__(self) -> None:
        for name in ("x", "y", "z"):
            object.__setattr__(self, name, _finite(getattr(self, name), f"position.{name}"))

    def to_dict(self) -> PositionDict:
        return {"x": self.x, "y": self.y, "z": self.z}

    @classmethod
    def from_dict(cls, payload: object, field_name: str = "position") -> Position:
        data = _mapping(payload, field_name)
        missing = [k for k in ("x", "y", "z") if k not in data]
        if missing:
            raise WorldForgeError(f"{field_name}: missing coordinate(s) {', '.join(missing)}.")
        return cls(
            _finite(data["x"], f"{field_name}.x"),
            _finite(data["y"], f"{field_name}.y"),
            _finite(data["z"], f"{field_name}.z"),
        )

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.x, self.y, self.z)

    def offset(self, dx: float = 0.0, dy: float = 0.0, dz: float = 0.0) -> Position:
        return Position(self.x + dx, self.y + dy, self.z + dz)

    def distance_to(self, other: Position) -> float:
        return math.sqrt(self.squared_distance_to(other))

    def squared_distance_to(self, other: Position) -> float:
        return (self.x - other.x) ** 2 + (self.y - other.y) ** 2 + (self.z - other.z) ** 2


class BBoxDict(TypedDict):
    """:meth:`BBox.to_dict`: the two corners."""

    min: PositionDict
    max: PositionDict


@dataclass(frozen=True, slots=True)
class BBox:
    """Axis-aligned bounding box; every ``min`` coordinate must be <= the matching ``max``."""

    min: Position
    max: Position

    def __post_init__(self) -> None:
        for axis in ("x", "y", "z"):
            if getattr(self.min, axis) > getattr(self.max, axis):
                raise WorldForgeError(f"bbox: min.{axis} must be <= max.{axis}.")

    @classmethod
    def around(cls, center: Position, half_extent: float = DEFAULT_HALF_EXTENT) -> BBox:
        """A cube of edge ``2 * half_extent`` centred on ``center``."""
        h = _finite(half_extent, "half_extent")
        if h < 0:
            raise WorldForgeError("half_extent: must be >= 0.")
        return cls(center.offset(-h, -h, -h), center.offset(h, h, h))

    def center(self) -> Position:
        return Position(
            (self.min.x + self.max.x) / 2, (self.min.y + self.max.y) / 2, (self.min.z + self.max.z) / 2
        )

    def translated(self, dx: float, dy: float, dz: float) -> BBox:
        return BBox(self.min.offset(dx, dy, dz), self.max.offset(dx, dy, dz))

    def to_dict(self) -> BBoxDict:
        return {"min": self.min.to_dict(), "max": self.max.to_dict()}

    @classmethod
    def from_dict(cls, payload: object, field_name: str = "bbox") -> BBox:
        data = _mapping(payload, field_name)
        return cls(
            Position.from_dict(data.get("min"), f"{field_name}.min"),
            Position.from_dict(data.get("max"), f"{field_name}.max"),
        )


class SceneObjectDict(TypedDict):
    """:meth:`SceneObject.to_dict`: one entry of a world snapshot's ``objects``."""

    id: str
    name: str
    position: PositionDict
    bbox: BBoxDict
    is_graspable: bool
    metadata: JSONObject


@dataclass(frozen=True, slots=True)
class SceneObject:
    """An object in a world. ``id`` is assigned deterministically by the owning world."""

    name: str
    position: Position
    bbox: BBox
    id: str = ""
    is_graspable: bool = False
    metadata: JSONObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise WorldForgeError("object.name: must be a non-empty string.")
        if not isinstance(self.position, Position):
            raise WorldForgeError("object.position: expected a Position.")
        if not isinstance(self.bbox, BBox):
            raise WorldForgeError("object.bbox: expected a BBox.")

    def moved_to(self, target: Position) -> SceneObject:
        """Copy at ``target``; the bbox is translated by the same delta so geometry stays consistent."""
        dx, dy, dz = target.x - self.position.x, target.y - self.position.y, target.z - self.position.z
        return SceneObject(
            name=self.name,
            position=target,
            bbox=self.bbox.translated(dx, dy, dz),
            id=self.id,
            is_graspable=self.is_graspable,
            metadata=dict(self.metadata),
        )

    def to_dict(self) -> SceneObjectDict:
        return {
            "id": self.id,
            "name": self.name,
            "position": self.position.to_dict(),
            "bbox": self.bbox.to_dict(),
            "is_graspable": self.is_graspable,
            "metadata": dict(self.metadata),
        }

    @classmethod
    def from_dict(cls, payload: object, field_name: str = "object") -> SceneObject:
        data = _mapping(payload, field_name)
        name = data.get("name")
        if not isinstance(name, str) or not name.strip():
            raise WorldForgeError(f"{field_name}.name: must be a non-empty string.")
        object_id = data.get("id", "")
        if not isinstance(object_id, str):
            raise WorldForgeError(f"{field_name}.id: must be a string.")
        position = Position.from_dict(data.get("position"), f"{field_name}.position")
        bbox_payload = data.get("bbox")
        bbox = BBox.around(position) if bbox_payload is None else BBox.from_dict(bbox_payload)
        graspable = data.get("is_graspable", False)
        if not isinstance(graspable, bool):
            raise WorldForgeError(f"{field_name}.is_graspable: must be a boolean.")
        metadata = data.get("metadata", {})
        if not isinstance(metadata, dict):
            raise WorldForgeError(f"{field_name}.metadata: must be an object.")
        return cls(
            name, position, bbox, object_id, graspable, dict(json_object(metadata, f"{field_name}.metadata"))
        )


class ActionParameters(TypedDict, total=False):
    """An action's parameters; which keys are set depends on the kind: ``move_to`` has ``target``
    and ``speed`` (and ``object_id`` when it addresses one object), ``spawn_object`` has ``name``,
    ``position`` and ``bbox``, ``noop`` has none."""

    target: PositionDict
    speed: float
    object_id: str
    name: str
    position: PositionDict
    bbox: BBoxDict


class ActionDict(TypedDict):
    """:meth:`Action.to_dict`: what providers receive as an action and plans record."""

    type: str
    parameters: ActionParameters


@dataclass(frozen=True, slots=True)
class Action:
    """A world action: ``move_to``, ``spawn_object`` or ``noop``, with JSON-native parameters."""

    kind: str
    parameters: ActionParameters = field(default_factory=lambda: ActionParameters())

    def __post_init__(self) -> None:
        if self.kind not in ACTION_KINDS:
            raise WorldForgeError(
                f"action.type: unknown action {self.kind!r}; expected one of {', '.join(ACTION_KINDS)}."
            )
        if not isinstance(self.parameters, dict):
            raise WorldForgeError("action.parameters: must be an object.")

    @classmethod
    def move_to(
        cls, x: float, y: float, z: float, speed: float = 1.0, *, object_id: str | None = None
    ) -> Action:
        target = Position(x, y, z)
        speed_value = _finite(speed, "action.parameters.speed")
        if speed_value <= 0:
            raise WorldForgeError("action.parameters.speed: must be > 0.")
        params: ActionParameters = {"target": target.to_dict(), "speed": speed_value}
        if object_id is not None:
            params["object_id"] = object_id
        return cls("move_to", params)

    @classmethod
    def spawn_object(cls, name: str, position: Position | None = None, bbox: BBox | None = None) -> Action:
        if not isinstance(name, str) or not name.strip():
            raise WorldForgeError("action.parameters.name: must be a non-empty string.")
        pos = position or Position(0.0, 0.5, 0.0)
        box = bbox or BBox.around(pos)
        return cls("spawn_object", {"name": name, "position": pos.to_dict(), "bbox": box.to_dict()})

    @classmethod
    def noop(cls) -> Action:
        return cls("noop", {})

    @property
    def target(self) -> Position | None:
        if self.kind != "move_to":
            return None
        return Position.from_dict(self.parameters.get("target"), "action.parameters.target")

    def to_dict(self) -> ActionDict:
        return {"type": self.kind, "parameters": self.parameters.copy()}

    @classmethod
    def from_dict(cls, payload: object, field_name: str = "action") -> Action:
        data = _mapping(payload, field_name)
        if "type" in data:
            kind = data["type"]
            params = data.get("parameters", {})
        elif len(data) == 1:  # compact form {"move_to": {...}}
            ((kind, params),) = data.items()
        else:
            raise WorldForgeError(f"{field_name}: expected {{'type', 'parameters'}} or {{kind: params}}.")
        if not isinstance(kind, str):
            raise WorldForgeError(f"{field_name}.type: must be a string.")
        params = _mapping(params, f"{field_name}.parameters")
        if kind == "move_to":
            target = Position.from_dict(params.get("target"), f"{field_name}.parameters.target")
            object_id = params.get("object_id")
            if object_id is not None and not isinstance(object_id, str):
                raise WorldForgeError(f"{field_name}.parameters.object_id: must be a string.")
            speed = _finite(params.get("speed", 1.0), "action.parameters.speed")
            return cls.move_to(target.x, target.y, target.z, speed, object_id=object_id)
        if kind == "spawn_object":
            name = params.get("name", "")
            position = params.get("position")
            bbox = params.get("bbox")
            return cls.spawn_object(
                name if isinstance(name, str) else "",  # anything else fails spawn_object's name check
                Position.from_dict(position, f"{field_name}.parameters.position") if position else None,
                BBox.from_dict(bbox, f"{field_name}.parameters.bbox") if bbox else None,
            )
        if kind == "noop" and params:
            raise WorldForgeError(f"{field_name}.parameters: a noop takes no parameters.")
        return cls(kind)


__all__ = [
    "ACTION_KINDS",
    "Action",
    "ActionDict",
    "ActionParameters",
    "BBox",
    "BBoxDict",
    "Position",
    "PositionDict",
    "SceneObject",
    "SceneObjectDict",
    "slugify",
]
