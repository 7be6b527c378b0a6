"""The one suite contract: what the framework hands a suite, and what the suite hands back.

A suite *produces*: results, report sections and artifacts (:class:`SuiteOutcome`). The framework
*seals*: it checks provider capabilities before the suite runs, records and digests the inputs the
suite declares (:meth:`SuiteRun.record_inputs`), and builds the provenance envelope, the report
and the failure gallery from the outcome (:mod:`worldforge.evaluation.seal`). No suite computes a
digest or builds an :class:`~worldforge.evaluation.report.EvaluationReport` itself, so every report
is made the same way whichever suite produced it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from worldforge.core.canonical import JSONObject, json_object
from worldforge.core.errors import WorldForgeError
from worldforge.core.run_events import SuiteStarted
from worldforge.core.world import World
from worldforge.evaluation.types import EvaluationResult
from worldforge.forge import WorldForge
from worldforge.gateway import ReplaySource
from worldforge.workspace import Run


class SuiteRun:
    """One run of a suite as the suite sees it.

    ``suite_id`` names the suite being run; ``providers`` passed the capability gate; ``run`` is the
    run workspace (``None`` when nothing is recorded); ``dataset_refs`` are the compact dataset
    references the run cites; ``world`` is the base world scenario suites copy per scenario;
    ``replay`` is the recorded run a replayable suite answers model requests from (``eval
    --replay``).
    """

    def __init__(
        self,
        suite_id: str,
        providers: Sequence[str],
        forge: WorldForge,
        *,
        run: Run | None = None,
        world: World | None = None,
        dataset_refs: Sequence[JSONObject] = (),
        replay: ReplaySource | None = None,
    ) -> None:
        self.suite_id = suite_id
        self.providers: tuple[str, ...] = tuple(providers)
        self.forge = forge
        self.run = run
        self.world = world
        self.dataset_refs: list[JSONObject] = [dict(ref) for ref in dataset_refs]
        self.replay = replay
        self._inputs: JSONObject | None = None
        #: Provider events before the suite's items ran: provenance counts the events after it.
        self.events_before = forge.event_count

    def record_inputs(self, payload: Mapping[str, object], *, items: int) -> None:
        """Declare what the report's ``input_digest`` covers, once, before any item runs.

        The framework records it in the run as the ``evaluation`` input together with the dataset
        references (so a resume with drifted inputs is refused before any item is reused), starts
        counting provider events here (preflights before this point are not the evaluation's), and
        announces ``suite.started`` with the number of items the suite will run.
        """
        if self._inputs is not None:
            raise WorldForgeError(f"suite {self.suite_id!r}: its inputs were already recorded for this run.")
        inputs = json_object(dict(payload), f"suite {self.suite_id!r} inputs")
        self.events_before = self.forge.event_count
        if self.run is not None:
            self.run.add_input_value("evaluation", inputs)
            if self.dataset_refs:
                self.run.add_dataset_refs(list(self.dataset_refs))
        self._inputs = inputs
        if self.run is not None:
            self.run.emit_event(SuiteStarted(suite_id=self.suite_id, items=int(items)))

    @property
    def inputs(self) -> JSONObject:
        """The declared inputs; a suite that produced results without declaring them is a bug."""
        if self._inputs is None:
            raise WorldForgeError(
                f"suite {self.suite_id!r}: produced results without recording its inputs "
                "(SuiteRun.record_inputs)."
            )
        return self._inputs


@dataclass(frozen=True, slots=True)
class SuiteOutcome:
    """What a suite's ``produce`` returns; the framework turns it into a sealed report.

    ``sections`` (JSON-native) enter the result digest with the results; ``artifacts`` (run-relative
    path -> text or bytes) are written next to the report and are not digested. The optional fields
    let a suite say what only it knows: the runtime manifests its providers ran with (a replay
    stands on the recorded ones), a claim boundary naming this run's measurement, provenance notes,
    and the options the failure gallery's rerun command repeats (``None``: the suite's options).
    """

    results: tuple[EvaluationResult, ...]
    sections: JSONObject = field(default_factory=dict)
    artifacts: dict[str, str | bytes] = field(default_factory=dict)
    runtime_manifests: JSONObject = field(default_factory=dict)
    claim_boundary: str | None = None
    notes: str | None = None
    rerun_options: Mapping[str, object] | None = None

    def __post_init__(self) -> None:
        results = tuple(self.results)
        for index, result in enumerate(results):
            if not isinstance(result, EvaluationResult):
                raise WorldForgeError(f"suite outcome: results[{index}] is not an EvaluationResult.")
        object.__setattr__(self, "results", results)


__all__ = ["SuiteOutcome", "SuiteRun"]
