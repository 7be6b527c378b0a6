"""The scene fixture the ``providers`` harness starts from, read once into a typed value.

A preset names its scene by path (``inputs.scene``, e.g. the mock-evaluation cube-on-table
fixture): the objects to place and, under ``benchmark``, what ``predict`` moves where and in how
many steps, the prompt ``generate`` sends and the text ``embed`` embeds. Reading it here, with every
field checked, means a malformed fixture is one ``WorldForgeError`` naming the field before any
provider is called, and the harness works on plain typed values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.errors import WorldForgeError
from worldforge.datasets import find_repo_root


@dataclass(frozen=True)
class BenchmarkScene:
    """A scene fixture as the harness uses it. ``target`` is kept as the fixture's JSON object
    because the ``score`` goal carries it unchanged."""

    objects: tuple[tuple[str, tuple[float, float, float]], ...]
    predict_object: str
    target: JSONObject
    steps: int
    generate_prompt: str
    embed_text: str

    @property
    def target_xyz(self) -> tuple[float, float, float]:
        return _xyz(self.target, "benchmark.predict.target")


def _object(value: JSON, where: str) -> JSONObject:
    if not isinstance(value, dict):
        raise WorldForgeError(f"{where}: expected an object.")
    return value


def _xyz(position: JSONObject, where: str) -> tuple[float, float, float]:
    coordinates: list[float] = []
    for axis in ("x", "y", "z"):
        value = position.get(axis)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise WorldForgeError(f"{where}.{axis}: expected a number.")
        coordinates.append(value)
    return coordinates[0], coordinates[1], coordinates[2]


def parse_scene(scene: JSONObject, source: str) -> BenchmarkScene:
    """The typed scene of a parsed fixture; ``WorldForgeError`` naming ``source`` and the field."""
    objects: list[tuple[str, tuple[float, float, float]]] = []
    raw_objects = scene.get("objects", [])
    if not isinstance(raw_objects, list):
        raise WorldForgeError(f"{source}: objects: expected a list.")
    for index, raw in enumerate(raw_objects):
        where = f"{source}: objects[{index}]"
        obj = _object(raw, where)
        name = obj.get("name")
        if not isinstance(name, str):
            raise WorldForgeError(f"{where}.name: expected a string.")
        objects.append((name, _xyz(_object(obj.get("position"), f"{where}.position"), f"{where}.position")))
    bench = _object(scene.get("benchmark") or {}, f"{source}: benchmark")
    predict = _object(bench.get("predict") or {}, f"{source}: benchmark.predict")
    where = f"{source}: benchmark.predict.target"
    target = _object(predict.get("target", {"x": 0.25, "y": 0.5, "z": 0.0}), where)
    _xyz(target, where)
    steps = predict.get("steps", 2)
    if not isinstance(steps, (int, float, str)) or isinstance(steps, bool):
        raise WorldForgeError(f"{source}: benchmark.predict.steps: expected a whole number.")
    return BenchmarkScene(
        objects=tuple(objects),
        predict_object=str(predict.get("object", "cube")),
        target=target,
        steps=int(steps),
        generate_prompt=str(bench.get("generate_prompt", "benchmark orbiting cube")),
        embed_text=str(bench.get("embed_text", "benchmark cube state")),
    )


def load_scene(inputs: JSONObject) -> BenchmarkScene:
    """The scene a preset's ``inputs.scene`` names: a path as given, under the repository root, or
    under the package's own checkout (so an installed preset finds its shipped fixture)."""
    raw = inputs.get("scene")
    if not isinstance(raw, str):
        raise WorldForgeError("preset inputs.scene: expected a repository-relative path to a scene fixture.")
    candidates = [Path(raw), find_repo_root(Path.cwd()) / raw, Path(__file__).resolve().parents[2] / raw]
    for path in candidates:
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise WorldForgeError(f"preset inputs.scene: {raw!r} is not readable JSON ({exc}).") from None
            return parse_scene(_object(data, f"preset inputs.scene {raw!r}"), f"scene {raw}")
    raise WorldForgeError(f"preset inputs.scene: {raw!r} not found.")


__all__ = ["BenchmarkScene", "load_scene", "parse_scene"]
