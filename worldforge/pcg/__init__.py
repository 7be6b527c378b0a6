"""Science Birds level pipeline (ChatGPT4PCG / LLMs4PCG compatible).

Stages: reply text -> program (:func:`extract_code`) -> level XML (:func:`convert`) -> Box2D
stability (:func:`simulate`) -> similarity image (:func:`render_level`). Names are exported lazily
so ``import worldforge.pcg`` never imports Box2D or Pillow; only the stage you call loads them.
"""

from __future__ import annotations

from worldforge._imports import lazy_exports

_EXPORTS: dict[str, str] = {
    "CODE_NOT_FOUND": "worldforge.pcg.levels.extract",
    "DroppedCall": "worldforge.pcg.levels.extract",
    "Extraction": "worldforge.pcg.levels.extract",
    "extract_code": "worldforge.pcg.levels.extract",
    "official_extract": "worldforge.pcg.levels.extract",
    "convert": "worldforge.pcg.levels.convert",
    "place_blocks": "worldforge.pcg.levels.convert",
    "Level": "worldforge.pcg.levels.level",
    "LevelObject": "worldforge.pcg.levels.level",
    "parse_level_xml": "worldforge.pcg.levels.level",
    "load_level": "worldforge.pcg.levels.level",
    "StabilityResult": "worldforge.pcg.sim.physics",
    "Pose": "worldforge.pcg.sim.physics",
    "simulate": "worldforge.pcg.sim.physics",
    "render_level": "worldforge.pcg.sim.render",
    "render_png": "worldforge.pcg.sim.render",
    "render_color": "worldforge.pcg.sim.render",
    "LevelOutcome": "worldforge.pcg.sim.pipeline",
    "run_program": "worldforge.pcg.sim.pipeline",
    "run_level": "worldforge.pcg.sim.pipeline",
    "run_batch": "worldforge.pcg.sim.pipeline",
    "run_reply": "worldforge.pcg.sim.pipeline",
    "iter_batch": "worldforge.pcg.sim.pipeline",
    "stage_extract": "worldforge.pcg.competition.stages",
    "stage_convert": "worldforge.pcg.competition.stages",
    "stage_physics": "worldforge.pcg.competition.stages",
    "stage_stability": "worldforge.pcg.competition.stages",
    "stage_images": "worldforge.pcg.competition.stages",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
