"""Renderers: every format renders the same canonical payload; HTML parses, escapes, stays offline."""

from __future__ import annotations

import base64
import csv
import io
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worldforge import WorldForge, WorldForgeError
from worldforge.evaluation import (
    EvaluationContext,
    EvaluationReport,
    EvaluationResult,
    EvaluationScenario,
    EvaluationSuite,
)
from worldforge.reports import render_report
from worldforge.reports.csv_report import CSV_COLUMNS
from worldforge.reports.html import render_html
from worldforge.reports.markdown import render_markdown
from worldforge.reports.sections import is_safe_png_data_uri

HOSTILE = '<script>alert("x")</script> | `tick` & "quote" \' [link](javascript:alert(1))'
VOID = {"meta", "br", "img", "hr", "input", "link", "wbr"}


class StrictParser(HTMLParser):
    """Checks tag balance and collects tags, attributes and text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}> with open {self.stack[-3:]}"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(document: str) -> StrictParser:
    parser = StrictParser()
    parser.feed(document)
    parser.close()
    assert parser.stack == [], f"unclosed tags: {parser.stack}"
    return parser


PNG_1x1 = (
    "data:image/png;base64,"
    + base64.b64encode(
        bytes.fromhex(
            "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
            "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
        )
    ).decode()
)


def _hostile_report() -> EvaluationReport:
    def evaluator(context: EvaluationContext) -> Any:
        return context.outcome(score=0.2, passed=False, metrics={"note": HOSTILE, "count": 3})

    suite = EvaluationSuite.custom(
        suite_id="hostile",
        name=f"Suite {HOSTILE}",
        suite_version="hostile:1",
        claim_boundary=f"Claim {HOSTILE}",
        scenarios=[EvaluationScenario.from_callable(name="s1", description=HOSTILE, evaluator=evaluator)],
    )
    report = suite.run_report("mock", forge=WorldForge())
    report.sections = {
        "per_letter": [{"letter": "A", "score": 0.5, "note": HOSTILE}, {"letter": "B", "score": 0.25}],
        "levels": {
            "title": "Level gallery",
            "images": [
                {"caption": f"A {HOSTILE}", "src": PNG_1x1},
                {"caption": "remote", "src": "https://example.com/x.png"},
                {"caption": "js", "src": "javascript:alert(1)"},
                {"caption": "svg", "src": "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4="},
                {"caption": "quote", "src": 'data:image/png;base64,AAAA" onerror="alert(1)'},
            ],
        },
    }
    return report


def test_html_is_self_contained_balanced_and_escaped() -> None:
    report = _hostile_report()
    document = render_html(report.to_dict())
    parser = parse(document)
    assert document.startswith("<!DOCTYPE html>")
    assert "script" not in parser.tags and "link" not in parser.tags and "a" not in parser.tags
    assert "<script>" not in document and "&lt;script&gt;" in document
    # the only URL-bearing attribute is the inline PNG
    urls = [(t, k, v) for t, k, v in parser.attrs if k in ("src", "href", "action", "srcset")]
    assert urls == [("img", "src", PNG_1x1)]
    assert all(not (k.startswith("on")) for _, k, _ in parser.attrs)
    text = "".join(parser.text)
    assert f"Claim {HOSTILE}" in text  # claim boundary visible, verbatim after unescaping
    assert "4 image(s) omitted" in text
    assert "Failure Gallery" in text and "evaluation:hostile:s1" in text
    # gallery table reads real keys (no '-' placeholders for observed score / expected)
    assert "0.2000" in text and "should meet its scenario contract" in text
    # footer uses created_at
    assert report.provenance is not None and report.provenance.created_at in text


def test_png_data_uri_rule() -> None:
    assert is_safe_png_data_uri(PNG_1x1)
    for bad in (
        "data:image/png;base64,",
        "data:image/png;base64,abc",
        "data:image/jpeg;base64,AAAA",
        3,
        None,
    ):
        assert not is_safe_png_data_uri(bad)


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=60))
def test_html_never_leaks_markup_from_any_string(text: str) -> None:
    name = "S" + text
    result = EvaluationResult("fz", name, "s", "mock", 0.5, False, {"v": text, text: 1})
    report = EvaluationReport("fz", name, [result], claim_boundary="c " + text, metric_semantics="m")
    document = render_html(report.to_dict())
    parser = parse(document)
    assert set(parser.tags) <= {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "h1",
        "h2",
        "h3",
        "div",
        "dl",
        "dt",
        "dd",
        "code",
        "section",
        "strong",
        "br",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "span",
        "p",
        "ol",
        "li",
        "pre",
    }


def test_markdown_has_provenance_tables_sections_and_escapes_pipes() -> None:
    report = _hostile_report()
    markdown = render_markdown(report.to_dict())
    assert markdown.startswith("# Evaluation Report\n")
    assert "Claim boundary: Claim " in markdown
    assert "## Provenance" in markdown and "- Input digest: `sha256:" in markdown
    prov = report.to_dict()["provenance"]
    assert f"- Kind: {prov['kind']}\n" in markdown and f"- Suite id: {prov['suite_id']}\n" in markdown
    assert "| provider | average_score | passed | scenarios |" in markdown
    assert "| mock | 0.2000 | 0/1 | 1 |" in markdown
    prose = re.sub(r"```.*?```", "", markdown, flags=re.S)
    prose = re.sub(r"``.*?``|`[^`]*`", "", prose)
    assert "<script>" not in prose and "&lt;script&gt;" in prose  # raw HTML only inside code spans
    # every table row keeps its column count despite '|' in values
    for line in markdown.splitlines():
        if line.startswith("| mock | s1 |"):
            assert line.replace("\\|", "").count("|") == 6
    assert "## Per letter" in markdown and "| letter | score | note |" in markdown
    assert "## Level gallery" in markdown and "- Image: A " in markdown
    assert "4 image(s) omitted" in markdown
    assert "## Failure Gallery" in markdown


def test_csv_one_row_per_result_no_envelope() -> None:
    report = EvaluationSuite.from_builtin("physics").run_report(["mock", "mock:b"], forge=WorldForge())
    text = render_report(report.to_dict(), "csv")
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == 1 + 4
    assert rows[1][:6] == [
        "physics",
        "Physics Evaluation Suite",
        "mock",
        "prediction-determinism",
        "0.9133",
        "true",
    ]
    assert json.loads(rows[1][6])["state_digest_match"] is True
    assert "provenance" not in text and "sha256:" not in text
    assert text.endswith("\r\n")


def test_csv_guards_formula_cells() -> None:
    result = EvaluationResult("f", "=HYPERLINK(1)", "s", "mock", 0.0, False)
    report = EvaluationReport("f", "=HYPERLINK(1)", [result], claim_boundary="c", metric_semantics="m")
    rows = list(csv.reader(io.StringIO(render_report(report.to_dict(), "csv"))))
    assert rows[1][1] == "'=HYPERLINK(1)"


def test_json_renderer_is_the_canonical_payload_and_all_formats_agree() -> None:
    report = EvaluationSuite.from_builtin("physics").run_report("mock", forge=WorldForge())
    artifacts = report.artifacts()
    assert json.loads(artifacts["json"]) == report.to_dict()
    assert artifacts["json"] == report.to_json() + "\n"
    score = f"{report.results[0].score:.4f}"
    assert score in artifacts["markdown"] and score in artifacts["csv"] and score in artifacts["html"]
    assert report.provenance is not None
    for key in ("json", "markdown", "html"):
        assert report.provenance.result_digest in artifacts[key]
    with pytest.raises(Exception, match="unknown report format 'pdf'"):
        render_report(report.to_dict(), "pdf")


def test_empty_table_sections_render_a_sentence_not_a_headerless_table() -> None:
    report = _hostile_report()
    report.sections = {
        "explained": {"title": "Comparison", "description": f"Nothing to compare {HOSTILE}.", "rows": []},
        "bare": {"title": "Missing inputs", "rows": []},
    }
    payload = report.to_dict()
    markdown = render_markdown(payload)
    assert "|  |" not in markdown and "\n|\n" not in markdown
    assert "## Comparison\n\nNothing to compare " in markdown
    assert "## Missing inputs\n\nNo entries.\n" in markdown
    document = render_html(payload)
    parse(document)
    assert "<thead><tr></tr></thead>" not in document and "<tbody><tr></tr></tbody>" not in document
    assert "<h2>Missing inputs</h2><p>No entries.</p>" in document
    assert "<h2>Comparison</h2><p>Nothing to compare &lt;script&gt;" in document
    assert json.loads(render_report(payload, "json"))["sections"]["bare"]["rows"] == []


def test_a_payload_read_back_from_its_json_renders_as_the_report_does() -> None:
    """Bundles re-render reports from their JSON files: every format must come out the same as
    from the report built in this process, failure gallery and provenance included."""
    report = _hostile_report()
    # Canonical JSON sorts keys, which orders sections and table columns: keep them sorted here.
    report.sections = {
        "levels": {"images": [{"caption": f"A {HOSTILE}", "src": PNG_1x1}], "title": "Level gallery"},
        "per_letter": [{"letter": "A", "note": HOSTILE, "score": 0.5}, {"letter": "B", "score": 1.0}],
        "summary": {"count": 3, "ok": True},
    }
    payload = report.to_dict()
    assert "failure_gallery" in payload and "provenance" in payload
    loaded = json.loads(render_report(payload, "json"))
    for fmt in ("json", "markdown", "csv", "html"):
        assert render_report(loaded, fmt) == render_report(payload, fmt), fmt


def test_a_malformed_payload_part_is_named() -> None:
    payload = _hostile_report().to_dict()
    broken = {**payload, "results": [{"provider": "mock"}, "not an object"]}
    for fmt in ("markdown", "csv", "html"):
        with pytest.raises(WorldForgeError, match="'results' must be a list of objects"):
            render_report(broken, fmt)
    wrong_score = {
        **payload,
        "provider_summaries": [{**payload["provider_summaries"][0], "average_score": None}],
    }
    with pytest.raises(WorldForgeError, match="average_score must be a number"):
        render_markdown(wrong_score)
