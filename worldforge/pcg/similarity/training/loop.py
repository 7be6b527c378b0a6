"""Corpus rendering, training and measurement for the training recipe (:mod:`.recipe`).

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

import functools
import math
import struct
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from worldforge import heavy
from worldforge.core.digests import digest_payload
from worldforge.core.io import atomic_write_bytes
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.similarity.measures import LetterMetrics, metrics
from worldforge.pcg.similarity.training.records import HeapStats, PngMetrics

if TYPE_CHECKING:  # torch and transformers load lazily, through worldforge.heavy, at run time
    from worldforge.heavy import Generator, Linear, ResNetForImageClassification, Tensor, ViTImageProcessor

IMAGE = 128  # stored render size (1024 / 8)
INPUT = 64  # model input size (processor box-resizes 1024 -> 64)
CELL = 0.2401  # one grid cell in Unity units
HEAP_MOVED = 0.25  # fraction of blocks displaced by more than a cell above which a level is a heap


def render_item(item: tuple[str, bool]) -> tuple[bytes, bytes, float]:
    """(128 px greyscale bytes, full PNG or b"", fraction of blocks moved > 1 cell or destroyed).

    Both images are made from the render's distinct rows (:func:`.thumbnail.thumbnail`,
    :func:`~worldforge.pcg.sim.png.encode_rows`): the same bytes as reducing and encoding the
    full 4 MB image, without building it."""
    from worldforge.pcg.levels.convert import convert
    from worldforge.pcg.sim.physics import simulate
    from worldforge.pcg.sim.png import encode_rows
    from worldforge.pcg.sim.render import render_rows
    from worldforge.pcg.similarity.training.thumbnail import thumbnail

    program, keep_png = item
    result = simulate(convert(program))
    rows = render_rows(result)
    moved = sum(
        1 for d, alive in zip(result.displacements, result.alive, strict=True) if d > CELL or not alive
    )
    png = encode_rows(rows.distinct, rows.new) if keep_png else b""
    return thumbnail(rows), png, moved / max(1, result.total_blocks)


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
    #: Per level: whether the build put ink beside the letter (:func:`.grids.beside_ink`).
    beside: list[bool] = field(default_factory=list)

    @property
    def keep(self) -> list[int]:
        """Indices of levels that are not heaps."""
        return [i for i, m in enumerate(self.moved) if m <= HEAP_MOVED]


def render_splits(splits: list[Split], workers: int, cache: Path | None = None) -> None:
    """Fill ``small``/``png``/``moved`` of every split (one process pool for all of them).

    With ``cache`` each split's renders are stored under a file named by the digest of its
    programs, so a second run skips the simulation of every split whose programs did not change
    (another schedule, a crashed run, or a change to one family's generator).
    """
    start = time.monotonic()
    todo: list[tuple[Split, Path | None]] = []
    for s in splits:
        items = [(p, s.split != "train") for p in s.programs]
        path = None
        if cache is not None:
            key = digest_payload([[p, png] for p, png in items]).split(":")[1][:24]
            path = cache / f"letter-split-{s.family}-{s.split}-{key}.bin"
        cached = _read_cache(path, len(items)) if path is not None and path.is_file() else None
        if cached is None:
            todo.append((s, path))
        else:
            _fill(s, cached)
    items = [(p, s.split != "train") for s, _ in todo for p in s.programs]
    if workers > 1 and len(items) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(render_item, items, chunksize=16))
    else:
        results = [render_item(i) for i in items]
    k = 0
    for s, path in todo:
        part = results[k : k + len(s.programs)]
        k += len(s.programs)
        _fill(s, part)
        if path is not None:
            _write_cache(path, part)
    print(
        f"rendered {len(items)} levels ({sum(len(s.programs) for s in splits) - len(items)} cached) "
        f"in {time.monotonic() - start:.0f}s",
        file=sys.stderr,
    )


def _fill(split: Split, results: list[tuple[bytes, bytes, float]]) -> None:
    for small, png, moved in results:
        split.small.append(small)
        split.png.append(png)
        split.moved.append(moved)


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


def as_tensor(splits: list[Split], *, beside: bool | None = None) -> tuple[Tensor, Tensor]:
    """Non-heap levels of ``splits`` as a uint8 (N, 1, 128, 128) tensor and a label tensor.

    With ``beside``, only the levels whose build did (True) or did not (False) put ink beside the
    letter: the two halves of a test set, measured apart.
    """
    import numpy as np

    torch = heavy.torch()

    rows = [(s, i) for s in splits for i in s.keep if beside is None or s.beside[i] == beside]
    raw = [s.small[i] for s, i in rows]
    labels = [s.labels[i] for s, i in rows]
    data = np.frombuffer(b"".join(raw), dtype=np.uint8).reshape(-1, 1, IMAGE, IMAGE)
    return torch.from_numpy(data.copy()), torch.tensor(labels, dtype=torch.long)


def augment(batch: Tensor, generator: Generator) -> Tensor:
    """Training augmentation on 128 px ink maps -> normalized 64 px model input.

    In order: block-grid re-quantization (30 % of the images redrawn on a coarser grid of 9-23
    cells, the way another letter height lands on the block grid), affine jitter (scale 0.7-1.15,
    aspect 0.7-1.4, rotation +-8 degrees, shear, shift +-12 %) with a smooth elastic displacement,
    stroke weight (dilation by 3-7 px kernels, some one-directional, or erosion), added supports
    (vertical bars filling a gap below a stroke, as the drop planner props up overhangs and
    counters) and small cut-outs (missing blocks).
    """
    torch = heavy.torch()
    F = heavy.load("torch.nn.functional")

    n = batch.shape[0]
    ink = _requantize(1.0 - batch, generator)
    scale = torch.empty(n).uniform_(0.7, 1.15, generator=generator)
    angle = torch.empty(n).uniform_(-8.0, 8.0, generator=generator) * math.pi / 180
    shift = torch.empty(n, 2).uniform_(-0.12, 0.12, generator=generator)
    aspect = torch.exp(torch.empty(n).uniform_(math.log(0.7), math.log(1.4), generator=generator))
    shear = torch.empty(n).uniform_(-0.2, 0.2, generator=generator)
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack(
        [
            torch.stack([cos * aspect, shear - sin, shift[:, 0]], 1),
            torch.stack([sin * aspect, cos, shift[:, 1]], 1),
        ],
        1,
    )
    warp = torch.randn(n, 2, 4, 4, generator=generator) * 0.03
    ink = F.grid_sample(
        ink, _warped_grid(theta, warp), mode="bilinear", padding_mode="zeros", align_corners=False
    )
    ink = _stroke_weight(ink, generator)
    ink = _supports(ink, generator)
    ink = _cutouts(ink, generator)
    return _normalize(1.0 - F.avg_pool2d(ink, 2), channels_last=True)


@functools.cache
def _grid_bases(cells: int, size: int) -> tuple[Tensor, Tensor]:
    """Row and column bases of the sampling grid (see ``_warped_grid``): ``size`` x (``cells`` + 2).

    The first ``cells`` columns are ``F.interpolate``'s bicubic weights (align_corners=False), read
    off by upsampling one impulse per cell, so the kernel is PyTorch's own; the last two carry the
    affine part: (y, 1) for rows, (1, x) for columns, in ``affine_grid``'s pixel-centre coordinates.
    """
    torch = heavy.torch()
    F = heavy.load("torch.nn.functional")

    impulses = torch.eye(cells).reshape(cells, 1, cells, 1)
    bicubic = F.interpolate(impulses, size=(size, 1), mode="bicubic", align_corners=False)[:, 0, :, 0].T
    pos = ((torch.arange(size, dtype=torch.float32) * 2 + 1) / size - 1)[:, None]
    one = torch.ones(size, 1)
    return torch.cat([bicubic, pos, one], 1).contiguous(), torch.cat([bicubic, one, pos], 1).contiguous()


def _warped_grid(theta: Tensor, warp: Tensor) -> Tensor:
    """The sampling grid ``grid_sample`` takes: ``F.affine_grid(theta, (n, 1, IMAGE, IMAGE),
    align_corners=False)`` plus the ``warp`` cells upsampled bicubically (``F.interpolate``).

    Both parts are linear in separable bases, so the grid is ``rows @ M @ columns.T`` with the warp
    and ``theta`` laid into one small matrix ``M`` per image and axis; it is computed channel-first
    and handed over as a permuted view. Equal to the direct calls within 3e-7; on one CPU thread
    the grid and the sampling take 30 ms per 128 images instead of 121 ms, which was two thirds of
    the augmentation's time.
    """
    torch = heavy.torch()

    n, _, cells, _ = warp.shape
    rows, columns = _grid_bases(cells, IMAGE)
    m = torch.zeros(n, 2, cells + 2, cells + 2)
    m[:, :, :cells, :cells] = warp
    m[:, :, cells + 1, cells + 1] = theta[:, :, 0]  # (1) x (x): the x coefficient
    m[:, :, cells, cells] = theta[:, :, 1]  # (y) x (1): the y coefficient
    m[:, :, cells + 1, cells] = theta[:, :, 2]  # (1) x (1): the shift
    grid = (torch.matmul(rows, m).reshape(-1, cells + 2) @ columns.T).reshape(n, 2, IMAGE, IMAGE)
    return grid.permute(0, 2, 3, 1)


def _draw(generator: Generator, low: int, high: int) -> int:
    """One integer in [low, high) from ``generator``."""
    torch = heavy.torch()

    return int(torch.randint(low, high, (1,), generator=generator))


def _dilate(ink: Tensor, kh: int = 3, kw: int = 3) -> Tensor:
    """Max filter over a ``kh`` x ``kw`` window (odd sizes), as two 1-D passes of shifted maxima."""
    torch = heavy.torch()
    F = heavy.load("torch.nn.functional")

    h, w = ink.shape[-2:]
    padded = F.pad(ink, (kw // 2, kw // 2, kh // 2, kh // 2))
    across = padded[..., :, 0:w]
    for k in range(1, kw):
        across = torch.maximum(across, padded[..., :, k : k + w])
    out = across[..., 0:h, :]
    for k in range(1, kh):
        out = torch.maximum(out, across[..., k : k + h, :])
    return out


_WEIGHT_KERNELS = ((3, 3), (5, 5), (3, 5), (5, 3), (7, 3), (3, 7))


def _stroke_weight(ink: Tensor, generator: Generator) -> Tensor:
    """A fifth of the images dilated (one kernel per batch), 15 % eroded by one pixel."""
    torch = heavy.torch()

    draw = torch.rand(ink.shape[0], generator=generator)
    out = ink.clone()
    thick = torch.nonzero(draw < 0.2).flatten()
    if len(thick):
        kh, kw = _WEIGHT_KERNELS[_draw(generator, 0, len(_WEIGHT_KERNELS))]
        out[thick] = _dilate(ink[thick], kh, kw)
    thin = torch.nonzero(draw > 0.85).flatten()
    if len(thin):
        out[thin] = 1.0 - _dilate(1.0 - ink[thin])
    return out


def _requantize(ink: Tensor, generator: Generator) -> Tensor:
    """30 % of the images redrawn on a grid of 9-23 cells (area coverage above 0.45-0.6)."""
    torch = heavy.torch()
    F = heavy.load("torch.nn.functional")

    n = ink.shape[0]
    chosen = torch.nonzero(torch.rand(n, generator=generator) < 0.3).flatten()
    if not len(chosen):
        return ink
    cells = _draw(generator, 9, 24)
    low = F.adaptive_avg_pool2d(ink[chosen], (cells, cells))
    threshold = torch.empty(len(chosen), 1, 1, 1).uniform_(0.45, 0.6, generator=generator)
    out = ink.clone()
    out[chosen] = F.interpolate((low > threshold).float(), size=ink.shape[-2:], mode="nearest")
    return out


def _supports(ink: Tensor, generator: Generator) -> Tensor:
    """For 35 % of the images, one or two supports: in a random band of columns 3-8 px wide, the
    gap below a random ink run is filled down to the next ink (or to the letter's bottom row).

    The searches run in numpy on one boolean copy of the batch (the per-image torch calls cost
    more than the work); the draws from ``generator`` are the same calls in the same order.
    """
    import numpy as np

    torch = heavy.torch()

    out = ink.clone()
    height, width = ink.shape[-2:]
    images = (ink[:, 0] > 0.5).numpy()
    filled = out.numpy()  # shares memory with ``out``
    for i in range(ink.shape[0]):
        if float(torch.rand(1, generator=generator)) >= 0.35:
            continue
        image = images[i]
        rows = np.flatnonzero(image.any(1))
        if not len(rows):
            continue
        bottom = int(rows[-1])
        for _ in range(_draw(generator, 1, 3)):
            band = _draw(generator, 3, 9)
            x0 = _draw(generator, 0, width - band)
            column = image[:, x0 : x0 + band].any(1)
            ys = np.flatnonzero(column)
            if not len(ys):
                continue
            y = int(ys[_draw(generator, 0, len(ys))])
            below = np.flatnonzero(~column[y + 1 :])  # the run of ink from y down ends here
            y = y + int(below[0]) if len(below) else height - 1
            below = np.flatnonzero(column[y + 1 :])
            end = y + 1 + int(below[0]) if len(below) else bottom + 1
            filled[i, 0, y:end, x0 : x0 + band] = 1.0
    return out


def _cutouts(ink: Tensor, generator: Generator) -> Tensor:
    """A fifth of the images lose one rectangle of 6-17 px (a missing or fallen block)."""
    torch = heavy.torch()

    height, width = ink.shape[-2:]
    for i in range(ink.shape[0]):
        if float(torch.rand(1, generator=generator)) < 0.2:
            x0, y0 = _draw(generator, 0, width - 16), _draw(generator, 0, height - 16)
            w, h = _draw(generator, 6, 18), _draw(generator, 6, 18)
            ink[i, :, y0 : y0 + h, x0 : x0 + w] = 0.0
    return ink


def _normalize(img: Tensor, *, channels_last: bool = False) -> Tensor:
    """(img - 0.5) / 0.5 on three channels; ``channels_last`` lays it out as training wants it
    (one copy instead of two)."""
    torch = heavy.torch()

    layout = torch.channels_last if channels_last else torch.contiguous_format
    return ((img - 0.5) / 0.5).expand(-1, 3, -1, -1).contiguous(memory_format=layout)


def build_model(seed: int) -> ResNetForImageClassification:
    """Small ResNet (basic blocks, widths 16-128): ~0.3 M parameters, > 1,000 images/s on 2 cores."""
    torch = heavy.torch()
    transformers = heavy.transformers()

    torch.manual_seed(seed)
    config = transformers.ResNetConfig(
        num_channels=3,
        embedding_size=16,
        hidden_sizes=[16, 32, 64, 128],
        depths=[1, 1, 1, 1],
        layer_type="basic",
        hidden_act="relu",
        id2label=dict(enumerate(LETTERS)),
        label2id={c: i for i, c in enumerate(LETTERS)},
    )
    return transformers.ResNetForImageClassification(config)


def processor() -> ViTImageProcessor:
    return heavy.transformers().ViTImageProcessor(
        do_resize=True,
        size={"height": INPUT, "width": INPUT},
        resample=4,  # BOX: an exact area average of the 1024 px render
        do_rescale=True,
        rescale_factor=1 / 255,
        do_normalize=True,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    )


def train(
    data: Tensor, target: Tensor, *, epochs: int, seed: int, lr: float, label: str, batch: int = 128
) -> ResNetForImageClassification:
    """AdamW + one-cycle, label smoothing 0.1 (softer, better calibrated softmax vectors)."""
    torch = heavy.torch()

    # channels_last: oneDNN's convolutions run about a fifth faster on CPU in that layout; the
    # model goes back to the default layout before it is returned (and saved).
    # (transformers wraps ``Module.to`` with functools.wraps, which mypy reads as unbound)
    model = build_model(seed).to(memory_format=torch.channels_last)  # type: ignore[call-arg]
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
            x = augment(data[idx].float() / 255.0, generator)  # channels-last already
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
    return model.to(memory_format=torch.contiguous_format)


@dataclass
class FoldJob:
    """One model to train and measure: (data, target) tensors to train on, named test sets."""

    label: str
    train: tuple[Tensor, Tensor]
    tests: dict[str, tuple[Tensor, Tensor]]
    epochs: int
    seed: int
    lr: float
    threads: int
    #: Levels the softmax temperature is fitted on (the trained families' held-out seeds); with
    #: it, every test set is also measured at that temperature (``<name>_calibrated``).
    calibration: tuple[Tensor, Tensor] | None = None
    #: Test sets whose raw (logits, targets) come back with the metrics, for measurements that
    #: need several folds at once (:mod:`.calibration`).
    keep_logits: tuple[str, ...] = ()


@dataclass
class FoldOutcome:
    """What a fold returns: metrics per test set, and the raw logits ``keep_logits`` asked for."""

    metrics: dict[str, LetterMetrics]
    logits: dict[str, tuple[Tensor, Tensor]] = field(default_factory=dict)


def run_fold(job: FoldJob) -> FoldOutcome:
    """Train ``job``'s model and return the metrics of every test set (runs in a worker process).

    With ``job.calibration``, a temperature is fitted there, as the shipped model's is on the
    held-out seeds, and each test set is measured again at it: the held-out family's calibration
    error with a temperature chosen without it. The raw figures are unchanged.
    """
    torch = heavy.torch()

    torch.set_num_threads(job.threads)
    data, target = job.train
    model = train(data, target, epochs=job.epochs, seed=job.seed, lr=job.lr, label=job.label)
    logits = {name: logits_of(model, test_data) for name, (test_data, _) in job.tests.items()}
    out = {  # the held-out family with its whole matrix (docs/classifier.md prints the worst fold's)
        name: metrics(softmax_rows(logits[name]), test_target.tolist(), matrix=name == "test")
        for name, (_, test_target) in job.tests.items()
    }
    if job.calibration is not None:
        cal_data, cal_target = job.calibration
        temperature = fit_temperature(logits_of(model, cal_data), cal_target)
        for name, (_, test_target) in job.tests.items():
            calibrated = metrics(softmax_rows(logits[name] / temperature), test_target.tolist())
            calibrated["temperature"] = temperature
            out[f"{name}_calibrated"] = calibrated
    return FoldOutcome(out, {name: (logits[name], job.tests[name][1]) for name in job.keep_logits})


def run_folds(jobs: list[FoldJob], workers: int) -> list[FoldOutcome]:
    """:func:`run_fold` for every job, ``workers`` processes side by side (spawned: no forked
    OpenMP state); results in the order of ``jobs``."""
    import multiprocessing

    if workers <= 1 or not jobs:
        return [run_fold(job) for job in jobs]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(run_fold, jobs))


def logits_of(model: ResNetForImageClassification, data: Tensor, batch: int = 256) -> Tensor:
    """Logits for 128 px uint8 renders through the same 2x box reduction and normalization."""
    torch = heavy.torch()
    F = heavy.load("torch.nn.functional")

    out = []
    with torch.no_grad():
        for i in range(0, len(data), batch):
            x = _normalize(F.avg_pool2d(data[i : i + batch].float() / 255.0, 2))
            out.append(model(pixel_values=x).logits)
    return torch.cat(out) if out else torch.zeros(0, len(LETTERS))


def fit_temperature(logits: Tensor, target: Tensor) -> float:
    """Temperature minimizing the negative log-likelihood (grid search 0.5..3.0, step 0.05)."""
    torch = heavy.torch()

    best = (math.inf, 1.0)
    for k in range(10, 61):
        t = k / 20
        nll = float(torch.nn.functional.cross_entropy(logits / t, target))
        best = min(best, (nll, t))
    return best[1]


def apply_temperature(model: ResNetForImageClassification, temperature: float) -> None:
    """Fold 1/T into the classification head, so the saved checkpoint's softmax is calibrated."""
    torch = heavy.torch()

    head = cast("Linear", model.classifier[-1])
    with torch.no_grad():
        head.weight.div_(temperature)
        head.bias.div_(temperature)


def classify_pngs(folder: Path, split_list: list[Split]) -> PngMetrics:
    """Metrics of the saved checkpoint on the full-size PNGs (the similarity stage's input path)."""
    from worldforge.pcg.similarity.classifier import load_classifier

    clf = load_classifier(folder, device="cpu")
    pngs = [s.png[i] for s in split_list for i in s.keep]
    labels = [s.labels[i] for s in split_list for i in s.keep]
    result = clf.classify(pngs, batch_size=64, embedding=False)
    out = PngMetrics(**metrics(result.softmax, labels))
    out["programs_digest"] = digest_payload([s.programs[i] for s in split_list for i in s.keep])
    return out


def softmax_rows(logits: Tensor) -> list[list[float]]:
    return [[float(v) for v in row] for row in logits.softmax(-1)]


def heap_stats(split: Split) -> HeapStats:
    """Levels, heaps, and non-heap levels whose build put ink beside the letter."""
    keep = split.keep
    return {
        "levels": len(split.programs),
        "heaps": len(split.programs) - len(keep),
        "beside_ink": sum(split.beside[i] for i in keep) if split.beside else None,
    }
