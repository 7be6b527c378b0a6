"""How far a similarity number can be trusted: the measured accuracy of the classifier behind it.

Reports name the classifier by identity (id + weights digest). For the bundled checkpoint the
training script also records what it measured (``assets/letter-classifier/training.json``):
leave-one-family-out top-1 over independent letter families, top-1 on hand-drawn letters it never
saw, top-1 on the frozen evaluation-only family (another glyph source and placement rule, never
trained on), and expected calibration error of every held-out family. :func:`classifier_accuracy`
returns those figures only when the weights digest matches, so a report never attributes them to
other weights.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from worldforge.pcg.similarity.classifier import BUNDLED_DIR, BUNDLED_ID

DETAILS = "docs/classifier.md"


def classifier_accuracy(identity: Mapping[str, Any]) -> dict[str, Any]:
    """Measured accuracy of the classifier ``identity`` names (``measured: False`` when unknown)."""
    unknown = {"checkpoint": str(identity.get("id")), "measured": False}
    if identity.get("id") != BUNDLED_ID:
        return unknown
    try:
        meta = json.loads((BUNDLED_DIR / "training.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return unknown
    if not isinstance(meta, dict) or meta.get("weights_digest") != identity.get("weights_digest"):
        return unknown
    hand = meta.get("hand") or {}
    folds = meta.get("lofo") or {}
    # A fold's calibration error at a temperature chosen without its held-out family: fitted on the
    # other folds' held-out families (models reading styles they never trained on, as a report's
    # classifier does; ``training/calibration.py``), or, in a record from before that measure, on the
    # held-out seeds of the families the fold trained on.
    fold_ece = {
        k: (v.get("test_crossfold") or v.get("test_calibrated") or {}).get("ece") for k, v in folds.items()
    }
    in_family_ece = {k: (v.get("test_calibrated") or {}).get("ece") for k, v in folds.items()}
    unseen = {k: v.get("accuracy") for k, v in (meta.get("unseen") or {}).items()}
    return {
        "checkpoint": BUNDLED_ID,
        "measured": True,
        "lofo_min_top1": meta.get("lofo_min_accuracy"),
        "lofo_top1": {k: v["test"]["accuracy"] for k, v in folds.items()},
        "lofo_ece": fold_ece,
        "lofo_max_ece": max((e for e in fold_ece.values() if e is not None), default=None),
        "lofo_ece_in_family_temperature": in_family_ece,
        "unseen_top1": unseen,
        "hand_drawn_top1": hand.get("accuracy"),
        "hand_drawn_ece": hand.get("ece"),
        "heldout_top1": (meta.get("heldout") or {}).get("accuracy"),
        "details": DETAILS,
    }


def accuracy_sentence(accuracy: Mapping[str, Any]) -> str:
    """One sentence for a claim boundary: what the classifier's accuracy was measured to be."""
    if not accuracy.get("measured"):
        return f"Classifier {accuracy.get('checkpoint')}: accuracy not measured by WorldForge."
    parts = [f"leave-one-family-out top-1 >= {accuracy['lofo_min_top1']}"]
    if accuracy.get("lofo_max_ece") is not None:
        parts[0] += f" (calibration error <= {accuracy['lofo_max_ece']} per held-out family)"
    parts += [
        f"{top1} on the never-trained {name!r} letter family"
        for name, top1 in accuracy.get("unseen_top1", {}).items()
    ]
    parts.append(f"{accuracy['hand_drawn_top1']} on hand-drawn letters it never saw")
    return f"Classifier {accuracy['checkpoint']}: {', '.join(parts)} ({accuracy['details']})."


__all__ = ["DETAILS", "accuracy_sentence", "classifier_accuracy"]
