"""Letter classifier for the similarity stage: any transformers image classifier over A-Z.

The official similarity model is ``pittawat/vit-base-uppercase-english-characters`` (a ViT-base); it
loads here by hub id when the hub is reachable. Nobody can download it in an offline checkout, so
the package ships its own small classifier (``pcg/assets/letter-classifier``, trained by
``python -m worldforge.pcg.similarity.training`` on levels made by this project's pipeline) and uses it by
default. Everything loads through ``AutoImageProcessor`` + ``AutoModelForImageClassification``, so a
local copy of the official checkpoint, the bundled one and a hub id take the same code path.
Processors load with the Pillow backend even where transformers would pick torchvision: the
official pipeline resized with Pillow, and torchvision has no BOX filter (the bundled processor's).

Outputs per image: the 26-way softmax in A..Z order (the official script indexes the softmax at
``ord(C) - 65``) and an embedding: for ViT-like models the last encoder layer's CLS token *before*
the final LayerNorm (``hidden_states[-1][:, 0]``, as the 2025 diversity script stores it); for
other architectures the pooled features that feed the classification head.

Input preparation: when the processor is a Pillow-backed ViT processor that resizes to a fixed size
with a convolution filter and then only rescales/normalizes (the bundled checkpoint's does), images
skip the processor and go through :mod:`worldforge.pcg.similarity.classifier_input` (in-place
pixel reads, one horizontal resampling pass per distinct row, a PNG reader for None/Sub/Up PNGs)
and a 256-entry table of the processor's own output per channel value. The result is bit for bit
the processor's ``pixel_values``; that is checked once per input layout and size against the
processor itself, and anything that does not match, or is not covered, goes through the processor.

torch, transformers and numpy are imported inside functions: ``import worldforge`` stays light.
"""

from __future__ import annotations

import io
import os
import re
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

from worldforge import heavy
from worldforge.core.digests import digest_file, digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.letters import LETTERS
from worldforge.pcg.similarity.classifier_input import Rows, rows_from_array, rows_from_image, rows_from_png
from worldforge.pcg.similarity.predictions import Classification, Prediction
from worldforge.pcg.similarity.prep import PreparedPng, PrepSpec, ShortcutTable, shortcut_values

if TYPE_CHECKING:  # torch loads lazily, through worldforge.heavy
    from worldforge.heavy import Module, Tensor

OFFICIAL_MODEL_ID = "pittawat/vit-base-uppercase-english-characters"
BUNDLED_ID = "worldforge/letter-classifier"
BUNDLED_DIR = Path(__file__).resolve().parents[1] / "assets" / "letter-classifier"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "tf_model.h5", "flax_model.msgpack")
_CLS_TOKEN_TYPES = {"vit", "deit", "beit", "dinov2", "data2vec-vision", "vit_msn", "vit_mae", "dinov3_vit"}
# Model types whose forward never reads a ReLU's input again (ResNet: it follows a norm or a sum).
_INPLACE_RELU_TYPES = {"resnet"}
_PROCESSOR_BACKEND = "pil"  # see the module docstring
# Processors whose whole pipeline is: Pillow resize to a fixed size, rescale, normalize (per value).
_TABLE_PROCESSORS = {"ViTImageProcessor", "ViTImageProcessorPil"}
_CONVOLUTION_FILTERS = {1, 2, 3, 4, 5}  # Pillow LANCZOS, BILINEAR, BICUBIC, BOX, HAMMING
_READABLE_MODES = {"L", "RGB", "RGBA", "RGBX"}  # read in place; anything else is converted to RGB
_TRUE = {"1", "true", "yes", "on"}


