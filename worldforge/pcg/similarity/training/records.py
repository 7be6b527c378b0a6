"""The shapes of what a training run records (``training.json``, the results file, the card).

Typed so the recipe that writes them and the card that reads them agree on every key; they are
plain dicts at run time, written with :func:`worldforge.core.canonical.pretty_json` (sorted keys),
so the files are what they were before the types existed.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from worldforge.pcg.similarity.measures import LetterMetrics


class PngMetrics(LetterMetrics, total=False):
    """:class:`LetterMetrics` of full-size PNGs through the shipped classifier, with the digest of
    the level programs they were rendered from."""

    programs_digest: str


class HeapStats(TypedDict):
    """Levels of one split, the heaps among them, and the non-heap ones with ink beside the letter
    (``None`` when the family does not record it)."""

    levels: int
    heaps: int
    beside_ink: int | None


class FoldResult(TypedDict):
    """One leave-one-family-out fold: what it trained on and its metrics per test set."""

    trained_on: list[str]
    train_levels: int
    test: LetterMetrics
    test_beside_ink: LetterMetrics
    test_as_drawn: LetterMetrics
    hand: LetterMetrics
    #: The held-out family at the temperature fitted on the trained families' held-out seeds.
    test_calibrated: LetterMetrics
    #: The frozen evaluation-only family (:mod:`.unseen`), raw and at that temperature.
    unseen: LetterMetrics
    unseen_calibrated: LetterMetrics
    #: The held-out family and the frozen one at the temperature fitted on the other folds'
    #: held-out families (:mod:`.calibration`; absent when only one fold ran).
    test_crossfold: NotRequired[LetterMetrics]
    unseen_crossfold: NotRequired[LetterMetrics]


class CorpusSummary(TypedDict):
    """The generated corpus: families, level counts, heaps per split, and its digests."""

    families: list[str]
    eval_only_families: list[str]
    levels: int
    heaps: dict[str, HeapStats]
    programs_digest: str
    train_data_digest: str
    train_levels: int


class TrainingMeta(TypedDict):
    """``training.json``: the recipe's settings, the corpus and every measurement of the run."""

    seed: int
    epochs: int
    lofo_epochs: int
    lr: float
    parameters: int
    train_seeds: int
    heldout_seeds: int
    temperature: float
    corpus: CorpusSummary
    heldout: PngMetrics
    heldout_per_family: dict[str, PngMetrics]
    heldout_before_temperature: LetterMetrics
    hand: PngMetrics
    lofo: dict[str, FoldResult]
    lofo_min_accuracy: float | None
    #: The frozen evaluation-only family (:mod:`.unseen`) through the shipped model.
    unseen: dict[str, PngMetrics]
    weights_digest: str


__all__ = ["CorpusSummary", "FoldResult", "HeapStats", "PngMetrics", "TrainingMeta"]
