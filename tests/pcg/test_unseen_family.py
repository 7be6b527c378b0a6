"""The frozen evaluation-only letter family ``fixed``, its placement rule, and the top-2 margin.

The family is the independent check of the classifier on styles it never saw: its levels must stay
exactly the stored ones (digest pinned), be built by the lintels-and-posts rule (not the drop
planner), keep their letters, and a rebuild from fonts other than the recorded ones must stop with
a named error instead of silently measuring other letters.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from worldforge.core.digests import digest_file, digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.levels.drop_plan import blocks_to_program, grid_from_text, plan_blocks, simulate_drops
from worldforge.pcg.similarity.predictions import Classification, Prediction, top2_margin
from worldforge.pcg.similarity.training import families as lf
from worldforge.pcg.similarity.training import unseen
from worldforge.pcg.similarity.training.lintel import lintel_blocks, lintel_program

ROOT = Path(__file__).resolve().parents[2]
#: The frozen family: changing a level, the rule's output or the file is a new evaluation set.
FIXTURE_DIGEST = "sha256:cc4385691fbbc940afc946e08c8740b456b0cdfa9f15cccbcd33813fd4a64966"
PROGRAMS_DIGEST = "sha256:1665e47152c4443df0009e12e38726f5e758a6440460fdae5cda68cc48a162a5"

fonts = pytest.mark.skipif(
    not all(unseen.font_path(face).is_file() for face in unseen.FACES),
    reason=f"apt-get install {unseen.PACKAGE} to rebuild the frozen family",
)


def _cells(grid: tuple[tuple[int, ...], ...]) -> set[tuple[int, int]]:
    return {(c, r) for r, row in enumerate(grid) for c, v in enumerate(row) if v}


def test_frozen_family_digest_is_pinned() -> None:
    assert digest_file(unseen.FIXTURE) == FIXTURE_DIGEST
    levels = unseen.fixture_levels()
    assert digest_payload([unseen.unpack_program(level["program"]) for level in levels]) == PROGRAMS_DIGEST


def test_dataset_manifest_records_the_fixture_and_its_glyph_source() -> None:
    manifest = json.loads((ROOT / "dataset-manifests" / "letter-classifier.json").read_text())
    entry = {e["id"]: e for e in manifest["entries"]}["letter-classifier/unseen-fixed-letters.json"]
    assert entry["sha256"] == FIXTURE_DIGEST
    source = entry["metadata"]["glyph_source"]
    assert source == unseen.load_fixture()["source"]
    assert source["package"] == unseen.PACKAGE and source["version"]
    assert sorted(source["files"]) == sorted(str(unseen.font_path(face)) for face in unseen.FACES)


def test_frozen_levels_are_built_by_their_rule_and_keep_their_letters() -> None:
    data = unseen.load_fixture()
    levels = unseen.fixture_levels()
    per_letter: dict[str, int] = {}
    for level in levels:
        grid = unseen.grid_of(level)
        program = unseen.unpack_program(level["program"])
        assert lintel_program(grid, from_right=level["from_right"]) == program, level["name"]
        built = simulate_drops(program)
        assert _cells(grid) <= _cells(built), level["name"]
        sx, sy = level["scale"]
        assert unseen.build_keeps_letter(level["letter"], grid, built, cell_area=sx * sy), level["name"]
        per_letter[level["letter"]] = per_letter.get(level["letter"], 0) + 1
    assert sorted(per_letter) == data["letters"]
    standing = data["standing_per_letter"]
    assert all(per_letter[c] == standing[c] >= unseen.MIN_PER_LETTER for c in data["letters"])
    assert len(data["letters"]) >= 15
    # The rule closes a C's mouth, the bays of E, F and S and the spaces under a T's bar in every
    # draw: none is in the family.
    assert not {"C", "E", "F", "S", "T"} & set(data["letters"])


def test_every_frozen_level_stands_as_built() -> None:
    levels = unseen.fixture_levels()
    for level in levels[:: max(1, len(levels) // 40)]:
        assert unseen.stands(level), level["name"]


def test_an_opening_the_posts_mostly_close_is_not_faithful() -> None:
    # A C whose top bar is laid on posts: one open cell in its right column (built_shows accepts
    # it) but five of the mouth's eight cells closed: a grill, drawn again.
    grid = grid_from_text("#####\n#....\n#....\n#####")
    built = grid_from_text("#####\n##.#.\n##.##\n#####")
    assert lf.built_shows("C", grid, built)
    assert not unseen.build_keeps_letter("C", grid, built)
    assert unseen.build_keeps_letter("C", grid, grid_from_text("#####\n#..#.\n#..#.\n#####"))
    # A serif I whose bars stand on posts at their ends keeps half of each opening, as a slot
    # closed toward the edge: a box with two slots, drawn again.
    i_grid = grid_from_text("#####\n..#..\n..#..\n#####")
    assert unseen.build_keeps_letter("I", i_grid, grid_from_text("#####\n#.#.#\n#.#.#\n#####")) is False
    assert unseen.build_keeps_letter("I", i_grid, grid_from_text("#####\n..#..\n.###.\n#####"))
    # An O's cut corners may be squared by posts; a notch of three drawn cells may not.
    o_grid = grid_from_text(".##.\n#..#\n#..#\n.##.")
    assert unseen.build_keeps_letter("O", o_grid, grid_from_text("####\n#..#\n#..#\n####"))
    wide = grid_from_text("...#\n#..#\n####")
    assert not unseen.build_keeps_letter("U", wide, grid_from_text("####\n#..#\n####"))
    # At scale 2x2 a cut corner is four grid cells, still a corner.
    assert unseen.build_keeps_letter(
        "O",
        grid_from_text("..####..\n..####..\n##....##\n##....##\n..####..\n..####.."),
        grid_from_text("########\n########\n##....##\n##....##\n########\n########"),
        cell_area=4,
    )


def test_the_family_shares_no_glyph_source_and_no_placement_rule_with_training() -> None:
    assert unseen.PACKAGE not in lf.FONT_PACKAGES.split()
    assert not any(f.startswith(unseen.FONT_DIR) for f in (*lf.FONT_FILES, *lf.PIXEL_FONTS))
    assert unseen.FAMILY not in (*lf.TRAIN_FAMILIES, *lf.EVAL_ONLY_FAMILIES)
    # The same grid, two rules, two programs: the frozen levels are not drop-planner levels.
    level = unseen.fixture_levels()[0]
    grid = unseen.grid_of(level)
    planned = blocks_to_program(plan_blocks(grid, rng=random.Random(0)))
    assert planned != unseen.unpack_program(level["program"])


@fonts
def test_a_sample_of_the_family_rebuilds_from_the_recorded_fonts() -> None:
    unseen.check_glyph_source(unseen.load_fixture()["source"])  # type: ignore[arg-type]
    levels = unseen.fixture_levels()
    sample = {level["letter"]: level for level in levels}  # the last level of every letter
    for letter, level in sample.items():
        seed = int(level["name"].split("-")[1])
        assert unseen.unseen_level(letter, seed) == level


def test_a_font_file_other_than_the_recorded_one_is_named(tmp_path: Path) -> None:
    font = tmp_path / "9x15B.pcf.gz"
    font.write_bytes(b"another font")
    recorded: unseen.GlyphSource = {
        "package": "xfonts-base",
        "version": "1:1.0.5+nmu1",
        "files": {str(font): "sha256:" + "0" * 64},
    }
    with pytest.raises(unseen.GlyphSourceMismatch) as raised:
        unseen.check_glyph_source(recorded)
    message = str(raised.value)
    assert str(font) in message and "sha256:" + "0" * 64 in message and digest_file(font) in message
    assert "1:1.0.5+nmu1" in message
    assert isinstance(raised.value, WorldForgeError)
    recorded["files"] = {str(tmp_path / "absent.pcf.gz"): "sha256:" + "0" * 64}
    with pytest.raises(unseen.GlyphSourceMismatch, match="absent.pcf.gz is not installed"):
        unseen.check_glyph_source(recorded)


def test_packed_programs_round_trip() -> None:
    program = "drop_block('b31', 4)\ndrop_block('b11', 10)\ndrop_block('b13', 0)\n"
    assert unseen.pack_program(program) == "b31 4,b11 10,b13 0"
    assert unseen.unpack_program(unseen.pack_program(program)) == program
    assert unseen.unpack_program("") == ""


def test_lintels_stand_on_posts_under_their_ends() -> None:
    # Legs three cells high are upright b13s, which take the bar's corner cells; the rest of the
    # bar, a b31 over the counter resting on neither its centre nor both ends, stands on a post
    # under each end (a lintel), never on a pillar under its centre as the drop planner props it.
    grid = grid_from_text("#####\n#...#\n#...#")
    for from_right in (False, True):
        blocks = lintel_blocks(grid, from_right=from_right)
        assert [(b.kind, b.x, b.y) for b in blocks if not b.support] == [
            ("b13", 0, 0),
            ("b13", 4, 0),
            ("b31", 2, 2),
        ]
        assert sorted((b.x, b.y) for b in blocks if b.support) == [(1, 0), (1, 1), (3, 0), (3, 1)]
        built = simulate_drops(lintel_program(grid, from_right=from_right))
        assert _cells(built) - _cells(grid) == {(1, 0), (1, 1), (3, 0), (3, 1)}
    planned = plan_blocks(grid, rng=random.Random(0))
    assert {(b.x, b.y) for b in planned if b.support} != {(1, 0), (1, 1), (3, 0), (3, 1)}


def test_a_diagonal_over_a_deep_gap_is_laid_as_stair_steps() -> None:
    grid = grid_from_text("....#\n...#.\n..#..\n.#...\n#....")
    blocks = lintel_blocks(grid, from_right=False)
    built = simulate_drops(lintel_program(grid, from_right=False))
    assert _cells(grid) <= _cells(built)
    # The lowest steps stand on short posts; higher up, a b31 centred on the step below carries
    # each cell instead of a post down to the ground.
    assert any(b.kind == "b31" and not b.support for b in blocks)
    assert max(b.y for b in blocks if b.support) < 3
    assert len(_cells(built)) < 15  # a post under every step would fill the triangle: 15 cells


def test_lintel_blocks_refuse_a_grid_of_the_wrong_size() -> None:
    with pytest.raises(WorldForgeError, match="expected 16 rows"):
        lintel_blocks(((1,),), from_right=False)


def test_top2_margin() -> None:
    softmax = [0.0] * 26
    softmax[1], softmax[17], softmax[0] = 0.6, 0.3, 0.1
    prediction = Prediction(softmax, None)
    assert prediction.top == "B" and prediction.runner_up == "R"
    assert prediction.margin == pytest.approx(0.3)
    assert top2_margin(softmax) == prediction.margin
    tie = Prediction([0.5, 0.5] + [0.0] * 24, None)
    assert tie.margin == 0.0
    assert Classification([prediction, tie]).margins == [prediction.margin, 0.0]
    with pytest.raises(WorldForgeError, match="at least two"):
        top2_margin([1.0])
