"""Glyph sources of the training families: Debian package versions and font file digests.

Why: the corpus is regenerated from seeds, but its letters come from font files installed on the
machine. A distribution update that redraws a glyph changes the corpus silently: the corpus digest
moves and the checkpoint no longer reproduces, with nothing saying why. So the dataset manifest
records, per family, the packages (with their installed versions) and every font file (with its
sha256) the family draws from, and a rebuild compares the installed files with that record before
it generates anything, naming the first file that differs (:class:`GlyphSourceMismatch`).

The ``stroke`` and ``block`` families are written in this package (no font file); the ``glyph``
family's Pillow default font and built-in 5x7 bitmap ship inside Pillow and the project, whose
versions the environment records.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from worldforge.core.digests import digest_file
from worldforge.core.errors import WorldForgeError
from worldforge.pcg.levels.glyphs import DEJAVU_DIR, DEJAVU_FONTS
from worldforge.pcg.similarity.training import dpi
from worldforge.pcg.similarity.training import families as lf


class GlyphSourceMismatch(WorldForgeError):
    """An installed font file differs from the one a family was drawn from (or is missing):
    rebuilding would silently give other letters under the recorded digest."""


class FamilySources(TypedDict):
    """The Debian packages (name -> version) and font files (path -> sha256) of one family."""

    packages: dict[str, str]
    files: dict[str, str]


def installed_version(package: str) -> str | None:
    """The installed Debian version of ``package`` (``None`` without dpkg or the package)."""
    dpkg = shutil.which("dpkg-query")
    if dpkg is None:
        return None
    done = subprocess.run([dpkg, "-W", "-f", "${Version}", package], capture_output=True, text=True)
    return done.stdout.strip() or None if done.returncode == 0 else None


def family_files() -> dict[str, tuple[str, ...]]:
    """Font files each training family draws from (empty for the families written here)."""
    files: dict[str, tuple[str, ...]] = {
        "glyph": tuple(str(DEJAVU_DIR / name) for name in sorted(set(DEJAVU_FONTS.values()))),
        "font": lf.FONT_FILES,
        "pixel": lf.PIXEL_FONTS,
        "dpi": dpi.FILES,
    }
    return {family: files.get(family, ()) for family in lf.TRAIN_FAMILIES}


def owners(paths: Sequence[str]) -> dict[str, str]:
    """Debian package of every path dpkg knows (one ``dpkg-query -S`` call)."""
    dpkg = shutil.which("dpkg-query")
    if dpkg is None or not paths:
        return {}
    done = subprocess.run([dpkg, "-S", *paths], capture_output=True, text=True)
    found: dict[str, str] = {}
    for line in done.stdout.splitlines():
        package, _, path = line.partition(": ")
        if path:
            found[path.strip()] = package.split(":")[0].strip()
    return found


def record() -> dict[str, FamilySources]:
    """Packages and file digests of every training family, as installed (refused when incomplete)."""
    files = family_files()
    every = [path for paths in files.values() for path in paths]
    missing = [path for path in every if not Path(path).is_file()]
    if missing:
        raise GlyphSourceMismatch(
            f"letter families: {missing[0]} is not installed (Debian packages: {lf.FONT_PACKAGES})"
        )
    package_of = owners(every)
    out: dict[str, FamilySources] = {}
    for family, paths in files.items():
        packages = sorted({package_of.get(path, "unknown") for path in paths})
        out[family] = {
            "packages": {name: installed_version(name) or "unknown" for name in packages},
            "files": {path: digest_file(Path(path)) for path in paths},
        }
    return out


def parse_record(value: object, where: str) -> dict[str, FamilySources]:
    """A recorded ``glyph_sources`` object, its shape checked (``where`` names it in the error)."""

    def strings(item: object, field: str) -> dict[str, str]:
        if not isinstance(item, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in item.items()
        ):
            raise GlyphSourceMismatch(f"{where}: {field} must map names to strings")
        return dict(item)

    if not isinstance(value, dict):
        raise GlyphSourceMismatch(f"{where}: glyph_sources must be an object")
    out: dict[str, FamilySources] = {}
    for family, source in value.items():
        if not isinstance(source, dict):
            raise GlyphSourceMismatch(f"{where}: glyph_sources.{family} must be an object")
        out[str(family)] = {
            "packages": strings(source.get("packages"), f"glyph_sources.{family}.packages"),
            "files": strings(source.get("files"), f"glyph_sources.{family}.files"),
        }
    return out


def check(recorded: Mapping[str, FamilySources]) -> None:
    """Refuse a rebuild when a recorded font file is missing or differs (:class:`GlyphSourceMismatch`).

    The message names the family, the file, both digests and both package versions, so whoever
    rebuilds knows which update moved the corpus.
    """
    for family, source in recorded.items():
        versions = ", ".join(f"{name} {version}" for name, version in source["packages"].items())
        for path, digest in source["files"].items():
            if not Path(path).is_file():
                raise GlyphSourceMismatch(
                    f"letter family {family!r}: {path} is not installed; the corpus was drawn from it "
                    f"({versions})"
                )
            found = digest_file(Path(path))
            if found != digest:
                installed = ", ".join(
                    f"{name} {installed_version(name) or 'unknown'}" for name in source["packages"]
                )
                raise GlyphSourceMismatch(
                    f"letter family {family!r}: {path} is {found}, the corpus was drawn from {digest} "
                    f"({versions} recorded; {installed} installed)"
                )
