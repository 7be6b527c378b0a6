"""Exact, fast pixel input for classifiers whose processor resizes with Pillow.

Why this exists: a similarity image is a 1024x1024 RGBA picture, and the bundled classifier looks
at it through a 64x64 box resize. The processor's own route reads every pixel three times over
(RGB conversion copy, then Pillow's horizontal and vertical resampling passes) and, from a PNG,
a fourth time for decoding. This module produces the *same* resized pixels with far less work:

* **No RGB copy.** Pixels of an in-memory image are read in place through Pillow's Arrow export
  (the standard Arrow C data interface). RGBA data is resampled as RGBX, so the alpha byte is
  carried along and ignored, exactly what ``convert("RGB")`` does to it. (Pillow's own
  ``resize`` of an RGBA image premultiplies by alpha, which is why the processor needs RGB first.)
* **Each distinct row resampled once.** Pillow resizes in two passes. When the horizontal one
  comes first (Pillow chooses the order from the sizes; for the square renders it is), each row
  of the intermediate depends only on the same input row, so equal rows stay equal: the
  horizontal pass (Pillow's, not a re-implementation) runs on the distinct rows only, the
  intermediate is re-expanded, and Pillow's vertical pass runs on it. A level render has about
  6 % distinct rows (long runs of identical rows between block edges).
* **PNG without materializing repeated rows.** PNGs whose rows use only the None, Sub and Up filters
  (everything :mod:`worldforge.pcg.sim.png` writes) are inflated with :mod:`zlib` and unfiltered with
  numpy. An Up-filtered row of zeros repeats the row above, so such rows are never rebuilt. Other
  PNGs (Average/Paeth filters, palettes, 16 bit, interlaced, transparency chunks, bad checksums)
  return ``None`` and are decoded by Pillow, which stays the reference.

Nothing here decides whether the result matches a model's processor; the classifier checks that
(and falls back to the processor) before using it. zlib, numpy and Pillow's resampling release the
GIL, so preparation scales across threads.
"""

from __future__ import annotations

import ctypes
import struct
import zlib
from typing import NamedTuple

import numpy as np
import PIL
from numpy.typing import NDArray
from PIL import Image

from worldforge.pcg.sim.png import PNG_SIGNATURE

_PNG_CHANNELS = {0: 1, 2: 3, 6: 4}  # colour type -> bytes per pixel at bit depth 8
_PNG_REFUSED = {b"tRNS", b"acTL"}  # ancillary chunks that change what Pillow returns
_FILTER_SUB, _FILTER_UP = 1, 2
_INFLATE_BLOCK = 1 << 20  # bytes of scanlines inflated at a time
_RESAMPLE_FILTERS = {1, 2, 3, 4, 5}  # LANCZOS, BILINEAR, BICUBIC, BOX, HAMMING: separable passes
_LAYOUT_MODE = {1: "L", 3: "RGB", 4: "RGBX"}
_BANDS = {"L": 1, "RGB": 4, "RGBA": 4, "RGBX": 4}  # in-memory bytes per pixel of readable modes


class Rows(NamedTuple):
    """An image as its distinct rows plus, for every image row, the index of its distinct row.

    ``distinct`` is ``(d, width, channels)`` uint8 with channels 1 (grey), 3 (RGB) or 4 (RGB plus
    an ignored fourth byte); ``row_of`` has one entry per image row.
    """

    distinct: NDArray[np.uint8]
    row_of: NDArray[np.intp]

    @property
    def size(self) -> tuple[int, int]:
        """(width, height), Pillow's order."""
        return int(self.distinct.shape[1]), int(self.row_of.shape[0])

    @property
    def channels(self) -> int:
        return int(self.distinct.shape[2])


class _ArrowSchema(ctypes.Structure):
    pass


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p),
    ("name", ctypes.c_char_p),
    ("metadata", ctypes.c_char_p),
    ("flags", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(_ArrowSchema))),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]


class _ArrowArray(ctypes.Structure):
    pass


