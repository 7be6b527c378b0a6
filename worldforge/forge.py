"""``WorldForge``: the facade that owns providers, event sinks and persisted worlds.

Every provider call goes through a provider instance this forge created, with the forge's event
dispatcher bound to it, so each call produces exactly one ``ProviderEvent`` per attempt for every
sink (a run workspace's event log, a counter for provenance ``event_count``, tests).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from worldforge.core.canonical import JSONObject, canonical_json
from worldforge.core.entities import Action, ActionDict, Position
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_bytes
from worldforge.core.world import World, WorldState, validate_world_id
from worldforge.planning.mpc import LatentMPCController
from worldforge.providers.base import (
    Capability,
    EmbeddingResult,
    GenerationResult,
    PredictionResult,
    Provider,
    ScoreResult,
    provider_capabilities,
    require_capability,
    run_instrumented,
)
from worldforge.providers.events import EventDispatcher, EventSink, ProviderEvent
from worldforge.providers.registry import ProviderFactory, ProviderRegistry

DEFAULT_STATE_DIR = Path(".worldforge") / "worlds"


class WorldForge:
    """Provider registry + event fan-out + world persistence.

    ``state_dir`` is created only when a world is saved, so constructing a forge has no side effects.
    ``provider_options`` are the run's options (``ollama_host``, ``openai_base_url``,
    ``max_connections`` ...): each built-in provider is built once, on first use, with them.
    """

    def __init__(
        self,
        *,
        state_dir: str | Path | None = None,
        event_sinks: list[EventSink] | None = None,
        discover_entry_points: bool | None = None,
        provider_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.state_dir = Path(state_dir) if state_dir is not None else DEFAULT_STATE_DIR
        self._events = EventDispatcher()
        for sink in event_sinks or []:
            self._events.add(sink)
        self._registry = ProviderRegistry(discover_entry_points=discover_entry_points)
        self.provider_options: JSONObject = dict(provider_options or {})
        self._instances: dict[str, Provider] = {}
        self._lock = threading.RLock()

    # -- events ----------------------------------------------------------------------------------
    def add_event_sink(self, sink: EventSink) -> None:
        self._events.add(sink)

    def remove_event_sink(self, sink: EventSink) -> None:
        self._events.remove(sink)

    @property
    def event_count(self) -> int:
        """Provider events dispatched by this forge so far."""
        return self._events.count

    def emit(self, event: ProviderEvent) -> None:
        self._events(event)

    # -- providers -------------------------------------------------------------------------------
    def register_provider(
        self, name: str, factory: ProviderFactory | Any, *, replace: bool = False, description: str = ""
    ) -> None:
        """Register a provider family. ``factory`` is a callable (``factory()`` / ``factory(arg)``)
        or a ready provider instance."""
        if hasattr(factory, "capabilities") and not isinstance(factory, type):
            instance = factory

            def factory(arg: str | None = None) -> Any:
                return instance

        self._registry.register(name, factory, replace=replace, description=description)
        with self._lock:
            for key in [k for k in self._instances if k == name or k.startswith(name + ":")]:
                del self._instances[key]

    def provider_names(self) -> list[str]:
        """Registered provider families (parameterized families accept ``name:arg``)."""
        return self._registry.names()

    def provider_infos(self) -> list[Any]:
        return self._registry.infos()

    def has_provider(self, name: str) -> bool:
        return self._registry.is_known(name)

    def provider(self, name: str) -> Any:
        """The provider instance for ``name`` (created once per forge with its ``provider_options``,
        events bound to this forge)."""
        with self._lock:
            instance = self._instances.get(name)
            if instance is None:
                instance = self._registry.create(name, self.provider_options)
                binder = getattr(instance, "bind_event_handler", None)
                if callable(binder):
                    binder(self._events)
                self._instances[name] = instance
            return instance

    def capabilities(self, name: str) -> tuple[str, ...]:
        return provider_capabilities(self.provider(name))

    def runtime_manifest(self, name: str) -> JSONObject | None:
        manifest = getattr(self.provider(name), "runtime_manifest", None)
        return manifest() if callable(manifest) else None

    def _call(
        self,
        name: str,
        capability: Capability,
        operation: str,
        payload: object,
        method: str,
        *args: object,
        **kwargs: object,
    ) -> Any:
        provider = self.provider(name)
        require_capability(provider, capability)
        bound = getattr(provider, method, None)
        if not callable(bound):
            raise WorldForgeError(f"Provider '{name}' declares '{capability}' but has no {method}().")
        if getattr(provider, "emits_events", False):
            return bound(*args, **kwargs)

        def emit(
            operation: str,
            phase: str,
            *,
            duration_ms: float = 0.0,
            input_digest: str | None = None,
            message: str = "",
        ) -> None:
            event = ProviderEvent(
                provider=name,
                operation=operation,
                phase=phase,
                duration_ms=duration_ms,
                input_digest=input_digest,
                message=message,
            )
            self._events(event)

        return run_instrumented(name, operation, payload, lambda: bound(*args, **kwargs), emit)

    # -- capabilities ----------------------------------------------------------------------------
    def predict(
        self,
        world_state: WorldState,
        action: Action | Mapping[str, object],
        steps: int = 1,
        provider: str = "mock",
    ) -> PredictionResult:
        action_dict = action.to_dict() if isinstance(action, Action) else Action.from_dict(action).to_dict()
        payload = {"world_state": world_state, "action": action_dict, "steps": steps}
        result = self._call(
            provider, Capability.PREDICT, "predict", payload, "predict", world_state, action_dict, steps
        )
        if not isinstance(result, PredictionResult):
            raise WorldForgeError(f"Provider '{provider}' predict() must return a PredictionResult.")
        return result

    def plan(self, world: World, goal: Any, provider: str = "mock", **options: Any) -> Any:
        """Plan towards ``goal`` on a copy of ``world`` with :class:`LatentMPCController` over
        ``provider``'s ``score`` cost oracle (``options`` are the controller's)."""
        return LatentMPCController(self, provider, **options).plan(world, goal)

    def score_actions(
        self,
        provider: str,
        *,
        world_state: WorldState,
        goal: Mapping[str, object],
        candidates: list[list[ActionDict]],
    ) -> ScoreResult:
        payload = {"world_state": world_state, "goal": goal, "candidates": candidates}
        result = self._call(
            provider, Capability.SCORE, "score", payload, "score_actions", world_state, goal, candidates
        )
        if not isinstance(result, ScoreResult) or len(result.scores) != len(candidates):
            raise WorldForgeError(
                f"Provider '{provider}' score_actions() must return one score per candidate."
            )
        return result

    def generate(
        self, provider_name: str, messages: list[dict[str, str]], options: Mapping[str, object] | None = None
    ) -> GenerationResult:
        opts = dict(options or {})
        payload = {"messages": messages, "options": opts}
        result = self._call(
            provider_name, Capability.GENERATE, "generate", payload, "generate", messages, options=opts
        )
        if not isinstance(result, GenerationResult):
            raise WorldForgeError(f"Provider '{provider_name}' generate() must return a GenerationResult.")
        return result

    def embed(self, provider: str, text: str) -> EmbeddingResult:
        result = self._call(provider, Capability.EMBED, "embed", {"text": text}, "embed", text)
        if not isinstance(result, EmbeddingResult):
            raise WorldForgeError(f"Provider '{provider}' embed() must return an EmbeddingResult.")
        return result

    # -- worlds ----------------------------------------------------------------------------------
    def create_world(self, name: str, provider: str = "mock", *, description: str = "") -> World:
        if not self.has_provider(provider):
            raise WorldForgeError(
                f"Unknown provider '{provider}'. Known providers: {', '.join(self.provider_names())}."
            )
        return World(name, provider, forge=self, description=description)

    def create_world_from_prompt(self, prompt: str, provider: str = "mock") -> World:
        """A small seeded world: objects named in the prompt, else one cube."""
        world = self.create_world(prompt.strip()[:40] or "world", provider, description=prompt)
        lowered = prompt.lower()
        seeded = [name for name in ("countertop", "mug", "cube", "ball") if name in lowered]
        for index, name in enumerate(seeded or ["cube"]):
            world.add_object(name, Position(0.3 * index, 0.5, 0.0))
        return world

    def _world_path(self, world_id: str) -> Path:
        return self.state_dir / f"{validate_world_id(world_id)}.json"

    def save_world(self, world: World) -> Path:
        return atomic_write_bytes(self._world_path(world.id), canonical_json(world.to_dict()))

    def load_world(self, world_id: str) -> World:
        import json

        path = self._world_path(world_id)
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise WorldForgeError(f"{path}: no saved world {world_id!r}.") from None
        except json.JSONDecodeError as exc:
            raise WorldForgeError(f"{path}: invalid JSON ({exc.msg}).") from None
        return World.from_dict(payload, forge=self)

    def list_worlds(self) -> list[str]:
        if not self.state_dir.is_dir():
            return []
        return sorted(p.stem for p in self.state_dir.glob("*.json"))

    def delete_world(self, world_id: str) -> None:
        path = self._world_path(world_id)
        if not path.exists():
            raise WorldForgeError(f"{path}: no saved world {world_id!r}.")
        path.unlink()


__all__ = ["DEFAULT_STATE_DIR", "WorldForge"]
