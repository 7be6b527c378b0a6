"""Per-item stages of the Science Birds suite, keyed for the content-addressed stage cache.

One *item* is (model, program, letter, trial). Its stages run in the competition's order:
``generate`` (chat turns) → ``extract`` (reply → ``drop_block`` program) → ``convert`` (program →
level XML) → ``simulate`` (Box2D stability) → ``render`` (1024² black-on-white PNG) → ``classify``.

Every stage output is keyed by the digest of its inputs plus the stage's *version*, so a hit in
the stage cache (``stage_cache.py``) is exact: re-scoring the same replies with another classifier
reuses generation and physics, and changing the physics code (its version is the digest of its
source) invalidates only the stages from ``simulate`` on. The version of a stage whose module
carries no explicit version constant is the sha256 of the module's source file: a code change can
never silently reuse stale results.

LLM replies are data. They are screened (size, binary/control characters, unencodable text) before
extraction, only parsed by the official regular expressions, and never executed, imported or
evaluated; a hostile reply becomes a per-trial failure with the reason.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from functools import cache
from types import ModuleType

import numpy as np
from PIL import Image

from worldforge.core.digests import digest_bytes, digest_file, digest_payload, digest_text
from worldforge.core.errors import StageError, WorldForgeError
from worldforge.pcg.levels.convert import convert
from worldforge.pcg.levels.extract import extract_code
from worldforge.pcg.sim.physics import simulate
from worldforge.pcg.sim.png import encode_rows
from worldforge.pcg.sim.render import render_rows
from worldforge.pcg.similarity.classifier_input import Rows, rows_from_array, rows_from_png
from worldforge.pcg.similarity.prep import PrepSpec, prepare_rows
from worldforge.providers.chat import CHAT_TRIAL_VERSION
from worldforge.suites.science_birds.records import (
    ConvertValue,
    ExtractValue,
    LevelStageOutcome,
    SimulateValue,
    StageEntry,
    is_convert_value,
    is_extract_value,
    is_simulate_value,
)
from worldforge.suites.science_birds.stage_cache import StageCache

#: Replies longer than this are rejected before extraction (25,000 tokens is ~100,000 characters;
#: the margin lets a 10,000-line program reach extraction and fail there with a precise reason).
MAX_REPLY_CHARS = 256_000
#: At most this many ``drop_block`` calls are converted: 20 × 16 cells hold at most 320 blocks, so a
#: longer program cannot be valid and would only burn time (the official converter would fail with
#: ``Height boundary is intruded.`` on the first block that does not fit).
MAX_PROGRAM_CALLS = 320
#: Characters of a rejected reply kept in the item record (the digest covers the whole reply).
PREVIEW_CHARS = 2_000
THUMBNAIL_PX = 96

STAGES = ("generate", "extract", "convert", "simulate", "render", "classify")
_ALLOWED_CONTROL = {"\t", "\n", "\r"}


@cache
def module_version(module_name: str) -> str:
    """Stage version: the module's declared ``STAGE_VERSION``/``VERSION`` (an opaque id), else
    ``module:<source digest>``, which changes with any edit of the file (even a comment)."""
    import importlib

    module: ModuleType = importlib.import_module(module_name)
    for attr in ("STAGE_VERSION", "VERSION"):
        value = getattr(module, attr, None)
        if isinstance(value, str) and value:
            return value
    source = getattr(module, "__file__", None)
    return f"{module_name}:{digest_file(source)[7:23]}" if source else module_name


def stage_versions() -> dict[str, str]:
    """Versions of the code-defined stages (generation depends on the provider, not on code)."""
    return {
        "generate": CHAT_TRIAL_VERSION,
        "extract": module_version("worldforge.pcg.levels.extract"),
        "convert": module_version("worldforge.pcg.levels.convert"),
        "simulate": module_version("worldforge.pcg.sim.physics"),
        "render": module_version("worldforge.pcg.sim.render"),
    }


def screen_reply(text: object) -> str | None:
    """Why a reply cannot be processed (``None`` when it can). Never looks *inside* the code."""
    if not isinstance(text, str):
        return f"reply is {type(text).__name__}, not text"
    if len(text) > MAX_REPLY_CHARS:
        return f"reply is {len(text)} characters; the limit is {MAX_REPLY_CHARS}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"reply is not encodable as UTF-8 (character {exc.start})"
    bad = sum(1 for ch in text if (ord(ch) < 32 and ch not in _ALLOWED_CONTROL) or ord(ch) == 0x7F)
    if bad:
        return f"reply contains {bad} binary/control character(s)"
    return None


def reply_preview(text: object) -> str:
    """A JSON-safe, bounded preview of a rejected reply (control characters escaped)."""
    shown = text if isinstance(text, str) else repr(text)
    head = shown[:PREVIEW_CHARS]
    safe = head.encode("utf-8", "backslashreplace").decode("utf-8")
    return "".join(ch if ord(ch) >= 32 or ch in _ALLOWED_CONTROL else f"\\x{ord(ch):02x}" for ch in safe)


@dataclass(frozen=True)
class LevelJob:
    """Input of the CPU-bound level stages for one item (picklable for the process pool)."""

    item_id: str
    reply: str
    versions: tuple[tuple[str, str], ...]
    #: The classifier's input shortcut (:class:`~worldforge.pcg.similarity.prep.PrepSpec`): when set,
    #: the worker also prepares the classifier input from the in-memory render (``prepared``).
    prep: PrepSpec | None = None


def _cached_extract(cache: StageCache | None, key: str) -> ExtractValue | None:
    value = cache.get_json("extract", key) if cache else None
    return value if isinstance(value, dict) and is_extract_value(value) else None


def _cached_convert(cache: StageCache | None, key: str) -> ConvertValue | None:
    value = cache.get_json("convert", key) if cache else None
    return value if isinstance(value, dict) and is_convert_value(value) else None


def _cached_simulate(cache: StageCache | None, key: str) -> SimulateValue | None:
    value = cache.get_json("simulate", key) if cache else None
    return value if isinstance(value, dict) and is_simulate_value(value) else None


def run_level_stages(job: LevelJob, cache: StageCache | None = None) -> LevelStageOutcome:
    """extract → convert → simulate → render for one reply; returns a JSON-native outcome.

    Stage failures (no code, official converter errors, empty levels) are returned, not raised, so
    one bad trial never stops a run. The PNG travels base64-encoded to stay JSON/pickle friendly.
    """

    versions = dict(job.versions)
    stages: dict[str, StageEntry] = {}
    out: LevelStageOutcome = {"item_id": job.item_id, "stages": stages}
    reply_digest = digest_text(job.reply)

    # extract ------------------------------------------------------------------------------
    key = StageCache.key("extract", versions["extract"], reply_digest)
    extraction = _cached_extract(cache, key)
    if extraction is None:
        ext = extract_code(job.reply)
        extraction = {
            "program": ext.program,
            "error": ext.error,
            "calls": len(ext.calls),
            "dropped": [d.to_dict() for d in ext.dropped][:50],
            "dropped_count": len(ext.dropped),
            "notes": list(ext.notes),
        }
        if cache:
            cache.put_json("extract", key, extraction)
    program = extraction["program"]
    stages["extract"] = {
        "digest": digest_payload(extraction),
        "version": versions["extract"],
        "input_digest": reply_digest,
    }
    out["extraction"] = {
        "error": extraction["error"],
        "calls": extraction["calls"],
        "dropped": extraction["dropped"],
        "dropped_count": extraction["dropped_count"],
        "notes": extraction["notes"],
    }
    out["program"] = program
    if program is None:
        out["failed_stage"] = "extract"
        out["error"] = extraction["error"] or "Code not found."
        return out
    if int(extraction["calls"]) > MAX_PROGRAM_CALLS:
        out["failed_stage"] = "extract"
        out["error"] = (
            f"program has {extraction['calls']} drop_block calls; at most {MAX_PROGRAM_CALLS} blocks fit "
            "on the 20x16 grid (not converted)"
        )
        return out

    # convert ------------------------------------------------------------------------------
    program_digest = digest_text(program)
    key = StageCache.key("convert", versions["convert"], program_digest)
    converted = _cached_convert(cache, key)
    if converted is None:
        try:
            converted = {"xml": convert(program), "error": None}
        except StageError as exc:
            converted = {"xml": None, "error": str(exc)}
        if cache:
            cache.put_json("convert", key, converted)
    xml = converted["xml"]
    stages["convert"] = {
        "digest": digest_payload(converted),
        "version": versions["convert"],
        "input_digest": program_digest,
    }
    if xml is None:
        out["failed_stage"] = "convert"
        out["error"] = converted["error"]
        return out
    out["xml"] = xml
    xml_digest = digest_text(xml)

    # simulate + render (the image shows the poses after the 10 s simulation) -------------------
    sim_key = StageCache.key("simulate", versions["simulate"], xml_digest)
    png_key = StageCache.key("render", f"{versions['simulate']}|{versions['render']}", xml_digest)
    sim = _cached_simulate(cache, sim_key)
    png = cache.get_blob("render", png_key) if cache and sim is not None and not sim.get("error") else None
    rows: Rows | None = None
    if sim is None or (png is None and not sim.get("error")):
        sim, png, rows = _simulate_and_render(xml)
        if cache:
            cache.put_json("simulate", sim_key, sim)
            if png is not None:
                cache.put_blob("render", png_key, png)
    stages["simulate"] = {
        "digest": digest_payload(sim),
        "version": versions["simulate"],
        "input_digest": xml_digest,
    }
    out["stability"] = {
        "total_blocks": sim["total_blocks"],
        "moving_blocks": sim["moving_blocks"],
        "destroyed_blocks": sim["destroyed_blocks"],
        "stability": sim["stability"],
    }
    if sim.get("error") or png is None:
        out["failed_stage"] = "simulate"
        out["error"] = sim.get("error") or "no image"
        return out
    stages["render"] = {
        "digest": digest_bytes(png),
        "version": versions["render"],
        "input_digest": xml_digest,
    }
    out["png_b64"] = base64.b64encode(png).decode("ascii")
    if rows is None:  # a cached render: read its rows once for both uses
        rows = _png_rows(png)
    out["thumbnail"] = _thumbnail_from_rows(rows, THUMBNAIL_PX)
    if job.prep is not None:
        values = prepare_rows(rows, job.prep)
        if values is not None:
            out["prepared"] = values
    return out


def _png_rows(png: bytes) -> Rows:
    """The distinct rows of a PNG: read directly for the encoder's own files, else via Pillow."""
    rows = rows_from_png(png)
    if rows is not None:
        return rows
    with Image.open(io.BytesIO(png)) as img:
        return rows_from_array(np.asarray(img.convert("RGBA")))


