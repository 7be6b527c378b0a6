"""Built-in suites ``physics`` and ``planning``: deterministic adapter contract checks.

``physics`` exercises ``predict`` (determinism, no-op stability, action response); ``planning``
solves four objectives with :class:`~worldforge.planning.mpc.LatentMPCController` over the
provider's ``score`` cost oracle and executes the plans with ``predict``. With the ``mock``
provider every scenario passes with exact, reproducible numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worldforge.core.entities import Action, Position
from worldforge.core.errors import WorldForgeError
from worldforge.core.world import World
from worldforge.evaluation.suite import EvaluationSuite
from worldforge.evaluation.types import EvaluationContext, EvaluationScenario
from worldforge.forge import WorldForge
from worldforge.planning.goals import Goal

BUILTIN_CLAIM_BOUNDARY = (
    "Built-in suites are deterministic adapter contract checks: their scores are synthetic workflow "
    "signals, not physical-fidelity, media-quality, model-quality, safety, leaderboard or real-robot "
    "performance claims."
)
BUILTIN_METRIC_SEMANTICS = (
    "Scores in [0, 1] and pass rates only measure whether a provider met the suite's typed contract "
    "under the preserved inputs (fixed seeds, fixed worlds)."
)
ERROR_SCALE = 0.25


def _clamp(value: float) -> float:
    return round(max(0.0, min(1.0, value)), 9)


def _reject_options(suite: str, options: Mapping[str, Any] | None) -> None:
    if options:
        name = sorted(options)[0]
        raise WorldForgeError(f"suite '{suite}' takes no options; got option '{name}'.")


# -- physics ---------------------------------------------------------------------------------------
def _physics_world(forge: WorldForge, provider: str) -> World:
    world = forge.create_world("physics-evaluation-world", provider)
    world.add_object("cube", Position(0.0, 0.5, 0.0))
    return world


def _prediction_determinism(context: EvaluationContext) -> Any:
    world = context.world
    cube = world.find_object("cube")
    action = Action.move_to(cube.position.x + 0.1, cube.position.y, cube.position.z, object_id=cube.id)
    first, second = world.copy(), world.copy()
    p1 = first.predict(action, 1, context.provider)
    second.predict(action, 1, context.provider)
    identical = first.state_digest() == second.state_digest()
    still = world.copy()
    still.predict(Action.noop(), 1, context.provider)
    drift = still.get_object(cube.id).position.distance_to(cube.position)
    kept = drift <= 1e-9
    signal = (p1.physics_score + p1.confidence) / 2
    return context.outcome(
        score=_clamp((float(identical) + float(kept) + signal) / 3),
        passed=identical and kept,
        metrics={
            "state_digest_match": identical,
            "noop_displacement": round(drift, 12),
            "physics_score": p1.physics_score,
            "confidence": p1.confidence,
            "step": first.step,
        },
    )


def _action_response(context: EvaluationContext) -> Any:
    world = context.world
    cube = world.find_object("cube")
    start = cube.position
    target = start.offset(0.35, 0.0, 0.0)
    prediction = world.predict(
        Action.move_to(target.x, target.y, target.z, object_id=cube.id), 2, context.provider
    )
    end = world.get_object(cube.id).position
    moved = end.distance_to(start)
    error = end.distance_to(target)
    signal = (prediction.physics_score + prediction.confidence) / 2
    return context.outcome(
        score=_clamp(signal + min(0.2, moved / 2) - min(0.3, error)),
        passed=error <= 0.05 and moved >= 0.3,
        metrics={
            "physics_score": prediction.physics_score,
            "confidence": prediction.confidence,
            "moved_distance": round(moved, 9),
            "target_error": round(error, 9),
            "step": world.step,
        },
    )


def build_physics_suite(options: Mapping[str, Any] | None = None) -> EvaluationSuite:
    _reject_options("physics", options)
    return EvaluationSuite(
        "Physics Evaluation Suite",
        [
            EvaluationScenario(
                "prediction-determinism",
                "Same state + action twice gives an identical state digest; a no-op keeps the pose.",
                ("predict",),
                _prediction_determinism,
            ),
            EvaluationScenario(
                "action-response",
                "move_to 0.35 m along x over two steps reaches the target within 0.05 m.",
                ("predict",),
                _action_response,
            ),
        ],
        suite_id="physics",
        claim_boundary=BUILTIN_CLAIM_BOUNDARY,
        metric_semantics=BUILTIN_METRIC_SEMANTICS,
        world_factory=_physics_world,
        expected_notes={
            "prediction-determinism": "Predicting the same action from the same state twice yields identical "
            "state digests, and a no-op leaves every pose unchanged.",
            "action-response": "move_to moves the object to within 0.05 of a target 0.35 away in two steps.",
        },
    )


# -- planning --------------------------------------------------------------------------------------
PLANNING_SEED = 0


def _planning_world(forge: WorldForge, provider: str) -> World:
    world = forge.create_world("planning-evaluation-world", provider)
    world.add_object("cube", Position(0.0, 0.5, 0.0))
    world.add_object("mug", Position(0.3, 0.8, 0.0))
    return world


def _solve(context: EvaluationContext, goal: Any) -> tuple[Any, Any, Any]:
    world = context.world
    plan = world.plan(goal, provider=context.provider, seed=PLANNING_SEED)
    final = world.execute_plan(plan, context.provider).final_world()
    return plan, final, goal.resolve(world)


def _plan_metrics(plan: Any, final: Any) -> dict[str, Any]:
    return {
        "action_count": plan.action_count,
        "success_probability": plan.success_probability,
        "converged": plan.converged,
        "final_step": final.step,
        "planner": plan.cost_summary(),
    }


def _accuracy(error: float) -> float:
    return max(0.0, 1.0 - min(1.0, error / ERROR_SCALE))


def _relocation(context: EvaluationContext) -> Any:

    cube = context.world.find_object("cube")
    goal = Goal.object_at(cube.id, cube.position.offset(0.35, 0.0, 0.0))
    plan, final, resolved = _solve(context, goal)
    error = resolved.target_errors(final)[cube.id]
    moved = final.get_object(cube.id).position.x - cube.position.x
    return context.outcome(
        score=_clamp((plan.success_probability + _accuracy(error)) / 2),
        passed=plan.action_count >= 1 and error <= goal.tolerance,
        metrics={
            **_plan_metrics(plan, final),
            "target_error": round(error, 9),
            "moved_distance": round(moved, 9),
        },
    )


def _neighbor(context: EvaluationContext) -> Any:

    cube, mug = context.world.find_object("cube"), context.world.find_object("mug")
    goal = Goal.object_near(cube.id, mug.id, Position(0.15, 0.0, 0.0))
    plan, final, resolved = _solve(context, goal)
    error = resolved.target_errors(final)[cube.id]
    drift = final.get_object(mug.id).position.distance_to(mug.position)
    return context.outcome(
        score=_clamp((plan.success_probability + _accuracy(error) + _accuracy(drift)) / 3),
        passed=plan.action_count >= 1 and error <= goal.tolerance and drift <= 0.01,
        metrics={
            **_plan_metrics(plan, final),
            "target_error": round(error, 9),
            "reference_drift": round(drift, 9),
        },
    )


def _swap(context: EvaluationContext) -> Any:

    cube, mug = context.world.find_object("cube"), context.world.find_object("mug")
    goal = Goal.swap_objects(cube.id, mug.id)
    plan, final, resolved = _solve(context, goal)
    errors = resolved.target_errors(final)
    return context.outcome(
        score=_clamp((plan.success_probability + _accuracy(errors[cube.id]) + _accuracy(errors[mug.id])) / 3),
        passed=plan.action_count >= 2 and all(e <= goal.tolerance for e in errors.values()),
        metrics={
            **_plan_metrics(plan, final),
            "primary_target_error": round(errors[cube.id], 9),
            "reference_target_error": round(errors[mug.id], 9),
        },
    )


def _spawn(context: EvaluationContext) -> Any:

    initial = context.world.object_count
    plan, final, _ = _solve(context, Goal.spawn_object("cube"))
    spawned = final.object_count > initial
    return context.outcome(
        score=_clamp((plan.success_probability + float(spawned)) / 2),
        passed=spawned,
        metrics={
            **_plan_metrics(plan, final),
            "initial_object_count": initial,
            "final_object_count": final.object_count,
        },
    )


def build_planning_suite(options: Mapping[str, Any] | None = None) -> EvaluationSuite:
    _reject_options("planning", options)
    caps = ("score", "predict")
    return EvaluationSuite(
        "Planning Evaluation Suite",
        [
            EvaluationScenario(
                "object-relocation", "Move the cube 0.35 m along x (object_at).", caps, _relocation
            ),
            EvaluationScenario(
                "object-neighbor-placement",
                "Place the cube 0.15 m beside the mug (object_near).",
                caps,
                _neighbor,
            ),
            EvaluationScenario("object-swap", "Swap the cube and the mug (swap_objects).", caps, _swap),
            EvaluationScenario("object-spawn", "Spawn one more cube (spawn_object).", caps, _spawn),
        ],
        suite_id="planning",
        claim_boundary=BUILTIN_CLAIM_BOUNDARY,
        metric_semantics=BUILTIN_METRIC_SEMANTICS,
        world_factory=_planning_world,
        expected_notes={
            "object-relocation": "LatentMPCController executes at least one action and brings the cube "
            "within tolerance (0.05) of a target 0.35 away.",
            "object-neighbor-placement": "The cube ends within tolerance of mug + (0.15, 0, 0) while the mug "
            "drifts at most 0.01.",
            "object-swap": "At least two executed actions leave each object within tolerance of the other's "
            "initial position.",
            "object-spawn": "The executed plan increases the number of objects called 'cube'.",
        },
    )


__all__ = [
    "BUILTIN_CLAIM_BOUNDARY",
    "BUILTIN_METRIC_SEMANTICS",
    "build_physics_suite",
    "build_planning_suite",
]
