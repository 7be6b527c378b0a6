"""The ``science-birds`` suite: LLM prompt programs that build Science Birds levels shaped like A–Z.

This is the product's main job. For every model × program × letter × trial it runs the
competition's protocol (generate → extract → convert → simulate → render → classify), records one
item per unit in the run workspace, then computes diversity, weights, per-model prompt scores,
totals over models and the normalised ranking, and returns an :class:`EvaluationReport` with one
result per (model, program), tables, image galleries and the official result files.

Options (from ``worldforge eval`` flags or ``EvaluationSuite.from_builtin("science-birds",
options=...)``): ``programs`` (built-in names or folders; default both baselines), ``trials``
(default 10), ``characters`` (default A–Z), ``classifier`` (id or folder; default bundled),
``workers``, ``diversity_vector`` (softmax|embedding), ``seed`` (master seed, default 42),
``ollama_host``, ``openai_base_url``, ``executor`` (local|ray), ``ray_address``,
``exact`` (decimal arithmetic), ``progress`` and ``cache_dir``; for submissions ``no_install``,
``sandbox``, ``wheelhouse``, ``index_url`` and ``keep_unserved_replies`` (score replies the model
never served, which the rules score 0: :mod:`.unserved`);
``replay`` (a recorded run directory or :class:`~worldforge.gateway.ReplaySource`: answer every
request from its exchanges) and ``gateway`` (``False`` calls the providers directly, unrecorded;
kept for benchmarking the gateway's cost).

Every trial talks to its model through the recording gateway (:mod:`worldforge.gateway`), so each
item record carries its exchanges as evidence and a run can be replayed without the model.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from worldforge import __version__
from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.core.timeutil import utc_now_iso
from worldforge.datasets import dataset_references
from worldforge.evaluation.gallery import build_cases
from worldforge.evaluation.provenance import ProvenanceEnvelope
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.suite import EvaluationSuite
from worldforge.evaluation.types import EvaluationResult, EvaluationScenario
from worldforge.execution import executor_for
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway, ReplaySource, load_replay, write_session
from worldforge.pcg.programs.submission import SubmissionProgram
from worldforge.pcg.similarity.accuracy import accuracy_sentence, classifier_accuracy
from worldforge.providers.mock import MockProvider
from worldforge.suites.science_birds.config import (
    Classifier,
    SuiteConfig,
    enumerate_items,
    iter_progress_columns,
)
from worldforge.suites.science_birds.field import qualification_rows, team_summaries
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


def _model_identity(manifest: Any, name: str, provider: Any = None) -> Any:
    """The part of a runtime manifest that determines replies (hosts, server details and clients
    excluded: the same model behind another port or server build keeps its recorded items).

    The built-in mock's replies are produced by code, so its identity also carries the versions of
    the modules that write them: changing the glyph decomposition invalidates cached replies and
    recorded items instead of silently mixing old and new levels in one run.
    """
    identity = (
        {k: v for k, v in sorted(manifest.items()) if k not in {"host", "base_url", "server", "client"}}
        if isinstance(manifest, Mapping)
        else {"provider": name}
    )

    if type(provider) is MockProvider:
        identity["generator_code"] = [
            module_version("worldforge.providers.mock_letters"),
            module_version("worldforge.pcg.levels.glyphs"),
            module_version("worldforge.pcg.levels.drop_plan"),
        ]
    return identity


def _replay_source(options: Mapping[str, Any]) -> Any:
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


def _cache_root(config: SuiteConfig, run: Any) -> Path | None:
    if config.cache_dir is not None:
        return config.cache_dir
    workspace = getattr(run, "workspace_dir", None)
    return Path(workspace) / "cache" / "science-birds" if workspace is not None else None


def _record_inputs(run: Any, config: SuiteConfig, manifests: Mapping[str, Any]) -> None:
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
    forge: Any,
    options: Mapping[str, Any] | None = None,
    run: Any = None,
    dataset_manifests: Iterable[Any] | None = None,
    classifier: Classifier | None = None,
    state: RunState | None = None,
    command: Sequence[str] | None = None,
) -> Any:
    """Run the suite and return an :class:`EvaluationReport` (see the module docstring)."""
    config = SuiteConfig.from_options(options)
    if config.trials < 2:
        raise WorldForgeError("--trials: diversity needs at least 2 trials per letter.")
    models = [providers] if isinstance(providers, str) else list(providers)
    if not models:
        raise WorldForgeError("science-birds: at least one --provider is required.")
    if len(set(models)) != len(models):
        raise WorldForgeError("science-birds: a provider is listed twice.")
    state = state or RunState()
    replay = _replay_source(config.options)
    manifests: dict[str, Any] = {}
    for name in models:
        provider = forge.provider(name)
        caps = set(getattr(provider, "capabilities", ()) or ())
        if "generate" not in caps:
            raise WorldForgeError(
                f"Provider '{name}' lacks the 'generate' capability required by suite '{SUITE_ID}'."
            )
        configure = getattr(provider, "configure", None)
        if callable(configure):
            configure(config.options)
        # A replay stands on the recorded preflight: the server may be long gone.
        manifests[name] = replay.manifest(name) if replay is not None else forge.runtime_manifest(name)
    identities = {
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
        gateway = Gateway(forge, models=models, run=run, replay=replay)
    if submissions:
        submissions.start()
    # Fork the level-stage workers before the classifier (torch) loads in this process: the
    # workers never need it, and forking a process with torch's thread pools is best avoided.
    executor = _level_executor(config)
    try:
        return _evaluate_with(
            models,
            forge,
            config,
            run,
            dataset_manifests,
            classifier,
            state,
            command,
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


def _level_executor(config: SuiteConfig) -> Any:
    """Where the level stages run: this machine's pool (``workers`` > 1), or Ray when the
    ``executor`` option says so (``ray_address``, else ``RAY_ADDRESS``, else a private cluster)."""
    address = config.options.get("ray_address")
    return executor_for(config.options.get("executor"), config.workers, str(address) if address else None)


def _evaluate_with(
    models: list[str],
    forge: Any,
    config: SuiteConfig,
    run: Any,
    dataset_manifests: Iterable[Any] | None,
    classifier: Classifier | None,
    state: RunState,
    command: Sequence[str] | None,
    manifests: dict[str, Any],
    identities: dict[str, Any],
    executor: Any,
    gateway: Any = None,
    submissions: SubmissionTrials | None = None,
) -> Any:

    classifier = classifier or Classifier(config.classifier)
    cache = StageCache(_cache_root(config, run))
    dataset_refs = dataset_references(dataset_manifests)
    input_payload = {
        "suite_id": SUITE_ID,
        "suite_version": SUITE_VERSION,
        "providers": models,
        "config": config.identity(),
        "models": identities,
        "classifier": classifier.identity(),
        "dataset_manifests": dataset_refs,
    }
    events_before = int(getattr(forge, "event_count", 0) or 0)
    if run is not None:
        run.add_input_value("evaluation", input_payload)
        if dataset_refs:
            run.add_dataset_refs(dataset_refs)
        _record_inputs(run, config, manifests)
        run.emit("suite.started", {"suite_id": SUITE_ID, "items": len(enumerate_items(models, config))})

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
    sections = build_sections(
        scores, records, config.programs, config.letters, measurement, keep_unserved=keep
    )
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
    extra = official_artifacts(scores, unserved_counts(records, config.programs), keep)
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

    input_digest = digest_payload(input_payload)
    # The same payload the core's ``result_payload(report)`` digests (the run's result digest).
    result_digest = digest_payload({"results": [r.to_dict() for r in results], "sections": sections})

    failed = sum(1 for r in records.values() if r.get("status") != "ok")
    ident = classifier.identity()
    versions = stage_versions()
    claim_boundary = (
        f"{CLAIM_BOUNDARY} This report: classifier {ident.get('id')} "
        f"(weights {ident.get('weights_digest')}), physics {versions['simulate']}, "
        f"renderer {versions['render']}. {accuracy_sentence(classifier_accuracy(ident))}"
    )

    provenance = ProvenanceEnvelope(
        kind="evaluation",
        suite_id=SUITE_ID,
        suite_version=SUITE_VERSION,
        worldforge_version=__version__,
        created_at=utc_now_iso(),
        input_digest=input_digest,
        result_digest=result_digest,
        claim_boundary=claim_boundary,
        metric_semantics=METRIC_SEMANTICS,
        command=list(command)
        if command is not None
        else list(getattr(run, "manifest", {}).get("argv", []) or []),
        providers=models,
        capabilities=["generate"],
        runtime_manifests={k: v for k, v in manifests.items() if v is not None},
        dataset_manifests=dataset_refs,
        event_count=int(getattr(forge, "event_count", 0) or 0) - events_before,
        notes=f"{len(records)} items; {failed} failed trials"
        + _isolation_note(submissions)
        + provenance_note(records, config.programs, keep),
    )

    report = EvaluationReport(
        SUITE_ID,
        SUITE_NAME,
        results,
        claim_boundary=claim_boundary,
        metric_semantics=METRIC_SEMANTICS,
        provenance=provenance,
        sections=sections,
        extra_artifacts=extra,
        gallery_cases=build_cases(results, cli_ref=SUITE_ID, options=cli_options(config.options)),
        suite_version=SUITE_VERSION,
    )
    if run is not None:
        run.emit("suite.finished", {"suite_id": SUITE_ID, "result_digest": result_digest})
    return report


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
)


def cli_options(options: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in CLI_OPTION_KEYS:
        value = options.get(key, options.get("program") if key == "programs" else None)
        if value is not None and value != [] and value != "":
            out[key] = value
    return out


def _not_standalone(context: Any) -> Any:
    raise WorldForgeError("science-birds scenarios run through EvaluationSuite.run_report, not one by one.")


class ScienceBirdsSuite(EvaluationSuite):
    """One scenario per prompt program; ``run_report`` runs every item of the protocol."""

    def run_report(
        self,
        providers: str | Sequence[str],
        *,
        forge: Any = None,
        world: Any = None,
        dataset_manifests: Iterable[Any] | None = None,
        run: Any = None,
        command: Sequence[str] | None = None,
        notes: str | None = None,
    ) -> Any:
        if forge is None:
            forge = WorldForge()
        names = [providers] if isinstance(providers, str) else list(providers)
        self.check_providers(names, forge)
        return evaluate(
            names,
            forge=forge,
            options=self.options,
            run=run,
            dataset_manifests=dataset_manifests,
            command=command,
        )


def build_suite(options: Mapping[str, Any] | None = None) -> Any:
    """Factory used by ``EvaluationSuite.from_builtin("science-birds", options=...)``."""
    opts = dict(options or {})
    config = SuiteConfig.from_options(opts)  # validate early: bad options fail before providers

    scenarios = [
        EvaluationScenario(
            name=p.name,
            description=(
                f"submission {p.name!r} ({p.package or 'invalid'} {p.class_name})"
                if isinstance(p, SubmissionProgram)
                else f"prompt program {p.name!r} ({len(p.turns)} turn(s))"
            ),
            required_capabilities=("generate",),
            evaluator=_not_standalone,
        )
        for p in config.programs
    ]
    return ScienceBirdsSuite(
        SUITE_NAME,
        scenarios,
        suite_id=SUITE_ID,
        suite_version=SUITE_VERSION,
        claim_boundary=CLAIM_BOUNDARY,
        metric_semantics=METRIC_SEMANTICS,
        options=opts,
        cli_ref=SUITE_ID,
    )


__all__ = ["CLAIM_BOUNDARY", "METRIC_SEMANTICS", "SUITE_ID", "SUITE_VERSION", "build_suite", "evaluate"]