def letter_indices(id2label: Mapping[Any, Any], *, source: str) -> list[int]:
    """Logit index of each letter A..Z, validated.

    Accepted: labels that are exactly the letters A-Z (any case, any order; extra labels allowed and
    ignored), or 26 generic ``LABEL_i`` labels, read as ``i <-> chr(65 + i)`` like the official
    script (which never reads ``id2label``). Anything else is a :class:`WorldForgeError`.
    """
    labels = {int(k): str(v).strip() for k, v in id2label.items()}
    by_letter: dict[str, int] = {}
    for index, label in labels.items():
        if len(label) == 1 and label.upper() in LETTERS:
            if label.upper() in by_letter:
                raise WorldForgeError(
                    f"classifier {source}: label {label.upper()!r} appears twice in id2label."
                )
            by_letter[label.upper()] = index
    if len(by_letter) == 26:
        return [by_letter[c] for c in LETTERS]
    if len(labels) == 26 and all(re.fullmatch(r"LABEL_\d+", v) for v in labels.values()):
        return list(range(26))
    missing = "".join(c for c in LETTERS if c not in by_letter)
    raise WorldForgeError(
        f"classifier {source}: id2label must cover the letters A-Z (missing {missing or 'none'}; "
        f"{len(labels)} labels such as {sorted(labels.values())[:4]})."
    )


