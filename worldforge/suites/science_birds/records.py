"""The shapes the science-birds suite records per item and hands from stage to stage.

An item record (``items/<item>.json``) is the only input of every score, report row, token count
and run comparison, so its fields are written down once, here: the runner builds it
(:mod:`.run`), and scoring, the report, usage, unserved replies, team summaries and ``runs diff``
read it. The values the stages pass on before a record exists (a generated reply, the level
stages' outcome) and the sections nested in a record (stage digests, extraction, stability,
usage, submission evidence) have their own shapes.

A record or a cached stage value read back from a file becomes one of these types only through a
check here (:func:`is_item_record` and the cache checks), which looks at every field the readers
index; anything else is treated as absent (recomputed on resume, skipped by ``runs diff``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict, TypeGuard

import numpy as np
from numpy.typing import NDArray

from worldforge.core.canonical import JSON
from worldforge.pcg.levels.extract import DroppedCallFields

#: The recorded exchanges of one trial as the gateway wrote them (sanitized JSON objects; read
#: here, never changed).
Exchanges = Sequence[Mapping[str, object]]


class ItemKeyFields(TypedDict):
    """An item's identity as its record spells it (``ItemKey.to_dict``; the first fields of every
    record)."""

    model: str
    program: str
    letter: str
    trial: int


class TrialUsage(TypedDict):
    """Tokens a trial spent as its chat turns reported them, and the models that answered."""

    prompt_tokens: int
    completion_tokens: int
    served_models: list[str]


class SubmissionEvidence(TypedDict):
    """What a submission trial's host answered, kept with the item (``outcome`` verbatim)."""

    outcome: JSON
    #: The gateway counted more tokens than the package allows: scored as no output.
    over_budget: NotRequired[bool]
    #: Whether the returned text is byte-equal to a choice the gateway served (:mod:`.unserved`).
    reply_is_model_output: NotRequired[bool]
    #: Where the program raised, as the host reported it.
    where: NotRequired[JSON]


class ReplyValue(TypedDict):
    """A trial's reply or failure: what the generate stage caches (by model, prompts and options)."""

    reply: str | None
    error: str | None
    tokens: NotRequired[int | None]
    calls: NotRequired[int]
    usage: NotRequired[TrialUsage]
    exchanges: NotRequired[Exchanges]
    submission: NotRequired[SubmissionEvidence]
    #: A rejected reply: a bounded, escaped preview and the digest of the whole text.
    reply_preview: NotRequired[str]
    reply_digest: NotRequired[str | None]


class GeneratedReply(ReplyValue):
    """One item's generate stage: the reply value plus what identifies its input."""

    prompt_digests: list[str]
    #: Digest of the model identity, prompts and options (``None``: generation was stopped).
    generate_input: str | None
    #: The run's token limit stopped generation at or before this trial: it is not recorded.
    stopped: NotRequired[bool]


class StageEntry(TypedDict):
    """One stage of a record: the digest of its output, its code version and its input digest."""

    digest: str
    version: str
    input_digest: str | None
    #: ``generate``: the model that answered (its digest, else the digest of its identity).
    model_digest: NotRequired[JSON]
    #: ``classify``: the classifier's weights (their digest, else the digest of its identity).
    weights_digest: NotRequired[JSON]


class Extraction(TypedDict):
    """What the extract stage found in a reply (the program itself is kept beside it)."""

    error: str | None
    calls: int
    dropped: list[DroppedCallFields]
    dropped_count: int
    notes: list[str]


class ExtractValue(Extraction):
    """The extract stage's cached value: the extraction with the program it produced."""

    program: str | None


class ConvertValue(TypedDict):
    """The convert stage's cached value: the level XML or the official converter's error."""

    xml: str | None
    error: str | None


class Stability(TypedDict):
    """The simulate stage's figures for one level, as recorded."""

    total_blocks: int
    moving_blocks: int
    destroyed_blocks: int
    stability: float


class SimulateValue(Stability):
    """The simulate stage's cached value: the figures, or why the level could not be simulated."""

    error: str | None


class LevelStageOutcome(TypedDict):
    """What the level stages (extract → convert → simulate → render) hand back for one reply."""

    item_id: str
    stages: dict[str, StageEntry]
    extraction: NotRequired[Extraction]
    program: NotRequired[str | None]
    xml: NotRequired[str]
    stability: NotRequired[Stability]
    failed_stage: NotRequired[str]
    error: NotRequired[str | None]
    #: The render, base64 (picklable and JSON-safe on its way back from a worker).
    png_b64: NotRequired[str]
    thumbnail: NotRequired[str]
    #: The classifier input a worker prepared from the in-memory render (never recorded).
    prepared: NotRequired[NDArray[np.float32]]


class ImageRef(TypedDict):
    """Where a level's render is kept in the run and the digest of its bytes."""

    path: str
    digest: str