_ArrowArray._fields_ = [
    ("length", ctypes.c_int64),
    ("null_count", ctypes.c_int64),
    ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64),
    ("n_children", ctypes.c_int64),
    ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(_ArrowArray))),
    ("dictionary", ctypes.c_void_p),
    ("release", ctypes.c_void_p),
    ("private_data", ctypes.c_void_p),
]

_PILLOW = tuple(int(part) for part in PIL.__version__.split(".")[:2])  # (major, minor)

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def pixels_of(image: Image.Image) -> NDArray[np.uint8] | None:
    """Read-only ``(h, w, bands)`` uint8 view of a Pillow image's memory, or ``None``.

    Uses the image's Arrow export (Pillow >= 11.2), which shares memory instead of copying 4 MB the
    way ``np.asarray(image)`` does. Only L (1 band) and RGB/RGBA/RGBX (4 bytes per pixel; RGB's
    fourth byte is padding) are read; an image whose rows are not one contiguous block, or any
    layout other than the expected one, gives ``None``, and so does an image whose export is
    unsafe in the installed Pillow (:func:`arrow_export_safe`).
    """
    bands = _BANDS.get(getattr(image, "mode", ""))
    if bands is None or not hasattr(image, "__arrow_c_array__") or not arrow_export_safe(image):
        return None
    try:
        schema_capsule, array_capsule = image.__arrow_c_array__()
        schema = _ArrowSchema.from_address(_capsule_pointer(schema_capsule, b"arrow_schema"))
        array = _ArrowArray.from_address(_capsule_pointer(array_capsule, b"arrow_array"))
    except (ValueError, TypeError, OSError):
        return None
    width, height = image.size
    count = width * height
    data = array
    if bands == 4:
        if schema.format != b"+w:4" or schema.n_children != 1 or array.n_children != 1:
            return None
        if schema.children[0].contents.format != b"C":
            return None
        data = array.children[0].contents
    elif schema.format != b"C":
        return None
    if array.length != count or array.offset or data.offset or data.length != count * bands:
        return None
    if data.n_buffers != 2 or not data.buffers[1] or count == 0:
        return None
    buffer = (ctypes.c_uint8 * (count * bands)).from_address(data.buffers[1])
    # The capsules own the memory: the buffer holds them, the view holds the buffer (through the
    # memoryview), so they are released with the view.
    buffer.__dict__["_keepalive"] = (schema_capsule, array_capsule)
    view = np.frombuffer(memoryview(buffer), dtype=np.uint8).reshape(height, width, bands)
    view.flags.writeable = False
    return view


def rows_from_array(pixels: NDArray[np.uint8]) -> Rows:
    """:class:`Rows` of an ``(h, w, c)`` uint8 array: each row compared with the row above."""
    height = pixels.shape[0]
    flat = pixels.reshape(height, -1)
    width_bytes = flat.shape[1]
    word = 8 if width_bytes % 8 == 0 else 4 if width_bytes % 4 == 0 else 1
    if word > 1 and flat.flags.c_contiguous:
        flat = flat.view(f"<u{word}")
    new = np.empty(height, dtype=bool)
    new[0] = True
    if height > 1:
        np.any(flat[1:] != flat[:-1], axis=1, out=new[1:])
    return _collapse(pixels, new)


def _collapse(pixels: NDArray[np.uint8], new: NDArray[np.bool_]) -> Rows:
    """Keep the rows flagged ``new`` (each unflagged row equals the row above it)."""
    keep = np.flatnonzero(new)
    distinct = pixels if len(keep) == len(new) else np.take(pixels, keep, axis=0)
    return Rows(distinct, np.cumsum(new, dtype=np.intp) - 1)


def arrow_export_safe(image: Image.Image, pillow: tuple[int, ...] | None = None) -> bool:
    """Whether ``image.__arrow_c_array__()`` may be called in this Pillow (``pillow``: its version).

    Pillow 11.2 leaks every image it exports (python-pillow/Pillow#8950: 1.2 GB after 300 renders
    of 1024 px). Before 13.0 an image that borrows its memory (``Image.fromarray``,
    ``frombuffer``: ``readonly`` set) crashes the process on export (#9896: its storage has no
    block pointer), measured on 11.3 to 12.3; 13.0 exports them.
    """
    version = _PILLOW if pillow is None else pillow
    if version < (11, 3):
        return False
    return version >= (13, 0) or not getattr(image, "readonly", 0)


