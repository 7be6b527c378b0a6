"""Submission trials for the science-birds suite: environment, sandbox pool, gateway route, outcome.

For every :class:`~worldforge.pcg.programs.submission.SubmissionProgram` of a run this module resolves the
Python environment (:mod:`worldforge.execution.environments`), stages a clean copy of the
submission's files (its ``.env`` and caches left out), and keeps a pool of warm trial hosts
(:mod:`worldforge.execution.sandbox`). One trial = one gateway route with the package's own limits
(25,000 tokens; 120 s for ``chatgpt4pcg``, 500 s for ``llms4pcg``) and a forked process that runs
the submission's ``TrialLoop`` through the package. Outcomes follow the package: a reply is the
raw output; ``TimeoutError``/``ValueError`` is no output; any other exception, crash or kill is a
failed trial with its reason. None of them stops the run.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from worldforge.core.canonical import JSON
from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.execution.environments import SubmissionEnvironment, submission_environment
from worldforge.execution.files import copy_tree
from worldforge.execution.sandbox import (
    HostSpec,
    TrialLimits,
    TrialPool,
    remove_stale,
    resolve_isolation,
    sandbox_notes,
)
from worldforge.gateway import Gateway
from worldforge.gateway.exchange import served_digest
from worldforge.gateway.upstream import policy_temperature
from worldforge.pcg.programs.prompt import Program
from worldforge.pcg.programs.submission import SubmissionProgram
from worldforge.suites.science_birds.config import ItemKey
from worldforge.suites.science_birds.records import (
    GeneratedReply,
    ReplyValue,
    SubmissionEvidence,
    is_reply_value,
)
from worldforge.suites.science_birds.stage_cache import StageCache
from worldforge.suites.science_birds.stages import reply_preview, screen_reply
from worldforge.workspace import Run

#: The packages' per-trial limits (``max_time`` in their chat functions) and their default model.
PACKAGE_SECONDS = {"chatgpt4pcg": 120.0, "llms4pcg": 500.0}
PACKAGE_TOKENS = 25_000
PACKAGE_DEFAULT_MODEL = "gpt-3.5-turbo-0125"
#: Our wall-clock kill comes this long after the package's own time limit.
WALL_GRACE_S = 30.0
_warned: set[str] = set()


def limits_for(program: SubmissionProgram, options: Mapping[str, Any]) -> TrialLimits:
    """The trial limits from the package and the suite's ``submission_*`` options."""
    wall = options.get("submission_wall_seconds")
    memory = options.get("submission_memory_mb")
    output = options.get("submission_output_mb")
    default = TrialLimits()
    return TrialLimits(
        wall_seconds=float(wall) if wall else PACKAGE_SECONDS[program.package] + WALL_GRACE_S,
        memory_bytes=int(float(memory) * 1024 * 1024) if memory else default.memory_bytes,
        output_bytes=int(float(output) * 1024 * 1024) if output else default.output_bytes,
    )


def stage_files(program: SubmissionProgram) -> Path:
    """A private copy of exactly the submission's files (the sandbox binds it read-only): read
    without following links, each checked against the digest it was loaded with."""
    folder = Path(tempfile.mkdtemp(prefix="wf-submission-"))
    folder.chmod(0o755)  # read by the sandbox's unprivileged uid
    try:
        copy_tree(program.files, program.source, folder, label=str(program.source))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


@dataclass
class _Prepared:
    program: SubmissionProgram
    environment: SubmissionEnvironment | None
    error: str | None = None


def prepare(
    programs: Sequence[Program], options: Mapping[str, Any], cache_root: Path | None = None
) -> tuple[list[Program], dict[str, SubmissionEnvironment]]:
    """Resolve every submission's environment before any generation.

    Returns the programs with each submission's environment identity attached (it enters the
    program digest) and the environments by program name. With one program, an invalid one is a
    :class:`WorldForgeError` (exit 2); with several it becomes a program whose trials all fail.
    Environments are shared by every run on the machine
    (:func:`~worldforge.execution.environments.default_cache_root`), not kept in the run's
    ``cache_root``.
    """
    install = not bool(options.get("no_install", False))
    single = len(programs) == 1
    out: list[Program] = []
    envs: dict[str, SubmissionEnvironment] = {}
    for program in programs:
        if not isinstance(program, SubmissionProgram) or program.error is not None:
            out.append(program)
            continue
        try:
            env = submission_environment(
                program.requirements,
                package=program.package,
                install=install,
                where=str(program.source),
                index_url=options.get("index_url"),
                wheelhouse=options.get("wheelhouse"),
            )
        except WorldForgeError as exc:
            if single:
                raise
            out.append(replace(program, error=str(exc)))
            continue
        envs[program.name] = env
        out.append(replace(program, environment=env.identity()))
    return out, envs