def pick_device(preferred: str | None = None) -> str:
    """``cuda`` -> ``mps`` -> ``cpu`` (the official script's order) unless one is requested."""
    torch = heavy.torch()

    if preferred:
        try:
            kind = torch.device(preferred).type
        except RuntimeError:
            raise WorldForgeError(
                f"--device: {preferred!r} is not a torch device (use cpu, cuda, cuda:N or mps)."
            ) from None
        available = {
            "cpu": True,
            "cuda": torch.cuda.is_available(),
            "mps": bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()),
        }
        if not available.get(kind, False):
            usable = ", ".join(k for k, ok in available.items() if ok)
            raise WorldForgeError(f"--device: {preferred!r} is not available here (available: {usable}).")
        return preferred
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def _env_offline() -> bool:
    return any(
        os.environ.get(k, "").strip().lower() in _TRUE for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _weights_digest(folder: Path) -> str:
    """sha256 of the weights file; sharded checkpoints digest the list of shard digests."""
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return digest_file(folder / name)
    shards = sorted(folder.glob("model-*.safetensors")) or sorted(folder.glob("pytorch_model-*.bin"))
    if shards:
        return digest_payload([[p.name, digest_file(p)] for p in shards])
    raise WorldForgeError(f"classifier {folder}: no weights file ({', '.join(WEIGHT_FILES)}).")


def _offline_message(spec: str, reason: str) -> str:
    return (
        f"classifier {spec!r}: cannot load from the Hugging Face hub ({reason}); point --classifier at a "
        "local checkpoint directory (config.json, weights, preprocessor_config.json) or omit it to use "
        "the bundled letter classifier."
    )


def _resolve(spec: str | Path | None) -> tuple[str, Path | None]:
    """(id, local folder or None for a hub id)."""
    if spec is None or str(spec) in ("", "bundled", BUNDLED_ID):
        if not (BUNDLED_DIR / "config.json").is_file():
            raise WorldForgeError(
                f"bundled letter classifier missing under {BUNDLED_DIR}; "
                "run python -m worldforge.pcg.similarity.training."
            )
        return BUNDLED_ID, BUNDLED_DIR
    text = str(spec)
    path = Path(text).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise WorldForgeError(f"classifier {text}: directory has no config.json.")
        return f"local:{path.resolve().name}", path
    if path.exists():
        raise WorldForgeError(f"classifier {text}: expected a checkpoint directory, got a file.")
    if text.startswith(("/", "./", "../", "~")) or "\\" in text or text.count("/") > 1:
        raise WorldForgeError(f"classifier {text}: directory does not exist.")
    return text, None


def load_classifier(
    spec: str | Path | None = None, *, device: str | None = None, offline: bool | None = None
) -> LetterClassifier:
    """Load a classifier: ``None``/``"bundled"`` = bundled checkpoint, a directory, or a hub id.

    A hub id is first looked up in the local cache; it is downloaded only when ``offline`` is false
    (default: false unless ``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` is set). Any failure is a
    one-line :class:`WorldForgeError` naming the alternatives.
    """
    ident, folder = _resolve(spec)
    transformers = heavy.transformers()
    AutoImageProcessor = transformers.AutoImageProcessor  # noqa: N806 - the library's class names
    AutoModelForImageClassification = transformers.AutoModelForImageClassification  # noqa: N806
    hf_logging = heavy.load("transformers.utils.logging")

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if folder is not None:
        try:
            processor = AutoImageProcessor.from_pretrained(
                str(folder), local_files_only=True, backend=_PROCESSOR_BACKEND
            )
            model = AutoModelForImageClassification.from_pretrained(str(folder), local_files_only=True)
        except (OSError, ValueError, KeyError) as exc:
            raise WorldForgeError(
                f"classifier {ident}: cannot load checkpoint ({' '.join(str(exc).split())[:200]})."
            ) from exc
        digest = _weights_digest(folder)
    else:
        offline = _env_offline() if offline is None else offline
        processor = model = None
        reason = "not in the local cache and the hub is offline (HF_HUB_OFFLINE)"
        for local_only in (True, False) if not offline else (True,):
            try:
                processor = AutoImageProcessor.from_pretrained(
                    ident, local_files_only=local_only, backend=_PROCESSOR_BACKEND
                )
                model = AutoModelForImageClassification.from_pretrained(ident, local_files_only=local_only)
                break
            except Exception as exc:  # noqa: BLE001 - hub errors come in many types; all mean "cannot load"
                reason = "not in the local cache" if local_only else " ".join(str(exc).split())[:160]
        if model is None:
            raise WorldForgeError(_offline_message(ident, reason))
        digest = _hub_weights_digest(ident)
    return LetterClassifier(model, processor, ident=ident, weights_digest=digest, device=device)


def _relu_in_place(model: Module) -> None:
    """Let the model's ReLUs overwrite their input: bit for bit the same values where nothing reads
    the input again (``_INPLACE_RELU_TYPES``), and an eighth off the bundled model's CPU forward
    pass (allocating each activation cost more than the ReLU)."""
    torch = heavy.torch()
    for module in model.modules():
        if isinstance(module, torch.nn.ReLU):
            module.inplace = True


def _has_conv(model: Module) -> bool:
    torch = heavy.torch()
    return any(isinstance(m, torch.nn.Conv2d) for m in model.modules())


def _hub_weights_digest(repo: str) -> str:
    hub = heavy.huggingface_hub()
    for name in WEIGHT_FILES:
        path = hub.try_to_load_from_cache(repo, name)
        if isinstance(path, str) and Path(path).is_file():
            return digest_file(path)
    raise WorldForgeError(f"classifier {repo}: loaded, but its weights file is not in the local cache.")


class LetterClassifier:
    """A loaded model + processor with A..Z label validation, batching and embeddings."""

    def __init__(
        self, model: Any, processor: Any, *, ident: str, weights_digest: str, device: str | None = None
    ):
        self.model = model
        self.processor = processor
        self.id = ident
        self.weights_digest = weights_digest
        self.indices = letter_indices(model.config.id2label, source=ident)
        self.device = pick_device(device)
        self.model.to(self.device)
        self.model.eval()
        self.cls_token = getattr(model.config, "model_type", "") in _CLS_TOKEN_TYPES
        # Convolutional models run ~2x faster on CPU in channels-last layout (oneDNN kernels).
        self.channels_last = not self.cls_token and _has_conv(model)
        if self.channels_last:
            torch = heavy.torch()
            self.model.to(memory_format=torch.channels_last)
        if getattr(model.config, "model_type", "") in _INPLACE_RELU_TYPES:
            _relu_in_place(model)
        self._table = self._table_path()
        self._checked: dict[tuple[int, int, int], bool | None] = {}
        self._check_lock = threading.Lock()

    @property
    def identity(self) -> dict[str, str]:
        """``{id, weights_digest}``: what every report names."""
        return {"id": self.id, "weights_digest": self.weights_digest}

    def _table_path(self) -> ShortcutTable | None:
        """The processor shortcut when the processor config is one whose output it reproduces.

        That is a Pillow-backed ViT processor resizing to a fixed height and width with a
        convolution filter, without cropping or padding: after the resize its output depends on
        each channel value alone (rescale, normalize), so a table built from the processor's own
        output on every value 0..255 reproduces it. Anything else returns ``None``.
        """
        p = self.processor
        if type(p).__name__ not in _TABLE_PROCESSORS or getattr(p, "backend", "pil") != "pil":
            return None
        size = getattr(p, "size", None)
        if isinstance(size, Mapping):
            height, width = size.get("height"), size.get("width")
        else:  # transformers 5 SizeDict
            height, width = getattr(size, "height", None), getattr(size, "width", None)
        resample = getattr(p, "resample", None)
        if not getattr(p, "do_resize", False) or any(
            getattr(p, flag, False) for flag in ("do_center_crop", "do_pad")
        ):
            return None
        if not isinstance(resample, int) or resample not in _CONVOLUTION_FILTERS or not height or not width:
            return None
        table = self._value_table(int(width), int(height))
        if table is None:
            return None
        uniform = bool((table == table[0]).all())
        return ShortcutTable((int(width), int(height)), int(resample), table, uniform)

    def _value_table(self, width: int, height: int) -> NDArray[np.float32] | None:
        """``(3, 256)`` processor output per channel value, from target-size images (no resize).

        ``None`` unless equal values give equal outputs wherever they occur, as a per-value
        rescale/normalize must.
        """

        per_image = width * height
        count = -(-256 // per_image)
        values = (np.arange(count * per_image) % 256).astype(np.uint8).reshape(count, height, width)
        shifted = np.stack([values, values + np.uint8(85), values + np.uint8(170)], axis=-1)  # wraps
        images = [Image.fromarray(np.ascontiguousarray(v)) for v in shifted]
        try:
            out = self.processor(images=images, return_tensors="np")["pixel_values"]
        except Exception:  # noqa: BLE001 - any processor failure just means "no shortcut"
            return None
        if out.shape != (count, 3, height, width) or out.dtype != np.float32:
            return None
        got = np.moveaxis(out, 1, -1).reshape(-1, 3)
        keys = shifted.reshape(-1, 3)
        table = np.empty((3, 256), dtype=np.float32)
        for c in range(3):
            table[c, keys[:, c]] = got[:, c]
            if not np.array_equal(table[c, keys[:, c]], got[:, c]):
                return None
        return table

    def _shortcut_mode(self, channels: int, size: tuple[int, int]) -> bool | None:
        """How the shortcut reproduces the processor for this layout and size (checked once).

        ``True``: per distinct row (:func:`resize_rows` with ``split``), ``False``: one resize of
        the whole image, ``None``: not at all, use the processor. Pillow chooses the order of its
        two passes by shape, and only horizontal-first allows the split, so the check tries the
        split first. Both are compared bit for bit with the processor on a seeded noise image of
        that layout and size with runs of repeated rows (so the distinct-row path is exercised).
        """
        key = (channels, *size)
        with self._check_lock:
            if key not in self._checked:
                self._checked[key] = self._compare_with_processor(channels, size)
            return self._checked[key]

    def _compare_with_processor(self, channels: int, size: tuple[int, int]) -> bool | None:

        width, height = size
        rng = np.random.default_rng(20240422 + 7 * channels + width * 131 + height)
        cases = []
        for grey in (False, True) if channels > 1 else (False,):  # grey takes a one-channel pass
            noise = rng.integers(0, 256, size=(height, width, channels), dtype=np.uint8)
            if grey:
                noise[:, :, 1] = noise[:, :, 2] = noise[:, :, 0]
            repeat = np.flatnonzero(rng.random(height) < 0.7)
            for row in repeat[repeat > 0]:
                noise[row] = noise[row - 1]
            # RGB comes only from PNG rows; L and RGBA images are read in place like the inputs.
            image = Image.fromarray(np.ascontiguousarray(noise[:, :, 0]) if channels == 1 else noise)
            rows = rows_from_array(noise) if channels == 3 else rows_from_image(image)
            if rows is None or rows.channels != channels:
                return None
            theirs = self.processor(images=[image.convert("RGB")], return_tensors="np")["pixel_values"]
            cases.append((rows, np.moveaxis(theirs[0], 0, -1)))
        for split in (True, False):
            if all(self._same(self._shortcut(rows, split), expected) for rows, expected in cases):
                return split
        return None

    @staticmethod
    def _same(mine: NDArray[np.float32], theirs: NDArray[np.float32]) -> bool:

        if mine.ndim == 2:
            mine = np.repeat(mine[:, :, None], 3, axis=2)
        return bool(mine.dtype == theirs.dtype and np.array_equal(mine, theirs))

    def _shortcut(self, rows: Rows, split: bool) -> NDArray[np.float32]:
        """float32 pixel values of ``rows`` (:func:`~worldforge.pcg.similarity.prep.shortcut_values`)."""
        assert self._table is not None
        t = self._table
        return shortcut_values(rows, t.size, t.resample, t.table, t.uniform, split)

    def prep_spec(self, channels: int, size: tuple[int, int]) -> PrepSpec | None:
        """A picklable :class:`~worldforge.pcg.similarity.prep.PrepSpec` for images of this layout
        and (width, height), so workers can prepare inputs; ``None`` where the shortcut is not verified."""
        split = self._shortcut_mode(channels, size) if self._table is not None else None
        if split is None or self._table is None:
            return None
        t = self._table
        return PrepSpec(t.size, t.resample, t.table, t.uniform, split, channels, size)

    def _prepare(self, image: Any) -> Any:
        """One input as float32 pixel values (shortcut, see :meth:`_shortcut`) or as the RGB image
        (or array) the processor gets.

        Paths are read and PNG bytes decoded; images go to the processor as RGB, which is what
        the processor's resize needs (Pillow premultiplies RGBA by alpha when resizing). The
        shortcut applies when the processor config allows it and the check for the input's
        layout and size passed; its result equals the processor's on the RGB image.
        """

        if isinstance(image, PreparedPng):  # a worker prepared its values from the render
            return image.prepared_values
        source = image
        if isinstance(image, (str, Path)):
            try:
                image = Path(image).read_bytes()
            except OSError as exc:
                raise WorldForgeError(f"{source}: cannot read image ({exc}).") from exc
        if isinstance(image, (bytes, bytearray)):
            if self._table is not None:
                values = self._shortcut_or_none(rows_from_png(image, max_pixels=Image.MAX_IMAGE_PIXELS))
                if values is not None:
                    return values
            try:
                image = Image.open(io.BytesIO(image))
                image.load()
            except (OSError, ValueError) as exc:
                if isinstance(source, (str, Path)):
                    raise WorldForgeError(f"{source}: cannot read image ({exc}).") from exc
                raise
        mode = getattr(image, "mode", None)
        if mode is None:  # arrays and tensors go to the processor as they are
            return image
        if mode not in _READABLE_MODES:
            image = image.convert("RGB")
        if self._table is not None:
            values = self._shortcut_or_none(rows_from_image(image))
            if values is not None:
                return values
        return image if image.mode == "RGB" else image.convert("RGB")

    def _shortcut_or_none(self, rows: Rows | None) -> NDArray[np.float32] | None:
        """:meth:`_shortcut` of ``rows`` where the check allows it, else ``None``."""
        if rows is None:
            return None
        split = self._shortcut_mode(rows.channels, rows.size)
        return None if split is None else self._shortcut(rows, split)

    def _pixel_values(self, prepared: list[Any], batch_size: int, torch: ModuleType) -> Tensor:
        """``(batch_size, 3, h, w)`` float32: prepared inputs, then zero padding.

        Shortcut inputs are already pixel values; the rest go through the processor.
        """
        if self._table is None:
            pixel_values = self.processor(images=prepared, return_tensors="pt")["pixel_values"]
            real = int(pixel_values.shape[0])
            if real < batch_size:
                pad = pixel_values.new_zeros((batch_size - real, *pixel_values.shape[1:]))
                pixel_values = torch.cat([pixel_values, pad])
            return pixel_values

        width, height = self._table.size
        batch = np.zeros((batch_size, height, width, 3), dtype=np.float32)
        others = []
        for i, item in enumerate(prepared):
            if isinstance(item, np.ndarray):
                batch[i] = item if item.ndim == 3 else item[:, :, None]
            else:
                others.append(i)
        if others:
            out = self.processor(images=[prepared[i] for i in others], return_tensors="np")["pixel_values"]
            batch[others] = np.moveaxis(out, 1, -1)
        # NHWC memory seen as NCHW is exactly the channels-last layout convolutions want.
        return torch.from_numpy(batch).permute(0, 3, 1, 2)

    def classify(
        self, images: Sequence[Any], *, batch_size: int = 64, embedding: bool = True, workers: int = 1
    ) -> Classification:
        """Softmax over A..Z (+ embedding) for paths, PNG bytes or PIL images, in input order.

        Every forward pass runs on exactly ``batch_size`` images (a short last batch is padded with
        zero tensors, whose outputs are dropped). CPU kernels pick their blocking by batch size, so
        an image classified in a batch of 5 and in a batch of 64 differs in the last float bits;
        with a fixed batch size an image's vector does not depend on how many images came with it
        or which ones, and a resumed run reproduces an uninterrupted one bit for bit.
        """
        torch = heavy.torch()

        if batch_size < 1:
            raise WorldForgeError(f"batch_size: must be >= 1, got {batch_size}.")
        out: list[Prediction] = []
        chunks = [images[i : i + batch_size] for i in range(0, len(images), batch_size)]
        pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
        try:
            # With a pool, the next batch is decoded and reduced while the model runs this one.
            pending = [pool.submit(self._prepare, i) for i in chunks[0]] if pool and chunks else []
            for k, chunk in enumerate(chunks):
                if pool is not None:
                    prepared = [f.result() for f in pending]
                    nxt = chunks[k + 1] if k + 1 < len(chunks) else []
                    pending = [pool.submit(self._prepare, i) for i in nxt]
                else:
                    prepared = [self._prepare(i) for i in chunk]
                pixel_values = self._pixel_values(prepared, batch_size, torch).to(self.device)
                if self.channels_last:
                    pixel_values = pixel_values.contiguous(memory_format=torch.channels_last)
                else:
                    pixel_values = pixel_values.contiguous()
                out.extend(self._forward(pixel_values, embedding, torch)[: len(prepared)])
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        return Classification(out)

    def _forward(self, pixel_values: Tensor, embedding: bool, torch: ModuleType) -> list[Prediction]:
        captured: list[Any] = []
        hook = None
        head = getattr(self.model, "classifier", None)
        if embedding and not self.cls_token and head is not None:
            hook = head.register_forward_pre_hook(lambda _m, args: captured.append(args[0]))
        try:
            with torch.inference_mode():
                result = self.model(
                    pixel_values=pixel_values, output_hidden_states=embedding and self.cls_token
                )
        finally:
            if hook is not None:
                hook.remove()
        logits = result.logits[:, self.indices].float()
        probs = torch.softmax(logits, dim=-1).cpu().tolist()
        embeds: list[list[float]] | list[None] = [None] * len(probs)
        if embedding:
            if self.cls_token:
                feats = result.hidden_states[-1][:, 0, :]
            elif captured:
                feats = captured[0].flatten(1)
            else:
                feats = result.hidden_states[-1].flatten(2).mean(-1)
            embeds = feats.float().cpu().tolist()
        return [Prediction(p, e) for p, e in zip(probs, embeds, strict=True)]


__all__ = [
    "BUNDLED_DIR",
    "BUNDLED_ID",
    "OFFICIAL_MODEL_ID",
    "LetterClassifier",
    "letter_indices",
    "load_classifier",
    "pick_device",
]