def _simulate_and_render(xml: str) -> tuple[SimulateValue, bytes | None, Rows | None]:
    """Stability figures, the PNG and the render's distinct rows (kept for the thumbnail and the
    classifier input, so neither decodes the PNG again nor needs the full image)."""

    try:
        result = simulate(xml)
    except (StageError, WorldForgeError) as exc:
        empty: SimulateValue = {
            "total_blocks": 0,
            "moving_blocks": 0,
            "destroyed_blocks": 0,
            "stability": 0.0,
            "error": str(exc),
        }
        return empty, None, None
    stats: SimulateValue = {
        "total_blocks": result.total_blocks,
        "moving_blocks": result.moving_blocks,
        "destroyed_blocks": result.destroyed_blocks,
        "stability": float(result.stability),
        "error": None,
    }
    try:
        render = render_rows(result)
        png = encode_rows(render.distinct, render.new)
    except (StageError, WorldForgeError) as exc:
        return {**stats, "error": f"render: {exc}"}, None, None
    return stats, png, Rows(render.distinct, render.row_of)


def _thumbnail_from_rows(rows: Rows, size: int) -> str:
    """:func:`thumbnail_data_uri` of the image ``rows`` describes: each distinct row is converted
    to grey once (Pillow's conversion, pixel by pixel) and only then repeated down the image."""

    distinct = rows.distinct
    if distinct.ndim == 3:
        mode = {1: "L", 3: "RGB", 4: "RGBA"}[distinct.shape[2]]
        layout = distinct[:, :, 0] if mode == "L" else distinct
        distinct = np.asarray(Image.fromarray(np.ascontiguousarray(layout), mode=mode).convert("L"))
    if _split_box_resize_exact(size, distinct.shape[1], len(rows.row_of)):
        across = np.asarray(
            Image.fromarray(np.ascontiguousarray(distinct), mode="L").resize(
                (size, len(distinct)), Image.Resampling.BOX
            )
        )
        small = Image.fromarray(np.take(across, rows.row_of, axis=0), mode="L")
        return _thumbnail(small.resize((size, size), Image.Resampling.BOX), size)
    grey = np.take(distinct, rows.row_of, axis=0)
    return _thumbnail(Image.fromarray(grey, mode="L"), size)


