"""Box2D stability: physically obvious cases, the evaluator's counting rule, determinism."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.levels.convert import convert
from worldforge.pcg.levels.level import parse_level_xml
from worldforge.pcg.sim.physics import MOVEMENT_THRESHOLD, simulate

REF = Path(__file__).parents[1] / "fixtures" / "reference-levels"
GROUND_TOP = -3.5


def prog(*calls: tuple[str, int]) -> str:
    return "".join(f"drop_block('{t}', {x})\n" for t, x in calls)


def test_symmetric_stack_stands() -> None:
    # a table: two legs under a plank, a post, another plank
    xml = convert(prog(("b31", 5), ("b11", 4), ("b11", 6), ("b31", 5), ("b13", 5), ("b31", 5)))
    result = simulate(xml)
    assert result.total_blocks == 6
    assert result.moving_blocks == 0
    assert result.destroyed_blocks == 0
    assert result.stability == 1.0
    assert result.settled_step is not None  # everything fell asleep
    assert max(result.displacements) < 0.05
    assert all(
        abs(f.angle - s.angle) < 0.5 for f, s in zip(result.final_poses, result.start_poses, strict=True)
    )


def test_b31_resting_on_one_b11_at_its_end_tips() -> None:
    result = simulate(convert(prog(("b11", 4), ("b31", 5))))
    plank = result.final_poses[1]
    assert plank.angle < -20.0  # it rotates clockwise around the support corner
    # its right end now rests on the ground
    assert _aabb("RectSmall", plank.x, plank.y, plank.angle)[1] == pytest.approx(GROUND_TOP, abs=0.03)
    assert plank.y < result.start_poses[1].y - 0.05
    assert result.final_poses[0].angle == pytest.approx(0.0, abs=0.5)


def _aabb(kind: str, x: float, y: float, angle: float) -> tuple[float, float, float, float]:
    import math

    w, h = {"SquareTiny": (0.22, 0.21), "RectSmall": (0.70, 0.22)}[kind]
    a = math.radians(angle)
    hw = (abs(math.cos(a)) * w + abs(math.sin(a)) * h) / 2
    hh = (abs(math.sin(a)) * w + abs(math.cos(a)) * h) / 2
    return x - hw, y - hh, x + hw, y + hh


def test_block_dropped_into_overhang_never_floats() -> None:
    # b31 rests on b11 by one end; the b11 dropped on the overhanging end must end up supported
    result = simulate(convert(prog(("b11", 4), ("b31", 5), ("b11", 6))))
    assert result.settled_step is not None
    boxes = [
        _aabb(o.type, p.x, p.y, p.angle) for o, p in zip(result.objects, result.final_poses, strict=True)
    ]
    top = result.final_poses[2]
    assert top.y < result.start_poses[2].y - 0.3  # it fell off instead of hanging in the air
    for i, (x0, y0, x1, _) in enumerate(boxes):
        on_ground = y0 <= GROUND_TOP + 0.03
        on_block = any(
            j != i and b[0] < x1 and x0 < b[2] and b[1] < y0 <= b[3] + 0.03 for j, b in enumerate(boxes)
        )
        assert on_ground or on_block, f"block {i} floats at y0={y0}"


def test_moving_rule_is_net_displacement_threshold() -> None:
    # a 16-high column of b11 sinks ~0.015 per gap; blocks high enough cross the 0.1 threshold
    result = simulate(convert(prog(*[("b11", 5)] * 16)))
    moving = [d >= MOVEMENT_THRESHOLD for d in result.displacements]
    assert moving == sorted(moving)  # only the upper part counts as moving
    assert result.moving_blocks == sum(moving)
    assert result.stability == pytest.approx((16 - result.moving_blocks) / 16)
    assert 0 < result.moving_blocks < 16


@pytest.mark.parametrize("name", ["result_22", "result_23", "result_24"])
def test_reference_levels_are_stable(name: str) -> None:
    # the evaluator's stability file for these levels records 1.0
    result = simulate((REF / f"{name}.xml").read_bytes())
    assert result.stability == 1.0
    assert result.destroyed_blocks == 0


def test_v1_l_1_collapses_and_loses_two_blocks() -> None:
    # the staircase overhangs and falls; the old "remaining objects" score of this level in the
    # evaluator's !stability.json is 0.6667 = 4/6, i.e. two blocks were destroyed there too
    result = simulate((REF / "V1_L_1.xml").read_bytes())
    assert result.total_blocks == 6
    assert result.destroyed_blocks == 2
    assert result.moving_blocks == 4
    assert result.stability == pytest.approx(2 / 6)


def test_trials_keep_max_and_stop_at_one() -> None:
    stable = simulate(convert(prog(("b31", 5))), trials=3)
    assert stable.trials == 1 and stable.runs == (1.0,)
    falling = simulate((REF / "V1_L_1.xml").read_bytes(), trials=3)
    assert falling.trials == 3
    assert falling.stability == max(falling.runs)


def test_no_blocks_is_an_error() -> None:
    with pytest.raises(WorldForgeError, match="no blocks"):
        simulate(convert(""))
    with pytest.raises(WorldForgeError, match="trials"):
        simulate(convert(prog(("b11", 1))), trials=0)


def test_other_objects_simulate() -> None:
    xml = """<Level width="3"><GameObjects>
      <Block type="RectFat" material="stone" x="3" y="-3.27" rotation="0" />
      <Pig type="BasicSmall" x="3" y="-2.7" />
      <TNT x="5" y="-3.2" />
      <Platform x="8" y="-1" />
      <Block type="Circle" material="ice" x="8" y="0" />
    </GameObjects></Level>"""
    result = simulate(parse_level_xml(xml))
    assert result.total_blocks == 4  # platform is static and not counted
    assert result.final_poses[3].y == pytest.approx(-1 + 0.31 + 0.4, abs=0.05)  # circle on the platform


def test_to_dict_is_json_native_and_deterministic() -> None:
    xml = (REF / "V1_L_1.xml").read_bytes()
    a = simulate(xml).to_dict()
    b = simulate(xml).to_dict()
    assert digest_payload(a) == digest_payload(b)
    assert a["blocks"][0]["destroyed"] is False


def test_deterministic_across_processes() -> None:
    xml_path = REF / "V1_L_1.xml"
    code = (
        "import json,sys;from worldforge.pcg.sim.physics import simulate;"
        "from worldforge.core.digests import digest_payload;"
        f"print(digest_payload(simulate(open({str(xml_path)!r},'rb').read()).to_dict()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == digest_payload(simulate(xml_path.read_bytes()).to_dict())
    json.dumps(simulate(xml_path.read_bytes()).to_dict())
