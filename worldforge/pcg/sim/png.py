"""A small deterministic PNG encoder for the similarity images.

Why not Pillow: its output bytes may change between versions (which would change artifact
digests), and zlib over a full 1024x1024 RGBA image costs about 6 ms, more than rendering it. These
images are almost entirely repeated rows, so we use PNG's *Up* filter: a row equal to the row above
becomes all zeros. Each run of such rows is emitted as a cached, pre-compressed deflate segment; only
the few rows that differ (block edges) are compressed. Segments are independent, byte-aligned
deflate blocks (fresh compressor, full flush), so their concatenation plus a final empty block is
one valid zlib stream; the Adler-32 checksum is updated arithmetically for the zero rows.
The result depends only on the pixels.
"""

from __future__ import annotations

import struct
import threading
import zlib
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

#: The 8 bytes every PNG starts with, and its last 8: the IEND chunk's type and CRC (an empty
#: chunk, so always the same). A file with both was written to the end.
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_END = b"IEND\xaeB`\x82"

_MOD_ADLER = 65521
_FILTER_NONE = 0
_FILTER_UP = 2
_ZLIB_HEADER = b"\x78\x01"
_FINAL_EMPTY_BLOCK = b"\x03\x00"  # BFINAL=1, fixed Huffman, end-of-block


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _deflate_segment(data: bytes) -> bytes:
    """Raw deflate of ``data`` on a fresh compressor, ending byte-aligned and non-final."""
    comp = zlib.compressobj(1, zlib.DEFLATED, -15, 9)
    return comp.compress(data) + comp.flush(zlib.Z_FULL_FLUSH)


_CHECKPOINT_ROWS = 64


class _ZeroRuns:
    """:func:`_deflate_segment` of ``n`` zero Up rows of one width, for any ``n``, cheaply.

    Compressing a run from scratch costs time in proportion to its length (about 3 ms for a
    1,000-row run), and nearly every render has runs of lengths not seen before. zlib's output
    does not depend on how the input is split across calls that do not flush, so a compressor that
    has taken ``k`` rows, copied, given the remaining ``n - k`` rows and flushed writes exactly the
    bytes of a fresh compressor given all ``n`` rows at once (``tests/pcg/test_pcg_render.py``
    checks every run length of the 1024-pixel images against the fresh compressor). Compressors
    are kept every :data:`_CHECKPOINT_ROWS` rows, so a new length costs at most that many rows.
    """

    def __init__(self, row_bytes: int) -> None:
        self.row = bytes([_FILTER_UP]) + bytes(row_bytes)
        # (compressor that has taken i * _CHECKPOINT_ROWS rows, the bytes it returned so far)
        self.checkpoints: list[tuple[Any, bytes]] = [(zlib.compressobj(1, zlib.DEFLATED, -15, 9), b"")]
        self._lock = threading.Lock()  # checkpoint i must hold exactly i * _CHECKPOINT_ROWS rows

    def segment(self, n_rows: int) -> bytes:
        index = n_rows // _CHECKPOINT_ROWS
        with self._lock:
            while len(self.checkpoints) <= index:
                comp, out = self.checkpoints[-1]
                comp = comp.copy()
                self.checkpoints.append((comp, out + comp.compress(self.row * _CHECKPOINT_ROWS)))
            comp, out = self.checkpoints[index]
            comp = comp.copy()
        rest = self.row * (n_rows - index * _CHECKPOINT_ROWS)
        return out + comp.compress(rest) + comp.flush(zlib.Z_FULL_FLUSH)


@lru_cache(maxsize=8)
def _zero_runs(row_bytes: int) -> _ZeroRuns:
    """One :class:`_ZeroRuns` per row width and process (forked workers inherit the parent's)."""
    return _ZeroRuns(row_bytes)


@lru_cache(maxsize=4096)
def _zero_rows_segment(n_rows: int, row_bytes: int) -> bytes:
    """Compressed ``n_rows`` Up-filtered rows that equal the row above (filter byte + zeros):
    ``_deflate_segment(row * n_rows)``, computed incrementally (see :class:`_ZeroRuns`)."""
    return _zero_runs(row_bytes).segment(n_rows)


