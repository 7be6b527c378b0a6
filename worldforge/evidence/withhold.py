"""Digests a bundle must not carry: those whose preimage it holds only in redacted form.

A bundle keeps the rest of every redacted file. A digest of the *original* file (or of one original
event line, or of one original item record) next to that remainder is a guessing oracle: fill a
candidate password into the redacted span, hash, compare. Low-entropy secrets fall to a dictionary
in seconds. So every such digest is replaced by :data:`WITHHELD`, wherever in the bundle it appears
(the evidence manifest's ``source_sha256``, the run manifest's and event log's artifact digests, the
hash chain's ``prev`` links, ``record_digest``, reports, ``summary.md``).

Withholding is transitive: a file that changed only because a withheld digest was taken out of it
now differs from its source too, so its own source digest is withheld in turn; an event log's chain
is withheld from the first redacted line on, since each later link hashes the one before.

What is kept: the run-level digests release reviewers compare (``config_digest``, ``input_digest``,
the items digest, ``result_digest``) and every digest of content the bundle holds unchanged.
``docs/evidence.md`` says what that leaves open.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

from worldforge.core.canonical import JSON
from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.workspace.layout import EVENTS_NAME

WITHHELD = "withheld:redacted-in-bundle"
_HEX_DIGEST = re.compile(rb"(?:sha256:)?([0-9a-f]{64})(?![0-9a-f])")


def _is_item_file(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return len(parts) >= 2 and parts[-2] == "items" and parts[-1].endswith(".json")


def _record_of(data: bytes) -> tuple[bool, JSON]:
    """``(True, record)`` of an item file's bytes, ``(False, None)`` when they hold no record."""
    try:
        body = json.loads(data)
    except ValueError:
        return False, None
    return (True, body["record"]) if isinstance(body, dict) and "record" in body else (False, None)


def preimage_digests(path: str, source: bytes, bundled: bytes) -> set[str]:
    """The digests whose preimage is ``source`` (or a part of it) when the bundle holds ``bundled``.

    Nothing when the bundle holds the source unchanged. Otherwise the file's digest, and for an
    event log every line's digest from the first changed line on, and for an item file the
    ``record_digest`` of a record that changed.
    """
    if source == bundled:
        return set()
    found = {digest_bytes(source)}
    name = PurePosixPath(path).name
    if name == EVENTS_NAME:
        before, after = source.split(b"\n"), bundled.split(b"\n")
        first = next((i for i, line in enumerate(before) if i >= len(after) or after[i] != line), len(before))
        found.update(digest_bytes(line) for line in before[first:] if line)
    elif _is_item_file(path):
        ok_src, record_src = _record_of(source)
        ok_out, record_out = _record_of(bundled)
        if ok_src and (not ok_out or record_src != record_out):
            found.add(digest_payload(record_src))
    return found


def _strip_hexes(data: bytes, hexes: set[bytes]) -> bytes:
    marker = WITHHELD.encode("ascii")
    return _HEX_DIGEST.sub(lambda m: marker if m.group(1) in hexes else m.group(0), data)


def _hexes(digests: set[str]) -> set[bytes]:
    return {d.removeprefix("sha256:").encode("ascii") for d in digests}


def strip_digests(data: bytes, withheld: set[str]) -> bytes:
    """``data`` with every withheld digest (with or without its ``sha256:`` prefix) replaced."""
    if not withheld or not _HEX_DIGEST.search(data):
        return data
    return _strip_hexes(data, _hexes(withheld))


def withhold(sources: dict[str, bytes], written: dict[str, bytes]) -> tuple[dict[str, bytes], set[str]]:
    """Take every oracle digest out of the bundle's files.

    ``sources`` maps bundle paths to the original bytes of files the bundle holds a copy of;
    ``written`` maps every bundle path to the bytes written so far. Returns the files whose bytes
    must change (path → new bytes) and the set of withheld digests, to be taken out of the generated
    files (evidence manifest, summary) too. Runs to a fixed point, since taking a digest out of a
    file changes that file in turn; each round looks again only at the files it changed and strips
    only the digests it newly found, so a bundle without redactions costs one comparison per file.
    """
    current = dict(written)
    withheld: set[str] = set()
    pending = [path for path in sources if sources[path] != current[path]]
    while pending:  # ends: ``withheld`` grows every round, within the sources' finite parts
        found: set[str] = set()
        for path in pending:
            found |= preimage_digests(path, sources[path], current[path])
        found -= withheld
        if not found:
            break
        withheld |= found
        hexes = _hexes(found)
        pending = []
        for path, data in current.items():
            stripped = _strip_hexes(data, hexes)
            if stripped != data:
                current[path] = stripped
                if path in sources:
                    pending.append(path)
    return {p: d for p, d in current.items() if d != written[p]}, withheld


__all__ = ["WITHHELD", "preimage_digests", "strip_digests", "withhold"]
