"""The one suite contract: a suite produces, the framework seals; options by key; suite HTML pages."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.evaluation import (
    EvaluationResult,
    EvaluationSuite,
    SuiteBuilder,
    SuiteOutcome,
    SuiteRun,
    result_payload,
)
from worldforge.evaluation.options import declared_options, merge_suite_options, parse_suite_options
from worldforge.forge import WorldForge
from worldforge.reports.html import register_html_page, render_html
from worldforge.workspace import start_run


class TallySuite(EvaluationSuite):
    """A suite with its own protocol: one result per provider, a section and an artifact."""

    def __init__(self, *, record: bool = True) -> None:
        super().__init__(
            "Tally",
            (),
            suite_id="tally",
            suite_version="2.0",
            claim_boundary="Counts only.",
            required_capabilities=("generate",),
        )
        self.record = record

    def produce(self, context: SuiteRun) -> SuiteOutcome:
        if self.record:
            context.record_inputs({"suite_id": self.suite_id, "providers": list(context.providers)}, items=1)
        results = tuple(
            EvaluationResult(self.suite_id, self.name, "count", p, 0.5, p != "mock:b")
            for p in context.providers
        )
        return SuiteOutcome(
            results,
            sections={"tally": {"rows": [{"n": len(results)}]}},
            artifacts={"tally/extra.txt": "x\n"},
            claim_boundary="Counts only, for this run.",
            notes="two providers",
        )


def test_the_framework_seals_what_a_suite_produces(tmp_path: Path) -> None:
    suite = TallySuite()
    with start_run(tmp_path / "ws", kind="evaluation", argv=["worldforge", "eval"], config={}) as run:
        report = suite.run_report(["mock", "mock:b"], forge=WorldForge(), run=run)
        digest = run.complete(result_payload(report))
    prov = report.provenance
    assert prov is not None
    assert prov.input_digest == digest_payload({"suite_id": "tally", "providers": ["mock", "mock:b"]})
    assert prov.result_digest == digest == digest_payload(result_payload(report))
    assert prov.capabilities == ["generate"] and prov.command == ["worldforge", "eval"]
    assert prov.notes == "two providers" and report.claim_boundary == "Counts only, for this run."
    assert report.sections == {"tally": {"rows": [{"n": 2}]}}
    assert report.extra_artifacts == {"tally/extra.txt": "x\n"}
    assert [c["provider"] for c in report.failure_gallery()["cases"]] == ["mock:b"]
    events = (run.dir / "events.jsonl").read_text(encoding="utf-8")
    assert '"suite.started"' in events and '"suite.finished"' in events


def test_the_framework_gates_capabilities_and_refuses_unsealable_outcomes() -> None:
    class NoGen:
        name = "nogen"
        capabilities = frozenset({"predict"})

        def runtime_manifest(self) -> None:
            return None

    forge = WorldForge()
    forge.register_provider("nogen", lambda arg=None: NoGen())
    with pytest.raises(WorldForgeError, match="missing required capabilities: generate"):
        TallySuite().run_report(["nogen"], forge=forge)
    with pytest.raises(WorldForgeError, match="without recording its inputs"):
        TallySuite(record=False).run_report(["mock"], forge=WorldForge())

    class Loose(TallySuite):
        def produce(self, context: SuiteRun) -> Any:
            return {"results": []}

    with pytest.raises(WorldForgeError, match="not a SuiteOutcome"):
        Loose().run_report(["mock"], forge=WorldForge())
    with pytest.raises(WorldForgeError, match="needs at least one scenario"):
        EvaluationSuite("empty", ())


def test_replay_needs_a_replayable_suite() -> None:
    from worldforge.suites.science_birds.suite import ScienceBirdsSuite

    assert ScienceBirdsSuite.replayable and not EvaluationSuite.from_builtin("physics").replayable
    with pytest.raises(WorldForgeError, match="--replay: 'physics' does not record model exchanges"):
        EvaluationSuite.from_builtin("physics").check_replayable()
    # science-birds produces; the framework's run_report is the only one
    assert "run_report" not in vars(ScienceBirdsSuite) and "produce" in vars(ScienceBirdsSuite)


@dataclass(frozen=True)
class _Options:
    count: int | None = None
    name: str | None = None
    switch: bool | None = None
    items: list[str] | None = None
    host: str | list[str] | None = None
    folder: Path | None = None


def test_suite_options_are_read_by_their_declared_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    pairs = ["count=3", "name= a b", "switch=false", "items=x", "items=y", "host=h1", "folder=wheels"]
    assert parse_suite_options(_Options, pairs, suite="s") == {
        "count": 3,
        "name": " a b",
        "switch": False,
        "items": ["x", "y"],
        "host": "h1",  # one value of a one-or-many option stays a value
        "folder": str(tmp_path / "wheels"),
    }
    assert parse_suite_options(_Options, ["host=h1", "host=h2"], suite="s") == {"host": ["h1", "h2"]}
    assert parse_suite_options(_Options, ["items=x"], suite="s") == {"items": ["x"]}


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["cuont=3"], "--suite-option cuont: not an option of 's' (options: count, folder, host, items"),
        (["count=three"], "--suite-option count: expected an integer, got 'three'."),
        (["switch=maybe"], "--suite-option switch: expected true or false, got 'maybe'."),
        (["name="], "--suite-option name: must not be empty."),
        (["count"], "--suite-option 'count': expected KEY=VALUE."),
        (["count=1", "count=2"], "--suite-option count: given twice."),
    ],
)
def test_bad_suite_options_name_the_key(pairs: list[str], message: str) -> None:
    with pytest.raises(WorldForgeError) as caught:
        parse_suite_options(_Options, pairs, suite="s")
    assert str(caught.value).startswith(message)


def test_suite_builders_declare_their_options() -> None:
    built: list[dict[str, Any]] = []

    def build(options: dict[str, Any]) -> EvaluationSuite:
        built.append(options)
        return TallySuite()

    builder = SuiteBuilder(build, _Options)
    assert isinstance(builder({"count": 1}), TallySuite) and built == [{"count": 1}]
    EvaluationSuite.register("tally-options", builder)
    try:
        assert declared_options("tally-options") is _Options
    finally:
        EvaluationSuite.unregister("tally-options")
    assert declared_options("physics") is None
    from worldforge.suites.science_birds.config import ScienceBirdsOptions

    assert declared_options("science-birds") is ScienceBirdsOptions
    with pytest.raises(WorldForgeError, match="declares no options"):
        parse_suite_options(None, ["trials=2"], suite="physics")
    with pytest.raises(WorldForgeError, match="must be a dataclass"):
        SuiteBuilder(build, dict)

    @dataclass
    class Odd:
        pair: tuple[int, int] | None = None

    with pytest.raises(WorldForgeError, match="option 'pair'"):
        SuiteBuilder(build, Odd)
    with pytest.raises(WorldForgeError, match="--suite-option trials: also given by its named flag"):
        merge_suite_options({"trials": 2}, {"trials": 3})


def test_a_suite_page_renders_its_reports_and_may_decline_them() -> None:
    payload: dict[str, Any] = {"suite_id": "paged-suite", "suite": "Paged", "results": []}
    register_html_page("paged-suite", lambda p: "<p>own page</p>" if p.get("own") else None)
    assert render_html({**payload, "own": True}) == "<p>own page</p>"
    assert "WorldForge Evaluation Report: Paged" in render_html(payload)  # declined: the generic page
    with pytest.raises(WorldForgeError, match="page must be callable"):
        register_html_page("paged-suite", "page")  # type: ignore[arg-type]