@cache
def _split_box_resize_exact(size: int, width: int, height: int) -> bool:
    """Whether Pillow's BOX resize of a ``width`` x ``height`` grey image to ``size`` x ``size``
    equals resizing each distinct row across first and then the repeated result down.

    Pillow resizes in two passes (across, then down), so the across pass need only see each
    distinct row once: about a fifth of the work for a render. Checked once per shape on a seeded
    noise image with runs of repeated rows; where it does not hold, the whole image is resized.
    """
    rng = np.random.default_rng(20240422)
    distinct = rng.integers(0, 256, (max(2, height // 8), width), dtype=np.uint8)
    row_of = np.sort(rng.integers(0, len(distinct), height))
    whole = Image.fromarray(np.take(distinct, row_of, axis=0), mode="L").resize(
        (size, size), Image.Resampling.BOX
    )
    across = np.asarray(
        Image.fromarray(distinct, mode="L").resize((size, len(distinct)), Image.Resampling.BOX)
    )
    split = Image.fromarray(np.take(across, row_of, axis=0), mode="L").resize(
        (size, size), Image.Resampling.BOX
    )
    return bool(np.array_equal(np.asarray(whole), np.asarray(split)))


def thumbnail_data_uri(png: bytes, size: int = THUMBNAIL_PX) -> str:
    """A small embedded PNG for the report gallery, from a PNG (a level worker that has the render's
    rows uses :func:`_thumbnail_from_rows` instead and never decodes its PNG)."""

    with Image.open(io.BytesIO(png)) as img:
        return _thumbnail(img, size)


def _thumbnail(img: Image.Image, size: int) -> str:
    """The gallery's data URI of ``img`` (grey, reduced to ``size`` unless it already is, two
    colours, 1-bit PNG): one recipe for both the whole-image and the distinct-row paths."""
    grey = img if img.mode == "L" else img.convert("L")
    if grey.size != (size, size):
        grey = grey.resize((size, size), Image.Resampling.BOX)
    small = grey.point(lambda v: 0 if v < 250 else 255)
    buf = io.BytesIO()
    small.convert("1").save(buf, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


__all__ = [
    "MAX_PROGRAM_CALLS",
    "MAX_REPLY_CHARS",
    "STAGES",
    "LevelJob",
    "module_version",
    "reply_preview",
    "run_level_stages",
    "screen_reply",
    "stage_versions",
    "thumbnail_data_uri",
]
