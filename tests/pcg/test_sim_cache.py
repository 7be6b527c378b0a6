"""One simulation per level across the folder stages: same bytes as simulating in each stage,
no second simulation, and keys that follow the level's bytes and the trial count."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from worldforge.core.errors import WorldForgeError
from worldforge.pcg.competition import stages as folder
from worldforge.pcg.competition.stages import stability_json, unity_score
from worldforge.pcg.levels.convert import convert
from worldforge.pcg.levels.glyphs import letter_program
from worldforge.pcg.sim import cache as sim_cache
from worldforge.pcg.sim import physics
from worldforge.pcg.sim.cache import CACHE_DIR, PhysicsCache, level_key
from worldforge.pcg.sim.render import render_png

REF = Path(__file__).parents[1] / "fixtures" / "reference-levels"
EMPTY_LEVEL = (
    '<?xml version="1.0" encoding="utf-16"?>\n<Level width="2">\n<Camera x="0" y="2" minWidth="20" '
    'maxWidth="30" />\n<Birds>\n<Bird type="BirdRed"/>\n</Birds>\n<Slingshot x="-8" y="-2.5" />\n'
    "<GameObjects>\n</GameObjects>\n</Level>\n"
)


def make_levels(root: Path) -> Path:
    src = root / "competition"
    levels = {
        "team1/levels/I/1.xml": (REF / "result_22.xml").read_text(),
        "team1/levels/I/2.xml": (REF / "V1_L_1.xml").read_text(),
        "team1/levels/I/3.xml": EMPTY_LEVEL,
        "team1/levels/O/1.xml": (REF / "result_23.xml").read_text(),
        "team2/levels/A/1.xml": convert(letter_program("A", 7, "bitmap-5x7")),
        "team2/levels/A/2.xml": (REF / "result_24.xml").read_text(),
    }
    for rel, text in levels.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return src


def expected_outputs(src: Path) -> dict[str, bytes]:
    """The official outputs computed directly: a fresh simulation per level and per output."""
    out: dict[str, bytes] = {}
    rows: dict[str, list[tuple[str, float, int, int]]] = {}
    for team, char, path in folder.stage_inputs(src, "levels", ".xml"):
        try:
            result = physics.simulate(path.read_text())
        except WorldForgeError:  # the empty level has no stability and no image
            continue
        image = (team / "images" / char / f"{path.stem}.png").relative_to(src).as_posix()
        out[image] = render_png(physics.simulate(path.read_text()))
        table = (team / "stability" / f"{char}.json").relative_to(src).as_posix()
        tag = f"{src.name}/{path.relative_to(src).as_posix()}"
        score = unity_score(result.total_blocks, result.moving_blocks)
        rows.setdefault(table, []).append((tag, score, result.total_blocks, result.moving_blocks))
    for table, entries in rows.items():
        out[table] = stability_json(entries).encode()
    return out


def official_files(src: Path) -> dict[str, bytes]:
    return {
        p.relative_to(src).as_posix(): p.read_bytes()
        for p in sorted(src.rglob("*"))
        if p.is_file()
        and p.parts[len(src.parts)] not in ("logs", CACHE_DIR)
        and "/levels/" not in p.as_posix()
    }


@pytest.mark.parametrize("workers", [1, 2])
def test_stability_then_images_writes_the_bytes_of_fresh_simulations(tmp_path: Path, workers: int) -> None:
    src = make_levels(tmp_path)
    stab = folder.stage_stability(src, workers=workers)
    imgs = folder.stage_images(src, workers=workers)
    assert (stab.succeeded, stab.failed, imgs.succeeded, imgs.failed) == (5, 1, 5, 1)
    assert stab.failures == imgs.failures == [("team1/levels/I/3.xml", stab.failures[0][1])]
    assert "no blocks" in stab.failures[0][1]
    assert official_files(src) == expected_outputs(src)
    assert (src / CACHE_DIR / "physics.json").is_file()


def test_images_after_stability_does_not_simulate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = make_levels(tmp_path)
    folder.stage_stability(src, workers=1)
    calls: list[Any] = []
    real = physics.simulate

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(sim_cache, "simulate", counting)  # the name the stages' worker calls
    folder.stage_images(src, workers=1)
    folder.stage_stability(src, workers=1)
    assert calls == []
    assert official_files(src) == expected_outputs(src)
    calls.clear()
    # a changed level is simulated again; the others still come from the sidecar
    changed = convert(letter_program("O", 11, "bitmap-5x7"))
    (src / "team1/levels/O/1.xml").write_text(changed, encoding="utf-8")
    folder.stage_images(src, workers=1)
    assert len(calls) == 1
    assert (src / "team1/images/O/1.png").read_bytes() == render_png(real(changed))


def test_keys_follow_bytes_and_trials_and_bad_sidecars_are_ignored(tmp_path: Path) -> None:
    data = (REF / "result_22.xml").read_bytes()
    assert level_key(data, 1) == level_key(bytes(data), 1)
    assert level_key(data, 1) != level_key(data, 2)
    assert level_key(data, 1) != level_key(data + b" ", 1)
    assert level_key(data, 1, "v1") != level_key(data, 1, "v2")

    src = make_levels(tmp_path)
    folder.stage_stability(src, workers=1)
    expected = official_files(src)
    (src / CACHE_DIR / "physics.json").write_text("{not json", encoding="utf-8")
    assert PhysicsCache(src).entries == {}
    shutil.rmtree(src / "team1" / "stability")
    folder.stage_physics(src, workers=2)
    files = official_files(src)
    assert {k: v for k, v in files.items() if "/images/" not in k} == expected
    assert len(PhysicsCache(src).entries) == 5  # distinct level bytes (two files share one level)


def test_a_sidecar_entry_missing_a_count_is_simulated_again(tmp_path: Path) -> None:
    src = make_levels(tmp_path)
    folder.stage_stability(src, workers=1)
    expected = official_files(src)
    sidecar = src / CACHE_DIR / "physics.json"
    data = json.loads(sidecar.read_text(encoding="utf-8"))
    for entry in data["entries"].values():
        entry.pop("moving_blocks", None)  # a success entry without it cannot be used
    sidecar.write_text(json.dumps(data), encoding="utf-8")
    assert all(entry["error"] is not None for entry in PhysicsCache(src).entries.values())
    folder.stage_stability(src, workers=1)
    assert official_files(src) == expected
    assert all("moving_blocks" in e for e in PhysicsCache(src).entries.values() if e["error"] is None)
