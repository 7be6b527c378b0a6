"""Scoring: the competition's weighted, normalized scores and ranking (``scores``), diversity
(``diversity``) and the official result files and report payloads (``report``).

The score model is re-exported here, so ``from worldforge.pcg.scoring import score_competition`` keeps
working for code written before the package existed.
"""

from worldforge.pcg.scoring.scores import (
    DECIMAL_PLACES,
    Arithmetic,
    CharacterRow,
    CharacterWeight,
    CompetitionScores,
    ExactArithmetic,
    MultiModelScores,
    ProgramData,
    ProgramScore,
    RankEntry,
    Ranking,
    TrialRow,
    arithmetic,
    combine_models,
    is_baseline_name,
    is_zero_shot_name,
    rank_programs,
    ranking_for,
    score_competition,
    to_fixed,
    trial_index,
)

__all__ = [
    "DECIMAL_PLACES",
    "Arithmetic",
    "CharacterRow",
    "CharacterWeight",
    "CompetitionScores",
    "ExactArithmetic",
    "MultiModelScores",
    "ProgramData",
    "ProgramScore",
    "RankEntry",
    "Ranking",
    "TrialRow",
    "arithmetic",
    "combine_models",
    "is_baseline_name",
    "is_zero_shot_name",
    "rank_programs",
    "ranking_for",
    "score_competition",
    "to_fixed",
    "trial_index",
]