class SubmissionTrials:
    """Trial pools for a run's submissions; :meth:`generate` is called per item (thread-safe)."""

    def __init__(
        self,
        programs: Sequence[Program],
        environments: Mapping[str, SubmissionEnvironment],
        options: Mapping[str, Any],
        *,
        run: Run | None = None,
        workers: int = 1,
    ) -> None:
        self.programs = {p.name: p for p in programs if isinstance(p, SubmissionProgram)}
        self.environments = dict(environments)
        self.options = dict(options)
        self.run = run
        self.workers = max(1, int(workers))
        requested = str(options.get("sandbox") or "auto")
        if requested not in ("auto", "bubblewrap", "process"):
            raise WorldForgeError(f"--sandbox: expected auto, bubblewrap or process, got {requested!r}.")
        # Probing bwrap starts a process: only runs with submissions pay for it. Fails closed:
        # no working sandbox is a usage error unless --sandbox process was asked for.
        self.isolation = resolve_isolation(requested) if self.programs else "none"
        if self.isolation == "bubblewrap":
            remove_stale()
        self._pools: dict[str, TrialPool] = {}
        self._staged: list[Path] = []
        self._lock = threading.Lock()
        self._failed_start: dict[str, str] = {}
        #: The last lines each trial printed, by item (for the team's failure summary; never digested).
        self.tails: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self.programs)

    def describe(self) -> dict[str, JSON]:
        """Provenance: which isolation ran and with what (never digested)."""
        return {
            **sandbox_notes(self.isolation),
            "programs": {
                name: {
                    "package": p.package,
                    "entry": f"{p.module}:{p.class_name}",
                    "environment": self.environments[name].identity() if name in self.environments else None,
                    "limits": limits_for(p, self.options).identity(),
                }
                for name, p in sorted(self.programs.items())
                if p.error is None
            },
        }

    def start(self) -> None:
        """Note the isolation in the run (warning once without a sandbox); pools start lazily,
        on the first trial, once the gateway listens."""
        if self.isolation == "process" and "process" not in _warned:
            _warned.add("process")
            warnings.warn(
                "submission trials run without a sandbox (--sandbox process): only process limits "
                "apply; this is no security boundary.",
                RuntimeWarning,
                stacklevel=2,
            )
        if self.run is not None:
            self.run.emit("submission.isolation", self.describe())

    def _pool(self, program: SubmissionProgram, port: int) -> TrialPool:
        with self._lock:
            pool = self._pools.get(program.name)
            if pool is not None:
                return pool
            if program.name in self._failed_start:
                raise WorldForgeError(self._failed_start[program.name])
            staged = stage_files(program)
            self._staged.append(staged)
            hidden = (str(self.run.workspace_dir),) if self.run is not None else ()
            spec = HostSpec(
                python=self.environments[program.name].python,
                package=program.package,
                source=staged,
                module=program.module,
                class_name=program.class_name,
                limits=limits_for(program, self.options),
                isolation=self.isolation,
                gateway_port=port,
                hidden=hidden,
            )
            try:
                pool = TrialPool(spec, self.workers)
            except WorldForgeError as exc:
                self._failed_start[program.name] = str(exc)
                raise
            self._pools[program.name] = pool
            return pool

    def generate(self, gateway: Gateway, key: ItemKey, seed: int, options: Mapping[str, object],
                 temperature: float | None) -> ReplyValue:  # fmt: skip
        """One trial: ``{"reply"|None, "error", "exchanges", "usage", "tokens", "calls"}``."""
        program = self.programs[key.program]
        if program.error is not None:
            return {"reply": None, "error": f"program: {program.error}", "exchanges": []}
        route = gateway.open_trial(
            key.item_id,
            key.model,
            options=options,
            seed=seed,
            temperature=temperature,
            max_tokens=PACKAGE_TOKENS,
            max_seconds=PACKAGE_SECONDS[program.package],
            aliases=(PACKAGE_DEFAULT_MODEL,),
        )
        try:
            pool: TrialPool | None = None
            failure = ""
            try:
                pool = self._pool(program, int(gateway.port))
            except WorldForgeError as exc:
                failure = str(exc)
            answer = (
                pool.run(
                    {
                        "token": route.token,
                        "team": program.team_name,
                        "letter": key.letter,
                        "trial": key.trial,
                        "model": key.model,
                    }
                )
                if pool is not None
                else {"outcome": "error", "reason": failure}
            )
        finally:
            exchanges = gateway.close_trial(route)
        tail = sanitize_text(str(answer.get("output_tail") or ""))[-2000:]
        self.tails[key.item_id] = tail
        if self.run is not None:
            self.run.emit(
                "submission.trial",
                {
                    "item_id": key.item_id,
                    "outcome": answer.get("outcome"),
                    "seconds": answer.get("seconds"),
                    "output_bytes": answer.get("output_bytes"),
                    "output_tail": tail,
                },
            )
        answered = [e["response"] for e in exchanges if "response" in e]
        prompt = sum(r["usage"]["prompt_tokens"] for r in answered)
        completion = sum(r["usage"]["completion_tokens"] for r in answered)
        served = sorted({r["model"] for r in answered})
        evidence: SubmissionEvidence = {"outcome": answer.get("outcome")}
        result: ReplyValue = {
            "exchanges": exchanges,
            "tokens": prompt + completion,
            "calls": len(exchanges),
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "served_models": served},
            "submission": evidence,
            "reply": None,
            "error": None,
        }
        outcome = answer.get("outcome")
        if route.over_budget and outcome in ("reply", "no_output", "error"):
            # The package raises its ValueError once the counted total passes the limit; the
            # gateway's count holds whatever the program did with that error or with the reply.
            answer = {
                **answer,
                "outcome": "no_output",
                "reason": f"Prompt token limit exceeded. {route.exceeded_at} > {route.max_tokens}",
            }
            outcome = "no_output"
            evidence = result["submission"] = {"outcome": outcome, "over_budget": True}
        reply = answer.get("reply")
        if outcome == "reply" and isinstance(reply, str):
            # The rules forbid changing the model's reply before it is returned; the evidence says
            # whether the returned text is byte-equal to a choice the gateway served to this trial.
            evidence["reply_is_model_output"] = served_digest(reply) in route.served
            return {**result, "reply": reply}
        reason = sanitize_text(str(answer.get("reason") or "no reason given"))
        where = answer.get("where")
        if where:
            evidence["where"] = where
        if outcome == "no_output":
            error = f"submission: no output (the package caught {reason or 'TimeoutError/ValueError'})"
        elif outcome == "killed":
            error = f"submission: {reason}"
        elif outcome == "crash":
            error = f"submission crashed: {reason}"
        else:
            error = f"submission raised {reason}{f' at {where}' if where else ''}"
        return {**result, "error": error}

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()
        for folder in self._staged:
            shutil.rmtree(folder, ignore_errors=True)
        self._staged = []


