"""Planning: structured goals and the receding-horizon CEM controller (``LatentMPCController``)."""

from worldforge.planning.goals import GOAL_KINDS, Goal, ResolvedGoal
from worldforge.planning.mpc import LatentMPCController, MPCConfig, Plan, success_probability_from_cost

__all__ = [
    "GOAL_KINDS",
    "Goal",
    "LatentMPCController",
    "MPCConfig",
    "Plan",
    "ResolvedGoal",
    "success_probability_from_cost",
]
