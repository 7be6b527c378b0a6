"""The bundle gate: every written byte and name re-scanned by a second, independent detector.

The redactor can be wrong in ways its own tests cannot see, because they share its idea of what a
secret looks like. So after a bundle is written, :mod:`worldforge.evidence.detect` — written
separately, with rule families of its own and no rule shared with the redactor — scans every file's
name and contents, the bundle's own manifest, ``summary.md`` and ``issue.md`` included, on the text
as written and on its decoded views (HTML entities, percent-encoding, JSON/backslash escapes, CSV
quoting, two layers deep; base64 text), plus exact known values (secret-named environment
variables, ``$HOME``, the working directory, the login name). A zip is scanned member by member
after it is written.

Anything found fails closed: the file and the bundle are marked ``safe_to_attach: false``, no zip is
kept, ``summary.md`` and ``issue.md`` say the bundle is not safe to attach, and the command exits 1
listing file, line and rule — never the matched text, and no hash of it (a hash of a short secret
can be reversed by guessing).
"""

from __future__ import annotations

import bisect
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from worldforge.core.redact.views import Decoded, b64_tokens, decoded_layer
from worldforge.evidence.detect import DETECTOR_VERSION, KnownValues, scan_decoded, scan_name, scan_text
from worldforge.evidence.manifest import FileRecord, FindingRecord, GateRecord


@dataclass(frozen=True, order=True)
class GateFinding:
    """Where the detector found something: bundle path, line (0: the name), rule; ``container`` is
    the zip's name for a finding in a zip member."""

    file: str
    line: int
    rule: str
    container: str = ""

    def to_dict(self) -> FindingRecord:
        record: FindingRecord = {"file": self.file, "line": self.line, "rule": self.rule}
        if self.container:
            record["container"] = self.container
        return record


def _line_of(newlines: list[int], offset: int) -> int:
    return bisect.bisect_left(newlines, offset) + 1


def _views(
    text: str, depth: int, to_top: Callable[[int], int], plus_split: bool = False
) -> Iterator[tuple[str, Callable[[int], int], bool]]:
    """``text`` and its decoded views, each with a map from its offsets to the top text's offsets
    and whether it is (or lies under) a URL-decoded view, where every ``+`` reads as a space."""
    yield text, to_top, plus_split
    if depth == 0:
        return
    for decoded in decoded_layer(text):

        def mapper(position: int, decoded: Decoded = decoded, parent: Callable[[int], int] = to_top) -> int:
            return parent(decoded.to_original(position))

        yield from _views(decoded.text, depth - 1, mapper, plus_split or decoded.name == "url")


def scan_document(text: str, known: KnownValues, *, depth: int = 2) -> list[tuple[int, str]]:
    """``(line, rule)`` of every finding in ``text`` or any decoded view of it (lines of ``text``)."""
    hits: set[tuple[int, str]] = set()  # (offset in text, rule)
    for view, to_top, plus_split in _views(text, depth, lambda p: p):
        for finding in scan_text(view, known, bare_keys=not plus_split):
            hits.add((to_top(finding.start), finding.rule))
        for start, _end, decoded in b64_tokens(view):
            inner = scan_decoded(decoded, known)
            if inner:
                hits.add((to_top(start), "base64/" + inner[0]))
    if not hits:
        return []
    newlines = [m.start() for m in re.finditer("\n", text)]
    return sorted({(_line_of(newlines, offset), rule) for offset, rule in hits})


def _scan_named(name: str, data: bytes, known: KnownValues, container: str = "") -> list[GateFinding]:
    findings = [GateFinding(name, 0, f"name/{f.rule}", container) for f in scan_name(name, known)]
    text = data.decode("utf-8", "replace")
    findings += [GateFinding(name, line, rule, container) for line, rule in scan_document(text, known)]
    return findings


def scan_bundle_dir(
    bundle_dir: Path, known: KnownValues, written: dict[str, bytes] | None = None
) -> list[GateFinding]:
    """Every file under ``bundle_dir`` (names and bytes), in path order.

    ``written`` holds the bytes the bundler just wrote, by bundle path, so they are not read back;
    any file on disk that it does not list (or lists with other bytes) is read from disk.
    """
    findings: list[GateFinding] = []
    known_bytes = written or {}
    for path in sorted(p for p in bundle_dir.rglob("*") if p.is_file()):
        rel = path.relative_to(bundle_dir).as_posix()
        data = known_bytes.get(rel)
        if data is None or path.stat().st_size != len(data):
            data = path.read_bytes()
        findings += _scan_named(rel, data, known)
    return sorted(set(findings))


def scan_files(files: dict[str, bytes], known: KnownValues) -> list[GateFinding]:
    """The given files (bundle path -> bytes), names and contents, as :func:`scan_bundle_dir` scans
    each: for the files written after the rest was scanned (the texts that state the verdict)."""
    return sorted({f for name, data in files.items() for f in _scan_named(name, data, known)})


def scan_zip(zip_path: Path, known: KnownValues) -> list[GateFinding]:
    """Every member of a written zip (names and bytes), and the zip's own file name."""
    name = zip_path.name
    findings = [GateFinding(name, 0, f"name/{f.rule}", name) for f in scan_name(name, known)]
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            findings += _scan_named(info.filename, archive.read(info), known, name)
    return sorted(set(findings))


def gate_record(findings: list[GateFinding], scanned: int) -> GateRecord:
    """The manifest's ``gate`` section: what scanned, how much, and what it found (no secrets)."""
    return {
        "detector": DETECTOR_VERSION,
        "passed": not findings,
        "scanned_files": scanned,
        "finding_count": len(findings),
        "findings": [f.to_dict() for f in findings],
    }


def flag_files(files: list[FileRecord], findings: list[GateFinding]) -> list[FileRecord]:
    """Copies of the manifest's file records with the gate's verdict applied: a file with a
    finding is not safe to attach, and its reason says the gate flagged it."""
    flagged = {f.file for f in findings}
    out = []
    for record in files:
        record = record.copy()
        reason = record["reason"]
        if record["path"] in flagged and not reason.startswith(_FLAGGED):
            record["safe_to_attach"], record["reason"] = False, _FLAGGED + reason
        out.append(record)
    return out


_FLAGGED = "flagged by the bundle gate: "


__all__ = [
    "GateFinding",
    "flag_files",
    "gate_record",
    "scan_bundle_dir",
    "scan_document",
    "scan_files",
    "scan_zip",
]
