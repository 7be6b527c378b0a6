"""The ``dpi`` letter family and the glyph-source record of every training family.

The family must draw Latin letters under their own labels (the package also ships a symbol face that
maps A-Z to Greek), share no glyph source with any other family (the frozen evaluation-only family
included), and a rebuild must name a font file that differs from the one the corpus was drawn from.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from worldforge.core.digests import digest_file
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.levels.drop_plan import simulate_drops
from worldforge.pcg.similarity.training import dpi, sources, unseen
from worldforge.pcg.similarity.training import families as lf
from worldforge.pcg.similarity.training.grids import counters

installed = pytest.mark.skipif(
    bool(lf.missing_fonts()), reason=f"glyph fonts not installed (apt-get install {lf.FONT_PACKAGES})"
)
ROOT = Path(__file__).parents[2]
SYMBOL_FACE = dpi.FOLDER / "symb12.pcf.gz"


def _counters(path: str | Path, letter: str) -> int:
    return counters([list(row) for row in dpi.glyph(str(path), letter)])


@installed
def test_every_face_draws_the_latin_letter_of_its_label() -> None:
    assert dpi.FILES and not any("symb" in Path(f).name for f in dpi.FILES)
    for path in dpi.FILES:
        # A bowl or a closed shape where the letter has one, an open one where it has none.
        assert _counters(path, "O") == 1 and _counters(path, "D") == 1, path
        assert _counters(path, "C") == 0 and _counters(path, "H") == 0, path
        assert _counters(path, "P") >= 1, path
    # The left-out symbol face fails the same check: its "P" is a Greek Pi, without a bowl.
    assert _counters(SYMBOL_FACE, "P") == 0


@installed
def test_dpi_levels_are_deterministic_buildable_and_fit_the_grid() -> None:
    for letter in "ACDGRXY":
        for seed in (0, 1):
            grid, program = lf.family_level("dpi", letter, seed)
            assert (grid, program) == lf.family_level("dpi", letter, seed)
            drawn = {(r, c) for r, row in enumerate(grid) for c, v in enumerate(row) if v}
            built = {(r, c) for r, row in enumerate(simulate_drops(program)) for c, v in enumerate(row) if v}
            assert drawn <= built, (letter, seed)
    cells = dpi.dpi_cells("W", random.Random(5))
    assert len(cells) <= lf.GRID_HEIGHT and len(cells[0]) <= lf.GRID_WIDTH
    assert len({lf.family_program("dpi", "A", seed) for seed in range(6)}) >= 5


def test_no_glyph_source_is_in_two_families() -> None:
    files = sources.family_files()
    assert set(files) == set(lf.TRAIN_FAMILIES)
    owners: dict[str, str] = {}
    for family, paths in files.items():
        for path in paths:
            assert path not in owners, (path, owners.get(path), family)
            owners[path] = family
    # Nor with the frozen evaluation-only family: a package of its own, a folder of its own.
    assert unseen.PACKAGE != dpi.PACKAGE and unseen.PACKAGE not in lf.FONT_PACKAGES.split()
    assert not any(path.startswith(unseen.FONT_DIR) for path in owners)
    assert {"stroke", "block"} == {family for family, paths in files.items() if not paths}


@installed
def test_the_record_has_every_file_with_its_digest_and_package() -> None:
    recorded = sources.record()
    assert recorded["dpi"]["files"][dpi.FILES[0]] == digest_file(Path(dpi.FILES[0]))
    assert len(recorded["dpi"]["files"]) == len(dpi.FILES)
    if sources.installed_version(dpi.PACKAGE) is not None:  # dpkg present: packages by name
        assert set(recorded["dpi"]["packages"]) == {dpi.PACKAGE}
        assert set(recorded["pixel"]["packages"]) == {"fonts-terminus-otb"}
    sources.check(recorded)  # the installed files are the recorded ones


@installed
def test_the_shipped_manifest_records_the_installed_glyph_sources() -> None:
    manifest = json.loads((ROOT / "dataset-manifests" / "letter-classifier.json").read_text(encoding="utf-8"))
    recorded = manifest["metadata"]["glyph_sources"]
    assert set(recorded) == set(lf.TRAIN_FAMILIES)
    sources.check(recorded)


def test_a_font_file_other_than_the_recorded_one_is_named(tmp_path: Path) -> None:
    font = tmp_path / "timR12.pcf.gz"
    font.write_bytes(b"a redrawn face")
    recorded: dict[str, sources.FamilySources] = {
        "dpi": {"packages": {"xfonts-100dpi": "1:1.0.5"}, "files": {str(font): "sha256:" + "0" * 64}}
    }
    with pytest.raises(sources.GlyphSourceMismatch) as raised:
        sources.check(recorded)
    message = str(raised.value)
    assert "'dpi'" in message and str(font) in message
    assert "sha256:" + "0" * 64 in message and digest_file(font) in message and "1:1.0.5" in message
    assert isinstance(raised.value, WorldForgeError)
    recorded["dpi"]["files"] = {str(tmp_path / "absent.pcf.gz"): "sha256:" + "0" * 64}
    with pytest.raises(sources.GlyphSourceMismatch, match="absent.pcf.gz is not installed"):
        sources.check(recorded)


def test_a_malformed_record_is_refused_with_its_field_named() -> None:
    with pytest.raises(sources.GlyphSourceMismatch, match="glyph_sources must be an object"):
        sources.parse_record([], "letter-classifier.json: metadata")
    with pytest.raises(sources.GlyphSourceMismatch, match=r"glyph_sources\.dpi\.files must map"):
        sources.parse_record({"dpi": {"packages": {}, "files": {"a": 1}}}, "m")
    good = {"dpi": {"packages": {"xfonts-100dpi": "1"}, "files": {"/x": "sha256:" + "0" * 64}}}
    assert sources.parse_record(good, "m") == good


def test_a_rebuild_from_other_fonts_stops_before_generating_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from worldforge.pcg.similarity.training import recipe

    font = tmp_path / "helvR12.pcf.gz"
    font.write_bytes(b"another Helvetica")
    manifest = tmp_path / "letter-classifier.json"
    manifest.write_text(
        json.dumps(
            {
                "metadata": {
                    "glyph_sources": {
                        "dpi": {
                            "packages": {"xfonts-100dpi": "1:1.0.5"},
                            "files": {str(font): "sha256:" + "0" * 64},
                        }
                    }
                }
            }
        ),
        encoding="utf-8",
    )
    monkeypatch.setattr(recipe, "DEFAULT_MANIFEST", manifest)

    def generate(*args: object, **kwargs: object) -> None:
        raise AssertionError("the corpus was generated from fonts that differ from the record")

    monkeypatch.setattr(recipe, "build_splits", generate)
    with pytest.raises(SystemExit) as stopped:
        recipe.main(["--quick"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert str(font) in error and "--accept-glyph-sources" in error and "1:1.0.5" in error
    # Accepting the new sources goes on to generate.
    with pytest.raises(AssertionError, match="generated from fonts"):
        recipe.main(["--quick", "--accept-glyph-sources"])
