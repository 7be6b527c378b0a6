"""The chat-trial contract: how the turns of one trial are driven against ``generate``, within limits.

The competition runs each prompt program as *trials*: a fixed list of user turns sent one after
another, each resending the earlier replies, with a budget of 25,000 prompt+completion tokens and a
wall-clock budget per trial. That contract belongs to no model server: :class:`ChatTrial` drives any
``generate`` callable (a provider through the forge, or a trial's gateway session) and reads the
token counts every provider reports in its :class:`~worldforge.providers.base.GenerationResult`
metadata (:func:`usage_counts`: OpenAI's ``prompt_tokens``/``completion_tokens`` or Ollama's
``prompt_eval_count``/``eval_count``). It lives beside the provider protocol, whose ``generate``
metadata it reads, so that the gateway and the suites above it never import a specific provider.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from worldforge.core.errors import ProviderError
from worldforge.providers.base import GenerationResult

#: The competition's per-trial token budget (prompt + completion over all turns of one trial).
TRIAL_TOKEN_LIMIT = 25_000
#: The 2025 package's per-trial wall-clock budget in seconds.
TRIAL_TIME_LIMIT_S = 500.0
#: Version of this contract as the stage records and the stage cache name it: a change to how a
#: trial is driven (turns, limits, what a reply is) bumps it, and cached replies stop matching.
CHAT_TRIAL_VERSION = "chat-trial/v1"

#: What :meth:`ChatTrial.run` calls for each turn: ``generate(messages, options)``.
TurnGenerator = Callable[[list[dict[str, str]], Mapping[str, object]], GenerationResult]


class TrialLimitExceeded(ProviderError):
    """A trial went over its token or wall-clock budget (the competition scores it 0)."""


@dataclass
class TrialTranscript:
    """The conversation of one trial: every message, the final reply and the token counts.

    ``prompt_tokens`` / ``completion_tokens`` are the server's counts summed over the calls and
    ``models`` the model ids it reported (in call order), so records show what was really served.
    """

    messages: list[dict[str, str]]
    final_reply: str
    tokens: int
    calls: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    models: list[str] = field(default_factory=list)


def token_count(value: object) -> int:
    """A token count as a provider or a record reports it: ``0`` when it is missing, else the
    number (a numeric string too); anything else is a :class:`ProviderError`."""
    if not value:
        return 0
    if isinstance(value, (int, float, str)):
        return int(value)
    raise ProviderError(f"token count {value!r} is not a number.")


def usage_counts(metadata: Mapping[str, object]) -> tuple[int, int]:
    """(prompt, completion) tokens of one call from a provider's metadata, either spelling."""
    prompt = metadata.get("prompt_tokens", metadata.get("prompt_eval_count"))
    completion = metadata.get("completion_tokens", metadata.get("eval_count"))
    return token_count(prompt), token_count(completion)


class ChatTrial:
    """Drive the turns of one prompt program for one trial, enforcing the competition's limits.

    Before each call the elapsed time is checked against ``max_seconds`` (over → the trial fails,
    as the package's ``TimeoutError``); after each call the cumulative prompt+completion tokens are
    checked against ``max_tokens`` (over → the trial fails, as the package's ``ValueError``). The
    reply to the last turn is the trial's output; earlier replies become assistant turns.
    """

    def __init__(
        self, *, max_tokens: int = TRIAL_TOKEN_LIMIT, max_seconds: float = TRIAL_TIME_LIMIT_S
    ) -> None:
        self.max_tokens = int(max_tokens)
        self.max_seconds = float(max_seconds)

    def run(
        self,
        generate: TurnGenerator,
        prompts: Sequence[str],
        options: Mapping[str, object],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> TrialTranscript:
        started = clock()
        messages: list[dict[str, str]] = []
        tokens = prompt_total = completion_total = 0
        models: list[str] = []
        reply = ""
        for index, prompt in enumerate(prompts):
            elapsed = clock() - started
            if elapsed > self.max_seconds:
                raise TrialLimitExceeded(
                    f"trial time limit: {elapsed:.1f} s elapsed before turn {index + 1} "
                    f"(limit {self.max_seconds:g} s)."
                )
            messages.append({"role": "user", "content": prompt})
            result = generate(list(messages), dict(options))
            reply = result.text
            meta = result.metadata
            prompt_tokens, completion_tokens = usage_counts(meta)
            prompt_total += prompt_tokens
            completion_total += completion_tokens
            tokens += prompt_tokens + completion_tokens
            model = meta.get("model")
            if isinstance(model, str):
                models.append(model)
            if tokens > self.max_tokens:
                raise TrialLimitExceeded(
                    f"trial token limit: {tokens} prompt+completion tokens after turn {index + 1} "
                    f"(limit {self.max_tokens})."
                )
            messages.append({"role": "assistant", "content": reply})
        return TrialTranscript(
            messages=messages,
            final_reply=reply,
            tokens=tokens,
            calls=len(prompts),
            prompt_tokens=prompt_total,
            completion_tokens=completion_total,
            models=models,
        )


__all__ = [
    "TRIAL_TIME_LIMIT_S",
    "TRIAL_TOKEN_LIMIT",
    "CHAT_TRIAL_VERSION",
    "ChatTrial",
    "TrialLimitExceeded",
    "TrialTranscript",
    "TurnGenerator",
    "token_count",
    "usage_counts",
]
