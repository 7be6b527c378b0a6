"""Corpus rendering, training and measurement for ``scripts/train_letter_classifier.py``.

Levels are rendered by the project's own pipeline (converter -> Box2D -> similarity render) and
kept as 128 px greyscale (an exact 8x box reduction of the 1024 px image); evaluation sets also keep
the full render as PNG so the final checkpoint is measured through
:func:`worldforge.pcg.similarity.classifier.load_classifier` exactly as the similarity stage classifies.

Heaps: a level where more than :data:`HEAP_MOVED` of the blocks moved more than one cell (or were
destroyed) during the simulation no longer shows its letter (looked at: above a quarter, nearly none is
readable). Such levels are excluded from training
and from the accuracy figures (their count is reported per family), so a heap never teaches the
model that heaps are an "A". Levels that only lean or shift keep their intended letter.
"""

from __future__ import annotations

import math
import struct
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worldforge.core.digests import digest_payload
from worldforge.core.io import atomic_write_bytes
from worldforge.pcg.letters import LETTERS

IMAGE = 128  # stored render size (1024 / 8)
INPUT = 64  # model input size (processor box-resizes 1024 -> 64)
CELL = 0.2401  # one grid cell in Unity units
HEAP_MOVED = 0.25  # fraction of blocks displaced by more than a cell above which a level is a heap
ECE_BINS = 15


def render_item(item: tuple[str, bool]) -> tuple[bytes, bytes, float]:
    """(128 px greyscale bytes, full PNG or b"", fraction of blocks moved > 1 cell or destroyed)."""
    from PIL import Image

    from worldforge.pcg.levels.convert import convert
    from worldforge.pcg.sim.physics import simulate
    from worldforge.pcg.sim.render import encode_png, render_array

    program, keep_png = item
    result = simulate(convert(program))
    rgba = render_array(result)
    moved = sum(
        1 for d, alive in zip(result.displacements, result.alive, strict=True) if d > CELL or not alive
    )
    small = Image.fromarray(rgba[:, :, 0].copy(), mode="L").reduce(1024 // IMAGE).tobytes()
    return small, encode_png(rgba) if keep_png else b"", moved / max(1, result.total_blocks)


@dataclass
class Split:
    """Levels of one family and split: programs, labels, renders, heap flags."""

    family: str
    split: str
    programs: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    small: list[bytes] = field(default_factory=list)
    png: list[bytes] = field(default_factory=list)
    moved: list[float] = field(default_factory=list)

    @property
    def keep(self) -> list[int]:
        """Indices of levels that are not heaps."""
        return [i for i, m in enumerate(self.moved) if m <= HEAP_MOVED]


def render_splits(splits: list[Split], workers: int, cache: Path | None = None) -> None:
    """Fill ``small``/``png``/``moved`` of every split (one process pool for all of them).

    With ``cache`` the renders are stored under a file named by the digest of the programs, so a
    second run over the same corpus (another schedule, a crashed run) skips the simulation.
    """
    items = [(p, s.split != "train") for s in splits for p in s.programs]
    start = time.monotonic()
    path = None
    if cache is not None:
        key = digest_payload([[p, png] for p, png in items]).split(":")[1][:24]
        path = cache / f"letter-corpus-{key}.bin"
    results = _read_cache(path, len(items)) if path is not None and path.is_file() else None
    if results is None:
        if workers > 1:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(render_item, items, chunksize=16))
        else:
            results = [render_item(i) for i in items]
        if path is not None:
            _write_cache(path, results)
    k = 0
    for s in splits:
        for _ in s.programs:
            small, png, moved = results[k]
            s.small.append(small)
            s.png.append(png)
            s.moved.append(moved)
            k += 1
    print(f"rendered {len(items)} levels in {time.monotonic() - start:.0f}s", file=sys.stderr)


def _write_cache(path: Path, results: list[tuple[bytes, bytes, float]]) -> None:
    parts = [struct.pack("<I", len(results))]
    for small, png, moved in results:
        parts.append(struct.pack("<IId", len(small), len(png), moved))
        parts += [small, png]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, b"".join(parts))


