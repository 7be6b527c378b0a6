"""The ``mock`` provider: a deterministic reference implementation of every core capability.

It exists so suites, planners and the CLI can be exercised end to end on any machine with no model
and no network, and so tests can assert exact numbers. ``mock:<variant>`` selects a different but
equally deterministic letter generator (several mock "models" can stand in for real ones).

Dynamics (shared by ``predict`` and the ``score`` cost oracle, so the planner's model is exact):

* ``move_to`` moves the addressed object (``object_id``, else the first object) towards the target
  by at most ``REACH_PER_STEP * speed * steps``; the bbox moves with the pose.
* ``spawn_object`` adds an object whose id derives from its name and the world's object counter.
* ``noop`` changes nothing but the step counter.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping

from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_payload
from worldforge.core.entities import Action, ActionDict, BBox, Position, SceneObject, slugify
from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.core.seeds import deterministic_floats
from worldforge.core.world import WorldState
from worldforge.providers.base import (
    BaseProvider,
    Capability,
    EmbeddingResult,
    GenerationResult,
    PredictionResult,
    Prefetch,
    ProviderFamily,
    ScoreResult,
)
from worldforge.providers.mock_letters import cap_words, letter_program_lines, letter_reply, prime

MOCK_MODEL = "mock-deterministic-v1"
REACH_PER_STEP = 0.25
PATH_PENALTY = 0.01
ACTION_PENALTY = 0.001
MISSING_OBJECT_COST = 1.0
EMBED_DIM = 32


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def apply_action(state: WorldState, action: ActionDict, steps: int = 1) -> tuple[WorldState, float]:
    """Apply one action to a copy of ``state``; return ``(new_state, distance_moved)``.

    Raises :class:`ProviderError` for an unknown ``object_id`` (the caller asked for something the
    world does not contain).
    """
    new_state = copy.deepcopy(state)
    parsed = Action.from_dict(action)
    objects = new_state.setdefault("objects", [])
    moved = 0.0
    object_id = parsed.parameters.get("object_id") if parsed.kind == "move_to" else None
    if object_id is not None and not any(obj.get("id") == object_id for obj in objects):
        raise ProviderError(f"mock: move_to references unknown object_id {object_id!r}.")
    if parsed.kind == "move_to" and objects:
        index = 0 if object_id is None else next(i for i, o in enumerate(objects) if o.get("id") == object_id)
        obj = SceneObject.from_dict(objects[index], f"objects[{index}]")
        target = Position.from_dict(parsed.parameters["target"])
        distance = obj.position.distance_to(target)
        reach = REACH_PER_STEP * float(parsed.parameters.get("speed", 1.0)) * max(1, steps)
        if distance > reach:
            frac = reach / distance
            p = obj.position
            target = Position(
                p.x + (target.x - p.x) * frac, p.y + (target.y - p.y) * frac, p.z + (target.z - p.z) * frac
            )
            distance = reach
        objects[index] = obj.moved_to(target).to_dict()
        moved = distance
    elif parsed.kind == "spawn_object":
        counter = int(new_state.get("object_counter", len(objects))) + 1
        name = str(parsed.parameters["name"])
        position = Position.from_dict(parsed.parameters["position"])
        bbox = BBox.from_dict(parsed.parameters["bbox"])
        spawned = SceneObject(name, position, bbox, id=f"{slugify(name)}-{counter}", is_graspable=True)
        objects.append(spawned.to_dict())
        new_state["object_counter"] = counter
    new_state["step"] = int(new_state.get("step", 0)) + max(1, steps)
    return new_state, moved


def goal_cost(state: WorldState, goal: Mapping[str, object]) -> float:
    """Squared distance of each goal object to its target (+ a miss cost for an absent spawn).

    ``goal`` is the planner's oracle goal (``ResolvedGoal.to_oracle_dict``): ``targets``, a list of
    ``{object_id, position}``, and ``spawn``, ``{name, position, baseline_count}`` or ``None``."""
    by_id = {obj.get("id"): obj for obj in state.get("objects", [])}
    cost = 0.0
    targets = goal.get("targets", [])
    if not isinstance(targets, list):
        raise WorldForgeError("goal.targets: must be a list.")
    for index, target in enumerate(targets):
        if not isinstance(target, Mapping):
            raise WorldForgeError(f"goal.targets[{index}]: must be an object.")
        object_id = target.get("object_id")
        obj = by_id.get(object_id) if isinstance(object_id, str) else None
        if obj is None:
            cost += MISSING_OBJECT_COST
            continue
        pos = Position.from_dict(obj["position"])
        cost += pos.squared_distance_to(Position.from_dict(target["position"], f"goal.targets[{index}]"))
    spawn = goal.get("spawn")
    if spawn:
        if not isinstance(spawn, Mapping):
            raise WorldForgeError("goal.spawn: must be an object.")
        named = [obj for obj in state.get("objects", []) if obj.get("name") == spawn.get("name")]
        if len(named) <= int(spawn.get("baseline_count", 0)):
            cost += MISSING_OBJECT_COST
        elif spawn.get("position") is not None:
            wanted = Position.from_dict(spawn["position"], "goal.spawn.position")
            cost += Position.from_dict(named[-1]["position"]).squared_distance_to(wanted)
    return cost


def sequence_cost(state: WorldState, goal: Mapping[str, object], sequence: list[ActionDict]) -> float:
    """Cost of executing ``sequence`` from ``state``: goal cost + a small action-length penalty."""
    current = state
    path = 0.0
    moves = 0
    for action in sequence:
        current, moved = apply_action(current, action, 1)
        path += moved
        if action.get("type") != "noop":
            moves += 1
    return goal_cost(current, goal) + PATH_PENALTY * path + ACTION_PENALTY * moves


class MockProvider(BaseProvider):
    """Deterministic reference provider (``mock`` or ``mock:<variant>``)."""

    _capabilities = (Capability.PREDICT, Capability.SCORE, Capability.GENERATE, Capability.EMBED)
    #: The code that writes the letter replies: a change to it must invalidate cached replies.
    reply_code = (
        "worldforge.providers.mock_letters",
        "worldforge.pcg.levels.glyphs",
        "worldforge.pcg.levels.drop_plan",
    )

    def __init__(self, variant: str = "") -> None:
        super().__init__()
        if not isinstance(variant, str) or any(ch.isspace() for ch in variant):
            raise WorldForgeError(f"mock variant {variant!r}: must be a string without whitespace.")
        self.variant = variant
        self.name = f"mock:{variant}" if variant else "mock"

    def runtime_manifest(self) -> JSONObject | None:
        return {"model": MOCK_MODEL, "variant": self.variant, "deterministic": True}

    # -- prefetch --------------------------------------------------------------------------------
    def prefetch(self, options: Mapping[str, object]) -> Prefetch | None:
        """A letter reply's program (the costly glyph decomposition, a pure function of the letter,
        seed and variant), which a suite may compute in its worker processes; nothing for an echo."""
        letter, seed = options.get("target_character"), options.get("trial_seed")
        if not isinstance(letter, str) or isinstance(seed, bool) or not isinstance(seed, int):
            return None
        return Prefetch(letter_program_lines, (letter, seed, self.variant))

    def accept_prefetched(self, work: Prefetch, value: object) -> None:
        """Install the program so that :meth:`generate` answers from it (byte-identical reply)."""
        if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
            raise WorldForgeError("mock: a prefetched letter program must be a list of lines.")
        letter, seed, variant = work.args
        prime(letter, seed, variant, value)

    # -- predict ---------------------------------------------------------------------------------
    def predict(self, world_state: WorldState, action: ActionDict, steps: int = 1) -> PredictionResult:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise WorldForgeError("steps: must be a positive integer.")
        payload = {"world_state": world_state, "action": action, "steps": steps}

        def call() -> PredictionResult:
            new_state, moved = apply_action(world_state, action, steps)
            new_state.setdefault("metadata", {})["last_action"] = action.get("type")
            count = len(new_state.get("objects", []))
            physics = round(_clamp(0.72 + 0.03 * count, 0.6, 0.99), 6)
            confidence = round(_clamp(physics - 0.02, 0.65, 0.99), 6)
            return PredictionResult(
                provider=self.name,
                world_state=new_state,
                physics_score=physics,
                confidence=confidence,
                metadata={"mode": "deterministic-mock", "steps": steps, "moved_distance": round(moved, 9)},
            )

        return self.instrumented("predict", payload, call)

    # -- score (cost oracle) ---------------------------------------------------------------------
    def score_actions(
        self, world_state: WorldState, goal: Mapping[str, object], candidates: list[list[ActionDict]]
    ) -> ScoreResult:
        payload = {"world_state": world_state, "goal": goal, "candidates": candidates}

        def call() -> ScoreResult:
            if not isinstance(candidates, list) or not candidates:
                raise WorldForgeError("candidates: must be a non-empty list of action sequences.")
            scores = [sequence_cost(world_state, goal, list(seq)) for seq in candidates]
            best = min(range(len(scores)), key=lambda i: (scores[i], i))
            return ScoreResult(
                provider=self.name,
                scores=scores,
                best_index=best,
                lower_is_better=True,
                metadata={"mode": "deterministic-mock-cost", "candidate_count": len(candidates)},
            )

        return self.instrumented("score", payload, call)

    # -- generate --------------------------------------------------------------------------------
    def generate(
        self, messages: list[dict[str, str]], *, options: Mapping[str, object] | None = None
    ) -> GenerationResult:
        """A letter reply (``target_character`` + ``trial_seed``) or an echo of the last user turn.

        ``options.max_tokens`` stops the reply there, as a server stops at ``max_tokens``: the model
        gateway passes what is left of a trial's token budget, so a capped reply must look like a
        server's (``finish_reason`` ``"length"``, the completion count equal to the cap).
        """
        opts = dict(options or {})
        payload = {"messages": messages, "options": opts}

        def call() -> GenerationResult:
            _validate_messages(messages)
            letter = opts.get("target_character")
            seed = opts.get("trial_seed")
            if letter is not None:
                if not (isinstance(letter, str) and len(letter) == 1 and "A" <= letter <= "Z"):
                    raise WorldForgeError(f"options.target_character: expected a letter A-Z, got {letter!r}.")
                if isinstance(seed, bool) or not isinstance(seed, int):
                    raise WorldForgeError("options.trial_seed: must be an integer with target_character.")

                text = letter_reply(letter, seed, self.variant)
            else:
                digest = digest_payload({"variant": self.variant, "messages": messages})[7:19]
                last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
                text = f"[{self.name} {digest}] {last_user}"
            cap = opts.get("max_tokens")
            cut = False
            if cap is not None:
                if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
                    raise WorldForgeError(f"options.max_tokens: expected a positive integer, got {cap!r}.")
                text, cut = cap_words(text, cap)
            prompt_tokens = sum(len(m["content"].split()) for m in messages)
            metadata: JSONObject = {
                "model": MOCK_MODEL,
                "variant": self.variant,
                "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
                "prompt_eval_count": prompt_tokens,
                "eval_count": len(text.split()),
            }
            if cut:  # only then: an uncapped reply's metadata (and the records holding it) is unchanged
                metadata["finish_reason"] = "length"
            return GenerationResult(provider=self.name, text=text, metadata=metadata)

        return self.instrumented("generate", payload, call)

    # -- embed -----------------------------------------------------------------------------------
    def embed(self, text: str) -> EmbeddingResult:
        def call() -> EmbeddingResult:
            if not isinstance(text, str):
                raise WorldForgeError("text: must be a string.")
            values = deterministic_floats(f"{self.name}:{text}", EMBED_DIM)
            norm = math.sqrt(sum(v * v for v in values)) or 1.0
            return EmbeddingResult(self.name, [round(v / norm, 9) for v in values], "mock-embedding-v1")

        return self.instrumented("embed", {"text": text}, call)


def _validate_messages(messages: object) -> None:
    if not isinstance(messages, list) or not messages:
        raise WorldForgeError("messages: must be a non-empty list of chat turns.")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise WorldForgeError(f"messages[{index}]: must be an object with role and content.")
        if message.get("role") not in ("user", "assistant", "system"):
            raise WorldForgeError(f"messages[{index}].role: must be user, assistant or system.")
        if not isinstance(message.get("content"), str):
            raise WorldForgeError(f"messages[{index}].content: must be a string.")


def create_provider(variant: str = "", options: Mapping[str, object] | None = None) -> MockProvider:
    """Registry factory: ``mock`` -> ``create_provider("")``, ``mock:v2`` -> ``create_provider("v2")``.

    The mock reads no run options: its replies depend on the variant alone."""
    return MockProvider(variant)


#: What the registry builds for ``mock`` / ``mock:<variant>`` (``worldforge.providers`` entry point).
FAMILY = ProviderFamily(
    MockProvider,
    create_provider,
    "Deterministic reference provider; mock:<variant> selects another generator.",
)


__all__ = [
    "FAMILY",
    "MOCK_MODEL",
    "REACH_PER_STEP",
    "MockProvider",
    "apply_action",
    "create_provider",
    "goal_cost",
    "sequence_cost",
]