def _adler_zero_rows(value: int, n_rows: int, row_bytes: int) -> int:
    """Adler-32 after appending ``n_rows`` of (filter byte 2, ``row_bytes`` zeros).

    Row ``k`` adds 2 to ``a`` and the new ``a`` (once per byte of the row: the zeros leave it
    unchanged) to ``b``, so ``a`` grows by ``2 n`` and ``b`` by ``(row_bytes + 1)`` times the sum
    of ``a + 2 k`` over ``k = 1..n``; everything is taken modulo 65521, so this closed form equals
    the row-by-row update exactly."""
    a = value & 0xFFFF
    b = value >> 16
    b = (b + (row_bytes + 1) * (n_rows * a + n_rows * (n_rows + 1))) % _MOD_ADLER
    a = (a + 2 * n_rows) % _MOD_ADLER
    return (b << 16) | a


def encode_png(rgba: ArrayLike) -> bytes:
    """PNG bytes of an (h, w, 4) uint8 RGBA array (8-bit RGBA, no metadata chunks)."""

    pixels = np.ascontiguousarray(rgba, dtype=np.uint8)
    h = pixels.shape[0]
    new = np.ones(h, dtype=bool)
    if h > 1:
        words = pixels.reshape(h, -1).view(np.uint32)
        new[1:] = np.any(words[1:] != words[:-1], axis=1)
    return encode_rows(pixels if new.all() else pixels[new], new)


def encode_rows(distinct: ArrayLike, new: ArrayLike) -> bytes:
    """:func:`encode_png` of the image whose rows flagged in ``new`` are ``distinct`` (in order,
    ``(k, w, 4)`` uint8) and every other row repeats the row above (``new[0]`` must be set).

    Renderers that know which rows repeat pass them here without building the whole image; the
    bytes are the same as encoding that image."""

    flags = np.asarray(new, dtype=bool)
    rows = np.ascontiguousarray(distinct, dtype=np.uint8)
    h, w = len(flags), rows.shape[1]
    if h == 0 or not flags[0] or int(flags.sum()) != rows.shape[0]:
        raise ValueError("encode_rows: new[0] must be set and flag one row per distinct row.")
    row_bytes = w * 4
    rows = rows.reshape(rows.shape[0], row_bytes)
    # maximal runs of repeated rows and of new rows, in order
    cuts = np.flatnonzero(flags[1:] != flags[:-1]) + 1
    bounds = [0, *cuts.tolist(), h]
    segments: list[bytes] = []
    adler = 1
    d = 0  # index in ``rows`` of the next new row
    for i, j in zip(bounds[:-1], bounds[1:], strict=True):
        n = j - i
        if not flags[i]:
            segments.append(_zero_rows_segment(n, row_bytes))
            adler = _adler_zero_rows(adler, n, row_bytes)
            continue
        block = np.empty((n, row_bytes + 1), dtype=np.uint8)
        if i == 0:
            block[0, 0] = _FILTER_NONE
            block[0, 1:] = rows[0]
        else:  # the row above a new row is the previous distinct row
            block[0, 0] = _FILTER_UP
            np.subtract(rows[d], rows[d - 1], out=block[0, 1:])
        if n > 1:
            block[1:, 0] = _FILTER_UP
            np.subtract(rows[d + 1 : d + n], rows[d : d + n - 1], out=block[1:, 1:])
        data = block.tobytes()
        segments.append(_deflate_segment(data))
        adler = zlib.adler32(data, adler)
        d += n
    idat = _ZLIB_HEADER + b"".join(segments) + _FINAL_EMPTY_BLOCK + struct.pack(">I", adler)
    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)
    return b"".join((PNG_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", idat), _chunk(b"IEND", b"")))


__all__ = ["PNG_END", "PNG_SIGNATURE", "encode_png", "encode_rows"]
