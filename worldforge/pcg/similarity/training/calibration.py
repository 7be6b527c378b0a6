"""Calibration of a held-out family at a temperature fitted on *other* held-out families.

A fold's ``test_calibrated`` figure fits its temperature on the held-out seeds of the families the
fold trained on. There the model is right about 99 % of the time, so the fitted temperature (about
0.6) sharpens the softmax for inputs it knows; on a family it never saw (top-1 0.84-0.97) the same
temperature is overconfident. The question a user asks of a similarity score is the other one: how
sure is the model on a style nobody trained it on?

The cross-fold temperature answers it without looking at the family being measured: for the fold
holding out F, the temperature minimizes the negative log-likelihood of the *other* folds'
held-out families (fold G's model on G's levels, for every G != F), i.e. of models reading styles
they were not trained on. Every level it is fitted on belongs to one of the families F's model
trained on, and none belongs to F, so F's own levels choose nothing (:func:`crossfold`; a test
changes F's logits and checks that its temperature does not move).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from worldforge import heavy
from worldforge.pcg.similarity.measures import LetterMetrics, metrics
from worldforge.pcg.similarity.training.loop import fit_temperature, softmax_rows

if TYPE_CHECKING:
    from worldforge.heavy import Tensor


def crossfold_temperatures(held_out: Mapping[str, tuple[Tensor, Tensor]]) -> dict[str, float]:
    """Per held-out family F: the temperature fitted on every other fold's held-out (logits,
    targets), pooled in the mapping's order; no temperature for a family without another fold."""
    torch = heavy.torch()

    out: dict[str, float] = {}
    for family in held_out:
        others = [pair for name, pair in held_out.items() if name != family]
        if not others:
            continue
        logits = torch.cat([logit for logit, _ in others])
        target = torch.cat([tgt for _, tgt in others])
        out[family] = fit_temperature(logits, target)
    return out


def crossfold(
    held_out: Mapping[str, tuple[Tensor, Tensor]],
    also: Mapping[str, Mapping[str, tuple[Tensor, Tensor]]] | None = None,
) -> dict[str, dict[str, LetterMetrics]]:
    """Per held-out family: its metrics at the cross-fold temperature (``test_crossfold``), and at
    the same temperature those of the fold's other named sets in ``also[family]`` (e.g. the frozen
    evaluation-only family: ``unseen_crossfold``). Each entry records its ``temperature``."""
    result: dict[str, dict[str, LetterMetrics]] = {}
    for family, temperature in crossfold_temperatures(held_out).items():
        sets = {"test": held_out[family], **(also or {}).get(family, {})}
        result[family] = {}
        for name, (logits, target) in sets.items():
            figures = metrics(softmax_rows(logits / temperature), target.tolist())
            figures["temperature"] = temperature
            result[family][f"{name}_crossfold"] = figures
    return result


__all__ = ["crossfold", "crossfold_temperatures"]
