"""The Science Birds ``Level`` model and a tolerant XML reader.

Converter output only ever holds wood ``SquareTiny``/``RectSmall`` blocks, but people feed the
pipeline hand-made or other generators' levels too (pigs, TNT, platforms, stone/ice, other block
prefabs). The reader accepts all of them, like Unity's ``LevelLoader.LoadXmlLevel`` does, and fails
with a one-line :class:`WorldForgeError` naming the element only when a value is unusable.

Collider sizes: ``SquareTiny`` and ``RectSmall`` are the modified evaluator's prefabs (0.22x0.21,
0.70x0.22). Other prefabs use the sizes of the original Science Birds prefabs as published with the
AIBirds level generator (width x height in Unity units, rotation 0); they only matter for levels
that did not come out of the converter.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from worldforge.core.errors import WorldForgeError

# Physics collider sizes (width, height) at rotation 0.
COLLIDER_SIZES: dict[str, tuple[float, float]] = {
    "SquareTiny": (0.22, 0.21),
    "RectSmall": (0.70, 0.22),
    "SquareHole": (0.84, 0.84),
    "RectFat": (0.85, 0.43),
    "SquareSmall": (0.43, 0.43),
    "RectTiny": (0.43, 0.22),
    "RectMedium": (1.68, 0.22),
    "RectBig": (2.06, 0.22),
    "Circle": (0.80, 0.80),
    "CircleSmall": (0.45, 0.45),
    "Triangle": (0.82, 0.82),
    "TriangleHole": (0.82, 0.82),
}
# Black "OCR" sprite sizes used for the similarity images (1 px = 0.01 larger on each side).
OCR_SIZES: dict[str, tuple[float, float]] = {
    name: (round(w + 0.02, 4), round(h + 0.02, 4)) for name, (w, h) in COLLIDER_SIZES.items()
}
OCR_SIZES["SquareTiny"] = (0.24, 0.23)
OCR_SIZES["RectSmall"] = (0.72, 0.24)
CIRCLE_TYPES = frozenset({"Circle", "CircleSmall"})
PIG_SIZES: dict[str, float] = {"BasicSmall": 0.47, "BasicMedium": 0.78, "BasicBig": 0.99}  # diameters
TNT_SIZE = (0.55, 0.55)
PLATFORM_SIZE = (0.62, 0.62)
MATERIALS = ("wood", "stone", "ice")


@dataclass(frozen=True)
class LevelObject:
    """One ``GameObjects`` child: kind is ``block``, ``pig``, ``tnt`` or ``platform``."""

    kind: str
    type: str
    x: float
    y: float
    rotation: float = 0.0
    material: str = ""
    scale_x: float = 1.0
    scale_y: float = 1.0

    @property
    def size(self) -> tuple[float, float]:
        """Collider size (width, height) before rotation."""
        if self.kind == "block":
            w, h = COLLIDER_SIZES.get(self.type, COLLIDER_SIZES["SquareSmall"])
        elif self.kind == "pig":
            d = PIG_SIZES.get(self.type, PIG_SIZES["BasicSmall"])
            w, h = d, d
        elif self.kind == "tnt":
            w, h = TNT_SIZE
        else:
            w, h = PLATFORM_SIZE
        return w * self.scale_x, h * self.scale_y

    @property
    def ocr_size(self) -> tuple[float, float]:
        if self.kind == "block":
            w, h = OCR_SIZES.get(self.type, OCR_SIZES["SquareSmall"])
            return w * self.scale_x, h * self.scale_y
        w, h = self.size
        return w + 0.02, h + 0.02

    @property
    def is_circle(self) -> bool:
        return self.kind == "pig" or (self.kind == "block" and self.type in CIRCLE_TYPES)

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "type": self.type,
            "material": self.material,
            "x": self.x,
            "y": self.y,
            "rotation": self.rotation,
        }


@dataclass(frozen=True)
class Level:
    """A parsed level. ``objects`` keeps document order (blocks, pigs, TNT, platforms mixed)."""

    objects: tuple[LevelObject, ...]
    width: int = 3
    camera: tuple[float, float, float, float] = (2.0, 0.0, 17.0, 22.0)  # x, y, minWidth, maxWidth
    birds: tuple[str, ...] = ("BirdRed",)
    slingshot: tuple[float, float] = (-9.0, -2.5)
    source: str = field(default="", compare=False)

    @property
    def blocks(self) -> tuple[LevelObject, ...]:
        return tuple(o for o in self.objects if o.kind == "block")

    @property
    def pigs(self) -> tuple[LevelObject, ...]:
        return tuple(o for o in self.objects if o.kind == "pig")

    @property
    def tnts(self) -> tuple[LevelObject, ...]:
        return tuple(o for o in self.objects if o.kind == "tnt")

    @property
    def platforms(self) -> tuple[LevelObject, ...]:
        return tuple(o for o in self.objects if o.kind == "platform")

    @property
    def dynamic_objects(self) -> tuple[LevelObject, ...]:
        """Objects the evaluator records (ABBlock, ABPig, ABTNT), in document order."""
        return tuple(o for o in self.objects if o.kind != "platform")

    def to_dict(self) -> dict[str, object]:
        return {
            "width": self.width,
            "camera": list(self.camera),
            "birds": list(self.birds),
            "slingshot": list(self.slingshot),
            "objects": [o.to_dict() for o in self.objects],
        }


_KINDS = {"block": "block", "pig": "pig", "tnt": "tnt", "platform": "platform"}


def _num(el: ET.Element, attr: str, default: float | None, where: str) -> float:
    raw = el.get(attr)
    if raw is None:
        if default is None:
            raise WorldForgeError(f"{where}: <{el.tag}> is missing attribute {attr!r}.")
        return default
    try:
        value = float(raw.strip())
    except ValueError:
        raise WorldForgeError(f"{where}: <{el.tag}> attribute {attr}={raw!r} is not a number.") from None
    if not math.isfinite(value):
        raise WorldForgeError(f"{where}: <{el.tag}> attribute {attr}={raw!r} is not finite.")
    return value


def _decode(data: str | bytes, where: str) -> str:
    if isinstance(data, str):
        return data
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise WorldForgeError(f"{where}: level XML is not valid UTF-8 or UTF-16.") from None


def parse_level_xml(data: str | bytes, *, source: str = "<level>") -> Level:
    """Parse Science Birds level XML (str or bytes; the ``utf-16`` declaration is ignored)."""
    text = _decode(data, source).lstrip("\ufeff")
    if text.lstrip().startswith("<?xml"):
        end = text.find("?>")
        text = text[end + 2 :] if end >= 0 else text
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise WorldForgeError(f"{source}: DTDs and entities are not allowed in level XML.")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise WorldForgeError(f"{source}: level XML is malformed ({exc}).") from None
    if root.tag != "Level":
        raise WorldForgeError(f"{source}: root element is <{root.tag}>, expected <Level>.")
    try:
        width = int(float(root.get("width", "3")))
    except ValueError:
        raise WorldForgeError(
            f"{source}: <Level> attribute width={root.get('width')!r} is not a number."
        ) from None
    camera = (2.0, 0.0, 17.0, 22.0)
    cam = root.find("Camera")
    if cam is not None:
        camera = (
            _num(cam, "x", 2.0, source),
            _num(cam, "y", 0.0, source),
            _num(cam, "minWidth", 17.0, source),
            _num(cam, "maxWidth", 22.0, source),
        )
    birds_el = root.find("Birds")
    birds = tuple(b.get("type", "BirdRed") for b in birds_el) if birds_el is not None else ()
    sling = root.find("Slingshot")
    slingshot = (-9.0, -2.5)
    if sling is not None:
        slingshot = (_num(sling, "x", -9.0, source), _num(sling, "y", -2.5, source))
    objects: list[LevelObject] = []
    group = root.find("GameObjects")
    for i, el in enumerate(group if group is not None else []):
        kind = _KINDS.get(el.tag.lower())
        where = f"{source}: GameObjects[{i}]"
        if kind is None:
            continue  # unknown elements are ignored, as the game's loader does
        material = (el.get("material") or ("wood" if kind == "block" else "")).strip().lower()
        objects.append(
            LevelObject(
                kind=kind,
                type=(el.get("type") or "").strip(),
                x=_num(el, "x", None, where),
                y=_num(el, "y", None, where),
                rotation=_num(el, "rotation", 0.0, where),
                material=material,
                scale_x=_num(el, "scaleX", 1.0, where),
                scale_y=_num(el, "scaleY", 1.0, where),
            )
        )
    return Level(
        objects=tuple(objects),
        width=width,
        camera=camera,
        birds=birds,
        slingshot=slingshot,
        source=source,
    )


def load_level(path: str | Path) -> Level:
    """Read and parse a level file, naming the path in any error."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise WorldForgeError(f"{p}: cannot read level ({exc.strerror}).") from None
    return parse_level_xml(data, source=str(p))


__all__ = [
    "COLLIDER_SIZES",
    "OCR_SIZES",
    "Level",
    "LevelObject",
    "load_level",
    "parse_level_xml",
]
