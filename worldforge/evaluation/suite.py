"""``EvaluationSuite``: scenarios, the suite registry, the capability gate and ``run_report``.

Suites are reachable four ways, in this lookup order: built-ins (``physics``, ``planning``,
``science-birds``), process-local registrations (:meth:`EvaluationSuite.register`), the
``worldforge.suites`` entry-point group, and ``module:attr`` / ``path/to/file.py:attr`` factory
references (so a custom suite is reachable from the CLI and its failure-gallery rerun command
actually works).

``run_report`` checks every provider's capabilities before any scenario runs, gives every
scenario a fresh copy of the base world, records one item per (provider, scenario) in a run
workspace when one is given (and reuses completed items on resume), and attaches a provenance
envelope whose digests exclude timestamps.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from worldforge import __version__
from worldforge.core.digests import digest_payload
from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.core.timeutil import utc_now_iso
from worldforge.core.world import World
from worldforge.datasets import dataset_references
from worldforge.evaluation.gallery import build_cases
from worldforge.evaluation.provenance import ProvenanceEnvelope
from worldforge.evaluation.report import EvaluationReport
from worldforge.evaluation.types import EvaluationContext, EvaluationResult, EvaluationScenario
from worldforge.forge import WorldForge
from worldforge.providers.base import normalize_capabilities

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

WorldFactory = Callable[[Any, str], Any]
SuiteFactory = Callable[..., "EvaluationSuite"]
_ITEM_ID_RE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class FinalizeContext:
    """What a suite's ``finalizer`` sees after every scenario ran for every provider."""

    suite: EvaluationSuite
    providers: list[str]
    results: list[EvaluationResult]
    forge: Any
    run: Any
    options: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SuiteExtras:
    """Extra report sections (JSON-native, digested) and extra artifacts (not digested)."""

    sections: dict[str, Any] = field(default_factory=dict)
    extra_artifacts: dict[str, str | bytes] = field(default_factory=dict)


Finalizer = Callable[[FinalizeContext], "SuiteExtras | None"]


def _builtin_factory(module: str, attr: str) -> SuiteFactory:
    def factory(options: dict[str, Any] | None = None) -> EvaluationSuite:
        try:
            loaded = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                raise WorldForgeError(
                    f"Evaluation suite backed by {module} is not available in this installation."
                ) from None
            raise
        build = getattr(loaded, attr, None)
        if not callable(build):
            raise WorldForgeError(f"{module} defines no callable {attr}().")
        suite = build(dict(options or {}))
        if not isinstance(suite, EvaluationSuite):
            raise WorldForgeError(f"{module}.{attr}() must return an EvaluationSuite.")
        return suite

    return factory


_BUILTINS: dict[str, tuple[SuiteFactory, str]] = {
    "physics": (
        _builtin_factory("worldforge.suites.contract", "build_physics_suite"),
        "Prediction determinism and action response over predict.",
    ),
    "planning": (
        _builtin_factory("worldforge.suites.contract", "build_planning_suite"),
        "Relocation, neighbor placement, swap and spawn solved by LatentMPCController.",
    ),
    "science-birds": (
        _builtin_factory("worldforge.suites.science_birds.suite", "build_suite"),
        "ChatGPT4PCG-style Science Birds letter levels from prompt programs.",
    ),
}