def rows_from_image(image: Image.Image) -> Rows | None:
    """:class:`Rows` of an L/RGB/RGBA/RGBX Pillow image, read in place where Pillow can export it
    (:func:`pixels_of`) and from one copy (``np.asarray``) where it cannot; ``None`` for other modes."""
    pixels = pixels_of(image)
    if pixels is None and getattr(image, "mode", "") in _BANDS:
        pixels = np.asarray(image)
        if pixels.ndim == 2:
            pixels = pixels[:, :, None]
    return None if pixels is None else rows_from_array(pixels)


def rows_from_png(data: bytes | bytearray | memoryview, *, max_pixels: int | None = None) -> Rows | None:
    """:class:`Rows` of an 8-bit, non-interlaced grey/RGB/RGBA PNG filtered with None/Sub/Up.

    ``None`` for anything else, including any malformed input (bad chunk CRC, truncated or
    oversized zlib data, missing chunks), and for images larger than ``max_pixels`` (Pillow's
    decompression-bomb limit), so that Pillow decodes it and raises or warns as it always did.
    """
    view = memoryview(data).cast("B")
    if bytes(view[:8]) != PNG_SIGNATURE:
        return None
    header: tuple[int, ...] | None = None
    idat: list[memoryview] = []
    after_idat = False
    pos = 8
    while True:
        if pos + 12 > len(view):
            return None
        length, kind = struct.unpack_from(">I4s", view, pos)
        end = pos + 8 + length
        if end + 4 > len(view):
            return None
        body = view[pos + 8 : end]
        if zlib.crc32(body, zlib.crc32(kind)) != struct.unpack_from(">I", view, end)[0]:
            return None
        if kind == b"IHDR":
            if header is not None or length != 13:
                return None
            header = struct.unpack(">IIBBBBB", body)
        elif header is None:
            return None
        elif kind == b"IDAT":
            if after_idat:  # image data must be consecutive chunks
                return None
            idat.append(body)
        elif kind == b"IEND":
            break
        elif not kind[0] & 0x20 or kind in _PNG_REFUSED:  # unknown critical chunk, PLTE, tRNS, APNG
            return None
        after_idat = after_idat or (bool(idat) and kind != b"IDAT")
        pos = end + 4
    if header is None or not idat:
        return None
    width, height, depth, colour, compression, filtering, interlace = header
    channels = _PNG_CHANNELS.get(colour)
    if channels is None or depth != 8 or compression or filtering or interlace or not width or not height:
        return None
    if max_pixels is not None and width * height > max_pixels:
        return None
    return _inflate_rows(b"".join(idat), width, height, channels)


