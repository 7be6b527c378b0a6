"""The science-birds HTML page, read as markup (no browser needed).

A person opens this page to see which program won and why, on a desktop or a phone, offline: so the
charts must carry one mark per program / letter x program / model, baselines must be visibly
marked, the gallery must show every trial (failed ones with stage and reason), metrics must read as
key/value lists rather than JSON strings, nothing may be fetched or executed, wide content must sit
in scrolling wrappers or scale with a ``viewBox``, and the bytes must be a pure function of the
payload. The Markdown on stdout leads with the answer, not with provenance.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.reports.test_reports_render import parse
from tests.suites.test_science_birds import PixelClassifier
from worldforge.forge import WorldForge
from worldforge.reports import render_report
from worldforge.reports.html import render_html
from worldforge.reports.markdown import render_markdown
from worldforge.suites.science_birds.config import Classifier
from worldforge.suites.science_birds.page_view import read_view
from worldforge.suites.science_birds.suite import evaluate

LETTERS = "ABC"
TRIALS = 3
MODELS = ["mock", "mock:b"]
HOSTILE = '<script>alert("x")</script> & "quoted"'


class Tree(HTMLParser):
    """Every element with its attributes and ancestors; every text node with its ancestors."""

    VOID = frozenset({"meta", "br", "img", "hr", "input", "link", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.elements: list[tuple[str, dict[str, str], list[tuple[str, dict[str, str]]]]] = []
        self.texts: list[tuple[str, list[tuple[str, dict[str, str]]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.elements.append((tag, attributes, list(self.stack)))
        if tag not in self.VOID:
            self.stack.append((tag, attributes))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}, list(self.stack)))

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID:
            assert self.stack and self.stack[-1][0] == tag, (tag, self.stack[-3:])
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.texts.append((data, list(self.stack)))

    def having(self, tag: str, cls: str | None = None) -> list[dict[str, str]]:
        return [
            a for t, a, _ in self.elements if t == tag and (cls is None or cls in a.get("class", "").split())
        ]


def tree(document: str) -> Tree:
    t = Tree()
    t.feed(document)
    t.close()
    assert t.stack == []
    return t


def _program(root: Path, name: str, text: str) -> str:
    prompts = root / name / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "1.txt").write_text(text, encoding="utf-8")
    return str(root / name)


@pytest.fixture(scope="module")
def payload(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two models, one own program and the zero-shot baseline, three letters x three trials."""
    fake = PixelClassifier()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Classifier, "identity", lambda self: fake.identity())
        mp.setattr(Classifier, "classify", lambda self, pngs, embedding=True: fake.classify(pngs, embedding))
        root = tmp_path_factory.mktemp("programs")
        programs = [_program(root, "alpha", "Build the letter <OBJECT> with drop_block calls."), "zero-shot"]
        options = {
            "characters": LETTERS,
            "trials": TRIALS,
            "progress": False,
            "workers": 1,
            "programs": programs,
        }
        report = evaluate(MODELS, forge=WorldForge(), options=options)
        yield report.to_dict()