class EvaluationSuite:
    """A named, versioned set of scenarios with a claim boundary."""

    _registry: ClassVar[dict[str, SuiteFactory]] = {}

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
        finalizer: Finalizer | None = None,
        cli_ref: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise WorldForgeError("suite.name: must be a non-empty string.")
        scenarios = list(scenarios)
        if not scenarios:
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
        self.finalizer = finalizer
        self.cli_ref = cli_ref

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
        return sorted(_BUILTINS)

    @classmethod
    def builtin_descriptions(cls) -> dict[str, str]:
        return {name: desc for name, (_, desc) in sorted(_BUILTINS.items())}

    @classmethod
    def from_builtin(cls, name: str, options: Mapping[str, Any] | None = None) -> EvaluationSuite:
        entry = _BUILTINS.get(name)
        if entry is None:
            raise WorldForgeError(
                f"Unknown evaluation suite '{name}'. Known suites: {', '.join(cls.builtin_names())}."
            )
        suite = entry[0](dict(options or {}))
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
        if name in _BUILTINS:
            raise WorldForgeError(f"suite {name!r} is built in and cannot be replaced.")
        if name in cls._registry and not replace:
            raise WorldForgeError(f"suite {name!r} is already registered; pass replace=True to override it.")
        cls._registry[name] = factory

    @classmethod
    def unregister(cls, name: str) -> None:
        cls._registry.pop(name, None)

    @classmethod
    def registered_names(cls) -> list[str]:
        return sorted(set(_BUILTINS) | set(cls._registry) | set(_entry_point_suites()))

    @classmethod
    def from_registered(cls, name: str, options: Mapping[str, Any] | None = None) -> EvaluationSuite:
        if name in _BUILTINS:
            return cls.from_builtin(name, options)
        factory = cls._registry.get(name)
        source = "registered"
        if factory is None:
            factory = _entry_point_suites().get(name)
            source = "entry-point"
        if factory is None:
            raise WorldForgeError(
                f"Unknown evaluation suite '{name}'. Known suites: {', '.join(cls.registered_names())}."
            )
        suite = _call_factory(factory, options, name)
        if source == "entry-point" and suite.cli_ref is None:
            suite.cli_ref = name
        return suite

    @classmethod
    def from_reference(cls, ref: str, options: Mapping[str, Any] | None = None) -> EvaluationSuite:
        """Resolve a CLI ``--suite`` value: a known name, or a ``module:attr``/``file.py:attr`` factory."""
        if not isinstance(ref, str) or not ref.strip():
            raise WorldForgeError("--suite: must be a suite name or module:attr.")
        if ref in _BUILTINS or ref in cls._registry or ref in _entry_point_suites():
            return cls.from_registered(ref, options)
        if ":" not in ref:
            raise WorldForgeError(
                f"Unknown evaluation suite '{ref}'. Known suites: {', '.join(cls.registered_names())}."
            )
        target, _, attr = ref.rpartition(":")
        factory = _load_attr(target, attr, ref)
        suite = factory if isinstance(factory, EvaluationSuite) else _call_factory(factory, options, ref)
        if suite.cli_ref is None:
            suite.cli_ref = ref
        return suite

    # -- running ---------------------------------------------------------------------------------
    @property
    def required_capabilities(self) -> list[str]:

        caps: list[str] = []
        for scenario in self.scenarios:
            caps.extend(scenario.required_capabilities)
        return list(normalize_capabilities(caps))

    def check_providers(self, providers: Sequence[str], forge: Any) -> None:
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

    def _base_world(self, forge: Any, provider: str, world: Any) -> Any:

        if world is not None:
            return World.from_dict(world.to_dict(), forge=forge)
        if self.world_factory is not None:
            return self.world_factory(forge, provider)
        return World(f"{self.suite_id}-evaluation-world", provider, forge=forge)

    def run(self, provider: str, *, forge: Any = None, world: Any = None) -> list[EvaluationResult]:
        """Results for one provider (no report)."""
        return self.run_report([provider], forge=forge, world=world).results

    def input_payload(
        self,
        providers: Sequence[str],
        runtime_manifests: Mapping[str, Any],
        dataset_refs: list[dict[str, Any]],
    ) -> dict[str, Any]:
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
        forge: Any = None,
        world: Any = None,
        dataset_manifests: Iterable[Any] | None = None,
        run: Any = None,
        command: Sequence[str] | None = None,
        notes: str | None = None,
    ) -> EvaluationReport:
        """Run every scenario for every provider and build the report (see module docstring)."""

        names = [providers] if isinstance(providers, str) else list(providers)
        if not names:
            raise WorldForgeError("run_report() requires at least one provider.")
        if len(set(names)) != len(names):
            raise WorldForgeError("run_report(): a provider is listed twice.")
        if forge is None:
            forge = WorldForge()
        self.check_providers(names, forge)
        runtime_manifests: dict[str, Any] = {}
        for name in names:
            manifest = forge.runtime_manifest(name)
            if manifest is not None:
                runtime_manifests[name] = manifest
        dataset_refs = dataset_references(dataset_manifests)
        input_payload = self.input_payload(names, runtime_manifests, dataset_refs)
        if run is not None:
            run.add_input_value("evaluation", input_payload)
            if dataset_refs:
                run.add_dataset_refs(dataset_refs)
        done: dict[str, Any] = dict(run.completed_items()) if run is not None else {}
        events_before = forge.event_count
        results: list[EvaluationResult] = []
        for name in names:
            base = self._base_world(forge, name, world)
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
                context = EvaluationContext(
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
                result, recordable = _evaluate(context)
                results.append(result)
                if run is not None and recordable:
                    run.record_item(
                        item_id, item_digest, {"input_digest": item_digest, "result": result.to_dict()}
                    )
        extras = SuiteExtras()
        if self.finalizer is not None:
            produced = self.finalizer(
                FinalizeContext(self, names, list(results), forge, run, dict(self.options))
            )
            if produced is not None:
                if not isinstance(produced, SuiteExtras):
                    raise WorldForgeError(
                        f"suite {self.suite_id!r}: finalizer must return SuiteExtras or None."
                    )
                extras = produced
        result_payload = {"results": [r.to_dict() for r in results], "sections": dict(extras.sections)}
        provenance = ProvenanceEnvelope(
            kind="evaluation",
            suite_id=self.suite_id,
            suite_version=self.suite_version,
            worldforge_version=__version__,
            created_at=utc_now_iso(),
            command=list(command or []),
            providers=names,
            capabilities=self.required_capabilities,
            runtime_manifests=runtime_manifests,
            dataset_manifests=dataset_refs,
            input_digest=digest_payload(input_payload),
            result_digest=digest_payload(result_payload),
            event_count=forge.event_count - events_before,
            claim_boundary=self.claim_boundary,
            metric_semantics=self.metric_semantics,
            notes=notes,
        )
        return EvaluationReport(
            self.suite_id,
            self.name,
            results,
            claim_boundary=self.claim_boundary,
            metric_semantics=self.metric_semantics,
            provenance=provenance,
            sections=extras.sections,
            extra_artifacts=extras.extra_artifacts,
            gallery_cases=build_cases(
                results, expected_notes=self.expected_notes, cli_ref=self.cli_ref, options=self.options
            ),
            suite_version=self.suite_version,
        )


def result_payload(report: EvaluationReport) -> dict[str, Any]:
    """The payload ``provenance.result_digest`` covers (pass it to ``run.complete``)."""
    return {"results": [r.to_dict() for r in report.results], "sections": dict(report.sections)}


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


def _call_factory(factory: Any, options: Mapping[str, Any] | None, name: str) -> EvaluationSuite:
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


def _entry_point_suites() -> dict[str, SuiteFactory]:
    from importlib.metadata import entry_points

    found: dict[str, SuiteFactory] = {}
    for ep in entry_points(group=SUITE_ENTRY_POINT_GROUP):

        def factory(options: dict[str, Any] | None = None, _ep: Any = ep) -> EvaluationSuite:
            loaded = _ep.load()
            if isinstance(loaded, EvaluationSuite):
                return loaded
            return loaded(options) if options else loaded()

        found[ep.name] = factory
    return found


__all__ = [
    "DEFAULT_CLAIM_BOUNDARY",
    "DEFAULT_METRIC_SEMANTICS",
    "SUITE_CONTRACT_VERSION",
    "SUITE_ENTRY_POINT_GROUP",
    "EvaluationSuite",
    "FinalizeContext",
    "SuiteExtras",
    "result_payload",
]