class ItemRecord(ItemKeyFields):
    """``items/<item>.json``'s record: one (model, program, letter, trial) with every stage's
    evidence. ``sta``/``sim`` are 0 unless ``status`` is ``"ok"``."""

    item_id: str
    input_digest: str
    trial_seed: int
    prompt_digests: list[str]
    tokens: int | None
    usage: NotRequired[TrialUsage]
    exchanges: NotRequired[Exchanges]
    submission: NotRequired[SubmissionEvidence]
    reply: str | None
    status: str
    failed_stage: str | None
    error: str | None
    stages: dict[str, StageEntry]
    cohort_digest: str
    sta: float
    sim: float
    reply_preview: NotRequired[str]
    reply_digest: NotRequired[str | None]
    program_text: NotRequired[str | None]
    extraction: NotRequired[Extraction]
    xml: NotRequired[str]
    stability: NotRequired[Stability]
    image: NotRequired[ImageRef]
    thumbnail: NotRequired[str]
    softmax: NotRequired[list[float]]
    margin: NotRequired[float]
    embedding: NotRequired[list[float]]


class ClassifyValue(TypedDict):
    """The classify stage's cached value for one image: softmax over A–Z and the embedding."""

    softmax: list[float]
    embedding: list[float]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text_or_none(value: Mapping[str, object], key: str) -> bool:
    """``key`` is present and holds text or ``None``."""
    return key in value and (value[key] is None or isinstance(value[key], str))


#: The fields :mod:`.run` writes in every record (``ItemRecord``'s required keys; listed here
#: because ``__required_keys__`` cannot see ``NotRequired`` under postponed annotations).
RECORD_FIELDS = frozenset(
    {
        "model",
        "program",
        "letter",
        "trial",
        "item_id",
        "input_digest",
        "trial_seed",
        "prompt_digests",
        "tokens",
        "reply",
        "status",
        "failed_stage",
        "error",
        "stages",
        "cohort_digest",
        "sta",
        "sim",
    }
)


def is_item_record(value: object) -> TypeGuard[ItemRecord]:
    """A record as :mod:`.run` writes it: every field it always writes is present, and the fields
    readers index (identity, trial, status, scores, stages, digests) have their types."""
    if not isinstance(value, dict) or not RECORD_FIELDS <= value.keys():
        return False
    return (
        all(
            isinstance(value[k], str)
            for k in ("item_id", "input_digest", "model", "program", "letter", "status")
        )
        and _is_int(value["trial"])
        and _is_number(value["sta"])
        and _is_number(value["sim"])
        and isinstance(value["stages"], dict)
        and isinstance(value["prompt_digests"], list)
    )


def is_reply_value(value: Mapping[str, object]) -> TypeGuard[ReplyValue]:
    """A cached generate value: a reply (text or ``None``) and its error."""
    return _text_or_none(value, "reply") and _text_or_none(value, "error")


def is_extract_value(value: Mapping[str, object]) -> TypeGuard[ExtractValue]:
    """A cached extract value (program, error, call count and the lists beside them)."""
    return (
        _text_or_none(value, "program")
        and _text_or_none(value, "error")
        and _is_int(value.get("calls"))
        and _is_int(value.get("dropped_count"))
        and isinstance(value.get("dropped"), list)
        and isinstance(value.get("notes"), list)
    )


def is_convert_value(value: Mapping[str, object]) -> TypeGuard[ConvertValue]:
    """A cached convert value: the XML or the converter's error."""
    return _text_or_none(value, "xml") and _text_or_none(value, "error")


def is_simulate_value(value: Mapping[str, object]) -> TypeGuard[SimulateValue]:
    """A cached simulate value: the block counts, the stability and the error (if any)."""
    return (
        all(_is_int(value.get(k)) for k in ("total_blocks", "moving_blocks", "destroyed_blocks"))
        and _is_number(value.get("stability"))
        and _text_or_none(value, "error")
    )


def is_classify_value(value: Mapping[str, object]) -> TypeGuard[ClassifyValue]:
    """A cached classify value: both vectors as lists (the embedding empty when not asked for)."""
    return isinstance(value.get("softmax"), list) and isinstance(value.get("embedding"), list)


__all__ = [
    "RECORD_FIELDS",
    "ClassifyValue",
    "ConvertValue",
    "Exchanges",
    "ExtractValue",
    "Extraction",
    "GeneratedReply",
    "ImageRef",
    "ItemKeyFields",
    "ItemRecord",
    "LevelStageOutcome",
    "ReplyValue",
    "SimulateValue",
    "Stability",
    "StageEntry",
    "SubmissionEvidence",
    "TrialUsage",
    "is_classify_value",
    "is_convert_value",
    "is_extract_value",
    "is_item_record",
    "is_reply_value",
    "is_simulate_value",
]