def _read_cache(path: Path, count: int) -> list[tuple[bytes, bytes, float]] | None:
    data = path.read_bytes()
    if struct.unpack_from("<I", data)[0] != count:
        return None
    out, pos = [], 4
    for _ in range(count):
        n_small, n_png, moved = struct.unpack_from("<IId", data, pos)
        pos += 16
        out.append((data[pos : pos + n_small], data[pos + n_small : pos + n_small + n_png], moved))
        pos += n_small + n_png
    return out


def as_tensor(splits: list[Split]) -> tuple[Any, Any]:
    """Non-heap levels of ``splits`` as a uint8 (N, 1, 128, 128) tensor and a label tensor."""
    import numpy as np
    import torch

    raw = [s.small[i] for s in splits for i in s.keep]
    labels = [s.labels[i] for s in splits for i in s.keep]
    data = np.frombuffer(b"".join(raw), dtype=np.uint8).reshape(-1, 1, IMAGE, IMAGE)
    return torch.from_numpy(data.copy()), torch.tensor(labels, dtype=torch.long)


def augment(batch: Any, generator: Any) -> Any:
    """Affine jitter (scale, aspect, rotation, shift) and stroke weight on 128 px ink maps -> 64 px."""
    import torch
    import torch.nn.functional as F

    n = batch.shape[0]
    ink = 1.0 - batch
    scale = torch.empty(n).uniform_(0.8, 1.12, generator=generator)
    angle = torch.empty(n).uniform_(-6.0, 6.0, generator=generator) * math.pi / 180
    shift = torch.empty(n, 2).uniform_(-0.1, 0.1, generator=generator)
    aspect = torch.empty(n).uniform_(0.85, 1.15, generator=generator)
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack(
        [torch.stack([cos * aspect, -sin, shift[:, 0]], 1), torch.stack([sin * aspect, cos, shift[:, 1]], 1)],
        1,
    )
    grid = F.affine_grid(theta, list(ink.shape), align_corners=False)
    ink = F.grid_sample(ink, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    morph = torch.rand(n, generator=generator)
    dil = F.max_pool2d(ink, 3, stride=1, padding=1)
    ero = -F.max_pool2d(-ink, 3, stride=1, padding=1)
    ink = torch.where((morph < 0.25)[:, None, None, None], dil, ink)
    ink = torch.where((morph > 0.85)[:, None, None, None], ero, ink)
    return _normalize(1.0 - F.avg_pool2d(ink, 2))


def _normalize(img: Any) -> Any:
    return ((img - 0.5) / 0.5).expand(-1, 3, -1, -1).contiguous()


def build_model(seed: int) -> Any:
    """Small ResNet (basic blocks, widths 16-128): ~0.3 M parameters, > 1,000 images/s on 2 cores."""
    import torch
    from transformers import ResNetConfig, ResNetForImageClassification

    torch.manual_seed(seed)
    config = ResNetConfig(
        num_channels=3,
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        hidden_act="relu",
        id2label=dict(enumerate(LETTERS)),
        label2id={c: i for i, c in enumerate(LETTERS)},
    )
    return ResNetForImageClassification(config)


def processor() -> Any:
    from transformers import ViTImageProcessor

    return ViTImageProcessor(
        do_resize=True,
        size={"height": INPUT, "width": INPUT},
        resample=4,  # BOX: an exact area average of the 1024 px render
        do_rescale=True,
        rescale_factor=1 / 255,
        do_normalize=True,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )


def train(data: Any, target: Any, *, epochs: int, seed: int, lr: float, label: str, batch: int = 128) -> Any:
    """AdamW + one-cycle, label smoothing 0.1 (softer, better calibrated softmax vectors)."""
    import torch

    model = build_model(seed)
    generator = torch.Generator().manual_seed(seed)
    steps = epochs * ((len(target) + batch - 1) // batch)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.2)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    model.train()
    start = time.monotonic()
    for epoch in range(epochs):
        order = torch.randperm(len(target), generator=generator)
        total, correct, loss_sum = 0, 0, 0.0
        for i in range(0, len(order), batch):
            idx = order[i : i + batch]
            x = augment(data[idx].float() / 255.0, generator)
            logits = model(pixel_values=x).logits
            loss = loss_fn(logits, target[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += float(loss.detach()) * len(idx)
            total += len(idx)
            correct += int((logits.argmax(-1) == target[idx]).sum())
        print(
            f"[{label}] epoch {epoch + 1}/{epochs}: loss {loss_sum / total:.3f} "
            f"train-acc {correct / total:.3f} ({time.monotonic() - start:.0f}s)",
            file=sys.stderr,
        )
    model.eval()
    return model


def logits_of(model: Any, data: Any, batch: int = 256) -> Any:
    """Logits for 128 px uint8 renders through the same 2x box reduction and normalization."""
    import torch
    import torch.nn.functional as F

    out = []
    with torch.no_grad():
        for i in range(0, len(data), batch):
            x = _normalize(F.avg_pool2d(data[i : i + batch].float() / 255.0, 2))
            out.append(model(pixel_values=x).logits)
    return torch.cat(out) if out else torch.zeros(0, len(LETTERS))


def fit_temperature(logits: Any, target: Any) -> float:
    """Temperature minimizing the negative log-likelihood (grid search 0.5..3.0, step 0.05)."""
    import torch

    best = (math.inf, 1.0)
    for k in range(10, 61):
        t = k / 20
        nll = float(torch.nn.functional.cross_entropy(logits / t, target))
        best = min(best, (nll, t))
    return best[1]


def apply_temperature(model: Any, temperature: float) -> None:
    """Fold 1/T into the classification head, so the saved checkpoint's softmax is calibrated."""
    import torch

    head = model.classifier[-1]
    with torch.no_grad():
        head.weight.div_(temperature)
        head.bias.div_(temperature)


def metrics(probs: list[list[float]], labels: list[int]) -> dict[str, Any]:
    """Top-1, per-letter accuracy, top confusions, expected calibration error, mean confidence."""
    n = len(labels)
    if n == 0:
        return {"images": 0}
    top = [max(range(len(p)), key=p.__getitem__) for p in probs]
    conf = [p[t] for p, t in zip(probs, top, strict=True)]
    hits = [t == y for t, y in zip(top, labels, strict=True)]
    per_letter: dict[str, float] = {}
    confusions: dict[str, int] = {}
    for i, c in enumerate(LETTERS):
        rows = [k for k in range(n) if labels[k] == i]
        if rows:
            per_letter[c] = round(sum(hits[k] for k in rows) / len(rows), 3)
    for k in range(n):
        if not hits[k]:
            key = f"{LETTERS[labels[k]]}->{LETTERS[top[k]]}"
            confusions[key] = confusions.get(key, 0) + 1
    ece = 0.0
    for b in range(ECE_BINS):
        lo, hi = b / ECE_BINS, (b + 1) / ECE_BINS
        members = [k for k in range(n) if lo < conf[k] <= hi or (b == 0 and conf[k] == 0)]
        if members:
            acc = sum(hits[k] for k in members) / len(members)
            avg = sum(conf[k] for k in members) / len(members)
            ece += len(members) / n * abs(acc - avg)
    nll = -sum(math.log(max(p[y], 1e-12)) for p, y in zip(probs, labels, strict=True)) / n
    return {
        "images": n,
        "accuracy": round(sum(hits) / n, 4),
        "min_letter": min(per_letter.values()) if per_letter else None,
        "per_letter": per_letter,
        "confusions": dict(sorted(confusions.items(), key=lambda kv: (-kv[1], kv[0]))[:12]),
        "ece": round(ece, 4),
        "mean_confidence": round(sum(conf) / n, 4),
        "nll": round(nll, 4),
    }


def softmax_rows(logits: Any) -> list[list[float]]:
    return [[float(v) for v in row] for row in logits.softmax(-1)]


def heap_stats(split: Split) -> dict[str, Any]:
    return {"levels": len(split.programs), "heaps": len(split.programs) - len(split.keep)}
