"""The providers harness's scene fixture is read once, every field checked, defaults kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from worldforge.benchmark.scene import load_scene, parse_scene
from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError

CUBE = "dataset-manifests/fixtures/mock-evaluation/cube-on-table.json"


def test_the_shipped_scene_is_read_with_its_benchmark_section() -> None:
    scene = load_scene({"scene": CUBE})
    assert scene.objects == (("cube", (0.0, 0.5, 0.0)), ("mug", (0.3, 0.8, 0.0)))
    assert (scene.predict_object, scene.steps, scene.target_xyz) == ("cube", 2, (0.25, 0.5, 0.0))
    assert scene.target == {"x": 0.25, "y": 0.5, "z": 0.0}  # carried unchanged into the score goal
    assert (scene.generate_prompt, scene.embed_text) == ("benchmark orbiting cube", "benchmark cube state")


def test_a_scene_without_a_benchmark_section_takes_the_defaults() -> None:
    scene = parse_scene({"objects": [{"name": "box", "position": {"x": 1, "y": 2, "z": 3}}]}, "s.json")
    assert scene.objects == (("box", (1, 2, 3)),)
    assert (scene.predict_object, scene.steps, scene.target_xyz) == ("cube", 2, (0.25, 0.5, 0.0))


@pytest.mark.parametrize(
    ("scene", "named"),
    [
        ({"objects": [{"name": "b", "position": {"x": 1, "y": "2", "z": 3}}]}, r"objects\[0\]\.position\.y"),
        ({"objects": [{"position": {"x": 1, "y": 2, "z": 3}}]}, r"objects\[0\]\.name"),
        ({"objects": {}}, "objects: expected a list"),
        ({"benchmark": {"predict": {"target": [0, 0, 0]}}}, r"benchmark\.predict\.target: expected an obj"),
        ({"benchmark": {"predict": {"steps": True}}}, r"benchmark\.predict\.steps"),
    ],
)
def test_a_malformed_scene_is_refused_naming_the_field(scene: JSONObject, named: str) -> None:
    with pytest.raises(WorldForgeError, match=rf"^s\.json: {named}"):
        parse_scene(scene, "s.json")


def test_a_scene_that_is_not_json_is_bad_input(tmp_path: Path) -> None:
    broken = tmp_path / "scene.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(WorldForgeError, match="is not readable JSON"):
        load_scene({"scene": str(broken)})
