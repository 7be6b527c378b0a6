"""Presets shipped inside the package: benchmark presets and the baseline prompt programs.

* ``*.yaml`` -- benchmark presets (:mod:`worldforge.benchmark.presets` reads them);
* ``programs/<name>/prompts/*.txt`` -- the built-in prompt programs (:mod:`worldforge.pcg.programs.prompt`).

They live in the package, not beside it, so that every kind of install (wheel, sdist, editable)
carries them and finds them the same way: relative to this file. A source checkout's top-level
``presets`` is a link to this directory, so paths such as ``presets/programs/zero-shot`` keep
working there.
"""

from __future__ import annotations

from pathlib import Path

#: The directory holding the shipped benchmark presets (``*.yaml``).
PRESETS_DIR = Path(__file__).resolve().parent
#: The directory holding the built-in prompt programs (``<name>/prompts/*.txt``).
PROGRAMS_DIR = PRESETS_DIR / "programs"

__all__ = ["PRESETS_DIR", "PROGRAMS_DIR"]
