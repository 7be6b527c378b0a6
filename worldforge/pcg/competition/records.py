"""The JSON shapes the competition folder stages report and write.

What ``pcg stage`` prints and a run records (one :class:`StageRecord` per stage; the score stage's
carries our report and the intervals' summary), and the entries of ``<team>/similarity/<C>.json``
(the official v0.2.0 layout, plus the classifier's embedding). The stages themselves live in
:mod:`worldforge.pcg.competition.stages` and :mod:`worldforge.pcg.competition.scoring`.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from worldforge.pcg.scoring.report import ScoreReport


class StageFailure(TypedDict):
    """A file a stage could not process, and why."""

    file: str
    message: str


class StageRecord(TypedDict):
    """:meth:`StageReport.to_dict`: one stage's counts, failures and log, as ``pcg stage`` prints
    them and a run records them (the digested form leaves ``log`` out: its name holds a time)."""

    stage: str
    succeeded: int
    failed: int
    failures: list[StageFailure]
    log: NotRequired[str | None]


class UncertaintySummary(TypedDict):
    """What the score stage's report says of ``result/ranking_uncertainty.json``."""

    #: Relative to the source folder.
    file: str
    digest: str
    resamples: int
    seed: int
    #: The winner sentence, or why there are no intervals.
    sentence: str | None


class ScoreStageRecord(StageRecord):
    """:meth:`ScoreStageReport.to_dict`: the stage's counters, our report and the intervals' summary."""

    report: ScoreReport | None
    ranking_uncertainty: NotRequired[UncertaintySummary]


class SimilarityTrial(TypedDict):
    id: str
    label: str
    similarity: float


class SoftmaxEntry(TypedDict):
    id: str
    label: str
    softmax_prob: float


class SimilarityEntry(TypedDict):
    """One image of ``<team>/similarity/<C>.json``: its softmax per letter and its embedding."""

    id: str
    raws: list[SoftmaxEntry]
    cls_embedding: list[float] | None


__all__ = [
    "ScoreStageRecord",
    "SimilarityEntry",
    "SimilarityTrial",
    "SoftmaxEntry",
    "StageFailure",
    "StageRecord",
    "UncertaintySummary",
]
