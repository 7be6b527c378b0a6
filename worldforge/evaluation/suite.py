"""``EvaluationSuite``: scenarios, the suite registry, the capability gate and ``run_report``.

Suites are reachable four ways, in this lookup order: built-ins (``physics``, ``planning``,
``science-birds``), process-local registrations (:meth:`EvaluationSuite.register`), the
``worldforge.suites`` entry-point group -- the first three are the one registry mechanism,
:class:`worldforge.core.registry.Registry` (:data:`SUITES`) -- and ``module:attr`` /
``path/to/file.py:attr`` factory references (so a custom suite is reachable from the CLI and its
failure-gallery rerun command actually works).

``run_report`` is the same for every suite: it checks every provider's capabilities, lets the
suite *produce* its results, sections and artifacts (:meth:`EvaluationSuite.produce`, the one suite
contract of :mod:`worldforge.evaluation.contract`) and *seals* them into a report with digests,
provenance and a failure gallery (:mod:`worldforge.evaluation.seal`). The default ``produce`` runs
the scenarios: every scenario gets a fresh copy of the base world, one item per (provider,
scenario) is recorded in a run workspace when one is given, and completed items are reused on
resume. A suite with its own protocol (science-birds) overrides ``produce`` only.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypedDict

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.digests import digest_payload
from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.core.registry import BUILTIN, ENTRY_POINT, Registry
from worldforge.core.world import World
from worldforge.datasets import dataset_references
from worldforge.evaluation.contract import SuiteOutcome, SuiteRun
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.seal import ResultsPayload, results_payload, seal_report
from worldforge.evaluation.types import EvaluationContext, EvaluationResult, EvaluationScenario, ScenarioDict
from worldforge.forge import WorldForge
from worldforge.gateway import ReplaySource
from worldforge.providers.base import normalize_capabilities
from worldforge.workspace import Run

SUITE_CONTRACT_VERSION = "evaluation:1"
SUITE_ENTRY_POINT_GROUP = "worldforge.suites"
DEFAULT_CLAIM_BOUNDARY = (
    "Deterministic adapter contract checks: scores are synthetic workflow signals that show whether a "
    "provider met the suite's typed contract. They are not physical-fidelity, media-quality, "
    "model-quality, safety, leaderboard or real-robot-performance claims."
)
DEFAULT_METRIC_SEMANTICS = (
    "Scores are in [0, 1] and pass rates count scenarios whose typed contract was met under the "
    "preserved inputs; they only compare providers on this suite's contract."
)

WorldFactory = Callable[[WorldForge, str], World]


class SuiteInputs(TypedDict):
    """:meth:`EvaluationSuite.input_payload`: what a scenario suite's ``input_digest`` covers."""

    suite_id: str
    suite: str
    suite_version: str
    scenarios: list[ScenarioDict]
    options: dict[str, object]
    providers: list[str]
    runtime_manifests: JSONObject
    dataset_manifests: list[JSONObject]


SuiteFactory = Callable[..., "EvaluationSuite"]
_ITEM_ID_RE = re.compile(r"[^A-Za-z0-9._-]+")


#: The framework's built-in suites by ``module:attr``, so the framework never imports a suite
#: until it is used: the fallback when the installed entry-point record is stale or absent, and
#: equal to ``[project.entry-points."worldforge.suites"]`` (a test says so).
BUILTIN_SUITES: dict[str, str] = {
    "physics": "worldforge.suites.contract:build_physics_suite",
    "planning": "worldforge.suites.contract:build_planning_suite",
    "science-birds": "worldforge.suites.science_birds.suite:build_suite",
}
#: What ``eval --list-suites`` says of each built-in without importing it.
_DESCRIPTIONS = {
    "physics": "Prediction determinism and action response over predict.",
    "planning": "Relocation, neighbor placement, swap and spawn solved by LatentMPCController.",
    "science-birds": "ChatGPT4PCG-style Science Birds letter levels from prompt programs.",
}
#: Suite names: built-ins, process-local registrations, then the ``worldforge.suites`` group (read
#: on every lookup: plugins may be installed, and tests patch the group, while the process lives).
SUITES: Registry[object] = Registry(
    "suite",
    BUILTIN_SUITES,
    group=SUITE_ENTRY_POINT_GROUP,
    cache_entry_points=False,
    descriptions=_DESCRIPTIONS,
)


