"""Scoring: the competition's weighted, normalized scores and ranking (``scores``), diversity
(``diversity``) and the official result files and report payloads (``report``).

The score model is re-exported here, so ``from worldforge.pcg.scoring import score_competition`` keeps
working for code written before the package existed.
"""

from worldforge.pcg.scoring import scores
from worldforge.pcg.scoring.scores import *  # noqa: F403 - the face is the module's public API

__all__ = list(scores.__all__)
