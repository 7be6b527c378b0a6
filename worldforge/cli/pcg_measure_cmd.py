"""``worldforge pcg classify``: letter probabilities for level images, and with ``--truth`` the
classifier's measured figures on them (top-1, per letter, confusions, calibration).

Registered on the ``pcg`` group by :mod:`worldforge.cli.pcg_cmd` through :func:`register_measure`.
torch/transformers load only when the command runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

import typer

from worldforge.cli._common import check_format, cli_errors, format_option
from worldforge.core.errors import WorldForgeError

if TYPE_CHECKING:  # imported where it is used: ``worldforge --help`` stays fast
    from worldforge.pcg.similarity.measures import LetterMetrics
    from worldforge.pcg.similarity.predictions import Prediction

FORMATS = ("text", "json")


class ClassifiedImage(TypedDict):
    """One image of ``pcg classify --format json``: the letter, its confidence, every letter's
    probability and, with ``--embedding``, the embedding."""

    image: str
    top: str
    confidence: float
    softmax: dict[str, float]
    embedding: NotRequired[list[float] | None]
    #: With ``--truth``: the letter the image shows.
    truth: NotRequired[str]


class ClassifyPayload(TypedDict):
    """``pcg classify --format json``: the classifier's identity and one entry per image; with
    ``--truth``, the figures measured on them (``measurement``)."""

    classifier: dict[str, str]
    images: list[ClassifiedImage]
    measurement: NotRequired[LetterMetrics]


def _payload(
    paths: list[Path],
    result: Sequence[Prediction],
    identity: dict[str, str],
    embedding: bool,
    letters: list[str] | None = None,
) -> ClassifyPayload:
    from worldforge.pcg.letters import LETTERS
    from worldforge.pcg.similarity.labelled import measure

    images = []
    for k, (path, pred) in enumerate(zip(paths, result, strict=True)):
        item: ClassifiedImage = {
            "image": str(path),
            "top": pred.top,
            "confidence": pred.confidence,
            "softmax": dict(zip(LETTERS, pred.softmax, strict=True)),
        }
        if embedding:
            item["embedding"] = pred.embedding
        if letters is not None:
            item["truth"] = letters[k]
        images.append(item)
    payload: ClassifyPayload = {"classifier": identity, "images": images}
    if letters is not None:
        payload["measurement"] = measure([pred.softmax for pred in result], letters)
    return payload


def _measurement_lines(figures: LetterMetrics) -> list[str]:
    """The ``--truth`` summary of the text format: top-1, worst letters, calibration, confusions."""
    worst = sorted(figures["per_letter"].items(), key=lambda kv: (kv[1], kv[0]))[:5]
    confusions = ", ".join(f"{pair} {n}" for pair, n in figures["confusions"].items()) or "none"
    return [
        f"measured on {figures['images']} images with known letters: top-1 {figures['accuracy']}, "
        f"ECE {figures['ece']}, mean confidence {figures['mean_confidence']}, NLL {figures['nll']}",
        "lowest letters: " + ", ".join(f"{c} {v}" for c, v in worst),
        f"confusions (true->read): {confusions}",
    ]


def classify_cmd(
    images: list[Path] = typer.Argument(..., help="Level images (PNG/JPEG...)."),
    classifier: str | None = typer.Option(
        None,
        "--classifier",
        help="Hub id (e.g. pittawat/vit-base-uppercase-english-characters) or checkpoint directory; "
        "default: the bundled letter classifier.",
    ),
    fmt: str = format_option("text", FORMATS),
    embedding: bool = typer.Option(False, "--embedding", help="Include the embedding vector (json)."),
    truth: str | None = typer.Option(
        None,
        "--truth",
        help="The images' letters are known: from the file name (name: A_03.png) or the folder "
        "(folder: A/03.png); adds top-1, per-letter accuracy, confusions and calibration error.",
    ),
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Images per forward pass."),
    device: str | None = typer.Option(None, "--device", help="cuda, mps or cpu (default: auto)."),
) -> None:
    """Softmax over A-Z and the top letter for each image (with --embedding, the embedding too;
    with --truth, the classifier's figures on these images)."""
    with cli_errors():
        check_format(fmt, FORMATS)
        for path in images:
            if not path.is_file():
                raise WorldForgeError(f"{path}: file not found.")
        letters = None
        if truth is not None:  # every name checked before the model loads
            from worldforge.pcg.similarity.labelled import truths

            letters = truths(list(images), truth)
        from worldforge.pcg.similarity.classifier import load_classifier

        model = load_classifier(classifier, device=device)
        result = model.classify(list(images), batch_size=batch_size, embedding=embedding)
        payload = _payload(list(images), result, model.identity, embedding, letters)
        if fmt == "json":
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
            return
        ident = payload["classifier"]
        lines = [f"classifier: {ident['id']} ({ident['weights_digest']})"]
        for item in payload["images"]:
            ranked = sorted(item["softmax"].items(), key=lambda kv: -kv[1])[:3]
            top3 = "  ".join(f"{c} {p:.3f}" for c, p in ranked)
            read = f"{item['image']}: {item['top']}  ({top3})"
            if "truth" in item:
                read += "" if item["truth"] == item["top"] else f"  [shows {item['truth']}]"
            lines.append(read)
        if "measurement" in payload:
            lines += _measurement_lines(payload["measurement"])
        sys.stdout.write("\n".join(lines) + "\n")


def register_measure(pcg_app: typer.Typer) -> None:
    """Add ``pcg classify`` to the ``pcg`` command group."""
    pcg_app.command("classify")(classify_cmd)


__all__ = ["register_measure"]