def _unknown(name: str, known: list[str]) -> str:
    return f"Unknown evaluation suite '{name}'. Known suites: {', '.join(known)}."


def _builtin_factory(name: str) -> object:
    """Import the module behind built-in ``name`` and return its factory (importing the module also
    runs what the suite registers, such as its HTML page)."""
    reg = SUITES.get(name)
    if reg is None or reg.source != BUILTIN:
        raise WorldForgeError(_unknown(name, sorted(BUILTIN_SUITES)))
    return SUITES.resolve(reg)


def load_suite_module(suite_id: str) -> None:
    """Import the module behind built-in suite ``suite_id`` (a no-op for any other id), so what the
    suite registers on import, such as its HTML page, is in place when a stored report of it is
    rendered again (evidence bundles re-render reports from their payloads)."""
    if suite_id in BUILTIN_SUITES:
        _builtin_factory(suite_id)


class EvaluationSuite:
    """A named, versioned set of scenarios with a claim boundary.

    A suite with its own protocol subclasses this and overrides :meth:`produce` (it may then have
    no scenarios and state its ``required_capabilities`` instead); ``run_report`` stays the
    framework's.
    """

    #: Whether the suite records its model exchanges, so ``eval --replay RUN_ID`` can answer a run of
    #: it from a recorded one.
    replayable: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        scenarios: Sequence[EvaluationScenario],
        *,
        suite_id: str | None = None,
        suite_version: str | None = None,
        claim_boundary: str = DEFAULT_CLAIM_BOUNDARY,
        metric_semantics: str = DEFAULT_METRIC_SEMANTICS,
        world_factory: WorldFactory | None = None,
        options: Mapping[str, Any] | None = None,
        expected_notes: Mapping[str, str] | None = None,
        cli_ref: str | None = None,
        required_capabilities: Sequence[str] = (),
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise WorldForgeError("suite.name: must be a non-empty string.")
        scenarios = list(scenarios)
        if not scenarios and type(self).produce is EvaluationSuite.produce:
            raise WorldForgeError(f"suite {name!r}: needs at least one scenario.")
        seen: set[str] = set()
        for index, scenario in enumerate(scenarios):
            if not isinstance(scenario, EvaluationScenario):
                raise WorldForgeError(f"suite {name!r}: scenarios[{index}] is not an EvaluationScenario.")
            if scenario.name in seen:
                raise WorldForgeError(f"suite {name!r}: duplicate scenario name {scenario.name!r}.")
            if scenario.evaluator is None:
                raise WorldForgeError(f"suite {name!r}: scenario {scenario.name!r} has no evaluator.")
            seen.add(scenario.name)
        for field_name, value in (("claim_boundary", claim_boundary), ("metric_semantics", metric_semantics)):
            if not isinstance(value, str) or not value.strip():
                raise WorldForgeError(f"suite {name!r}: {field_name} must be a non-empty string.")
        self.name = name.strip()
        self.suite_id = suite_id or self.name.lower().replace(" ", "-")
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", self.suite_id):
            raise WorldForgeError(f"suite_id {self.suite_id!r}: use letters, digits, '.', '_', ':' or '-'.")
        self.suite_version = suite_version or SUITE_CONTRACT_VERSION
        self.claim_boundary = claim_boundary
        self.metric_semantics = metric_semantics
        self.scenarios = scenarios
        self.world_factory = world_factory
        self.options: dict[str, Any] = dict(options or {})
        self.expected_notes = dict(expected_notes or {})
        self.cli_ref = cli_ref
        self._declared_capabilities = tuple(required_capabilities)

    # -- construction and registry ---------------------------------------------------------------
    @classmethod
    def custom(
        cls,
        *,
        suite_id: str,
        name: str,
        scenarios: Sequence[EvaluationScenario],
        suite_version: str,
        claim_boundary: str,
        metric_semantics: str = DEFAULT_METRIC_SEMANTICS,
        world_factory: WorldFactory | None = None,
        expected_notes: Mapping[str, str] | None = None,
        cli_ref: str | None = None,
    ) -> EvaluationSuite:
        """Public authoring API: suite_version and claim_boundary are the author's to state."""
        for field_name, value in (("suite_version", suite_version), ("claim_boundary", claim_boundary)):
            if not isinstance(value, str) or not value.strip():
                raise WorldForgeError(f"custom suite {suite_id!r}: {field_name} is required.")
        return cls(
            name,
            scenarios,
            suite_id=suite_id,
            suite_version=suite_version,
            claim_boundary=claim_boundary,
            metric_semantics=metric_semantics,
            world_factory=world_factory,
            expected_notes=expected_notes,
            cli_ref=cli_ref,
        )

    @classmethod
    def builtin_names(cls) -> list[str]:
        return sorted(BUILTIN_SUITES)

    @classmethod
    def builtin_descriptions(cls) -> dict[str, str]:
        return {name: _DESCRIPTIONS.get(name, "") for name in sorted(BUILTIN_SUITES)}

    @classmethod
    def from_builtin(cls, name: str, options: Mapping[str, Any] | None = None) -> EvaluationSuite:
        build = _builtin_factory(name)
        if not callable(build):
            raise WorldForgeError(f"{BUILTIN_SUITES[name]} is not callable.")
        suite = build(dict(options or {}))
        if not isinstance(suite, EvaluationSuite):
            raise WorldForgeError(f"{BUILTIN_SUITES[name]}() must return an EvaluationSuite.")
        if suite.cli_ref is None:
            suite.cli_ref = name
        return suite

    @classmethod
    def register(cls, name: str, factory: SuiteFactory, *, replace: bool = False) -> None:
        """Register a suite factory under ``name`` for this process (built-ins cannot be replaced)."""
        if not isinstance(name, str) or not name.strip():
            raise WorldForgeError("suite name: must be a non-empty string.")
        if not callable(factory):
            raise WorldForgeError(f"suite {name!r}: factory must be callable.")
        SUITES.register(name, factory, replace=replace, replace_builtin=False)

    @classmethod
    def unregister(cls, name: str) -> None:
        SUITES.unregister(name)

    @classmethod
    def registered_names(cls) -> list[str]:
        return SUITES.names()

    @classmethod
    def from_registered(cls, name: str, options: Mapping[str, Any] | None = None) -> EvaluationSuite:
        if name in BUILTIN_SUITES:
            return cls.from_builtin(name, options)
        reg = SUITES.get(name)
        if reg is None:
            raise WorldForgeError(_unknown(name, SUITES.names()))
        loaded = SUITES.resolve(reg)
        if reg.source == ENTRY_POINT and isinstance(loaded, EvaluationSuite):
            suite = loaded
        else:
            suite = _call_factory(loaded, options, name)
        if reg.source == ENTRY_POINT and suite.cli_ref is None:
            suite.cli_ref = name
        return suite

    @classmethod
    def from_reference(cls, ref: str, options: Mapping[str, Any] | None = None) -> EvaluationSuite:
        """Resolve a CLI ``--suite`` value: a known name, or a ``module:attr``/``file.py:attr`` factory."""
        if not isinstance(ref, str) or not ref.strip():
            raise WorldForgeError("--suite: must be a suite name or module:attr.")
        if ref in SUITES:
            return cls.from_registered(ref, options)
        if ":" not in ref:
            raise WorldForgeError(_unknown(ref, SUITES.names()))
        target, _, attr = ref.rpartition(":")
        factory = _load_attr(target, attr, ref)
        suite = factory if isinstance(factory, EvaluationSuite) else _call_factory(factory, options, ref)
        if suite.cli_ref is None:
            suite.cli_ref = ref
        return suite

    @classmethod
    def factory_of(cls, ref: str) -> object:
        """What ``ref`` names before anything is built: a factory (possibly one that declares its
        options, :class:`~worldforge.evaluation.options.SuiteBuilder`) or a suite object, found
        the way :meth:`from_reference` finds it."""
        if not isinstance(ref, str) or not ref.strip():
            raise WorldForgeError("--suite: must be a suite name or module:attr.")
        reg = SUITES.get(ref)
        if reg is not None:
            return SUITES.resolve(reg)
        if ":" not in ref:
            raise WorldForgeError(_unknown(ref, SUITES.names()))
        target, _, attr = ref.rpartition(":")
        return _load_attr(target, attr, ref)

    # -- running ---------------------------------------------------------------------------------
    @property
    def required_capabilities(self) -> list[str]:
        """What every provider must have: the scenarios' capabilities and those the suite states."""
        caps: list[str] = list(self._declared_capabilities)
        for scenario in self.scenarios:
            caps.extend(scenario.required_capabilities)
        return list(normalize_capabilities(caps))

    def check_providers(self, providers: Sequence[str], forge: WorldForge) -> None:
        """Capability gate: every provider exists and has every capability the suite needs."""
        required = self.required_capabilities
        for provider in providers:
            have = set(forge.capabilities(provider))
            missing = [c for c in required if c not in have]
            if missing:
                raise WorldForgeError(
                    f"Provider '{provider}' cannot run evaluation suite '{self.suite_id}': missing "
                    f"required capabilities: {', '.join(missing)}."
                )

    def check_replayable(self) -> None:
        """Refuse ``--replay`` for a suite that records no model exchanges (nothing to answer from)."""
        if not self.replayable:
            raise WorldForgeError(
                f"--replay: {self.suite_id!r} does not record model exchanges, so a run of it cannot "
                "be replayed."
            )

    def _base_world(self, forge: WorldForge, provider: str, world: World | None) -> World:

        if world is not None:
            return World.from_dict(world.to_dict(), forge=forge)
        if self.world_factory is not None:
            return self.world_factory(forge, provider)
        return World(f"{self.suite_id}-evaluation-world", provider, forge=forge)

    def input_payload(
        self,
        providers: Sequence[str],
        runtime_manifests: JSONObject,
        dataset_refs: list[JSONObject],
    ) -> SuiteInputs:
        """What ``input_digest`` covers: suite contract, providers, their runtime manifests, datasets."""
        return {
            "suite_id": self.suite_id,
            "suite": self.name,
            "suite_version": self.suite_version,
            "scenarios": [s.to_dict() for s in self.scenarios],
            "options": dict(self.options),
            "providers": list(providers),
            "runtime_manifests": dict(runtime_manifests),
            "dataset_manifests": list(dataset_refs),
        }

    def run_report(
        self,
        providers: str | Sequence[str],
        *,
        forge: WorldForge | None = None,
        world: World | None = None,
        dataset_manifests: Iterable[object] | None = None,
        run: Run | None = None,
        command: Sequence[str] | None = None,
        notes: str | None = None,
        replay: ReplaySource | None = None,
    ) -> EvaluationReport:
        """Check capabilities, let the suite produce, seal the report (see the module docstring).

        This is the framework's, for every suite: a suite changes what it produces by overriding
        :meth:`produce`, never how a report is checked, digested or assembled.
        """
        names = [providers] if isinstance(providers, str) else list(providers)
        if not names:
            raise WorldForgeError("run_report() requires at least one provider.")
        if len(set(names)) != len(names):
            raise WorldForgeError("run_report(): a provider is listed twice.")
        if replay is not None:
            self.check_replayable()
        if forge is None:  # providers are built once, with the suite's options
            forge = WorldForge(provider_options=self.options)
        self.check_providers(names, forge)
        context = SuiteRun(
            self.suite_id,
            names,
            forge,
            run=run,
            world=world,
            dataset_refs=dataset_references(dataset_manifests),
            replay=replay,
        )
        outcome = self.produce(context)
        if not isinstance(outcome, SuiteOutcome):
            raise WorldForgeError(
                f"suite {self.suite_id!r}: produce() returned {type(outcome).__name__}, not a SuiteOutcome."
            )
        return seal_report(self, context, outcome, command=command, notes=notes)

    def produce(self, context: SuiteRun) -> SuiteOutcome:
        """Run every scenario for every provider: the suite's results (no sections or artifacts)."""
        forge, run = context.forge, context.run
        names = list(context.providers)
        runtime_manifests: JSONObject = {}
        for name in names:
            manifest = forge.runtime_manifest(name)
            if manifest is not None:
                runtime_manifests[name] = manifest
        context.record_inputs(
            self.input_payload(names, runtime_manifests, context.dataset_refs),
            items=len(names) * len(self.scenarios),
        )
        done: dict[str, JSON] = run.completed_items() if run is not None else {}
        results: list[EvaluationResult] = []
        for name in names:
            base = self._base_world(forge, name, context.world)
            for index, scenario in enumerate(self.scenarios):
                item_id = _ITEM_ID_RE.sub("_", f"{name}--{scenario.name}")
                item_digest = digest_payload(
                    {
                        "suite_id": self.suite_id,
                        "suite_version": self.suite_version,
                        "scenario": scenario.to_dict(),
                        "options": dict(self.options),
                        "provider": name,
                        "runtime_manifest": runtime_manifests.get(name),
                        "world": base.to_state(),
                    }
                )
                previous = done.get(item_id)
                if isinstance(previous, dict) and previous.get("input_digest") == item_digest:
                    results.append(EvaluationResult.from_dict(previous["result"]))
                    continue
                evaluation = EvaluationContext(
                    self.suite_id,
                    self.name,
                    scenario,
                    name,
                    base.copy(),
                    forge,
                    index,
                    dict(self.options),
                    run,
                )
                result, recordable = _evaluate(evaluation)
                results.append(result)
                if run is not None and recordable:
                    run.record_item(
                        item_id, item_digest, {"input_digest": item_digest, "result": result.to_dict()}
                    )
        return SuiteOutcome(tuple(results), runtime_manifests=runtime_manifests)


