"""Classifier inputs prepared where the render is: the level workers, not the classifying process.

The bundled classifier's processor shortcut (:mod:`worldforge.pcg.similarity.classifier_input`) turns an image
into the model's ``pixel_values`` with a resize and a per-value table. Both are plain numpy/Pillow
work that needs no model, so a level worker that has just rendered a level can prepare its input
from the in-memory pixels instead of the classifying process decoding the PNG again. A
:class:`PrepSpec` carries everything the shortcut needs (picklable, no torch); :class:`PreparedPng`
carries them to ``LetterClassifier.classify`` beside the PNG bytes. The values are the
ones the classifier computes itself from the PNG bit for bit (the PNG is lossless and the shortcut
reads the same rows either way).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from worldforge.pcg.similarity.classifier_input import Rows, resize_rows, rows_from_array


@dataclass(frozen=True)
class ShortcutTable:
    """Processor shortcut: Pillow resize to ``size`` (w, h) with ``resample``, then ``table``.

    ``table[c, v]`` is the processor's own output for value ``v`` in channel ``c`` after resizing;
    ``uniform`` when the three channels' tables are equal (mean and std the same for all).
    """

    size: tuple[int, int]
    resample: int
    table: NDArray[np.float32]
    uniform: bool


@dataclass(frozen=True)
class PrepSpec:
    """The processor shortcut for one input layout: resize to ``size`` with ``resample`` (split into
    distinct rows when ``split``), then ``table`` per channel (``uniform``: one table for all)."""

    size: tuple[int, int]
    resample: int
    table: NDArray[np.float32]
    uniform: bool
    split: bool
    channels: int
    image_size: tuple[int, int]


class PreparedPng(bytes):
    """PNG bytes that also carry the model's pixel values prepared from the same image.

    A classifier that reads PNG bytes still can (these are the bytes); ``LetterClassifier`` takes
    ``prepared_values`` instead of decoding them."""

    prepared_values: NDArray[np.float32]

    def __new__(cls, data: bytes, values: NDArray[np.float32]) -> PreparedPng:
        obj = super().__new__(cls, data)
        obj.prepared_values = values
        return obj


def shortcut_values(
    rows: Rows, size: tuple[int, int], resample: int, table: NDArray[np.float32], uniform: bool, split: bool
) -> NDArray[np.float32]:
    """float32 pixel values of ``rows`` via resize + value table: ``(h, w, 3)``, or ``(h, w)``
    when all three channels hold the same values (a grey image and a uniform table)."""

    resized = resize_rows(rows, size, resample, split=split)
    if resized.ndim == 2 and uniform:
        return np.take(table[0], resized)
    out = np.empty((*resized.shape[:2], 3), dtype=np.float32)
    for c in range(3):
        out[:, :, c] = np.take(table[c], resized if resized.ndim == 2 else resized[:, :, c])
    return out


def prepare_pixels(pixels: NDArray[np.uint8], spec: PrepSpec) -> NDArray[np.float32] | None:
    """The model's pixel values (float32 ``(h, w, 3)`` or ``(h, w)``) of an ``(h, w, c)`` uint8
    image, or ``None`` when ``spec`` was not verified for its layout (the PNG is read instead)."""

    height, width = int(pixels.shape[0]), int(pixels.shape[1])
    channels = int(pixels.shape[2]) if pixels.ndim == 3 else 1
    if (width, height) != spec.image_size or channels != spec.channels:
        return None
    rows = rows_from_array(pixels)
    return shortcut_values(rows, spec.size, spec.resample, spec.table, spec.uniform, spec.split)


def prepare_rows(rows: Rows, spec: PrepSpec) -> NDArray[np.float32] | None:
    """:func:`prepare_pixels` of the image ``rows`` describes (a renderer that knows its distinct
    rows need not build the whole image; the values are the same)."""

    channels = int(rows.distinct.shape[2]) if rows.distinct.ndim == 3 else 1
    if rows.size != spec.image_size or channels != spec.channels:
        return None
    return shortcut_values(rows, spec.size, spec.resample, spec.table, spec.uniform, spec.split)


__all__ = ["PrepSpec", "PreparedPng", "ShortcutTable", "prepare_pixels", "prepare_rows", "shortcut_values"]
