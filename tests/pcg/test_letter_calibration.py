"""Cross-fold calibration: a held-out family is measured at a temperature its own levels never chose."""

from __future__ import annotations

from typing import Any

import pytest

from worldforge import heavy
from worldforge.pcg.similarity.accuracy import accuracy_sentence, classifier_accuracy
from worldforge.pcg.similarity.measures import metrics
from worldforge.pcg.similarity.training import calibration
from worldforge.pcg.similarity.training import loop as lt

torch = heavy.torch()


def _fold(seed: int, n: int = 300, sharpness: float = 3.0, noise: float = 1.0) -> tuple[Any, Any]:
    """Logits of a model that is right most of the time, ``sharpness`` times too sure of itself."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, 26, (n,), generator=g)
    logits = torch.randn(n, 26, generator=g) * noise
    logits[torch.arange(n), target] += 2.0
    return logits * sharpness, target


def test_a_family_never_chooses_its_own_temperature() -> None:
    folds = {"a": _fold(1), "b": _fold(2), "c": _fold(3, sharpness=1.0)}
    base = calibration.crossfold_temperatures(folds)
    assert set(base) == {"a", "b", "c"}
    # The temperature of "a" is the one fitted on b and c pooled, in the mapping's order.
    pooled = torch.cat([folds["b"][0], folds["c"][0]]), torch.cat([folds["b"][1], folds["c"][1]])
    assert base["a"] == lt.fit_temperature(*pooled)
    # Make "a" far sharper: its own temperature stays, the others' move.
    changed = {**folds, "a": (folds["a"][0] * 3, folds["a"][1])}
    again = calibration.crossfold_temperatures(changed)
    assert again["a"] == base["a"]
    assert again["b"] != base["b"] and again["c"] != base["c"]


def test_one_fold_alone_has_no_crossfold_temperature() -> None:
    assert calibration.crossfold_temperatures({"a": _fold(1)}) == {}
    assert calibration.crossfold({"a": _fold(1)}) == {}


def test_crossfold_measures_the_test_and_the_extra_sets_at_that_temperature() -> None:
    folds = {"a": _fold(1), "b": _fold(2), "c": _fold(3)}
    extra = {"a": {"unseen": _fold(9, n=60)}}
    result = calibration.crossfold(folds, extra)
    temperature = calibration.crossfold_temperatures(folds)["a"]
    assert set(result["a"]) == {"test_crossfold", "unseen_crossfold"}
    assert set(result["b"]) == {"test_crossfold"}
    expected = metrics(lt.softmax_rows(folds["a"][0] / temperature), folds["a"][1].tolist())
    assert result["a"]["test_crossfold"] == {**expected, "temperature": temperature}
    unseen_logits, unseen_target = extra["a"]["unseen"]
    assert (
        result["a"]["unseen_crossfold"]["accuracy"]
        == metrics(lt.softmax_rows(unseen_logits / temperature), unseen_target.tolist())["accuracy"]
    )


def test_an_overconfident_cohort_gets_a_temperature_that_repairs_the_held_out_family() -> None:
    """Three folds three times too sure of themselves: the temperature fitted on two of them cools
    the third, whose calibration error falls well below the raw one."""
    folds = {name: _fold(seed, n=600) for name, seed in (("a", 11), ("b", 12), ("c", 13))}
    result = calibration.crossfold(folds)
    raw = metrics(lt.softmax_rows(folds["a"][0]), folds["a"][1].tolist())
    fitted = result["a"]["test_crossfold"]
    assert fitted["temperature"] > 1.2
    assert fitted["accuracy"] == raw["accuracy"]  # a temperature never changes the top-1
    assert raw["ece"] > 0.1 and fitted["ece"] < raw["ece"] / 2


def _record(fold: dict[str, Any]) -> dict[str, Any]:
    return {"lofo_min_accuracy": 0.9, "lofo": {"dpi": fold}, "hand": {"accuracy": 0.96}, "unseen": {}}


@pytest.mark.parametrize(
    ("fold", "expected"),
    [
        ({"test_calibrated": {"ece": 0.07}, "test_crossfold": {"ece": 0.03}}, 0.03),
        ({"test_calibrated": {"ece": 0.07}}, 0.07),  # a record from before the cross-fold measure
    ],
)
def test_claim_boundary_quotes_the_crossfold_calibration_when_recorded(
    fold: dict[str, Any], expected: float, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import json

    from worldforge.pcg.similarity import accuracy as acc

    fold = {"test": {"accuracy": 0.9}, **fold}
    (tmp_path / "training.json").write_text(json.dumps({**_record(fold), "weights_digest": "sha256:w"}))
    monkeypatch.setattr(acc, "BUNDLED_DIR", tmp_path)
    figures = classifier_accuracy({"id": acc.BUNDLED_ID, "weights_digest": "sha256:w"})
    assert figures["lofo_ece"] == {"dpi": expected}
    assert figures["lofo_ece_in_family_temperature"] == {"dpi": 0.07}
    assert f"calibration error <= {expected} per held-out family" in accuracy_sentence(figures)
