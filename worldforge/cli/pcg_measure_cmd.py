"""``worldforge pcg classify``: letter probabilities for level images.

Registered on the ``pcg`` group by :mod:`worldforge.cli.pcg_cmd` through :func:`register_measure`.
torch/transformers load only when the command runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from worldforge.cli._common import check_format, cli_errors, format_option
from worldforge.core.errors import WorldForgeError

FORMATS = ("text", "json")


def _payload(paths: list[Path], result: Any, identity: dict[str, str], embedding: bool) -> dict[str, Any]:
    from worldforge.pcg.letters import LETTERS

    images = []
    for path, pred in zip(paths, result, strict=True):
        item: dict[str, Any] = {
            "image": str(path),
            "top": pred.top,
            "confidence": pred.confidence,
            "softmax": dict(zip(LETTERS, pred.softmax, strict=True)),
        }
        if embedding:
            item["embedding"] = pred.embedding
        images.append(item)
    return {"classifier": identity, "images": images}


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
    batch_size: int = typer.Option(64, "--batch-size", min=1, help="Images per forward pass."),
    device: str | None = typer.Option(None, "--device", help="cuda, mps or cpu (default: auto)."),
) -> None:
    """Softmax over A-Z and the top letter for each image (with --embedding, the embedding too)."""
    with cli_errors():
        check_format(fmt, FORMATS)
        for path in images:
            if not path.is_file():
                raise WorldForgeError(f"{path}: file not found.")
        from worldforge.pcg.similarity.classifier import load_classifier

        model = load_classifier(classifier, device=device)
        result = model.classify(list(images), batch_size=batch_size, embedding=embedding)
        payload = _payload(list(images), result, model.identity, embedding)
        if fmt == "json":
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
            return
        ident = payload["classifier"]
        lines = [f"classifier: {ident['id']} ({ident['weights_digest']})"]
        for item in payload["images"]:
            ranked = sorted(item["softmax"].items(), key=lambda kv: -kv[1])[:3]
            top3 = "  ".join(f"{c} {p:.3f}" for c, p in ranked)
            lines.append(f"{item['image']}: {item['top']}  ({top3})")
        sys.stdout.write("\n".join(lines) + "\n")


def register_measure(pcg_app: typer.Typer) -> None:
    """Add ``pcg classify`` to the ``pcg`` command group."""
    pcg_app.command("classify")(classify_cmd)


__all__ = ["register_measure"]
