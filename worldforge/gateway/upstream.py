"""Who answers a gateway request: the trial's provider (through the forge) or a recorded run.

:class:`ProviderUpstream` forwards to the provider the trial belongs to with the trial's own
options (the target letter and the per-trial seed that ``mock`` needs, the seed Ollama and OpenAI
servers receive), so a prompt program cannot pick another model or seed. ``n`` > 1 is passed to
providers that return several choices natively (``openai:``); for the others the gateway asks
again with a seed derived from the trial seed per extra choice, so choices differ but stay
reproducible. Usage counts are summed over the calls that produced the choices.

Every call carries a completion cap, ``options["max_tokens"]``, so that no request spends much
more than what is left of its trial's budget (the request's ``allowance``, see
:meth:`worldforge.gateway.core.Gateway.chat`); the program's own ``max_tokens`` lowers it further,
as a server would. How ``n`` > 1 choices share the allowance:

* asked one by one (``mock``, ``ollama:``): each call is capped at what the earlier calls of the
  request left; choices the allowance can no longer pay for are not asked, they come back empty
  and each counts the prompt tokens the last call counted (what asking would have cost at least),
  so the usage the program sees is past the budget, as it would have been. A request whose usage
  fits the budget is answered exactly as without a cap.
* from one request (providers with ``native_choices``, ``openai:``): ``max_tokens`` is per choice,
  so each gets ``allowance // n``; fewer than one token per choice is a ``trial_limit`` refusal (no
  answer of ``n`` choices fits). A request whose choices each fit their share is answered exactly
  as without a cap; one long choice beside short ones can be cut although the sum would fit.

Either way one request spends at most its allowance plus the prompt tokens of the call that
crosses it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from worldforge.core.seeds import derive_seed
from worldforge.forge import WorldForge
from worldforge.gateway.exchange import Completion, GatewayError, Request
from worldforge.gateway.records import ExchangeRecord
from worldforge.providers.base import BaseProvider, GenerationResult
from worldforge.providers.chat import usage_counts


@dataclass
class TrialRoute:
    """One trial the gateway serves: who it is, what its provider needs, what it has used so far.

    ``token`` is the secret part of the trial's URL (``/t/<token>/v1``) or its bearer key; it is
    never recorded. ``options`` go to the provider unchanged; ``seed`` and ``temperature`` are the
    run's policy, recorded with every request.

    After the trial, ``tokens`` is the prompt+completion total the gateway counted over every
    answer (also those that arrived after the trial ended), ``over_budget`` whether it passed
    ``max_tokens``, and ``exceeded_at`` the running total right after the first answer that took
    it past (what the competition package's ``ValueError`` names), ``None`` if none did.
    """

    token: str
    item_id: str
    model: str
    options: dict[str, object]
    seed: int | None
    temperature: float | None
    max_tokens: int
    max_seconds: float
    #: Other model names the trial's program may ask for (see ``parse_request``).
    aliases: tuple[str, ...] = ()
    started: float = field(default_factory=time.monotonic)
    tokens: int = 0
    #: The total counted right after the first answer that took ``tokens`` past ``max_tokens``.
    exceeded_at: int | None = None
    #: Tokens held by requests of this trial that are upstream now (their allowances).
    reserved: int = 0
    #: Set by ``close_trial``: requests still waiting for budget give up.
    closed: bool = False
    exchanges: list[ExchangeRecord] = field(default_factory=list)
    #: Requests sent upstream and not answered yet, by their index in the trial.
    pending: dict[int, Request] = field(default_factory=dict)
    #: Index of the trial's next request (answered, refused upstream or still pending).
    next_index: int = 0
    replayed: set[int] = field(default_factory=set)
    #: Digests of every choice text answered to this trial (raw, as sent: what "served" means).
    served: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Notified (under ``lock``) when a request releases its allowance or the trial closes.
    settled: threading.Condition = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.settled = threading.Condition(self.lock)

    @property
    def over_budget(self) -> bool:
        """Whether the counted total passed the budget (the package's ``total > limit`` test)."""
        return self.tokens > self.max_tokens


def policy_temperature(identity: object) -> float | None:
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

    def __init__(self, forge: WorldForge) -> None:
        self.forge = forge

    def _call(
        self, route: TrialRoute, request: Request, options: dict[str, object], cap: int | None
    ) -> GenerationResult:
        if cap is not None:
            options["max_tokens"] = cap
        return self.forge.generate(route.model, [dict(m) for m in request.messages], options)

    def _native(self, route: TrialRoute) -> bool:
        """Whether the trial's provider makes ``n`` choices in one request (``native_choices``)."""
        provider = self.forge.provider(route.model)
        return isinstance(provider, BaseProvider) and provider.native_choices

    def complete(self, route: TrialRoute, request: Request, index: int) -> Completion:
        allowance, own = request.allowance, request.max_tokens
        options = dict(route.options)
        if request.n > 1:
            options["n"] = request.n
        first = allowance
        if request.n > 1 and allowance is not None and self._native(route):
            first = allowance // request.n
            if first < 1:
                raise GatewayError(
                    "trial_limit",
                    f"trial token limit: {allowance} tokens left cannot pay for the {request.n} choices "
                    f"of request {index + 1} (limit {route.max_tokens}).",
                )
        cap = _smaller(first, own)
        result = self._call(route, request, options, cap)
        meta = dict(result.metadata)
        texts = [str(result.text)]
        choices = meta.get("choices")
        if (
            request.n > 1
            and isinstance(choices, list)
            and len(choices) == request.n
            and all(isinstance(c, str) for c in choices)
        ):
            texts = [c for c in choices if isinstance(c, str)]  # all are, checked just above
        prompt, completion = usage_counts(meta)
        served = meta.get("model")
        reason = meta.get("finish_reason", meta.get("done_reason"))
        capped = _stopped(first, own, completion, reason)
        last_prompt, not_asked = prompt, 0
        while len(texts) < request.n:
            left = None if allowance is None else allowance - prompt - completion
            if left is not None and left < 1:  # the budget cannot pay for this choice
                texts.append("")
                prompt, not_asked = prompt + last_prompt, not_asked + 1
                continue
            extra = dict(route.options)
            extra["trial_seed"] = derive_seed("gateway-choice/v1", route.seed, len(texts))
            more = self._call(route, request, extra, _smaller(left, own))
            more_meta = dict(more.metadata)
            texts.append(str(more.text))
            last_prompt, c = usage_counts(more_meta)
            prompt, completion = prompt + last_prompt, completion + c
            more_reason = more_meta.get("finish_reason", more_meta.get("done_reason"))
            capped = _stopped(left, own, c, more_reason) or capped
        return Completion(
            texts=texts,
            prompt_tokens=prompt,
            completion_tokens=completion,
            model=served if isinstance(served, str) and served else route.model,
            finish_reason="length" if capped or not_asked else str(reason) if reason is not None else "stop",
            capped=capped,
            not_asked=not_asked,
        )


def _smaller(cap: int | None, own: int | None) -> int | None:
    """The cap forwarded: the gateway's or the program's, whichever is smaller (``None``: neither)."""
    return own if cap is None else cap if own is None else min(cap, own)


def _stopped(cap: int | None, own: int | None, completion: int, reason: object) -> bool:
    """Whether the gateway's cap (not the program's own, not the model) ended a call's completion."""
    return cap is not None and (own is None or cap < own) and reason == "length" and completion >= cap


__all__ = ["ProviderUpstream", "TrialRoute", "Upstream", "policy_temperature"]
