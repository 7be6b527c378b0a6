"""The typed shapes of the science-birds item records and stage values, and the checks that admit a
value read back from a file (a resumed run's records, ``runs diff``'s records, the stage cache)."""

from __future__ import annotations

import typing

from worldforge.core.digests import digest_text
from worldforge.suites.science_birds import records
from worldforge.suites.science_birds.records import (
    RECORD_FIELDS,
    ItemRecord,
    is_extract_value,
    is_item_record,
)
from worldforge.suites.science_birds.stage_cache import StageCache
from worldforge.suites.science_birds.stages import LevelJob, run_level_stages, stage_versions


def _record() -> dict[str, object]:
    """A failed trial's record as the runner writes it (no level: the reply had no code)."""
    return {
        "item_id": "mock__zero-shot__A__001",
        "input_digest": "sha256:" + "0" * 64,
        "model": "mock",
        "program": "zero-shot",
        "letter": "A",
        "trial": 1,
        "trial_seed": 7,
        "prompt_digests": ["sha256:" + "1" * 64],
        "tokens": 12,
        "reply": "no code here",
        "status": "failed",
        "failed_stage": "extract",
        "error": "Code not found.",
        "stages": {},
        "cohort_digest": "sha256:" + "2" * 64,
        "sta": 0.0,
        "sim": 0.0,
    }


def test_the_fields_every_record_has_are_the_required_keys_of_its_type() -> None:
    hints = typing.get_type_hints(ItemRecord, include_extras=True)
    required = {k for k, t in hints.items() if typing.get_origin(t) is not typing.NotRequired}
    assert required == RECORD_FIELDS
    assert set(_record()) == RECORD_FIELDS


def test_a_whole_record_is_admitted_and_a_damaged_one_is_not() -> None:
    assert is_item_record(_record())
    assert not is_item_record([_record()])
    for key in ("sta", "stages", "cohort_digest"):
        damaged = _record()
        del damaged[key]
        assert not is_item_record(damaged), key
    for key, value in (("trial", True), ("trial", "1"), ("sim", None), ("stages", []), ("model", 3)):
        assert not is_item_record({**_record(), key: value}), (key, value)


def test_a_cached_stage_value_of_another_shape_is_computed_again() -> None:
    reply = "no code here"
    versions = stage_versions()
    cache = StageCache(None)
    key = StageCache.key("extract", versions["extract"], digest_text(reply))
    cache.put_json("extract", key, {"program": 5})  # not what the extract stage stores
    out = run_level_stages(LevelJob("item", reply, tuple(versions.items())), cache)
    assert (out.get("failed_stage"), out.get("error"), out.get("program")) == (
        "extract",
        "Code not found.",
        None,
    )
    stored = cache.get_json("extract", key)
    assert isinstance(stored, dict) and is_extract_value(stored) and stored["program"] is None


def test_the_records_module_names_every_shape_it_defines() -> None:
    shapes = {n for n, v in vars(records).items() if isinstance(v, type) and v.__module__ == records.__name__}
    assert shapes <= set(records.__all__)
