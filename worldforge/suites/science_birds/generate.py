"""The generate stage of the Science Birds items: each trial's chat turns, several trials at once.

A trial's turns depend on each other (each turn resends the earlier replies), so they run one
after another in one thread; different trials are independent, so trials of models served by a
server pool (``ollama:``/``openai:`` with one or more ``--ollama-host``/``--openai-base-url``) run
concurrently on threads: the work is waiting on the servers, not CPU. The thread count is the
run's total connection capacity (servers x ``--max-connections`` summed over the pooled models);
the providers' pools still pick the server of each request, hold each server to its limit and take
a failing server out of rotation while the request is retried on another.

Results are never consumed in completion order: :meth:`PendingReplies.result` returns one reply per
item of its chunk, in the chunk's order, so records and digests are those of a sequential run.
Models without a server pool (the built-in ``mock``, replays) keep generating in the caller's
thread, in item order, exactly as before. Submission trials run on ``workers`` threads (each waits
on its own sandboxed host). A trial that fails is a failed reply (recorded as a failed trial), never
an exception that loses the chunk; so is, by default, a submission reply the model never served
(:mod:`.unserved`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TypedDict

from worldforge.core.canonical import JSON
from worldforge.core.digests import digest_bytes, digest_payload, digest_text
from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway, TrialSession
from worldforge.gateway.upstream import policy_temperature
from worldforge.pcg.programs.prompt import Program
from worldforge.pcg.programs.submission import SubmissionProgram
from worldforge.providers.base import BaseProvider
from worldforge.providers.chat import (
    CHAT_TRIAL_VERSION,
    TRIAL_TIME_LIMIT_S,
    TRIAL_TOKEN_LIMIT,
    ChatTrial,
    TrialTranscript,
)
from worldforge.suites.science_birds.config import ItemKey, SuiteConfig
from worldforge.suites.science_birds.records import GeneratedReply, ReplyValue, TrialUsage, is_reply_value
from worldforge.suites.science_birds.stage_cache import StageCache
from worldforge.suites.science_birds.stages import reply_preview, screen_reply
from worldforge.suites.science_birds.submissions import SubmissionTrials, submission_item
from worldforge.suites.science_birds.unserved import apply_rule

#: One item to generate: its key, trial seed and input digest (as the runner queues them).
Job = tuple[ItemKey, int, str]


class TrialOptions(TypedDict):
    """The options every call of a trial carries: the letter asked for and the trial's seed."""

    target_character: str
    trial_seed: int


def trial_options(key: ItemKey, seed: int) -> TrialOptions:
    """The options every call of a prompt trial carries (the letter and seed the mock needs)."""
    return {"target_character": key.letter, "trial_seed": seed}


def model_capacity(forge: WorldForge, models: Sequence[str]) -> dict[str, int]:
    """``{model: requests its servers take at once}`` for the models backed by model servers.

    Models whose provider has no servers to wait on (``connection_capacity`` ``None``: the mock,
    third-party providers) are absent: they are generated in the caller's thread."""
    out: dict[str, int] = {}
    for name in models:
        try:
            provider = forge.provider(name)
        except WorldForgeError:
            continue
        capacity = provider.connection_capacity if isinstance(provider, BaseProvider) else None
        if capacity is not None:
            out[name] = capacity
    return out


@dataclass
class PendingReplies:
    """One chunk's replies: futures for the concurrent items, the rest generated on :meth:`result`."""

    jobs: list[Job]
    futures: dict[int, Future[GeneratedReply]]
    generator: Generator

    def result(self) -> list[GeneratedReply]:
        """The replies in the chunk's order (sequential items are generated now, in order)."""
        out: list[GeneratedReply] = []
        for index, (key, seed, _) in enumerate(self.jobs):
            future = self.futures.get(index)
            out.append(future.result() if future is not None else self.generator.generate(key, seed))
        return out