def _with_failure(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with one trial turned into a failure whose reason is hostile markup."""
    failed = copy.deepcopy(payload)
    gallery = failed["sections"]["gallery[alpha]"]["images"]
    gallery[:] = [i for i in gallery if not i["caption"].startswith("B | mock:b | trial 2 |")]
    failed["sections"]["failed_trials"]["rows"] = [
        {"item": "mock-b__alpha__B__002", "failed_stage": "extract", "error": f"Code not found. {HOSTILE}"}
    ]
    return failed


def test_charts_have_one_mark_per_program_cell_and_model(payload: dict[str, Any]) -> None:
    document = render_html(payload)
    parse(document)  # balanced, strict
    t = tree(document)
    programs = [row["program"] for row in payload["sections"]["ranking"]["rows"]]
    assert sorted(programs) == ["alpha", "zero-shot"]
    bars = t.having("g", "bar")
    assert len(bars) == len(programs)
    # baselines visibly marked: hatched bar, a tag in the table, the dashed reference line
    assert [b["data-kind"] for b in bars].count("baseline") == 1
    assert any(a.get("class") == "reference" for a in t.having("line"))
    assert len(t.having("span", "baseline")) >= 1
    assert len(t.having("g", "hm")) == len(LETTERS) * len(programs)
    assert len(t.having("rect", "segment")) == len(programs) * len(MODELS)
    # stability / similarity / diversity per letter and program, weights per letter and model
    weight_keys = {
        k for k in payload["sections"]["weights_per_letter"]["rows"][0] if k not in ("model", "letter")
    }
    assert len(t.having("g", "mbar")) == len(LETTERS) * (3 * len(programs) + len(weight_keys) * len(MODELS))
    for svg in t.having("svg"):  # (the parser lowercases attribute names)
        assert re.fullmatch(r"0 0 [\d.]+ [\d.]+", svg["viewbox"]) and svg["class"] == "chart"


def test_heatmap_previews_are_each_letters_best_level(payload: dict[str, Any]) -> None:
    view = read_view(payload)
    assert view is not None
    document = render_html(payload)
    for program in ("alpha", "zero-shot"):
        for letter in LETTERS:
            trials = view.trials[(program, letter)]
            assert len(trials) == TRIALS * len(MODELS)
            best = max(trials, key=lambda tr: (tr.sta or 0) * (tr.sim or 0))
            assert best.src and f'href="{best.src}"' in document


def test_gallery_shows_every_trial_and_marks_failures(payload: dict[str, Any]) -> None:
    t = tree(render_html(payload))
    figures = [
        a for tag, a, anc in t.elements if tag == "figure" and any(c.get("class") == "trials" for _, c in anc)
    ]
    assert len(figures) == 2 * len(LETTERS) * TRIALS * len(MODELS)
    assert not t.having("figure", "failed")

    document = render_html(_with_failure(payload))
    t = tree(document)
    (failed,) = t.having("figure", "failed")
    text = "".join(
        x for x, anc in t.texts if any(tag == "figure" and a.get("class") == "failed" for tag, a in anc)
    )
    assert "failed" in text and "extract" in text and "Code not found." in text
    assert "<script>" not in document and "&lt;script&gt;" in document


def test_page_is_offline_scriptless_and_responsive(payload: dict[str, Any]) -> None:
    document = render_html(_with_failure(payload))
    t = tree(document)
    assert "<script" not in document.lower() and "<link" not in document.lower()
    assert not re.search(r"https?://", document)
    sources = [a.get("src") or a.get("href", "") for tag, a, _ in t.elements if tag in ("img", "image")]
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    assert all(not k.startswith("on") for _, a, _ in t.elements for k in a)
    # every table scrolls inside its own wrapper; charts scale with the page
    for tag, _, ancestors in t.elements:
        if tag == "table":
            assert any(a.get("class") == "scroll" for _, a in ancestors)
    assert "svg.chart{width:100%" in document and ".scroll{overflow-x:auto" in document
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in document


def test_metrics_are_key_value_lists_not_json(payload: dict[str, Any]) -> None:
    t = tree(render_html(payload))
    shown = [
        x.strip()
        for x, anc in t.texts
        if x.strip() and {"dd", "td"} & {tag for tag, _ in anc} and "pre" not in {tag for tag, _ in anc}
    ]
    assert shown and not [x for x in shown if x[:1] in "{[" or '":' in x]
    terms = {x.strip() for x, anc in t.texts if anc and anc[-1][0] == "dt"}
    # scenario metrics, nested failures_by_stage and the measurement's nested model identity
    assert {"prompt_score", "normalized_total", "failures_by_stage", "generator_code"} <= terms


def test_bytes_are_a_pure_function_of_the_payload(payload: dict[str, Any]) -> None:
    before = json.dumps(payload, sort_keys=True)
    first = render_html(copy.deepcopy(payload))
    assert render_html(copy.deepcopy(payload)) == first == render_report(payload, "html")
    assert json.dumps(payload, sort_keys=True) == before  # rendering never touches the payload
    created = payload["provenance"]["created_at"]
    assert first.count(created) == 2  # provenance and footer only


def test_unexpected_shapes_fall_back_to_the_generic_page(payload: dict[str, Any]) -> None:
    broken = copy.deepcopy(payload)
    broken["sections"]["ranking"]["rows"][0]["normalized"] = "fifty"
    assert read_view(broken) is None
    document = render_html(broken)
    parse(document)
    assert "<h2>Provider Summaries</h2>" in document and 'class="hm"' not in document
    other = copy.deepcopy(payload)
    other["suite_id"] = "physics"
    assert read_view(other) is None


def test_markdown_leads_with_winner_and_ranking(payload: dict[str, Any]) -> None:
    markdown = render_markdown(payload)
    assert markdown.startswith("# Evaluation Report\n\nSuite: ")
    order = [
        markdown.index("## Winner\n"),
        markdown.index("## Ranking (totals over models"),
        markdown.index("Claim boundary: "),
        markdown.index("## Provenance"),
        markdown.index("## Per letter"),
    ]
    assert order == sorted(order)
    assert markdown.count("## Ranking (totals over models") == 1 and markdown.count("## Winner\n") == 1
    assert "- winners: " in markdown
