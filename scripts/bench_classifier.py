#!/usr/bin/env python
"""Classifier throughput: the bundled letter classifier and, for scale, a ViT-base-sized model.

Writes JSON (stdout, and ``--out FILE`` if given):

* ``bundled.images_per_second`` — batch 64, from decoded 1024 px RGBA renders (what the pipeline
  holds in memory) to softmax + embedding: RGB conversion, the model's processor, forward pass.
  ``bundled.images_per_second_from_png`` adds PNG decoding of the 1024 px files.
* ``vit_base.seconds_per_image`` — a ``ViTForImageClassification`` with the official model's shape
  (224 px, patch 16, hidden 768, 12 layers, 26 labels), random weights, built from a local config,
  saved and loaded through the same ``load_classifier`` path; batch 8.

Goal on a 2-core CPU: >= 1,000 images/s for the bundled classifier.
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _renders(n: int) -> list[Any]:
    from worldforge.pcg.glyphs import LETTERS, letter_program
    from worldforge.pcg.pipeline import run_batch
    from worldforge.pcg.render import render_level

    programs = [letter_program(LETTERS[i % 26], 500 + i // 26) for i in range(n)]
    outcomes = run_batch(programs, workers=2, render=False, details=False)
    del outcomes  # physics warm-up only; the images below come from the same programs
    from worldforge.pcg.convert import convert
    from worldforge.pcg.physics import simulate

    return [render_level(simulate(convert(p))) for p in programs]


def _timed(fn: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_bundled(images: list[Any], batch: int, repeats: int) -> dict[str, Any]:
    import torch

    from worldforge.pcg.classifier import load_classifier

    clf = load_classifier(None, device="cpu")
    clf.classify(images[:batch], batch_size=batch, workers=2)  # warm-up
    seconds = _timed(lambda: clf.classify(images, batch_size=batch, workers=2), repeats)
    pngs = []
    for img in images:
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        pngs.append(buf.getvalue())
    png_seconds = _timed(lambda: clf.classify(pngs, batch_size=batch, workers=2), 1)
    return {
        "classifier": clf.identity,
        "batch_size": batch,
        "images": len(images),
        "torch_threads": torch.get_num_threads(),
        "images_per_second": round(len(images) / seconds, 1),
        "images_per_second_from_png": round(len(images) / png_seconds, 1),
        "includes": "RGB conversion, processor (box resize + normalize), forward, softmax, embedding",
    }


def bench_vit_base(images: list[Any], batch: int) -> dict[str, Any]:
    import torch
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    from worldforge.pcg.classifier import LETTERS, load_classifier

    config = ViTConfig(
        image_size=224,
        patch_size=16,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        id2label=dict(enumerate(LETTERS)),
        label2id={c: i for i, c in enumerate(LETTERS)},
    )
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(0)
        model = ViTForImageClassification(config)
        params = sum(p.numel() for p in model.parameters())
        model.save_pretrained(tmp)
        del model
        ViTImageProcessor(
            size={"height": 224, "width": 224}, resample=2, image_mean=[0.5] * 3, image_std=[0.5] * 3
        ).save_pretrained(tmp)
        clf = load_classifier(tmp, device="cpu")
        sample = images[: 2 * batch]
        clf.classify(sample[:2], batch_size=2)  # warm-up
        seconds = _timed(lambda: clf.classify(sample, batch_size=batch), 1)
    return {
        "parameters": params,
        "batch_size": batch,
        "images": len(sample),
        "seconds_per_image": round(seconds / len(sample), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-vit", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    images = _renders(args.images)
    result: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "processor": platform.machine(), "cpus": _cpus()},
        "bundled": bench_bundled(images, 64, args.repeats),
    }
    result["bundled"]["goal_images_per_second"] = 1000
    if not args.skip_vit:
        result["vit_base"] = bench_vit_base(images, 8)
    text = json.dumps(result, indent=2) + "\n"
    sys.stdout.write(text)
    if args.out:
        from worldforge.core.io import atomic_write_text

        atomic_write_text(args.out, text)
    return 0


def _cpus() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


if __name__ == "__main__":
    raise SystemExit(main())
