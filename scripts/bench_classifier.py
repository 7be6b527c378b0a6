#!/usr/bin/env python
"""Classifier throughput: the bundled letter classifier and, for scale, a ViT-base-sized model.

Writes JSON (stdout, and ``--out FILE`` if given):

* ``bundled.images_per_second`` — batch 64, from decoded 1024 px RGBA renders (what the pipeline
  holds in memory) to softmax + embedding: input preparation (resize to 64 px, rescale,
  normalize: bit for bit the model processor's output), forward pass, softmax, embedding.
* ``bundled.images_per_second_from_png`` adds PNG decoding of the 1024 px files the pipeline writes
  (:func:`worldforge.pcg.sim.render.png_bytes`); ``..._from_pillow_png`` does the same for PNGs saved by
  Pillow (Paeth-filtered rows, so Pillow decodes them).
* ``bundled.without_shortcut`` — the same inputs through the model's own processor, for comparison.
* Every figure is the best of ``--repeats`` runs (default 9; the machine is shared and its speed
  varies over time); ``cpu_ms_per_image`` is the process CPU time of all threads per image (lowest
  over the runs), which other load on the machine disturbs less. ``machine.load_average`` is the
  1-minute load before and after.
* ``vit_base.seconds_per_image`` — a ``ViTForImageClassification`` with the official model's shape
  (224 px, patch 16, hidden 768, 12 layers, 26 labels), random weights, built from a local config,
  saved and loaded through the same ``load_classifier`` path; batch 8.

Goal on a 2-core CPU: >= 1,000 images/s for the bundled classifier. Defaults: two preparation
threads (``classify(workers=2)``) and one torch thread, so that the model and the preparation of
the next batch each keep one core busy; torch's default of one thread per core competes with them.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _renders(n: int) -> list[Any]:
    from worldforge.pcg.letters import LETTERS
    from worldforge.pcg.levels.glyphs import letter_program
    from worldforge.pcg.sim.pipeline import run_batch
    from worldforge.pcg.sim.render import render_level

    programs = [letter_program(LETTERS[i % 26], 500 + i // 26) for i in range(n)]
    outcomes = run_batch(programs, workers=2, render=False, details=False)
    del outcomes  # physics warm-up only; the images below come from the same programs
    from worldforge.pcg.levels.convert import convert
    from worldforge.pcg.sim.physics import simulate

    return [render_level(simulate(convert(p))) for p in programs]


def _timed(fn: Any, repeats: int) -> tuple[float, float]:
    """(lowest wall-clock seconds, lowest process CPU seconds of all threads) over ``repeats`` runs."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu


def _rates(
    clf: Any, items: list[Any], batch: int, workers: int, repeats: int, suffix: str
) -> dict[str, float]:
    wall, cpu = _timed(lambda: clf.classify(items, batch_size=batch, workers=workers), repeats)
    return {
        f"images_per_second{suffix}": round(len(items) / wall, 1),
        f"cpu_ms_per_image{suffix}": round(1000 * cpu / len(items), 3),
    }


def bench_bundled(images: list[Any], batch: int, repeats: int, workers: int) -> dict[str, Any]:
    import torch

    from worldforge.pcg.sim.render import png_bytes
    from worldforge.pcg.similarity.classifier import load_classifier

    clf = load_classifier(None, device="cpu")
    ours = [png_bytes(img) for img in images]
    pillow = []
    for img in images:
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        pillow.append(buf.getvalue())
    result: dict[str, Any] = {
        "classifier": clf.identity,
        "batch_size": batch,
        "images": len(images),
        "workers": workers,
        "torch_threads": torch.get_num_threads(),
    }
    for suffix, items in (("", images), ("_from_png", ours), ("_from_pillow_png", pillow)):
        clf.classify(items[:batch], batch_size=batch, workers=workers)  # warm-up, one-time checks
        result.update(_rates(clf, items, batch, workers, repeats, suffix))
    table, clf._table = clf._table, None  # every image through the model's processor
    result["without_shortcut"] = {
        **_rates(clf, images, batch, workers, 1, ""),
        **_rates(clf, ours, batch, workers, 1, "_from_png"),
    }
    clf._table = table
    result["includes"] = "resize + rescale + normalize (processor-exact), forward, softmax, embedding"
    return result


def bench_vit_base(images: list[Any], batch: int) -> dict[str, Any]:
    import torch
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    from worldforge.pcg.letters import LETTERS
    from worldforge.pcg.similarity.classifier import load_classifier

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
        seconds, _ = _timed(lambda: clf.classify(sample, batch_size=batch), 1)
    return {
        "parameters": params,
        "torch_threads": torch.get_num_threads(),
        "batch_size": batch,
        "images": len(sample),
        "seconds_per_image": round(seconds / len(sample), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--workers", type=int, default=2, help="preparation threads (classify workers)")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--skip-vit", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    import torch

    default_threads = torch.get_num_threads()
    torch.set_num_threads(args.torch_threads)
    images = _renders(args.images)
    load_before = os.getloadavg()[0]
    result: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "processor": platform.machine(), "cpus": _cpus()},
        "bundled": bench_bundled(images, 64, args.repeats, args.workers),
    }
    result["machine"]["load_average"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    result["bundled"]["goal_images_per_second"] = 1000
    if not args.skip_vit:
        torch.set_num_threads(default_threads)  # one model, nothing to overlap with: all cores
        result["vit_base"] = bench_vit_base(images, 8)
    text = json.dumps(result, indent=2) + "\n"
    sys.stdout.write(text)
    if args.out:
        from worldforge.core.io import atomic_write_text

        atomic_write_text(args.out, text)
    return 0


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        return os.cpu_count() or 1


if __name__ == "__main__":
    raise SystemExit(main())