def _inflate_rows(stream: bytes, width: int, height: int, channels: int) -> Rows | None:
    """Inflate and unfilter a block of rows at a time; stop at the first Average/Paeth row.

    A PNG from another encoder usually has such rows (they are sequential along the row, so not
    done here), and stopping early leaves most of the inflating to Pillow alone. For every block:
    an Up row of zeros is recorded as a repeat of the row above and dropped; only the other rows
    are kept and rebuilt.
    """
    stride = 1 + width * channels
    block = max(1, _INFLATE_BLOCK // stride)
    inflater = zlib.decompressobj()
    pending = stream
    kept: list[NDArray[np.uint8]] = []
    kinds: list[NDArray[np.uint8]] = []
    new = np.empty(height, dtype=bool)
    done = 0
    try:
        while done < height:
            want = min(block, height - done) * stride
            data = inflater.decompress(pending, want)
            pending = inflater.unconsumed_tail
            if len(data) != want:
                return None
            scanlines = np.frombuffer(data, dtype=np.uint8).reshape(-1, stride)
            filters = scanlines[:, 0]
            if int(filters.max()) > _FILTER_UP:  # Average or Paeth: Pillow decodes this one
                return None
            body = scanlines[:, 1:]
            fresh = new[done : done + len(scanlines)]
            np.logical_or(filters != _FILTER_UP, body.max(axis=1) != 0, out=fresh)
            keep = np.flatnonzero(fresh)
            kept.append(body[keep])
            kinds.append(filters[keep])
            done += len(scanlines)
        if inflater.decompress(pending, 1) or not inflater.eof:  # image data must end here
            return None
    except zlib.error:
        return None
    new[0] = True  # the first row's "above" is zeros, so Up is None there (it is kept anyway)
    return _unfilter(np.concatenate(kept), np.concatenate(kinds), new, width, channels)


def _unfilter(
    body: NDArray[np.uint8], kinds: NDArray[np.uint8], new: NDArray[np.bool_], width: int, channels: int
) -> Rows:
    """Rebuild the kept rows (filter bytes ``kinds``); ``new`` flags which image rows were kept."""
    rows = body.reshape(len(body), width, channels)
    sub = kinds == _FILTER_SUB
    if sub.any():
        rows[sub] = np.cumsum(rows[sub], axis=1, dtype=np.uint8)  # add the pixel to the left
    # An Up row adds the row above (mod 256); the skipped rows in between are all-zero Up rows,
    # so "the row above" is the previous kept row. Row by row: numpy's cumsum down axis 0 walks
    # the columns with a large stride and is ~30 times slower here.
    for i in np.flatnonzero(kinds[1:] == _FILTER_UP) + 1:
        np.add(rows[i], rows[i - 1], out=rows[i])
    values = rows_from_array(rows)  # also folds None/Sub rows that repeat the row above
    return Rows(values.distinct, values.row_of[np.cumsum(new, dtype=np.intp) - 1])


def _image(pixels: NDArray[np.uint8]) -> Image.Image:
    """A Pillow image over an ``(h, w)`` or ``(h, w, c)`` uint8 array (shared memory for L, RGBX)."""

    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[:, :, 0]
    mode = "L" if pixels.ndim == 2 else _LAYOUT_MODE[pixels.shape[2]]
    data = np.ascontiguousarray(pixels)
    return Image.frombuffer(mode, (pixels.shape[1], pixels.shape[0]), data, "raw", mode, 0, 1)


def _grey(pixels: NDArray[np.uint8]) -> bool:
    """Whether the first three channels of an ``(h, w, c)`` array are equal everywhere."""
    red = pixels[:, :, 0]
    return bool(np.array_equal(red, pixels[:, :, 1]) and np.array_equal(red, pixels[:, :, 2]))


def resize_rows(rows: Rows, size: tuple[int, int], resample: int, *, split: bool = True) -> NDArray[np.uint8]:
    """Pillow's resize of the RGB image ``rows`` describes to ``size`` (w, h), as uint8.

    ``(h, w, 3)``, or ``(h, w)`` when all three channels of the result are equal (grey images).

    ``split``: Pillow's horizontal pass runs on the distinct rows only, its vertical pass on the
    re-expanded intermediate. That equals one ``resize`` call bit for bit when Pillow itself runs
    the horizontal pass first, which depends on the sizes (Pillow picks the order; for a square
    image it is horizontal first); callers check. A grey intermediate (level renders are black
    and white) goes through the vertical pass as one channel: Pillow's arithmetic is the same per
    channel, and it is a third of the work. Without ``split`` the rows are expanded and resized
    in one call, which is the processor's own operation on the same pixels.
    """
    if resample not in _RESAMPLE_FILTERS:
        raise ValueError(f"resample {resample}: only Pillow's convolution filters are separable")
    if split:
        across = np.asarray(_image(rows.distinct).resize((size[0], rows.distinct.shape[0]), resample))
        if across.ndim == 3 and _grey(across):
            across = across[:, :, 0]
        full = np.take(across, rows.row_of, axis=0)  # np.take: ~3x faster than indexing here
    else:
        full = np.take(rows.distinct, rows.row_of, axis=0)
    result = np.asarray(_image(full).resize(size, resample))
    return result if result.ndim == 2 else result[:, :, :3]


__all__ = [
    "Rows",
    "pixels_of",
    "resize_rows",
    "rows_from_array",
    "rows_from_image",
    "rows_from_png",
]
