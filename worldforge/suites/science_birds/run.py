"""Running the Science Birds items: generation, level stages, classification, records.

The unit of work is an *item* = (model, program, letter, trial). Items are processed in fixed-size
chunks: generate the replies (:mod:`.generate`: each trial's chat turns go through the recording
gateway, which asks the provider through the forge, so every exchange lands in the item record and
provider events and exchanges reach the run's event log; trials on model servers run several at
once), run the CPU-bound level stages in a process pool or on Ray, classify the images in one batch
(:mod:`.classify`: here, or in classifier actors while later chunks proceed), then record one JSON
item per unit in the run workspace, always in item order. A killed run therefore loses at most the
chunks in flight, and ``worldforge runs resume`` skips every recorded item whose input digest still
matches.

Everything that enters a record is JSON-native and free of timings, and the scores are always
recomputed *from the records* (never from in-memory floats), so a resumed run and an uninterrupted
run produce byte-identical results.
"""

from __future__ import annotations

import base64
import contextlib
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import NotRequired, TypedDict

from worldforge.core.canonical import JSON
from worldforge.core.digests import digest_bytes, digest_payload, digest_text
from worldforge.core.seeds import trial_seed
from worldforge.execution import NodeFuture
from worldforge.execution.local import start_pool
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.programs.prompt import Program
from worldforge.pcg.programs.submission import SubmissionProgram
from worldforge.pcg.sim.render import IMAGE_SIZE
from worldforge.pcg.similarity.predictions import top2_margin
from worldforge.pcg.similarity.prep import PrepSpec
from worldforge.providers.base import BaseProvider, Prefetch
from worldforge.providers.chat import CHAT_TRIAL_VERSION
from worldforge.suites.science_birds.classify import ItemClassifier, PendingVectors, Vectors
from worldforge.suites.science_birds.config import (
    VECTOR_DECIMALS,
    Classifier,
    ItemKey,
    SuiteConfig,
    enumerate_items,
)
from worldforge.suites.science_birds.generate import Generator, Job, PendingReplies, trial_options
from worldforge.suites.science_birds.records import (
    Exchanges,
    GeneratedReply,
    ItemRecord,
    LevelStageOutcome,
    StageEntry,
    SubmissionEvidence,
    TrialUsage,
    is_item_record,
)
from worldforge.suites.science_birds.stage_cache import StageCache
from worldforge.suites.science_birds.stages import (
    LevelJob,
    run_level_stages,
    stage_versions,
    thumbnail_data_uri,
)
from worldforge.suites.science_birds.submissions import SubmissionTrials
from worldforge.workspace import Run


class ItemContext(TypedDict):
    """What besides its key, program, seed and model an item's input digest covers: the code and
    classifier that turn a reply into scores."""

    classifier: dict[str, str]
    stages: dict[str, str]
    #: Present (``True``) only when unserved replies are kept: it changes the record.
    keep_unserved_replies: NotRequired[bool]


class _GenerateEvidence(TypedDict, total=False):
    """What a record carries of its trial beyond the reply, when the trial produced it."""

    usage: TrialUsage
    exchanges: Exchanges
    submission: SubmissionEvidence


