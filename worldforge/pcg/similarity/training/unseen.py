"""The frozen evaluation-only family ``fixed``: a glyph source and a placement rule no training family uses.

Leave-one-family-out accuracy says how the classifier reads a family it was not trained on, but
every training family shares the drop planner (:func:`worldforge.pcg.levels.drop_plan.plan_blocks`)
and the early stopping, temperature and model choices were all made looking at these families.
This family is measured, never trained on or tuned with:

* glyph source: the X11 bitmap faces of the Debian package ``xfonts-base`` (misc-fixed 6x10 to
  10x20 with their bold and oblique variants, and the Schumacher Clean faces), used by no training
  family; each glyph is laid on the block grid as drawn, scaled by whole cells (1-2 across, 1-2
  up) where it fits;
* placement rule: lintels and posts (:mod:`.lintel`), not the drop planner;
* faithful builds only, with the checks of the training families: the bitmap is exact (a grid's
  counters are the drawing's, no stroke dropped), a ``C`` or ``D`` whose build shows an ``O`` is
  drawn again (:func:`.families.built_shows`), and so is a build whose posts fill more than half of
  one of the letter's counters **or openings** (a ``C``'s mouth, an ``E``'s bays, the notches of
  an ``X``), or closes more than half of an opening's mouth (only a rounded glyph's cut corners
  may fill: :func:`build_keeps_letter`). Seeds are drawn in order until a letter has 30 faithful
  levels that stand as built in the simulation (no block moved by more than a cell; at most 160
  seeds), and a letter is in the family when it has at least 20. The rule cannot build every
  letter: posts under a lintel close a ``C``'s mouth, an ``E``'s, ``F``'s or ``S``'s bays and the
  spaces under a ``T``'s bar in every draw, and a ``Y`` or ``Z`` stands as built too rarely; those
  letters are not in the family (the independent set behind issue 31 also holds only the letters
  that build faithfully).

The family is **frozen**: ``dataset-manifests/fixtures/letter-classifier/unseen-fixed-letters.json``
holds every level's drawing, placement and ``drop_block`` program, with the package version and
the SHA-256 of every font file it was drawn from; the measurement runs from the stored programs,
never from the fonts. ``python -m worldforge.pcg.similarity.training.unseen --check`` rebuilds it
from the installed fonts and compares; a font file that differs from the recorded one stops the
rebuild with :class:`GlyphSourceMismatch` naming the file, both digests and both versions.
``--measure`` writes the bundled checkpoint's figures on it into ``docs/classifier.json``
(``unseen``).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache, partial
from pathlib import Path
from typing import TypedDict

from worldforge.core.canonical import pretty_json
from worldforge.core.digests import digest_file, digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_text
from worldforge.core.seeds import variant_rng
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.levels.drop_plan import GRID_HEIGHT, GRID_WIDTH, Grid, simulate_drops
from worldforge.pcg.similarity.classifier import BUNDLED_DIR
from worldforge.pcg.similarity.training import sources
from worldforge.pcg.similarity.training.families import FAITHFUL_TRIES, built_shows, place
from worldforge.pcg.similarity.training.grids import beside_ink, scaled, trim, whole_cell_scales
from worldforge.pcg.similarity.training.lintel import lintel_program
from worldforge.pcg.similarity.training.loop import Split, classify_pngs, render_item, render_splits
from worldforge.pcg.similarity.training.records import PngMetrics
from worldforge.pcg.similarity.training.sources import GlyphSourceMismatch, installed_version

ROOT = Path(__file__).resolve().parents[4]
FIXTURE = ROOT / "dataset-manifests" / "fixtures" / "letter-classifier" / "unseen-fixed-letters.json"
RESULTS = ROOT / "docs" / "classifier.json"
FAMILY = "fixed"
PACKAGE = "xfonts-base"
FONT_DIR = "/usr/share/fonts/X11/misc"
#: The faces drawn from: misc-fixed from 6x10 up (the 4x6 to 5x8 faces are left out: a 5x7
#: bitmap is one of the ``glyph`` family's sources) and the Schumacher Clean faces.
FACES = (
    "6x10", "6x12", "6x13", "6x13B", "6x13O", "7x13", "7x13B", "7x13O", "7x14", "7x14B",
    "8x13", "8x13B", "8x13O", "9x15", "9x15B", "9x18", "9x18B", "10x20",
    "clR6x12", "clB6x12", "clR7x14", "clR8x14", "clB8x14", "clR8x16", "clB8x16", "clR9x15", "clB9x15",
)  # fmt: skip
#: Faithful levels that stand as built, drawn per letter (seeds ``0, 1, ...`` until there are this
#: many, at most ``MAX_SEEDS`` seeds); a letter is in the family when it has at least
#: ``MIN_PER_LETTER`` of them.
SEEDS = 30
MAX_SEEDS = 160
MIN_PER_LETTER = 20
#: A build may fill at most this share of any of the letter's counters or openings.
MAX_FILLED = 0.5
#: An opening at a corner of the letter's box of at most this many drawn cells is a rounded
#: glyph's cut corner (an ``O``'s, a ``U``'s): posts may square it, the letter stays.
CORNER_NOTCH = 2


class UnseenLevel(TypedDict):
    """One frozen level: its drawing (rows top first, ``/`` between rows, ``#`` = block), where it
    stands, how it was tiled, and the program the measurement runs (packed: :func:`pack_program`)."""

    name: str
    letter: str
    face: str
    scale: list[int]
    rows: str
    left: int
    from_right: bool
    program: str


class GlyphSource(TypedDict):
    """The Debian package and font files a frozen family was drawn from."""

    package: str
    version: str
    files: dict[str, str]


def font_path(face: str) -> Path:
    return Path(FONT_DIR) / f"{face}.pcf.gz"


def glyph_source() -> GlyphSource:
    """Package, version and file digests of the installed glyph source (refused when incomplete)."""
    missing = [face for face in FACES if not font_path(face).is_file()]
    if missing:
        raise GlyphSourceMismatch(
            f"unseen letter family: {font_path(missing[0])} is not installed (Debian package {PACKAGE})"
        )
    return {
        "package": PACKAGE,
        "version": installed_version(PACKAGE) or "unknown",
        "files": {str(font_path(face)): digest_file(font_path(face)) for face in FACES},
    }


def check_glyph_source(recorded: GlyphSource) -> None:
    """Refuse a rebuild when any font file differs from the recorded one (:class:`GlyphSourceMismatch`,
    naming the file, both digests and both package versions: :func:`.sources.check`)."""
    sources.check(
        {FAMILY: {"packages": {recorded["package"]: recorded["version"]}, "files": dict(recorded["files"])}}
    )


@lru_cache(maxsize=1024)
def bitmap(face: str, letter: str) -> tuple[tuple[int, ...], ...]:
    """The face's glyph of ``letter`` as drawn, cut to its ink (rows top first, 1 = ink)."""
    from PIL import PcfFontFile

    with gzip.open(font_path(face)) as handle:
        font = PcfFontFile.PcfFontFile(io.BytesIO(handle.read()))
    glyph = font.glyph[ord(letter)]  # (advance, destination box, source box, 1-bit image)
    if glyph is None:
        raise GlyphSourceMismatch(f"unseen letter family: {font_path(face)} has no glyph for {letter!r}")
    image = glyph[3].crop(glyph[3].getbbox())
    data, width = image.convert("L").tobytes(), image.width
    return tuple(tuple(1 if data[r * width + c] else 0 for c in range(width)) for r in range(image.height))


def regions(cells: Sequence[Sequence[int]]) -> list[list[tuple[int, int]]]:
    """Background regions (4-connected) inside the bounding box of ``cells``' ink: the counters
    and the openings (a ``C``'s mouth, the notches of an ``X``)."""
    height, width = len(cells), len(cells[0])
    seen: set[tuple[int, int]] = set()
    out: list[list[tuple[int, int]]] = []
    for r0 in range(height):
        for c0 in range(width):
            if cells[r0][c0] or (r0, c0) in seen:
                continue
            seen.add((r0, c0))
            stack, region = [(r0, c0)], []
            while stack:
                r, c = stack.pop()
                region.append((r, c))
                for rr, cc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                    if 0 <= rr < height and 0 <= cc < width and not cells[rr][cc] and (rr, cc) not in seen:
                        seen.add((rr, cc))
                        stack.append((rr, cc))
            out.append(region)
    return out


def build_keeps_letter(letter: str, grid: Grid, built: Grid, *, cell_area: int = 1) -> bool:
    """Whether the build still shows the drawn letter: :func:`.families.built_shows`, and no
    counter or opening of the drawing more than :data:`MAX_FILLED` filled by posts or steps, nor
    any opening closed at its mouth.

    An opening (a background region of the letter's box reaching its edge: a ``C``'s mouth, an
    ``E``'s bays, the spaces beside a serif ``I``'s stem or under a ``T``'s bar) is as much the
    letter as a counter: a ``C`` whose mouth is crossed by three posts keeps one open cell, which
    satisfies ``built_shows``, but the level is a grill nobody reads as a ``C``; a serif ``I``
    whose bars stand on posts at their ends keeps half of each opening, but as a slot closed
    toward the edge: the level is a box with two slots. So an opening must also keep at least half
    of its cells on the box's edge (its mouth) empty. The only openings that may fill are a
    rounded glyph's cut corners, regions at a corner of the box of at most :data:`CORNER_NOTCH`
    drawn cells (``cell_area`` grid cells each, the drawing's scale): a square ``O`` is still an
    ``O``. The rule compares the build with its own drawing, never with a classifier.
    """
    if not built_shows(letter, grid, built):
        return False
    rows = [r for r, row in enumerate(grid) if any(row)]
    cols = [c for c in range(GRID_WIDTH) if any(row[c] for row in grid)]
    box = [row[cols[0] : cols[-1] + 1] for row in grid[rows[0] : rows[-1] + 1]]
    height, width = len(box), len(box[0])
    corners = {(0, 0), (0, width - 1), (height - 1, 0), (height - 1, width - 1)}
    for region in regions(box):
        if len(region) <= CORNER_NOTCH * cell_area and corners.intersection(region):
            continue  # a cut corner: posts square it
        filled = sum(built[rows[0] + r][cols[0] + c] for r, c in region)
        if filled > MAX_FILLED * len(region):
            return False
        mouth = [(r, c) for r, c in region if r in (0, height - 1) or c in (0, width - 1)]
        if sum(built[rows[0] + r][cols[0] + c] for r, c in mouth) > MAX_FILLED * len(mouth):
            return False  # an opening closed toward the edge: a slot, not an opening
    return True


def unseen_level(letter: str, seed: int) -> UnseenLevel | None:
    """The level of ``letter`` for ``seed`` (``None`` when no draw builds faithfully); deterministic.

    A draw picks a face, a whole-cell scale that fits the grid, a column and the tiling's end;
    a draw whose build does not keep the letter (:func:`build_keeps_letter`) is replaced by the
    next draw of the same seeded generator, at most ``FAITHFUL_TRIES`` draws.
    """
    rng = variant_rng(letter, seed, f"family:{FAMILY}")
    for _ in range(FAITHFUL_TRIES):
        face = rng.choice(FACES)
        glyph = bitmap(face, letter)
        sx, sy = rng.choice(whole_cell_scales(glyph, GRID_WIDTH, GRID_HEIGHT))
        cells = trim(scaled(glyph, sx, sy))
        grid = place(cells, rng)
        from_right = rng.random() < 0.5
        program = lintel_program(grid, from_right=from_right)
        if build_keeps_letter(letter, grid, simulate_drops(program), cell_area=sx * sy):
            return {
                "name": f"{letter}-{seed:02d}",
                "letter": letter,
                "face": face,
                "scale": [sx, sy],
                "rows": "/".join("".join("#" if v else "." for v in row) for row in cells),
                "left": min(c for c in range(GRID_WIDTH) if any(row[c] for row in grid)),
                "from_right": from_right,
                "program": pack_program(program),
            }
    return None


def pack_program(program: str) -> str:
    """A ``drop_block`` program as the fixture stores it: ``b31 4,b11 5,...`` (one block per item)."""
    return ",".join(f"{line[12:15]} {line[18:-1]}" for line in program.splitlines())


def unpack_program(packed: str) -> str:
    """Inverse of :func:`pack_program`: the program text, one ``drop_block`` line per block."""
    blocks = [item.split(" ") for item in packed.split(",")] if packed else []
    return "".join(f"drop_block('{kind}', {x})\n" for kind, x in blocks)


def grid_of(level: UnseenLevel) -> Grid:
    """The level grid a frozen level's drawing stands on (row 0 at the bottom)."""
    grid = [[0] * GRID_WIDTH for _ in range(GRID_HEIGHT)]
    rows = level["rows"].split("/")
    for r, row in enumerate(rows):
        for c, ch in enumerate(row):
            grid[len(rows) - 1 - r][level["left"] + c] = 1 if ch == "#" else 0
    return tuple(tuple(row) for row in grid)


def stands(level: UnseenLevel) -> bool:
    """Whether the level stands as built in the Box2D simulation: no block moved by more than a
    cell or destroyed.

    Stricter than the heap rule of the training families (:data:`.loop.HEAP_MOVED`, a quarter of
    the blocks): a lintel ``V``, ``K`` or ``X`` whose arm falls off its stair steps moves a fifth of
    its blocks and shows no letter, and this family holds only letters that build faithfully.
    """
    return render_item((unpack_program(level["program"]), False))[2] == 0.0


def draw_letter(letter: str, seeds: int = SEEDS, max_seeds: int = MAX_SEEDS) -> list[UnseenLevel]:
    """The faithful levels of ``letter`` that stand, from seeds ``0, 1, ...`` until there are
    ``seeds`` of them or ``max_seeds`` seeds were drawn.

    A letter the rule builds faithfully, or builds standing, in only some draws (a bold ``G``, an
    ``X`` whose notches stay open, a ``V`` on stair steps) gets its levels from more seeds instead
    of leaving the family for want of levels; a letter it never builds faithfully gets none.
    """
    levels: list[UnseenLevel] = []
    for seed in range(max_seeds):
        if len(levels) == seeds:
            break
        level = unseen_level(letter, seed)
        if level is not None and stands(level):
            levels.append(level)
    return levels


def draw_family(
    seeds: int = SEEDS, max_seeds: int = MAX_SEEDS, workers: int = 2
) -> dict[str, list[UnseenLevel]]:
    """:func:`draw_letter` for every letter (letters in parallel: each is drawn from its own seeds)."""
    draw = partial(draw_letter, seeds=seeds, max_seeds=max_seeds)
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            drawn = list(pool.map(draw, LETTERS))
    else:
        drawn = [draw(letter) for letter in LETTERS]
    return dict(zip(LETTERS, drawn, strict=True))


def freeze(drawn: Mapping[str, list[UnseenLevel]]) -> dict[str, object]:
    """The fixture's payload: the glyph source, and the levels of every letter with at least
    ``MIN_PER_LETTER`` standing levels."""
    letters = [c for c in LETTERS if len(drawn.get(c, [])) >= MIN_PER_LETTER]
    kept = [level for letter in letters for level in drawn[letter]]
    return {
        "description": (
            "Evaluation-only letter family 'fixed': X11 bitmap faces (Debian xfonts-base) laid on the block "
            "grid as drawn, scaled by whole cells, built by the lintels-and-posts rule "
            "(worldforge/pcg/similarity/training/lintel.py), not by the drop planner every training family "
            "uses; a build that closes more than half of a counter or an opening of its drawing, or of an "
            "opening's mouth, is drawn again, and so is a level where a block moves by more than a cell in "
            "the simulation (letters the rule never builds faithfully are not in the family). Never used for "
            "training, early stopping, temperature or model choice. Frozen: the measurement runs these "
            "programs."
        ),
        "license": (
            "Apache-2.0 (levels); glyph source: xfonts-base misc-fixed and Schumacher Clean faces "
            "(X11 permissive licences, /usr/share/doc/xfonts-base/copyright)"
        ),
        "source": glyph_source(),
        "seeds_per_letter": SEEDS,
        "max_seeds": MAX_SEEDS,
        "letters": letters,
        "standing_per_letter": {c: len(drawn.get(c, [])) for c in LETTERS},
        "programs_digest": digest_payload([unpack_program(level["program"]) for level in kept]),
        "levels": kept,
    }


def fixture_text(payload: Mapping[str, object]) -> str:
    """The fixture file: the header as :func:`pretty_json` writes it, one level per line (a
    reviewer's diff shows the levels that changed; 300 KB instead of 800 KB indented)."""
    head = {k: v for k, v in payload.items() if k != "levels"}
    lines = [json.dumps(level, sort_keys=True, ensure_ascii=True) for level in payload["levels"]]  # type: ignore[attr-defined]
    body = ",\n    ".join(lines)
    return pretty_json(head)[:-2] + f',\n  "levels": [\n    {body}\n  ]\n}}\n'


def load_fixture(path: Path = FIXTURE) -> dict[str, object]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise WorldForgeError(f"{path}: expected a JSON object")
    return data


def fixture_levels(path: Path = FIXTURE) -> list[UnseenLevel]:
    """The frozen levels, in file order; their programs digest checked against the recorded one."""
    data = load_fixture(path)
    levels: list[UnseenLevel] = data["levels"]  # type: ignore[assignment]
    if digest_payload([unpack_program(level["program"]) for level in levels]) != data["programs_digest"]:
        raise WorldForgeError(f"{path}: the levels' programs do not match the recorded programs_digest")
    return levels


def unseen_split(path: Path = FIXTURE) -> Split:
    """The frozen family as a :class:`.loop.Split` to render and measure."""
    split = Split(FAMILY, "eval")
    for level in fixture_levels(path):
        program = unpack_program(level["program"])
        split.programs.append(program)
        split.labels.append(LETTERS.index(level["letter"]))
        split.beside.append(beside_ink(grid_of(level), simulate_drops(program)) > 0)
    return split


def measure(folder: Path, *, workers: int = 2, cache: Path | None = None) -> PngMetrics:
    """The checkpoint in ``folder`` on the frozen family: full-size renders through
    ``load_classifier``, heaps excluded, as every evaluation set of the recipe."""
    split = unseen_split()
    render_splits([split], workers, cache)
    return classify_pngs(folder, [split])


def record_measurement(figures: PngMetrics, results: Path = RESULTS) -> None:
    """Write the bundled checkpoint's figures on the frozen family into the results file's
    ``unseen`` key (the other keys are the training run's and stay as they are)."""
    data = json.loads(results.read_text(encoding="utf-8"))
    data["unseen"] = {FAMILY: figures}
    atomic_write_text(results, pretty_json(data))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m worldforge.pcg.similarity.training.unseen", description=__doc__.splitlines()[0]
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="draw the family from the fonts and freeze it")
    action.add_argument("--check", action="store_true", help="redraw it and compare with the frozen one")
    action.add_argument(
        "--measure",
        action="store_true",
        help="measure --checkpoint on the frozen family (the bundled one: written into docs/classifier.json)",
    )
    parser.add_argument("--checkpoint", type=Path, default=BUNDLED_DIR)
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    if args.check:
        frozen = load_fixture(args.fixture)
        check_glyph_source(frozen["source"])  # type: ignore[arg-type]
        again = freeze(
            draw_family(int(frozen["seeds_per_letter"]), int(frozen["max_seeds"]), args.workers)  # type: ignore[call-overload]
        )
        same = again["levels"] == frozen["levels"] and again["letters"] == frozen["letters"]
        print("unseen letter family: " + ("rebuilt identically" if same else "REBUILT DIFFERENTLY"))
        return 0 if same else 1
    if args.write:
        payload = freeze(draw_family(workers=args.workers))
        atomic_write_text(args.fixture, fixture_text(payload))
        print(f"{args.fixture}: {len(payload['levels'])} levels", file=sys.stderr)  # type: ignore[arg-type]
        return 0
    figures = measure(args.checkpoint, workers=args.workers)
    if args.checkpoint.resolve() == BUNDLED_DIR.resolve():
        record_measurement(figures)
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
