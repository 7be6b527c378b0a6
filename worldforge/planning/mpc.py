"""``LatentMPCController``: receding-horizon model-predictive control with the cross-entropy method.

At every control step the controller samples a population of action sequences (length
``horizon``) from a per-step sampling distribution — a categorical choice of *what* to act on
(``noop``, one of the goal's controllable objects, or a spawn) and a Gaussian over the displacement
of the chosen object — asks the provider's ``score`` capability (the cost oracle, the provider's
learned or analytic model) for the cost of every sequence, refits the distribution to the elite
fraction, and repeats for ``iterations``. The first action of the best sequence found is executed
through ``predict``; the distribution is shifted one step (warm start) and the loop repeats until the
goal is within tolerance or ``max_steps`` actions were executed.

Everything random comes from one ``numpy`` generator seeded with ``seed``; candidate coordinates
are rounded to 6 decimals, so a plan (and every digest over it) is identical for identical inputs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypedDict

import numpy as np
from numpy.typing import NDArray

from worldforge.core.entities import Action, ActionDict, Position
from worldforge.core.errors import WorldForgeError
from worldforge.core.world import World, WorldState
from worldforge.planning.goals import Goal, GoalDict, ResolvedGoal
from worldforge.providers.base import ScoreResult, provider_capabilities


class ScoringRuntime(Protocol):
    """What the planner needs of the facade above it: provider instances and the score oracle.

    :class:`worldforge.forge.WorldForge` is one; planning sits below the facade, so it names
    the two methods it calls instead of importing it.
    """

    def provider(self, name: str) -> object:
        """The provider instance registered as ``name``."""

    def score_actions(
        self,
        provider: str,
        *,
        world_state: WorldState,
        goal: Mapping[str, object],
        candidates: list[list[ActionDict]],
    ) -> ScoreResult:
        """Costs of ``candidates`` (action sequences) from ``world_state`` towards ``goal``."""


NOOP = "__noop__"
SPAWN = "__spawn__"
MAX_DELTA = 0.5
_PROB_SMOOTHING = 0.2
REFINE_ATTEMPTS = 3
REFINE_SHRINK = 0.25


class MPCConfigDict(TypedDict):
    """:meth:`MPCConfig.to_dict`: the hyper-parameters a plan records."""

    horizon: int
    population: int
    elite_fraction: float
    iterations: int
    max_steps: int
    seed: int
    init_std: float
    min_std: float


@dataclass(frozen=True, slots=True)
class MPCConfig:
    """CEM/MPC hyper-parameters (validated)."""

    horizon: int = 3
    population: int = 48
    elite_fraction: float = 0.2
    iterations: int = 5
    max_steps: int = 6
    seed: int = 0
    init_std: float = 0.2
    min_std: float = 0.01

    def __post_init__(self) -> None:
        for name in ("horizon", "population", "iterations", "max_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise WorldForgeError(f"mpc.{name}: must be an integer >= 1.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise WorldForgeError("mpc.seed: must be an integer.")
        if not 0.0 < float(self.elite_fraction) <= 1.0:
            raise WorldForgeError("mpc.elite_fraction: must be in (0, 1].")
        if not (math.isfinite(self.init_std) and self.init_std > 0 and 0 < self.min_std <= self.init_std):
            raise WorldForgeError("mpc.init_std/min_std: must satisfy 0 < min_std <= init_std.")

    @property
    def elite_count(self) -> int:
        return max(1, int(round(self.population * self.elite_fraction)))

    def to_dict(self) -> MPCConfigDict:
        return {
            "horizon": self.horizon,
            "population": self.population,
            "elite_fraction": float(self.elite_fraction),
            "iterations": self.iterations,
            "max_steps": self.max_steps,
            "seed": self.seed,
            "init_std": float(self.init_std),
            "min_std": float(self.min_std),
        }


class IterationCost(TypedDict):
    """One CEM iteration of a control step: the best and mean cost of its population (rounded)."""

    attempt: int
    iteration: int
    best_cost: float
    mean_cost: float


class IterationCostRow(IterationCost):
    """:meth:`Plan.iteration_costs`: an :class:`IterationCost` with the control step it belongs to."""

    step: int


class ControlStep(TypedDict):
    """One executed control step: its iterations, the best sequence's cost and the action taken
    (``None`` when doing nothing won, which ends the plan)."""

    step: int
    iterations: list[IterationCost]
    best_sequence_cost: float
    executed_action: ActionDict | None


class CostSummary(TypedDict):
    """:meth:`Plan.cost_summary`: the trace in a few numbers (first-step costs ``None`` without steps)."""

    planner: str
    control_steps: int
    oracle_calls: int
    candidate_evaluations: int
    first_step_initial_best_cost: float | None
    first_step_final_best_cost: float | None
    first_step_initial_mean_cost: float | None
    first_step_final_mean_cost: float | None
    final_cost: float


class PlanDict(TypedDict):
    """:meth:`Plan.to_dict`: the plan, its goal and configuration, and the optimisation trace."""

    planner: str
    goal: GoalDict
    provider: str
    actions: list[ActionDict]
    action_count: int
    success_probability: float
    final_cost: float
    converged: bool
    oracle_calls: int
    candidate_evaluations: int
    config: MPCConfigDict
    steps: list[ControlStep]


@dataclass(slots=True)
class Plan:
    """The executed action sequence plus the optimisation trace that produced it."""

    goal: GoalDict
    provider: str
    actions: list[Action]
    success_probability: float
    final_cost: float
    converged: bool
    steps: list[ControlStep] = field(default_factory=list)
    oracle_calls: int = 0
    candidate_evaluations: int = 0
    #: The controller's hyper-parameters (a plan built without them was planned with the defaults).
    config: MPCConfigDict = field(default_factory=lambda: MPCConfig().to_dict())
    planner: str = "latent-mpc-cem"

    @property
    def action_count(self) -> int:
        return len(self.actions)

    def iteration_costs(self) -> list[IterationCostRow]:
        """Flat per-iteration ``{step, iteration, best_cost, mean_cost}`` rows."""
        return [IterationCostRow(step=s["step"], **it) for s in self.steps for it in s["iterations"]]

    def cost_summary(self) -> CostSummary:
        """Compact, JSON-native trace summary (suites put it in scenario metrics)."""
        first = self.steps[0]["iterations"] if self.steps else []
        return {
            "planner": self.planner,
            "control_steps": len(self.steps),
            "oracle_calls": self.oracle_calls,
            "candidate_evaluations": self.candidate_evaluations,
            "first_step_initial_best_cost": first[0]["best_cost"] if first else None,
            "first_step_final_best_cost": first[-1]["best_cost"] if first else None,
            "first_step_initial_mean_cost": first[0]["mean_cost"] if first else None,
            "first_step_final_mean_cost": first[-1]["mean_cost"] if first else None,
            "final_cost": self.final_cost,
        }

    def to_dict(self) -> PlanDict:
        return {
            "planner": self.planner,
            "goal": self.goal,
            "provider": self.provider,
            "actions": [a.to_dict() for a in self.actions],
            "action_count": self.action_count,
            "success_probability": self.success_probability,
            "final_cost": self.final_cost,
            "converged": self.converged,
            "oracle_calls": self.oracle_calls,
            "candidate_evaluations": self.candidate_evaluations,
            "config": self.config.copy(),
            "steps": [s.copy() for s in self.steps],
        }


def success_probability_from_cost(cost: float, tolerance: float) -> float:
    """``exp(-cost / (2 tol^2))``: 1 at zero cost, ~0.61 when the squared error equals tol^2."""
    return round(max(0.0, min(1.0, math.exp(-max(0.0, cost) / (2.0 * tolerance * tolerance)))), 9)


class LatentMPCController:
    """Receding-horizon CEM planner over a provider's ``score`` cost oracle.

    ``provider`` must have ``score``; actions are executed with ``execution_provider`` (default: the
    same provider), which must have ``predict``.
    """

    def __init__(
        self,
        forge: ScoringRuntime,
        provider: str,
        *,
        execution_provider: str | None = None,
        config: MPCConfig | None = None,
        **overrides: Any,
    ) -> None:
        self.forge = forge
        self.provider = provider
        self.execution_provider = execution_provider or provider
        base = config or MPCConfig()
        if overrides:
            values = base.to_dict()
            unknown = sorted(set(overrides) - set(values))
            if unknown:
                raise WorldForgeError(f"LatentMPCController: unknown option {unknown[0]!r}.")
            base = replace(MPCConfig(**values), **overrides)
        self.config = base
        self._check_capabilities()

    def _check_capabilities(self) -> None:
        scorer = provider_capabilities(self.forge.provider(self.provider))
        if "score" not in scorer:
            raise WorldForgeError(
                f"LatentMPCController needs the 'score' capability (cost oracle); provider "
                f"'{self.provider}' is missing: score."
            )
        executor = provider_capabilities(self.forge.provider(self.execution_provider))
        if "predict" not in executor:
            raise WorldForgeError(
                f"LatentMPCController executes actions with 'predict'; provider "
                f"'{self.execution_provider}' is missing: predict."
            )

    # -- public ----------------------------------------------------------------------------------
    def plan(self, world: World, goal: Goal | Mapping[str, object]) -> Plan:
        """Run MPC on a copy of ``world`` (the caller's world is untouched) and return the plan."""

        goal_obj = goal if isinstance(goal, Goal) else Goal.from_dict(goal)
        sandbox = world.copy()
        resolved = goal_obj.resolve(sandbox)
        oracle_goal = resolved.to_oracle_dict()
        cfg = self.config
        options = [NOOP, *resolved.controllable] + ([SPAWN] if resolved.spawn is not None else [])
        k = len(options)
        rng = np.random.default_rng(cfg.seed)
        probs = np.full((cfg.horizon, k), 1.0 / k)
        mean = np.zeros((cfg.horizon, k, 3))
        std = np.full((cfg.horizon, k, 3), cfg.init_std)

        actions: list[Action] = []
        steps: list[ControlStep] = []
        oracle_calls = 0
        evaluations = 0
        converged = resolved.satisfied(sandbox)
        while not converged and len(actions) < cfg.max_steps:
            state = sandbox.to_state()
            origins = {obj.id: obj.position for obj in sandbox.objects()}
            best_seq: list[ActionDict] | None = None
            best_choice: NDArray[np.int64] | None = None
            best_delta: NDArray[np.float64] | None = None
            best_cost = math.inf
            iterations: list[IterationCost] = []
            for attempt in range(REFINE_ATTEMPTS):
                for iteration in range(cfg.iterations):
                    choices = np.stack(
                        [rng.choice(k, size=cfg.population, p=probs[h]) for h in range(cfg.horizon)], 1
                    )
                    noise = rng.standard_normal((cfg.population, cfg.horizon, 3))
                    deltas: NDArray[np.float64] = np.empty((cfg.population, cfg.horizon, 3))
                    for h in range(cfg.horizon):
                        deltas[:, h, :] = mean[h, choices[:, h]] + std[h, choices[:, h]] * noise[:, h, :]
                    deltas = np.clip(deltas, -MAX_DELTA, MAX_DELTA).round(6)
                    if best_choice is not None and best_delta is not None:  # elitism: keep the incumbent
                        choices[0], deltas[0] = best_choice, best_delta
                    candidates = [
                        self._sequence(choices[i], deltas[i], options, origins, resolved)
                        for i in range(cfg.population)
                    ]
                    result = self.forge.score_actions(
                        self.provider, world_state=state, goal=oracle_goal, candidates=candidates
                    )
                    oracle_calls += 1
                    evaluations += len(candidates)
                    costs = np.array(result.costs(), dtype=float)
                    order = np.argsort(costs, kind="stable")
                    if costs[order[0]] < best_cost:
                        best_cost = float(costs[order[0]])
                        best_seq = candidates[int(order[0])]
                        best_choice = choices[int(order[0])].copy()
                        best_delta = deltas[int(order[0])].copy()
                    iterations.append(
                        {
                            "attempt": attempt,
                            "iteration": iteration,
                            "best_cost": round(float(costs[order[0]]), 9),
                            "mean_cost": round(float(costs.mean()), 9),
                        }
                    )
                    elites = order[: cfg.elite_count]
                    self._refit(probs, mean, std, choices[elites], deltas[elites], k)
                if best_seq is not None and any(a["type"] != "noop" for a in best_seq):
                    break
                # Only "do nothing" beat the samples: the spread is too coarse for the remaining
                # correction, so narrow it and search again before giving up.
                std *= REFINE_SHRINK
                np.maximum(std, cfg.min_std, out=std)
                probs[:] = 1.0 / k
                mean[:] = 0.0
            assert best_seq is not None
            first = next((a for a in best_seq if a["type"] != "noop"), None)
            steps.append(
                {
                    "step": len(steps),
                    "iterations": iterations,
                    "best_sequence_cost": round(best_cost, 9),
                    "executed_action": first,
                }
            )
            if first is None:  # the optimiser prefers doing nothing: further steps cannot help
                break
            action = Action.from_dict(first)
            sandbox.predict(action, 1, self.execution_provider)
            actions.append(action)
            converged = resolved.satisfied(sandbox)
            self._shift(probs, mean, std, k)

        final = self.forge.score_actions(
            self.provider, world_state=sandbox.to_state(), goal=oracle_goal, candidates=[[]]
        )
        oracle_calls += 1
        evaluations += 1
        final_cost = round(float(final.costs()[0]), 9)
        return Plan(
            goal=goal_obj.to_dict(),
            provider=self.provider,
            actions=actions,
            success_probability=success_probability_from_cost(final_cost, resolved.tolerance),
            final_cost=final_cost,
            converged=converged,
            steps=steps,
            oracle_calls=oracle_calls,
            candidate_evaluations=evaluations,
            config=self.config.to_dict(),
        )

    # -- internals -------------------------------------------------------------------------------
    @staticmethod
    def _sequence(
        choice: NDArray[np.int64],
        delta: NDArray[np.float64],
        options: list[str],
        origins: dict[str, Position],
        resolved: ResolvedGoal,
    ) -> list[ActionDict]:
        """Decode one sampled (choice, displacement) row into JSON action dicts."""
        planned = dict(origins)
        sequence: list[ActionDict] = []
        for h in range(len(choice)):
            option = options[int(choice[h])]
            if option == NOOP:
                sequence.append(Action.noop().to_dict())
            elif option == SPAWN:
                assert resolved.spawn is not None
                sequence.append(Action.spawn_object(resolved.spawn.name, resolved.spawn.position).to_dict())
            else:
                p = planned[option]
                target = Position(
                    round(p.x + float(delta[h][0]), 6),
                    round(p.y + float(delta[h][1]), 6),
                    round(p.z + float(delta[h][2]), 6),
                )
                planned[option] = target
                sequence.append(Action.move_to(target.x, target.y, target.z, object_id=option).to_dict())
        return sequence

    def _refit(
        self,
        probs: NDArray[np.float64],
        mean: NDArray[np.float64],
        std: NDArray[np.float64],
        choices: NDArray[np.int64],
        deltas: NDArray[np.float64],
        k: int,
    ) -> None:

        n = len(choices)
        for h in range(probs.shape[0]):
            counts = np.bincount(choices[:, h], minlength=k) / n
            probs[h] = (1.0 - _PROB_SMOOTHING) * counts + _PROB_SMOOTHING * probs[h]
            probs[h] /= probs[h].sum()
            for option in range(k):
                picked = deltas[choices[:, h] == option, h, :]
                if len(picked) >= 2:
                    mean[h, option] = picked.mean(axis=0)
                    std[h, option] = np.maximum(picked.std(axis=0), self.config.min_std)
                elif len(picked) == 1:
                    mean[h, option] = picked[0]

    def _shift(
        self, probs: NDArray[np.float64], mean: NDArray[np.float64], std: NDArray[np.float64], k: int
    ) -> None:
        """Warm start for the next control step: drop the executed step, append a fresh one."""

        probs[:-1], mean[:-1] = probs[1:].copy(), mean[1:].copy()
        # Re-widen the refitted spread (the world moved, the fit may be stale) but keep it below the
        # initial spread so late, small corrections stay reachable.
        std[:-1] = np.clip(std[1:] * 2.0, self.config.min_std, self.config.init_std)
        probs[-1], mean[-1], std[-1] = 1.0 / k, 0.0, self.config.init_std


__all__ = [
    "ControlStep",
    "CostSummary",
    "IterationCost",
    "IterationCostRow",
    "LatentMPCController",
    "MPCConfig",
    "MPCConfigDict",
    "Plan",
    "PlanDict",
    "ScoringRuntime",
    "success_probability_from_cost",
]
