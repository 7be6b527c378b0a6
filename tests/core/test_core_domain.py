"""Entities, World snapshots and the WorldForge facade with the mock provider."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge import Action, BBox, Position, SceneObject, World, WorldForge, WorldForgeError
from worldforge.core.errors import ProviderError, WorldStateError
from worldforge.core.world import validate_world_state
from worldforge.providers.events import InMemoryEventSink


def test_position_and_bbox_validation() -> None:
    assert Position(1, 2, 3).to_dict() == {"x": 1.0, "y": 2.0, "z": 3.0}
    with pytest.raises(WorldForgeError, match=r"position.x"):
        Position(math.nan, 0, 0)
    with pytest.raises(WorldForgeError, match=r"min.y"):
        BBox(Position(0, 1, 0), Position(1, 0, 1))
    with pytest.raises(WorldForgeError, match=r"missing coordinate\(s\) z"):
        Position.from_dict({"x": 1, "y": 2})


def test_action_round_trip_and_compact_form() -> None:
    action = Action.move_to(0.1, 0.2, 0.3, object_id="cube-1")
    assert Action.from_dict(action.to_dict()) == action
    assert Action.from_dict({"noop": {}}) == Action.noop()
    with pytest.raises(WorldForgeError, match="speed"):
        Action.move_to(0, 0, 0, speed=0)
    with pytest.raises(WorldForgeError, match="unknown action 'fly'"):
        Action.from_dict({"type": "fly", "parameters": {}})


def test_object_ids_are_deterministic_and_snapshots_identical() -> None:
    def build() -> World:
        world = World("Kitchen Table")
        world.add_object("cube", Position(0, 0.5, 0))
        world.add_object("mug", Position(0.3, 0.8, 0))
        return world

    a, b = build(), build()
    assert [o.id for o in a.objects()] == ["cube-1", "mug-2"]
    assert a.id == "kitchen-table"
    assert a.to_dict() == b.to_dict()
    assert a.state_digest() == b.state_digest()
    restored = World.from_dict(a.to_dict())
    assert restored.to_dict() == a.to_dict()


def test_world_state_validation_names_field() -> None:
    state = World("w").to_state()
    state["schema_version"] = 9
    with pytest.raises(WorldStateError, match="schema_version"):
        World.from_dict(state)
    state = World("w").to_state()
    state["id"] = "../escape"
    with pytest.raises(WorldStateError, match="world id"):
        World.from_dict(state)


def test_mock_predict_moves_pose_and_bbox_with_reach_limit() -> None:
    sink = InMemoryEventSink()
    forge = WorldForge(event_sinks=[sink])
    world = forge.create_world("physics")
    cube = world.add_object("cube", Position(0, 0.5, 0))
    result = world.predict(Action.move_to(0.35, 0.5, 0.0, object_id=cube.id), steps=2)
    moved = world.get_object(cube.id)
    assert moved.position == Position(0.35, 0.5, 0.0)
    assert moved.bbox.center().distance_to(moved.position) < 1e-12
    assert (result.physics_score, result.confidence) == (0.75, 0.73)
    # one step reaches at most 0.25
    world.predict(Action.move_to(1.35, 0.5, 0.0, object_id=cube.id), steps=1)
    assert world.get_object(cube.id).position.x == pytest.approx(0.60)
    assert world.step == 3
    assert [e.operation for e in sink.events] == ["predict", "predict"]
    assert all(e.input_digest and e.input_digest.startswith("sha256:") for e in sink.events)
    assert forge.event_count == 2


def test_spawn_uses_counter_ids() -> None:
    forge = WorldForge()
    world = forge.create_world("spawn")
    world.add_object("cube", Position(0, 0.5, 0))
    world.predict(Action.spawn_object("cube"))
    assert [o.id for o in world.objects()] == ["cube-1", "cube-2"]


def test_unknown_provider_and_capability_errors() -> None:
    forge = WorldForge()
    with pytest.raises(WorldForgeError, match="Unknown provider 'nope'"):
        forge.provider("nope")
    with pytest.raises(WorldForgeError, match="Unknown provider capability 'flyy'"):
        forge.provider("mock").supports("flyy")

    class Minimal:
        name = "minimal"
        capabilities = frozenset({"predict"})

        def runtime_manifest(self) -> None:
            return None

    forge.register_provider("minimal", Minimal)
    with pytest.raises(WorldForgeError, match="does not support the 'generate' capability"):
        forge.generate("minimal", [{"role": "user", "content": "x"}])


def test_parameterized_provider_names_resolve_to_factory_argument() -> None:
    forge = WorldForge()
    seen: list[str | None] = []

    def factory(arg: str | None = None) -> object:
        seen.append(arg)
        from worldforge.providers.mock import MockProvider

        provider = MockProvider(arg or "")
        provider.name = f"fam:{arg}" if arg else "fam"
        return provider

    forge.register_provider("fam", factory)
    assert forge.provider("fam:big").name == "fam:big"
    assert forge.provider("fam").name == "fam"
    assert seen == ["big", None]
    assert forge.provider("mock:alpha").name == "mock:alpha"
    with pytest.raises(WorldForgeError, match="already registered"):
        forge.register_provider("fam", factory)


def test_mock_generate_is_deterministic_and_reports_metadata() -> None:
    forge = WorldForge()
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "draw A"}]
    first = forge.generate("mock", messages)
    second = WorldForge().generate("mock", messages)
    assert first == second
    assert first.text.endswith("draw A")
    assert first.metadata["prompt_eval_count"] == 4
    assert forge.generate("mock:other", messages).text != first.text
    with pytest.raises(WorldForgeError, match=r"messages\[0\].role"):
        forge.generate("mock", [{"role": "robot", "content": "x"}])


def test_third_party_provider_calls_still_emit_events() -> None:
    sink = InMemoryEventSink()
    forge = WorldForge(event_sinks=[sink])

    class Echo:
        name = "echo"
        capabilities = frozenset({"generate"})

        def runtime_manifest(self) -> dict[str, str]:
            return {"model": "echo-1"}

        def generate(self, messages: list[dict[str, str]], *, options: dict) -> object:
            from worldforge.providers.base import GenerationResult

            return GenerationResult("echo", messages[-1]["content"], {})

    forge.register_provider("echo", Echo())
    assert forge.generate("echo", [{"role": "user", "content": "hey"}]).text == "hey"
    assert [(e.provider, e.operation, e.phase) for e in sink.events] == [("echo", "generate", "success")]
    assert forge.runtime_manifest("echo") == {"model": "echo-1"}


def test_world_persistence_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    forge = WorldForge(state_dir=tmp_path / "worlds")
    world = forge.create_world("saved")
    world.add_object(SceneObject("cube", Position(0, 0.5, 0), BBox.around(Position(0, 0.5, 0))))
    forge.save_world(world)
    assert forge.list_worlds() == ["saved"]
    assert forge.load_world("saved").to_dict() == world.to_dict()


def test_mock_generate_delegates_letter_requests_to_mock_letters() -> None:
    from worldforge.providers.mock_letters import letter_reply

    forge = WorldForge()
    messages = [{"role": "user", "content": "Build the letter A"}]
    options = {"target_character": "A", "trial_seed": 3}
    plain = forge.generate("mock", messages, options=options)
    variant = forge.generate("mock:v2", messages, options=options)
    assert plain.text == letter_reply("A", 3, "")
    assert variant.text == letter_reply("A", 3, "v2")
    assert plain.text != variant.text and "drop_block(" in plain.text
    assert variant.metadata["seed"] == 3 and variant.metadata["variant"] == "v2"
    with pytest.raises(WorldForgeError, match="target_character: expected a letter A-Z"):
        forge.generate("mock", messages, options={"target_character": "ab", "trial_seed": 1})
    with pytest.raises(WorldForgeError, match="trial_seed: must be an integer"):
        forge.generate("mock", messages, options={"target_character": "B"})


_finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=80, deadline=None)
@given(_finite, _finite, _finite, st.one_of(st.none(), st.text(min_size=1, max_size=12)))
def test_action_and_position_round_trip_property(x: float, y: float, z: float, oid: str | None) -> None:
    action = Action.move_to(x, y, z, object_id=oid)
    assert Action.from_dict(action.to_dict()) == action
    assert Position.from_dict(Position(x, y, z).to_dict()) == Position(x, y, z)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["cube", "mug", "Ball 2"]), _finite, _finite), max_size=5))
def test_world_snapshot_round_trip_and_digest_property(objects: list[tuple[str, float, float]]) -> None:
    world = World("prop")
    for name, x, y in objects:
        world.add_object(name, Position(x, y, 0.0))
    clone = World.from_dict(world.to_dict())
    assert clone.to_dict() == world.to_dict()
    assert clone.state_digest() == world.state_digest()
    assert len({o.id for o in world.objects()}) == len(objects)


def test_provider_event_validation_and_sanitized_message() -> None:
    from worldforge.providers.events import ProviderEvent

    event = ProviderEvent(
        "ollama:qwen",
        "generate",
        "RETRY",
        attempt=2,
        max_attempts=3,
        duration_ms=12.34567,
        message="connect failed: Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456",
    )
    assert event.phase == "retry" and event.duration_ms == 12.346
    assert "abcdefghijklmnopqrstuvwxyz123456" not in event.message
    assert event.to_dict()["max_attempts"] == 3 and "input_digest" not in event.to_dict()
    with pytest.raises(WorldForgeError, match="phase"):
        ProviderEvent("p", "generate", "exploded")
    with pytest.raises(WorldForgeError, match="attempt"):
        ProviderEvent("p", "generate", "success", attempt=0)
    with pytest.raises(WorldForgeError, match="input_digest"):
        ProviderEvent("p", "generate", "success", input_digest="md5:abc")
    with pytest.raises(WorldForgeError, match="duration_ms"):
        ProviderEvent("p", "generate", "success", duration_ms=-1)


def test_failed_provider_call_emits_failure_event() -> None:
    sink = InMemoryEventSink()
    forge = WorldForge(event_sinks=[sink])
    world = forge.create_world("fail")
    world.predict(Action.noop())
    world.add_object("cube")
    with pytest.raises(ProviderError, match="unknown object_id 'ghost'"):
        world.predict(Action.move_to(0, 0, 0, object_id="ghost"))
    assert world.step == 1  # a failed prediction leaves the world untouched
    phases = [(e.operation, e.phase) for e in sink.events]
    assert phases == [("predict", "success"), ("predict", "failure")]
    assert "ghost" in sink.events[-1].message


def test_world_depends_on_a_runtime_protocol_not_the_facade() -> None:
    from worldforge.core.world import WorldRuntime

    assert isinstance(WorldForge(), WorldRuntime)
    loose = World("loose")
    with pytest.raises(WorldForgeError, match="not bound to a forge: create it with WorldForge"):
        loose.predict(Action.noop())
    bound = World("bound", forge=WorldForge())
    assert bound.predict(Action.noop()).world_state["step"] == 1


def test_a_snapshot_read_back_gets_its_defaults_and_its_types_checked() -> None:
    world = World("w")
    world.add_object("cube", Position(0, 0.5, 0))
    minimal = {
        k: v for k, v in world.to_state().items() if k not in ("description", "object_counter", "metadata")
    }
    state = validate_world_state(minimal)
    assert state == {**world.to_state(), "object_counter": 1}
    assert list(state) == list(world.to_state())
    for key, bad in (("provider", 3), ("name", None), ("object_counter", -1), ("metadata", [1])):
        with pytest.raises(WorldForgeError, match=key):
            validate_world_state({**world.to_state(), key: bad})


def test_saved_history_is_checked_and_a_noop_takes_no_parameters() -> None:
    world = World("w")
    world.add_object("cube", Position(0, 0.5, 0))
    saved = world.to_dict()
    assert World.from_dict(saved).history() == world.history()
    with pytest.raises(WorldStateError, match=r"history\[0\]: malformed"):
        World.from_dict(
            {**saved, "history": [{"step": 0, "summary": 1, "action": None, "state_digest": "x"}]}
        )
    with pytest.raises(WorldForgeError, match="noop takes no parameters"):
        Action.from_dict({"type": "noop", "parameters": {"speed": 1}})
