"""The redactor and the bundle gate measured on gitleaks' published sample secrets (a corpus this
project did not write): every keyed sample is redacted in every context, and the figures in
``docs/secret_corpus.json`` are what the measuring script reports today."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worldforge.evidence.corpus import measure

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "secrets" / "gitleaks_samples.json"


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return measure.measure(json.loads(CORPUS.read_text(encoding="utf-8")))


def test_fixture_names_its_source_and_licence() -> None:
    corpus = json.loads(CORPUS.read_text(encoding="utf-8"))
    source = corpus["source"]
    assert source["repository"] == "https://github.com/gitleaks/gitleaks"
    assert len(source["commit"]) == 40 and source["licence"].startswith("MIT")
    assert (CORPUS.parent / "LICENSE-gitleaks").read_text(encoding="utf-8").startswith("MIT License")
    assert len(corpus["true_positives"]) > 500 and len(corpus["false_positives"]) > 300
    assert {fp["kind"] for fp in corpus["false_positives"]} == {"benign", "pattern"}


def test_every_keyed_sample_is_redacted_in_every_context(result: dict[str, Any]) -> None:
    keyed = result["redactor_recall_keyed"]
    assert keyed["all"]["total"] > 10_000
    assert {family: row["rate"] for family, row in keyed.items()} == {family: 1.0 for family in keyed}
    assert result["redactor_misses_keyed"] == []
    assert len(result["contexts"]) >= 19  # gitleaks' generator's contexts and the ones it lacks


def test_docs_figures_are_current(result: dict[str, Any]) -> None:
    """``docs/secret_corpus.json`` (quoted by docs/evidence.md) is regenerated with the code."""
    recorded = json.loads((ROOT / "docs" / "secret_corpus.json").read_text(encoding="utf-8"))
    assert recorded == json.loads(json.dumps(result))


def test_benign_look_alikes_do_not_regress(result: dict[str, Any]) -> None:
    """Ceilings at today's figures (docs/evidence.md gives the goal and what is left): a change that
    redacts or flags more text no gitleaks pattern matches must say so here."""
    assert result["redactor_benign_redacted_rate"]["all"]["rate"] <= 0.092
    assert result["gate_benign_flagged_rate"]["all"]["rate"] <= 0.12
    assert result["redactor_recall_bare"]["all"]["rate"] >= 0.892
    assert result["gate_recall_keyed"]["all"]["rate"] >= 0.967