def submission_item(
    trials: SubmissionTrials | None,
    gateway: Gateway | None,
    cache: StageCache,
    key: ItemKey,
    seed: int,
    program: SubmissionProgram,
    model_identity: JSON,
) -> GeneratedReply:
    """One submission item's generate stage (the same cache and screening rules as prompt trials)."""
    options = {"target_character": key.letter, "trial_seed": seed}
    gen_input = digest_payload({"model": model_identity, "program": program.digest, "options": options})
    if gateway is None or trials is None:
        return {
            "prompt_digests": [],
            "generate_input": gen_input,
            "reply": None,
            "error": "generate: submissions run only through the gateway",
        }
    use_cache = gateway is None or not gateway.replaying
    cache_key = StageCache.key("generate", "submission/v1+gateway/v1", gen_input)
    cached = cache.get_json("generate", cache_key) if use_cache else None
    if isinstance(cached, dict) and is_reply_value(cached):
        return {"prompt_digests": [], "generate_input": gen_input, **cached}
    value = trials.generate(gateway, key, seed, options, policy_temperature(model_identity))
    reply = value.get("reply")
    if reply is not None:
        reason = screen_reply(reply)
        if reason is not None:
            preview = reply_preview(reply)
            digest = digest_bytes(reply.encode("utf-8", "surrogatepass"))
            return {
                "prompt_digests": [],
                "generate_input": gen_input,
                **value,
                "reply": None,
                "reply_preview": preview,
                "reply_digest": digest,
                "error": reason,
            }
        if use_cache and key.item_id not in gateway.stopped_items:  # a run-limit cut is no answer
            cache.put_json("generate", cache_key, value)
    return {"prompt_digests": [], "generate_input": gen_input, **value}


__all__ = [
    "PACKAGE_SECONDS",
    "PACKAGE_TOKENS",
    "SubmissionTrials",
    "limits_for",
    "prepare",
    "stage_files",
    "submission_item",
]
