"""The ``science-birds`` suite: LLM prompt programs that build Science Birds levels shaped like A–Z.

This is the product's main job. For every model × program × letter × trial it runs the
competition's protocol (generate → extract → convert → simulate → render → classify), records one
item per unit in the run workspace, then computes diversity, weights, per-model prompt scores,
totals over models and the normalised ranking. It *produces* (the framework's suite contract,
:class:`~worldforge.evaluation.SuiteOutcome`) one result per (model, program), tables, image
galleries and the official result files; the framework checks capabilities and seals the report
(digests, provenance, failure gallery). Its HTML page (:mod:`.page`) is registered with the HTML
renderer when this module is imported.

Options (from ``worldforge eval`` flags or ``EvaluationSuite.from_builtin("science-birds",
options=...)``): ``programs`` (built-in names or folders; default both baselines), ``trials``
(default 10), ``characters`` (default A–Z), ``classifier`` (id or folder; default bundled),
``workers``, ``diversity_vector`` (softmax|embedding), ``seed`` (master seed, default 42),
``ollama_host``, ``openai_base_url``, ``executor`` (local|ray), ``ray_address``,
``exact`` (decimal arithmetic), ``progress`` and ``cache_dir``; for submissions ``no_install``,
``sandbox``, ``wheelhouse``, ``index_url`` and ``keep_unserved_replies`` (score replies the model
never served, which the rules score 0: :mod:`.unserved`); ``uncertainty_resamples`` (letter draws
of the ranking's 95 % intervals, default 10,000; 0 turns them off) and ``uncertainty_seed``
(:mod:`.intervals`); ``pricing`` (``{model: {input, output}}`` per million tokens; default the
project configuration's ``pricing:``) and ``max_run_tokens`` (stop generation before the run's
tokens would pass it; resumable), both read by :mod:`.usage`;
``replay`` (a recorded run directory or :class:`~worldforge.gateway.ReplaySource`: answer every
request from its exchanges; ``eval --replay`` hands the framework's replay to ``produce`` instead)
and ``gateway`` (``False`` calls the providers directly, unrecorded;
kept for benchmarking the gateway's cost).

Every trial talks to its model through the recording gateway (:mod:`worldforge.gateway`), so each
item record carries its exchanges as evidence and a run can be replayed without the model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console
from rich.progress import Progress

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.errors import WorldForgeError
from worldforge.evaluation.contract import SuiteOutcome, SuiteRun
from worldforge.evaluation.options import SuiteBuilder
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.suite import EvaluationSuite
from worldforge.evaluation.summary import USAGE_SECTION
from worldforge.evaluation.types import EvaluationResult
from worldforge.execution import executor_for
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway, ReplaySource, load_replay, write_session
from worldforge.pcg.programs.submission import SubmissionProgram
from worldforge.pcg.similarity.accuracy import accuracy_sentence, classifier_accuracy
from worldforge.providers.base import BaseProvider
from worldforge.reports.html import register_html_page
from worldforge.suites.science_birds.config import (
    Classifier,
    ScienceBirdsOptions,
    SuiteConfig,
    enumerate_items,
    iter_progress_columns,
)
from worldforge.suites.science_birds.field import qualification_rows, team_summaries
from worldforge.suites.science_birds.intervals import assess as assess_uncertainty
from worldforge.suites.science_birds.page import render_page
from worldforge.suites.science_birds.report import build_sections, official_artifacts, result_rows
from worldforge.suites.science_birds.run import ItemRunner, RunState
from worldforge.suites.science_birds.scores import score_cohort
from worldforge.suites.science_birds.stage_cache import StageCache
from worldforge.suites.science_birds.stages import module_version, stage_versions
from worldforge.suites.science_birds.submissions import SubmissionTrials
from worldforge.suites.science_birds.submissions import prepare as prepare_submissions
from worldforge.suites.science_birds.unserved import (
    has_submissions,
    provenance_note,
    treatment,
    unserved_counts,
)
from worldforge.suites.science_birds.usage import (
    check_pricing,
    usage_rows,
    usage_section,
    wall_seconds_by_program,
)
from worldforge.workspace import Run

SUITE_ID = "science-birds"
SUITE_NAME = "Science Birds letter levels (ChatGPT4PCG / LLMs4PCG protocol)"
SUITE_VERSION = "1.0"
CLAIM_BOUNDARY = (
    "Scores follow the ChatGPT4PCG/LLMs4PCG scoring policy, but stability comes from WorldForge's "
    "Box2D re-implementation of the Science Birds evaluator and similarity/diversity from the "
    "classifier named in the measurement section (by default the bundled letter classifier, not the "
    "official vit-base-uppercase-english-characters model). They are not the official Unity/ViT "
    "figures and are comparable only with runs that used the same classifier and physics versions."
)
METRIC_SEMANTICS = (
    "One result per (model, program). score = the program's prompt score for that model in [0, 1] "
    "(weight x stability x similarity per trial, times diversity per letter, averaged over letters); "
    "metrics carry the total over models, the normalised score (100 x total / sum of totals) and "
    "the rank. passed = the program produced at least one scored level for that model. Failed trials "
    "(no code, converter errors, provider errors, hostile replies) score 0."
)

register_html_page(SUITE_ID, render_page)  # the suite's page for its reports; other ids stay generic


def _model_identity(manifest: JSON, name: str, provider: object = None) -> JSONObject:
    """The part of a runtime manifest that determines replies (hosts, server details and clients
    excluded: the same model behind another port or server build keeps its recorded items).

    A provider whose replies are produced by code (the built-in mock) names the modules that write
    them (``reply_code``), and its identity also carries their versions: changing the glyph
    decomposition invalidates cached replies and recorded items instead of silently mixing old and
    new levels in one run.
    """
    identity: JSONObject = (
        {k: v for k, v in sorted(manifest.items()) if k not in {"host", "base_url", "server", "client"}}
        if isinstance(manifest, Mapping)
        else {"provider": name}
    )

    if isinstance(provider, BaseProvider) and provider.reply_code:
        identity["generator_code"] = [module_version(module) for module in provider.reply_code]
    return identity


def _replay_source(options: Mapping[str, Any]) -> ReplaySource | None:
    """The recorded run a replay answers from: the ``replay`` option, a loaded
    :class:`~worldforge.gateway.ReplaySource` or a run directory (``None``: ask the models)."""
    value = options.get("replay")
    if value is None or value == "":
        return None
    if isinstance(value, ReplaySource):
        return value
    if isinstance(value, str | Path):
        return load_replay(value)
    raise WorldForgeError(f"replay: expected a recorded run directory, got {type(value).__name__}.")


def _cache_root(config: SuiteConfig, run: Run | None) -> Path | None:
    if config.cache_dir is not None:
        return config.cache_dir
    return Path(run.workspace_dir) / "cache" / "science-birds" if run is not None else None


def _record_inputs(run: Run, config: SuiteConfig, manifests: Mapping[str, JSON]) -> None:
    for prog in config.programs:
        if isinstance(prog, SubmissionProgram):
            # One input per file, so ``runs diff`` names the file that changed.
            for entry in prog.files:
                name = f"program:{prog.name}/{entry.path}"
                run.add_input_digest(name, prog.source / entry.path, entry.digest, entry.size)
            run.add_input_value(
                f"program:{prog.name}#submission",
                {k: v for k, v in prog.identity().items() if k != "files"},
            )
            continue
        for turn in prog.turns:
            name = f"program:{prog.name}/prompts/{turn.file}"
            path = prog.source / "prompts" / turn.file if prog.source is not None else None
            if path is not None and path.is_file() and not path.is_symlink():
                run.add_input_file(name, path)
            else:
                run.add_input_value(name, turn.text)


def evaluate(
    providers: Sequence[str] | str,
    *,
    forge: WorldForge | None = None,
    options: Mapping[str, Any] | None = None,
    run: Run | None = None,
    dataset_manifests: Iterable[Any] | None = None,
    classifier: Classifier | None = None,
    state: RunState | None = None,
    command: Sequence[str] | None = None,
) -> EvaluationReport:
    """Run the suite through the framework and return its sealed report (see the module docstring):
    ``make_suite(options, classifier=..., state=...).run_report(...)`` in one call."""
    suite = make_suite(options, classifier=classifier, state=state)
    return suite.run_report(
        providers, forge=forge, run=run, dataset_manifests=dataset_manifests, command=command
    )


def produce(
    context: SuiteRun,
    config: SuiteConfig,
    *,
    classifier: Classifier | None = None,
    state: RunState | None = None,
) -> SuiteOutcome:
    """Every item of the protocol for the providers the framework checked, scored and ranked."""
    if config.trials < 2:
        raise WorldForgeError("--trials: diversity needs at least 2 trials per letter.")
    models = list(context.providers)
    forge, run = context.forge, context.run
    state = state or RunState()
    replay = context.replay if context.replay is not None else _replay_source(config.options)
    manifests: JSONObject = {}
    for name in models:
        # A replay stands on the recorded preflight: the server may be long gone.
        manifests[name] = replay.manifest(name) if replay is not None else forge.runtime_manifest(name)
    identities: JSONObject = {
        k: replay.identity(k) if replay is not None else _model_identity(v, k, forge.provider(k))
        for k, v in manifests.items()
    }
    programs, environments = prepare_submissions(config.programs, config.options, _cache_root(config, run))
    config = replace(config, programs=tuple(programs))
    submissions = SubmissionTrials(
        config.programs, environments, config.options, run=run, workers=config.workers
    )
    gateway = None
    if replay is not None or submissions or config.options.get("gateway", True) is not False:
        gateway = Gateway(forge, models=models, run=run, replay=replay, max_run_tokens=config.max_run_tokens)
    elif config.max_run_tokens is not None:
        raise WorldForgeError("--max-run-tokens: the run's tokens are counted by the gateway; turn it on.")
    if submissions:
        submissions.start()
    # Fork the level-stage workers before the classifier (torch) loads in this process: the
    # workers never need it, and forking a process with torch's thread pools is best avoided.
    executor = _level_executor(config)
    try:
        return _produce_with(
            context,
            config,
            classifier,
            state,
            manifests,
            identities,
            executor,
            gateway,
            submissions,
        )
    finally:
        submissions.close()
        if executor is not None:
            executor.shutdown(cancel_futures=True)


def _level_executor(config: SuiteConfig) -> Executor | None:
    """Where the level stages run: this machine's pool (``workers`` > 1), or Ray when the
    ``executor`` option says so (``ray_address``, else ``RAY_ADDRESS``, else a private cluster)."""
    address = config.options.get("ray_address")
    return executor_for(config.options.get("executor"), config.workers, str(address) if address else None)


def _produce_with(
    context: SuiteRun,
    config: SuiteConfig,
    classifier: Classifier | None,
    state: RunState,
    manifests: JSONObject,
    identities: JSONObject,
    executor: Executor | None,
    gateway: Gateway | None = None,
    submissions: SubmissionTrials | None = None,
) -> SuiteOutcome:
    models = list(context.providers)
    forge, run = context.forge, context.run
    classifier = classifier or Classifier(config.classifier)
    cache = StageCache(_cache_root(config, run))
    input_payload = {
        "suite_id": SUITE_ID,
        "suite_version": SUITE_VERSION,
        "providers": models,
        "config": config.identity(),
        "models": identities,
        "classifier": classifier.identity(),
        "dataset_manifests": list(context.dataset_refs),
    }
    context.record_inputs(input_payload, items=len(enumerate_items(models, config)))
    if run is not None:
        _record_inputs(run, config, manifests)

    runner = ItemRunner(
        config,
        forge,
        models,
        run=run,
        classifier=classifier,
        model_identities=identities,
        cache=cache,
        state=state,
        gateway=gateway,
        submissions=submissions,
    )
    if gateway is not None:
        write_session(run, manifests, identities)  # what a later --replay of this run stands on
    total = len(enumerate_items(models, config))
    started = time.perf_counter()
    if config.progress:
        with Progress(*iter_progress_columns(), console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task("science-birds", total=total, base=0)
            reused = [0]

            def advance(n: int, was_reused: bool = False) -> None:
                if was_reused:
                    reused[0] += n
                bar.update(task, advance=n, base=reused[0])

            records = runner.run_all(advance, executor=executor)
    else:
        records = runner.run_all(executor=executor)
    state.add("items_total", time.perf_counter() - started)
    state.cache_hits.update(cache.hits)
    state.cache_misses.update(cache.misses)

    t0 = time.perf_counter()
    scores = score_cohort(
        records, models, config.programs, config.letters, config.trials, config.diversity_vector, config.exact
    )
    measurement = {
        "classifier": classifier.identity(),
        "classifier_accuracy": classifier_accuracy(classifier.identity()),
        "stage_versions": stage_versions(),
        "diversity_vector": config.diversity_vector,
        "trials": config.trials,
        "letters": "".join(config.letters),
        "master_seed": config.master_seed,
        "arithmetic": "exact-decimal" if config.exact else "float64",
        "models": identities,
    }
    if has_submissions(config.programs):  # a run without submissions keeps its payload as it was
        measurement["unserved_replies"] = treatment(config.keep_unserved_replies)
    keep = config.keep_unserved_replies
    t_uncertainty = time.perf_counter()
    uncertainty = assess_uncertainty(
        scores, resamples=config.uncertainty_resamples, seed=config.uncertainty_seed
    )
    state.add("ranking_uncertainty", time.perf_counter() - t_uncertainty)
    sections = build_sections(
        scores,
        records,
        config.programs,
        config.letters,
        measurement,
        keep_unserved=keep,
        uncertainty=uncertainty,
    )
    usage = usage_rows(records, models, [p.name for p in config.programs], config.pricing)
    sections[USAGE_SECTION] = usage_section(usage, runner.stopped)
    if gateway is not None:  # machine-dependent: the event log only, never a digested payload
        wall = wall_seconds_by_program(gateway.item_seconds, records)
        state.add("gateway_wall", sum(float(row["gateway_wall_seconds"]) for row in wall))
        if run is not None:
            run.emit("gateway.usage", {"rows": wall})
    rows = result_rows(scores, records, config.programs)
    results = [
        EvaluationResult(
            SUITE_ID,
            SUITE_NAME,
            row["scenario"],
            row["provider"],
            row["score"],
            row["passed"],
            row["metrics"],
        )
        for row in rows
    ]
    extra = official_artifacts(scores, unserved_counts(records, config.programs), keep, uncertainty, usage)
    if config.qualification:  # the field's verdicts: a report section and an attested artifact
        ran = {p.name for p in config.programs}
        sections["qualification"] = qualification_rows(config.qualification, ran)
        extra["science-birds/qualification.json"] = (
            json.dumps(list(config.qualification), indent=2, sort_keys=True) + "\n"
        )
        tails = submissions.tails if submissions is not None else {}
        extra.update(team_summaries(config.qualification, records, config.programs, tails))
    extra.update(sorted(runner.images.items()))  # per-item images (a run workspace already has them)
    state.add("score_and_report", time.perf_counter() - t0)

    failed = sum(1 for r in records.values() if r.get("status") != "ok")
    ident = classifier.identity()
    versions = stage_versions()
    claim_boundary = (
        f"{CLAIM_BOUNDARY} This report: classifier {ident.get('id')} "
        f"(weights {ident.get('weights_digest')}), physics {versions['simulate']}, "
        f"renderer {versions['render']}. {accuracy_sentence(classifier_accuracy(ident))}"
    )
    return SuiteOutcome(
        tuple(results),
        sections=sections,
        artifacts=extra,
        runtime_manifests=manifests,
        claim_boundary=claim_boundary,
        notes=f"{len(records)} items; {failed} failed trials"
        + _isolation_note(submissions)
        + provenance_note(records, config.programs, keep),
        rerun_options=cli_options(config.options),
    )


def _isolation_note(submissions: SubmissionTrials | None) -> str:
    """Which isolation the submission trials ran under (provenance, kept out of digests)."""
    if not submissions:
        return ""
    info = submissions.describe()
    detail = info.get("sandbox") or info.get("boundary") or "no details"
    extra = "".join(f"; {info[k]}" for k in ("uid", "limits") if info.get(k))
    return f"; submission trials isolated by {info['isolation']}: {detail}{extra}"


#: Options that map to ``worldforge eval`` flags (used for rerun commands in the failure gallery).
CLI_OPTION_KEYS = (
    "programs",
    "trials",
    "characters",
    "classifier",
    "workers",
    "diversity_vector",
    "seed",
    "ollama_host",
    "openai_base_url",
    "executor",
    "ray_address",
    "max_connections",
    "no_install",
    "sandbox",
    "keep_unserved_replies",
    "field",
    "run_unqualified",
    "uncertainty_resamples",
    "uncertainty_seed",
)


def cli_options(options: Mapping[str, object]) -> dict[str, object]:
    """The options a rerun command repeats (:data:`CLI_OPTION_KEYS` that are set)."""
    out: dict[str, object] = {}
    for key in CLI_OPTION_KEYS:
        value = options.get(key, options.get("program") if key == "programs" else None)
        if value is not None and value != [] and value != "":
            out[key] = value
    return out


class ScienceBirdsSuite(EvaluationSuite):
    """The protocol as one suite: it produces every item's results, the ranking sections and the
    official files (:func:`produce`); the framework checks capabilities and seals the report.

    Options are validated once, when the suite is built, so bad options fail before any provider
    is called and the run uses the configuration that was checked. ``classifier`` and ``state``
    let tests and benchmarks substitute the classifier and read the run's counters.
    """

    replayable: ClassVar[bool] = True

    def __init__(
        self,
        options: Mapping[str, Any] | None = None,
        *,
        classifier: Classifier | None = None,
        state: RunState | None = None,
    ) -> None:
        opts = dict(options or {})
        self.config = SuiteConfig.from_options(opts)
        super().__init__(
            SUITE_NAME,
            (),
            suite_id=SUITE_ID,
            suite_version=SUITE_VERSION,
            claim_boundary=CLAIM_BOUNDARY,
            metric_semantics=METRIC_SEMANTICS,
            options=opts,
            cli_ref=SUITE_ID,
            required_capabilities=("generate",),
        )
        self.classifier = classifier
        self.state = state

    def check_providers(self, providers: Sequence[str], forge: WorldForge) -> None:
        """The capability gate, and a price for every model when the run is priced: both before
        the run exists, so a model missing from the price map costs no request."""
        super().check_providers(providers, forge)
        check_pricing(self.config.pricing, providers)

    def produce(self, context: SuiteRun) -> SuiteOutcome:
        return produce(context, self.config, classifier=self.classifier, state=self.state)


def make_suite(
    options: Mapping[str, Any] | None = None,
    *,
    classifier: Classifier | None = None,
    state: RunState | None = None,
) -> ScienceBirdsSuite:
    """The suite for ``options`` (see the module docstring), optionally with its classifier and
    run counters supplied."""
    return ScienceBirdsSuite(options, classifier=classifier, state=state)


#: The built-in factory (``EvaluationSuite.from_builtin("science-birds", options=...)``), declaring
#: the options ``worldforge eval --suite-option KEY=VALUE`` takes.
build_suite = SuiteBuilder(make_suite, ScienceBirdsOptions)


__all__ = [
    "CLAIM_BOUNDARY",
    "METRIC_SEMANTICS",
    "SUITE_ID",
    "SUITE_VERSION",
    "ScienceBirdsSuite",
    "build_suite",
    "evaluate",
    "make_suite",
    "produce",
]