def result_payload(report: EvaluationReport) -> ResultsPayload:
    """The payload ``provenance.result_digest`` covers (pass it to ``run.complete``)."""
    return results_payload(report.results, report.sections)


def _evaluate(context: EvaluationContext) -> tuple[EvaluationResult, bool]:
    """Run one scenario. A provider runtime failure becomes a failed (not recorded) result so one
    flaky provider does not abort the report; bad scenario output (WorldForgeError) propagates."""
    assert context.scenario.evaluator is not None
    try:
        returned = context.scenario.evaluator(context)
    except ProviderError as exc:
        failed = context.outcome(
            score=0.0,
            passed=False,
            metrics={"error_type": type(exc).__name__, "error": sanitize_text(str(exc))},
        )
        return context.result(failed), False
    return context.coerce(returned), True


def _call_factory(factory: object, options: Mapping[str, Any] | None, name: str) -> EvaluationSuite:
    if not callable(factory):
        raise WorldForgeError(f"suite {name!r}: factory is not callable.")
    suite = factory(dict(options)) if options else factory()
    if not isinstance(suite, EvaluationSuite):
        raise WorldForgeError(
            f"suite {name!r}: factory returned {type(suite).__name__}, not an EvaluationSuite."
        )
    return suite


def _load_attr(target: str, attr: str, ref: str) -> Any:
    """Import ``module`` or load ``path.py`` (user code named on the command line) and get ``attr``."""
    if not attr.isidentifier():
        raise WorldForgeError(f"--suite {ref!r}: {attr!r} is not a Python identifier.")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise WorldForgeError(f"--suite {ref!r}: file {target} not found.")
        module_name = "_worldforge_suite_" + re.sub(r"\W", "_", str(path.resolve()))
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            if spec is None or spec.loader is None:
                raise WorldForgeError(f"--suite {ref!r}: cannot load {target}.")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            raise WorldForgeError(f"--suite {ref!r}: cannot import module {exc.name!r}.") from None
    if not hasattr(module, attr):
        raise WorldForgeError(f"--suite {ref!r}: {target} has no attribute {attr!r}.")
    return getattr(module, attr)


__all__ = [
    "DEFAULT_CLAIM_BOUNDARY",
    "DEFAULT_METRIC_SEMANTICS",
    "BUILTIN_SUITES",
    "SUITES",
    "SUITE_CONTRACT_VERSION",
    "SUITE_ENTRY_POINT_GROUP",
    "EvaluationSuite",
    "SuiteInputs",
    "load_suite_module",
    "result_payload",
]