class Generator:
    """Replies for items: cached, through the gateway (or the provider directly), or a submission."""

    def __init__(
        self,
        config: SuiteConfig,
        forge: WorldForge,
        models: Sequence[str],
        *,
        gateway: Gateway | None,
        cache: StageCache,
        model_identities: Mapping[str, JSON],
        submissions: SubmissionTrials | None = None,
    ) -> None:
        self.config = config
        self.forge = forge
        self.gateway = gateway
        self.cache = cache
        self.model_identities = dict(model_identities)
        self.submissions = submissions
        self.programs: dict[str, Program | SubmissionProgram] = {p.name: p for p in config.programs}
        replaying = gateway is not None and gateway.replaying
        #: Concurrent requests per pooled model (empty: every prompt trial in the caller's thread).
        self.capacity = {} if replaying else model_capacity(forge, models)
        self._threads: ThreadPoolExecutor | None = None
        self._submission_threads: ThreadPoolExecutor | None = None

    @property
    def concurrency(self) -> int:
        """How many prompt trials may talk to model servers at once (1: sequential)."""
        return max(1, sum(self.capacity.values()))

    def _pool_for(self, key: ItemKey) -> ThreadPoolExecutor | None:
        if isinstance(self.programs[key.program], SubmissionProgram):
            if self.config.workers < 2:
                return None
            if self._submission_threads is None:
                self._submission_threads = ThreadPoolExecutor(
                    max_workers=self.config.workers, thread_name_prefix="worldforge-submission"
                )
            return self._submission_threads
        if key.model not in self.capacity or self.concurrency < 2:
            return None
        if self._threads is None:
            self._threads = ThreadPoolExecutor(
                max_workers=self.concurrency, thread_name_prefix="worldforge-generate"
            )
        return self._threads

    def start(self, jobs: Sequence[Job]) -> PendingReplies:
        """Queue the chunk's concurrent items now (they run while earlier chunks are finished)."""
        futures: dict[int, Future[GeneratedReply]] = {}
        for index, (key, seed, _) in enumerate(jobs):
            pool = self._pool_for(key)
            if pool is not None:
                futures[index] = pool.submit(self.generate, key, seed)
        return PendingReplies(list(jobs), futures, self)

    def close(self) -> None:
        """Stop the threads; queued trials that have not started are dropped (a killed run)."""
        for pool in (self._threads, self._submission_threads):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self._threads = self._submission_threads = None

    # -- one item ---------------------------------------------------------------------------------
    def generate(self, key: ItemKey, seed: int) -> GeneratedReply:
        """One item's reply (or its failure) with the prompt digests and, via the gateway, exchanges;
        ``{"stopped": True, ...}`` once the run's token limit stopped generation at or before this
        trial (see :class:`~worldforge.gateway.Gateway`): such an item is not recorded."""
        gateway = self.gateway
        if gateway is not None and gateway.stopped is not None:
            return _stopped(gateway.stopped)
        value = self._generate(key, seed)
        if gateway is not None and gateway.stopped is not None and key.item_id in gateway.stopped_items:
            return _stopped(gateway.stopped)
        return value

    def _generate(self, key: ItemKey, seed: int) -> GeneratedReply:
        program = self.programs[key.program]
        if isinstance(program, SubmissionProgram):
            identity = self.model_identities.get(key.model)
            returned = submission_item(
                self.submissions, self.gateway, self.cache, key, seed, program, identity
            )
            # The competition's rule on the reply, after the cache (which holds what was returned).
            return apply_rule(returned, keep=self.config.keep_unserved_replies)
        prompts = program.prompts_for(key.letter)
        options = trial_options(key, seed)
        gen_input = digest_payload(
            {"model": self.model_identities.get(key.model), "prompts": prompts, "options": options}
        )
        gateway = self.gateway
        # Through the gateway a cached value carries the exchanges; a replay answers from its run only.
        version = CHAT_TRIAL_VERSION if gateway is None else f"{CHAT_TRIAL_VERSION}+gateway/v1"
        use_cache = gateway is None or not gateway.replaying
        cache_key = StageCache.key("generate", version, gen_input)
        cached = self.cache.get_json("generate", cache_key) if use_cache else None
        prompt_digests = [digest_text(p) for p in prompts]
        if isinstance(cached, dict) and is_reply_value(cached):
            return {"prompt_digests": prompt_digests, "generate_input": gen_input, **cached}
        limits = self.config.options
        trial = ChatTrial(
            max_tokens=int(limits.get("max_tokens_per_trial") or TRIAL_TOKEN_LIMIT),
            max_seconds=float(limits.get("max_trial_seconds") or TRIAL_TIME_LIMIT_S),
        )
        transcript: TrialTranscript | None = None
        failure = ""
        route: AbstractContextManager[TrialSession | None] = contextlib.nullcontext(None)
        if gateway is not None:
            route = gateway.trial(
                key.item_id,
                key.model,
                options=options,
                seed=seed,
                temperature=policy_temperature(self.model_identities.get(key.model)),
                max_tokens=trial.max_tokens,
                max_seconds=trial.max_seconds,
            )
        with route as session:
            try:
                transcript = trial.run(
                    session.generate
                    if session is not None
                    else lambda msgs, opts: self.forge.generate(key.model, msgs, opts),
                    prompts,
                    options,
                )
            except (ProviderError, WorldForgeError) as exc:
                failure = f"generate: {exc}"
        base: GeneratedReply = {
            "prompt_digests": prompt_digests,
            "generate_input": gen_input,
            "reply": None,
            "error": None,
        }
        if session is not None:
            base["exchanges"] = session.exchanges
        if transcript is None:
            return {**base, "error": failure, "tokens": None}
        reply = transcript.final_reply
        usage: TrialUsage = {
            "prompt_tokens": transcript.prompt_tokens,
            "completion_tokens": transcript.completion_tokens,
            "served_models": sorted(set(transcript.models)),
        }
        reason = screen_reply(reply)
        if reason is not None:
            preview = reply_preview(reply)
            digest = digest_bytes(reply.encode("utf-8", "surrogatepass")) if isinstance(reply, str) else None
            return {
                **base,
                "reply_preview": preview,
                "reply_digest": digest,
                "error": reason,
                "tokens": transcript.tokens,
                "usage": usage,
            }
        value: ReplyValue = {
            "reply": reply,
            "error": None,
            "tokens": transcript.tokens,
            "calls": transcript.calls,
            "usage": usage,
        }
        if "exchanges" in base:
            value["exchanges"] = base["exchanges"]
        if use_cache and (gateway is None or key.item_id not in gateway.stopped_items):
            self.cache.put_json("generate", cache_key, value)
        return {**base, **value}


def _stopped(reason: str) -> GeneratedReply:
    """What a trial the run's token limit stopped generates: nothing to record."""
    return {
        "prompt_digests": [],
        "generate_input": None,
        "reply": None,
        "error": f"stopped: {reason}",
        "stopped": True,
    }


__all__ = ["Generator", "Job", "PendingReplies", "model_capacity", "trial_options"]
