"""Find host-specific strings in what a command leaves behind (run directories, stdout reports).

The product promise is that nothing host-specific leaves the machine: no absolute paths of the temp
directory, ``$HOME``, the source checkout or the virtual environment, and no login or host name.
End-to-end tests run commands from one temporary directory with the workspace and inputs somewhere
else (so the sanitizer cannot simply strip the current directory) and then call
:func:`assert_no_host_leaks` on every workspace and every captured report.

``.local/`` (the exact argv, start directory and request ``runs resume`` reads) and ``.lock`` are
local-only by design and never bundled, so they are skipped. Inline ``data:`` URIs (thumbnails in
HTML reports) are dropped before scanning, because base64 can spell anything.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCAL_ONLY = (".local", ".lock")
_LEFT = r"(?<![\w.\-/~<>$%])"  # not inside a word, a longer path or a placeholder such as <tmp>
_RIGHT = r"(?![\w.\-])"
_DATA_URI_RE = re.compile(r"data:[\w/+.\-]+;base64,[A-Za-z0-9+/=]+")


@dataclass(frozen=True)
class Marker:
    """One thing that must not appear: a label for the failure message and its pattern."""

    label: str
    pattern: re.Pattern[str]


def _path_forms(path: str | Path) -> set[str]:
    text = str(path)
    return {p.rstrip("/") for p in (text, os.path.realpath(text)) if len(p.rstrip("/")) >= 4}


def host_markers(*paths: str | Path) -> list[Marker]:
    """Markers for this machine plus ``paths`` (the test's temp dirs, inputs, workspaces).

    Paths match only as whole path prefixes (``/tmp`` does not match ``<tmp>`` or ``a/tmp``). Login
    and host names shorter than four characters are skipped: they would match ordinary words. Only
    this machine's locations count: suites may put made-up paths such as ``/home/example`` in their
    own metrics on purpose (the custom-suite example does, to show the gallery sanitizer).
    """
    locations: dict[str, str] = {}
    named = [
        ("temp directory", tempfile.gettempdir()),
        ("$HOME", os.environ.get("HOME", "")),
        ("home directory", str(Path.home())),
        ("source checkout", str(ROOT)),
        ("python environment", sys.prefix),
        ("python executable directory", os.path.dirname(sys.executable)),
    ]
    named += [("test path", str(p)) for p in paths]
    for label, raw in named:
        if raw:
            for form in _path_forms(raw):
                locations.setdefault(form, label)
    markers = [
        Marker(f"{label} {form}", re.compile(_LEFT + re.escape(form) + _RIGHT))
        for form, label in sorted(locations.items(), key=lambda kv: -len(kv[0]))
    ]
    names: dict[str, str] = {}
    try:
        names[getpass.getuser()] = "login name"
    except (KeyError, OSError):
        pass
    host = socket.gethostname()
    names.setdefault(host, "host name")
    names.setdefault(host.split(".")[0], "host name")
    for name, label in names.items():
        if len(name) >= 4 and name.lower() != "localhost":
            markers.append(
                Marker(
                    f"{label} {name!r}",
                    re.compile(r"(?<![A-Za-z0-9])" + re.escape(name) + r"(?![A-Za-z0-9])", re.I),
                )
            )
    return markers


def scan_text(text: str, markers: Iterable[Marker]) -> list[str]:
    """``"<label>: …context…"`` for every marker hit in ``text``."""
    text = _DATA_URI_RE.sub("data:", text)
    hits = []
    for marker in markers:
        for match in marker.pattern.finditer(text):
            start, end = max(0, match.start() - 40), match.end() + 40
            hits.append(f"{marker.label}: …{text[start:end]}…")
    return hits


def scan_tree(root: Path, markers: Iterable[Marker]) -> list[str]:
    """Hits in every UTF-8 file under ``root`` (binary files and local-only entries skipped)."""
    markers = list(markers)
    hits = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or any(part in LOCAL_ONLY for part in rel.parts):
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        hits += [f"{rel.as_posix()}: {hit}" for hit in scan_text(text, markers)]
    return hits


def assert_no_host_leaks(
    *trees: Path, texts: Mapping[str, str] | None = None, paths: Iterable[str | Path] = ()
) -> None:
    """Fail with every hit in ``trees`` (run dirs or whole workspaces) and ``texts`` (stdout reports)."""
    markers = host_markers(*paths)
    hits: list[str] = []
    for tree in trees:
        assert tree.is_dir(), tree
        hits += [f"{tree.name}/{hit}" for hit in scan_tree(tree, markers)]
    for name, text in (texts or {}).items():
        hits += [f"{name}: {hit}" for hit in scan_text(text, markers)]
    assert not hits, "host-specific strings left the machine:\n" + "\n".join(hits[:40])


__all__ = ["ROOT", "Marker", "assert_no_host_leaks", "host_markers", "scan_text", "scan_tree"]
