"""Who answers a gateway request: the trial's provider (through the forge) or a recorded run.

:class:`ProviderUpstream` forwards to the provider the trial belongs to with the trial's own
options (the target letter and the per-trial seed that ``mock`` needs, the seed Ollama and OpenAI
servers receive), so a prompt program cannot pick another model or seed. ``n`` > 1 is passed to
providers that return several choices natively (``openai:``); for the others the gateway asks
again with a seed derived from the trial seed per extra choice, so choices differ but stay
reproducible. Usage counts are summed over the calls that produced the choices.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from worldforge.gateway.exchange import Completion, Request
from worldforge.providers.mock_letters import derive_seed
from worldforge.providers.ollama import usage_counts


@dataclass
class TrialRoute:
    """One trial the gateway serves: who it is, what its provider needs, what it has used so far.

    ``token`` is the secret part of the trial's URL (``/t/<token>/v1``) or its bearer key; it is
    never recorded. ``options`` go to the provider unchanged; ``seed`` and ``temperature`` are the
    run's policy, recorded with every request.
    """

    token: str
    item_id: str
    model: str
    options: dict[str, Any]
    seed: int | None
    temperature: float | None
    max_tokens: int
    max_seconds: float
    #: Other model names the trial's program may ask for (see ``parse_request``).
    aliases: tuple[str, ...] = ()
    started: float = field(default_factory=time.monotonic)
    tokens: int = 0
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    #: Requests sent upstream and not answered yet, by their index in the trial.
    pending: dict[int, Request] = field(default_factory=dict)
    #: Index of the trial's next request (answered, refused upstream or still pending).
    next_index: int = 0
    replayed: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


def policy_temperature(identity: Any) -> float | None:
    """The sampling temperature a model identity carries (``settings.temperature``), if any."""
    settings = identity.get("settings") if isinstance(identity, Mapping) else None
    value = settings.get("temperature") if isinstance(settings, Mapping) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class Upstream(Protocol):
    """Answers one validated request of a trial (raises ``GatewayError``, ``ProviderError``...)."""

    source: str

    def complete(self, route: TrialRoute, request: Request, index: int) -> Completion: ...


class ProviderUpstream:
    """Forwards requests to the providers of a :class:`~worldforge.forge.WorldForge`."""

    source = "model"

    def __init__(self, forge: Any) -> None:
        self.forge = forge

    def _call(self, route: TrialRoute, request: Request, options: dict[str, Any]) -> Any:
        return self.forge.generate(route.model, [dict(m) for m in request.messages], options)

    def complete(self, route: TrialRoute, request: Request, index: int) -> Completion:
        options = dict(route.options)
        if request.n > 1:
            options["n"] = request.n
        result = self._call(route, request, options)
        meta = dict(getattr(result, "metadata", None) or {})
        texts = [str(result.text)]
        choices = meta.get("choices")
        if (
            request.n > 1
            and isinstance(choices, list)
            and len(choices) == request.n
            and all(isinstance(c, str) for c in choices)
        ):
            texts = list(choices)
        prompt, completion = usage_counts(meta)
        served = meta.get("model")
        reason = meta.get("finish_reason", meta.get("done_reason"))
        while len(texts) < request.n:
            extra = dict(route.options)
            extra["trial_seed"] = derive_seed("gateway-choice/v1", route.seed, len(texts))
            more = self._call(route, request, extra)
            texts.append(str(more.text))
            p, c = usage_counts(dict(getattr(more, "metadata", None) or {}))
            prompt, completion = prompt + p, completion + c
        return Completion(
            texts=texts,
            prompt_tokens=prompt,
            completion_tokens=completion,
            model=served if isinstance(served, str) and served else route.model,
            finish_reason=str(reason) if reason is not None else "stop",
        )


__all__ = ["ProviderUpstream", "TrialRoute", "Upstream", "policy_temperature"]