@dataclass
class RunState:
    """Counters for the progress bar and the timing breakdown (never digested)."""

    timings: dict[str, float] = field(default_factory=dict)
    reused: int = 0
    processed: int = 0
    cache_hits: dict[str, int] = field(default_factory=dict)
    cache_misses: dict[str, int] = field(default_factory=dict)

    def add(self, stage: str, seconds: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + seconds


@dataclass
class _ChunkWork:
    """A chunk in flight: its keys, generated replies and the pending level-stage outcomes."""

    chunk: list[Job]
    generated: list[GeneratedReply]
    futures: list[Future[LevelStageOutcome]]
    outcomes: list[LevelStageOutcome]


@dataclass
class _Classifying:
    """A chunk whose level stages are done and whose images are being classified."""

    work: _ChunkWork
    levels: dict[str, LevelStageOutcome]
    pngs: dict[str, bytes]
    vectors: PendingVectors


_WORKER_CACHES: dict[str, StageCache] = {}


def _worker_stages(job: LevelJob, cache_root: str | None) -> LevelStageOutcome:
    key = cache_root or ""
    cache = _WORKER_CACHES.get(key)
    if cache is None:
        cache = _WORKER_CACHES[key] = StageCache(Path(cache_root) if cache_root else None)
    return run_level_stages(job, cache)


def item_input_digest(
    key: ItemKey, program: Program, seed: int, model_identity: JSON, context: ItemContext
) -> str:
    """What must match for a recorded item to be reused on resume."""
    return digest_payload(
        {
            "item": key.to_dict(),
            "program": program.digest,
            "trial_seed": seed,
            "model": model_identity,
            "context": context,
        }
    )


class ItemRunner:
    """Processes items chunk by chunk and records them; returns every record (reused or new)."""

    def __init__(
        self,
        config: SuiteConfig,
        forge: WorldForge,
        models: Sequence[str],
        *,
        run: Run | None = None,
        classifier: Classifier,
        model_identities: Mapping[str, JSON],
        cache: StageCache,
        state: RunState,
        gateway: Gateway | None = None,
        submissions: SubmissionTrials | None = None,
    ) -> None:
        self.config = config
        #: Trial pools for the run's submission programs (``SubmissionTrials``), if any.
        self.submissions = submissions
        #: The recording gateway every trial talks through (``None``: call the providers directly).
        self.gateway = gateway
        self.forge = forge
        self.models = list(models)
        self.run = run
        self.classifier = classifier
        self.model_identities = dict(model_identities)
        self.cache = cache
        self.state = state
        self.programs = {p.name: p for p in config.programs}
        replaying = gateway is not None and gateway.replaying
        #: Providers that may have work of their replies done ahead in the pool (none in a replay).
        self.prefetchers = {} if replaying else _prefetchers(forge, self.models)
        #: Level images by artifact path when there is no run workspace to write them to.
        self.images: dict[str, bytes] = {}
        self.versions = stage_versions()
        self.generator = Generator(
            config,
            forge,
            self.models,
            gateway=gateway,
            cache=cache,
            model_identities=self.model_identities,
            submissions=submissions,
        )
        #: Vectors per item, in this process or in the executor's classifier actors.
        self.classifier_stage = ItemClassifier(
            classifier,
            cache,
            embedding=config.diversity_vector == "embedding",
            single_thread=config.workers > 1,
        )
        self._prep: PrepSpec | None = None
        self._prep_known = False

    def prep_spec(self) -> PrepSpec | None:
        """The classifier's input shortcut for the renders, handed to the level workers so they
        prepare the classifier input from the in-memory image (``None``: the PNG is read here)."""
        if not self._prep_known:
            self._prep = self.classifier.prep_spec(4, (IMAGE_SIZE, IMAGE_SIZE))
            self._prep_known = True
        return self._prep

    @property
    def cohort_digest(self) -> str:
        """The cohort an item is scored in (weights depend on every program and model of the run)."""
        return digest_payload(
            {
                "programs": [p.digest for p in self.config.programs],
                "models": self.models,
                "letters": "".join(self.config.letters),
                "trials": self.config.trials,
            }
        )

    def _generate_stage(self, key: ItemKey, gen: GeneratedReply, digest: str) -> StageEntry:
        """The generate stage's entry, with what ``runs diff`` needs to explain a changed reply:
        prompt/options input and the model."""
        identity = self.model_identities.get(key.model)
        model_digest = identity.get("model_digest") if isinstance(identity, Mapping) else None
        return {
            "digest": digest,
            "version": CHAT_TRIAL_VERSION,
            "input_digest": gen.get("generate_input"),
            "model_digest": model_digest or digest_payload(identity),
        }

    @property
    def stopped(self) -> str | None:
        """Why generation stopped before every item was recorded (the run's token limit), if it did."""
        return self.gateway.stopped if self.gateway is not None else None

    def context(self) -> ItemContext:
        return {"classifier": self.classifier.identity(), "stages": self.versions}

    def run_all(
        self, progress: Callable[..., None] | None = None, *, executor: Executor | None = None
    ) -> dict[str, ItemRecord]:
        """Every item's record, in item order. ``executor``: a pool from :func:`start_pool`
        (started by the caller before the classifier loads); otherwise one is started here."""
        keys = enumerate_items(self.models, self.config)
        own: Executor | None = None
        try:
            if executor is None and self.config.workers > 1:
                executor = own = start_pool(self.config.workers)
            # The gateway's server thread starts after the pool has forked and stops with the items.
            self.classifier_stage.use_executor(executor)
            with self.gateway if self.gateway is not None else contextlib.nullcontext():
                try:
                    return self._run_keys(keys, executor, progress)
                finally:
                    self._close_workers()
        finally:
            if own is not None:
                own.shutdown(cancel_futures=True)

    def _close_workers(self) -> None:
        self.generator.close()
        self.classifier_stage.close()

    def _run_keys(
        self, keys: list[ItemKey], executor: Executor | None, progress: Callable[..., None] | None
    ) -> dict[str, ItemRecord]:
        context = self.context()
        done: Mapping[str, object] = {}
        if self.run is not None:
            done = self.run.completed_items()
        records: dict[str, ItemRecord] = {}
        pending: list[Job] = []
        for key in keys:
            program = self.programs[key.program]
            seed = trial_seed(self.config.master_seed, key.program, key.letter, key.trial)
            item_context = context
            if self.config.keep_unserved_replies and isinstance(program, SubmissionProgram):
                item_context = {**context, "keep_unserved_replies": True}  # it changes the record
            identity = self.model_identities.get(key.model)
            digest = item_input_digest(key, program, seed, identity, item_context)
            prior_record = _unwrap_record(done.get(key.item_id))
            if prior_record is not None and prior_record.get("input_digest") == digest:
                records[key.item_id] = prior_record
                self.state.reused += 1
                if progress:
                    progress(1, True)
                continue
            pending.append((key, seed, digest))
        if pending:
            self.classifier_stage.warm()
        # Pipelined: while the pool simulates chunk i, this process generates chunk i+1; trials on
        # model servers start two chunks ahead; classifier actors may hold several chunks at once.
        step = self.config.chunk_size
        previous: _ChunkWork | None = None
        chunks = [pending[start : start + step] for start in range(0, len(pending), step)]
        prefetch: dict[int, list[_Prefetched]] = {}
        replies: dict[int, PendingReplies] = {}
        classifying: deque[_Classifying] = deque()
        for index in range(min(2, len(chunks))):
            prefetch[index] = self._prefetch(chunks[index], executor)
            replies[index] = self.generator.start(chunks[index])
        for index, chunk in enumerate([*chunks, None]):
            current = None
            if chunk is not None:
                self._await_prefetch(prefetch.pop(index, []))
                current = self._submit_chunk(chunk, replies.pop(index), executor)
                if index + 2 < len(chunks):
                    prefetch[index + 2] = self._prefetch(chunks[index + 2], executor)
                    replies[index + 2] = self.generator.start(chunks[index + 2])
            if previous is not None:
                classifying.append(self._classify_chunk(previous))
            depth = self.classifier_stage.depth
            while classifying and (
                chunk is None or classifying[0].vectors.done() or len(classifying) > depth
            ):
                for record in self._record_chunk(classifying.popleft()):
                    records[record["item_id"]] = record
                    if progress:
                        progress(1)
            previous = current
        # Items the run's token limit stopped have no record (see :attr:`stopped`).
        return {k.item_id: records[k.item_id] for k in keys if k.item_id in records}

    # -- one chunk --------------------------------------------------------------------------------
    def _prefetch(self, chunk: list[Job], executor: Executor | None) -> list[_Prefetched]:
        """Start in the pool the work a chunk's replies need that their providers can have done ahead
        (the mock's letter programs: a pure function of the letter, seed and variant), so generation
        in this process is a cache hit. Other providers: nothing."""
        if executor is None:
            return []
        started: list[_Prefetched] = []
        seen: set[tuple[str, Prefetch]] = set()
        for key, seed, _ in chunk:
            provider = self.prefetchers.get(key.model)
            work = provider.prefetch(trial_options(key, seed)) if provider is not None else None
            if provider is None or work is None or (key.model, work) in seen:
                continue
            seen.add((key.model, work))
            started.append(_Prefetched(provider, work, executor.submit(work.function, *work.args)))
        return started

    def _await_prefetch(self, started: list[_Prefetched]) -> None:
        if not started:
            return

        t0 = time.perf_counter()
        for item in started:
            item.provider.accept_prefetched(item.work, item.future.result())
        self.state.add("generate_prefetch_wait", time.perf_counter() - t0)

    def _submit_chunk(
        self, chunk: list[Job], replies: PendingReplies, executor: Executor | None
    ) -> _ChunkWork:
        """Collect the replies (generated here or on threads) and start the level stages (the pool)."""
        t0 = time.perf_counter()
        generated = replies.result()
        self.state.add("generate", time.perf_counter() - t0)
        prep = self.prep_spec()
        jobs = [
            LevelJob(key.item_id, reply, tuple(self.versions.items()), prep)
            for (key, _, _), gen in zip(chunk, generated, strict=True)
            if gen.get("error") is None and (reply := gen["reply"]) is not None
        ]
        root = str(self.cache.root) if self.cache.root is not None else None
        if self.config.executor != "local":
            root = None  # remote workers never write to this machine's disk; the driver does
        if executor is not None and len(jobs) > 1:
            return _ChunkWork(
                chunk, generated, [executor.submit(_worker_stages, job, root) for job in jobs], []
            )
        t0 = time.perf_counter()
        outcomes = [run_level_stages(job, self.cache) for job in jobs]
        self.state.add("level_stages", time.perf_counter() - t0)
        return _ChunkWork(chunk, generated, [], outcomes)

    def _classify_chunk(self, work: _ChunkWork) -> _Classifying:
        """Collect the level stages and start classifying the images in one batch."""
        t0 = time.perf_counter()
        outcomes = work.outcomes or [future.result() for future in work.futures]
        by_id = {o["item_id"]: o for o in outcomes}
        if self.run is not None:  # which machine ran which item: informational, outside digests
            for future, outcome in zip(work.futures, outcomes, strict=False):
                node = future.node if isinstance(future, NodeFuture) else None
                if node is not None:
                    self.run.emit("item.node", {"item_id": outcome["item_id"], "node": node})
        self.state.add("level_stages_wait", time.perf_counter() - t0)

        t0 = time.perf_counter()
        pngs: dict[str, bytes] = {
            iid: base64.b64decode(o["png_b64"]) for iid, o in by_id.items() if o.get("png_b64")
        }
        prepared = {iid: o["prepared"] for iid, o in by_id.items() if "prepared" in o}
        pending = self.classifier_stage.start(pngs, prepared)
        self.state.add("classify", time.perf_counter() - t0)
        return _Classifying(work, by_id, pngs, pending)

    def _record_chunk(self, done: _Classifying) -> list[ItemRecord]:
        """Record every item of a classified chunk, in chunk order."""
        t0 = time.perf_counter()
        vectors = self.classifier_stage.finish(done.vectors)
        if self.run is not None and done.vectors.node is not None:
            for iid, _ in done.vectors.missing:  # informational, outside digests
                self.run.emit("item.classify_node", {"item_id": iid, "node": done.vectors.node})
        self.state.add("classify_wait", time.perf_counter() - t0)
        work, by_id, pngs = done.work, done.levels, done.pngs
        t0 = time.perf_counter()
        records = []
        for (key, seed, digest), gen in zip(work.chunk, work.generated, strict=True):
            if gen.get("stopped"):  # the run's token limit stopped it: resume runs it again
                continue
            level = by_id.get(key.item_id)
            record = self._record(key, seed, digest, gen, level, pngs.get(key.item_id), vectors)
            png = pngs.get(key.item_id)
            if self.run is not None:
                if png is not None:
                    self.run.write_artifact(record["image"]["path"], png, media_type="image/png")
                self.run.record_item(key.item_id, digest, record)
            elif png is not None:
                self.images[record["image"]["path"]] = png  # returned as report artifacts
            records.append(record)
            self.state.processed += 1
        self.state.add("record", time.perf_counter() - t0)
        return records

    def _record(
        self,
        key: ItemKey,
        seed: int,
        digest: str,
        gen: GeneratedReply,
        level: LevelStageOutcome | None,
        png: bytes | None,
        vectors: Mapping[str, Vectors],
    ) -> ItemRecord:
        reply = gen.get("reply")
        stages: dict[str, StageEntry] = {}
        evidence: _GenerateEvidence = {}
        if (usage := gen.get("usage")) is not None:
            evidence["usage"] = usage
        if (exchanges := gen.get("exchanges")) is not None:
            evidence["exchanges"] = exchanges
        if (submission := gen.get("submission")) is not None:
            evidence["submission"] = submission
        record: ItemRecord = {
            "item_id": key.item_id,
            "input_digest": digest,
            **key.to_dict(),
            "trial_seed": seed,
            "prompt_digests": list(gen["prompt_digests"]),
            "tokens": gen.get("tokens"),
            **evidence,
            "reply": reply,
            "status": "failed",
            "failed_stage": None,
            "error": None,
            "stages": stages,
            "cohort_digest": self.cohort_digest,
            "sta": 0.0,
            "sim": 0.0,
        }
        if reply is None or gen.get("error") is not None:
            # No reply, or one the rules do not score (kept whole, with its digest, as evidence).
            record["failed_stage"] = "generate"
            record["error"] = gen.get("error")
            outcome: dict[str, str | None] = {"error": gen.get("error")}
            if (preview := gen.get("reply_preview")) is not None:
                record["reply_preview"] = preview
                record["reply_digest"] = gen.get("reply_digest")
            elif reply is not None:
                record["reply_digest"] = outcome["reply"] = digest_text(reply)
            stages["generate"] = self._generate_stage(key, gen, digest_payload(outcome))
            return record
        stages["generate"] = self._generate_stage(key, gen, digest_text(reply))
        assert level is not None
        stages.update(level["stages"])
        record["program_text"] = level.get("program")
        if "extraction" in level:
            record["extraction"] = level["extraction"]
        if (xml := level.get("xml")) is not None:
            record["xml"] = xml
        if (stability := level.get("stability")) is not None:
            record["stability"] = stability
        if failed_stage := level.get("failed_stage"):
            record["failed_stage"] = failed_stage
            record["error"] = level.get("error")
            return record
        assert png is not None
        softmax, embedding = vectors[key.item_id]
        record["image"] = {"path": f"images/{key.item_id}.png", "digest": digest_bytes(png)}
        record["thumbnail"] = level.get("thumbnail") or thumbnail_data_uri(png)
        record["softmax"] = softmax
        # How sure the classifier was: its likeliest letter's probability minus the runner-up's,
        # from the recorded (rounded) softmax so any reader recomputes the same number. Near 0, the
        # similarity score rests on a coin flip between two letters.
        record["margin"] = round(top2_margin(softmax), VECTOR_DECIMALS)
        if self.config.diversity_vector == "embedding":
            record["embedding"] = embedding
        identity = self.classifier.identity()
        stages["classify"] = {
            "digest": digest_payload({"softmax": softmax, "embedding": embedding}),
            "version": f"classify/v1:{self.config.diversity_vector}",
            "input_digest": digest_bytes(png),
            "weights_digest": identity.get("weights_digest") or digest_payload(identity),
        }
        assert stability is not None  # a level that was rendered was simulated
        record["sta"] = float(stability["stability"])
        record["sim"] = float(softmax[LETTERS.index(key.letter)])
        record["status"] = "ok"
        record["failed_stage"] = None
        record["error"] = None
        return record


@dataclass
class _Prefetched:
    """Work a provider handed out (:meth:`BaseProvider.prefetch`), running in the pool."""

    provider: BaseProvider
    work: Prefetch
    future: Future[object]


def _prefetchers(forge: WorldForge, models: Sequence[str]) -> dict[str, BaseProvider]:
    """``{model: provider}`` for the models whose provider can say what work of a reply may be done
    ahead (:meth:`BaseProvider.prefetch`; the built-in mock's letter programs)."""
    out: dict[str, BaseProvider] = {}
    for name in models:
        provider = forge.provider(name)
        if isinstance(provider, BaseProvider):
            out[name] = provider
    return out


def _unwrap_record(prior: object) -> ItemRecord | None:
    """``completed_items()`` values may be the record itself or a wrapper holding it; a value that
    is not a whole record is not reused (the item runs again)."""
    if not isinstance(prior, Mapping):
        return None
    if "item_id" in prior and "stages" in prior:
        record = dict(prior)
    else:
        inner = prior.get("record")
        if not isinstance(inner, Mapping):
            return None
        record = dict(inner)
    return record if is_item_record(record) else None


__all__ = [
    "ItemRunner",
    "RunState",
    "item_input_digest",
]
