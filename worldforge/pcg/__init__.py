"""Science Birds level pipeline (ChatGPT4PCG / LLMs4PCG compatible).

Stages: reply text -> program (:func:`extract_code`) -> level XML (:func:`convert`) -> Box2D
stability (:func:`simulate`) -> similarity image (:func:`render_level`). Names are exported lazily
so ``import worldforge.pcg`` never imports Box2D or Pillow; only the stage you call loads them.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "CODE_NOT_FOUND": "worldforge.pcg.extract",
    "DroppedCall": "worldforge.pcg.extract",
    "Extraction": "worldforge.pcg.extract",
    "extract_code": "worldforge.pcg.extract",
    "official_extract": "worldforge.pcg.extract",
    "convert": "worldforge.pcg.convert",
    "place_blocks": "worldforge.pcg.convert",
    "Level": "worldforge.pcg.level",
    "LevelObject": "worldforge.pcg.level",
    "parse_level_xml": "worldforge.pcg.level",
    "load_level": "worldforge.pcg.level",
    "StabilityResult": "worldforge.pcg.physics",
    "Pose": "worldforge.pcg.physics",
    "simulate": "worldforge.pcg.physics",
    "render_level": "worldforge.pcg.render",
    "render_png": "worldforge.pcg.render",
    "render_color": "worldforge.pcg.render",
    "LevelOutcome": "worldforge.pcg.pipeline",
    "run_program": "worldforge.pcg.pipeline",
    "run_level": "worldforge.pcg.pipeline",
    "run_batch": "worldforge.pcg.pipeline",
    "run_reply": "worldforge.pcg.pipeline",
    "iter_batch": "worldforge.pcg.pipeline",
    "stage_extract": "worldforge.pcg.folder",
    "stage_convert": "worldforge.pcg.folder",
    "stage_physics": "worldforge.pcg.folder",
    "stage_stability": "worldforge.pcg.folder",
    "stage_images": "worldforge.pcg.folder",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'worldforge.pcg' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
