"""``evidence_manifest.json``: the typed model of what a bundle lists, and its one reader.

The bundle writer (:mod:`worldforge.evidence.bundle`) builds these records and writes them with
the project's pretty JSON; its summary texts (:mod:`worldforge.evidence.story`), the gate's record
(:mod:`worldforge.evidence.gate`), bundle verification and the bundle's attestation read them. A
field has one name and one type for all of them, written down here.

A manifest read back from a bundle someone sent is untrusted: :func:`parse_evidence_manifest`
checks every field of the model before anything indexes it, and names the file and the field
(``evidence_manifest.json: files[3].sha256: expected str or null``) instead of failing somewhere
later. Keys the model does not know are left alone, so an older reader still verifies what it can.
"""

from __future__ import annotations

import functools
import types
from typing import (
    Literal,
    NotRequired,
    TypedDict,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from worldforge.core.digests import digest_bytes
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact import Redaction

EVIDENCE_SCHEMA_VERSION = 1
EVIDENCE_MANIFEST = "evidence_manifest.json"


class FileRecord(TypedDict):
    """One file the bundle holds or lists: where it is (``path``) and came from (``source``), its
    digests before (``source_*``; withheld for a file the bundle holds only redacted) and after
    bundling, whether it is included and safe to attach, and why (``reason``, ``method``)."""

    path: str
    source: str
    kind: str
    source_sha256: str | None
    source_size: int | None
    included: bool
    safe_to_attach: bool
    sha256: str | None
    size: int | None
    redaction_count: int
    method: NotRequired[str]
    reason: str


class RedactionRecord(TypedDict):
    """One line of the redaction ledger: rule, file, line and count, never the secret."""

    rule: str
    file: str
    line: int
    count: int


class FixtureDigest(TypedDict):
    """A recorded input file of a run: its digest, and where the bundle holds it (if it does)."""

    run_id: str
    name: str
    path: str
    sha256: str
    size: int | None
    bundled_as: str | None


class RunStory(TypedDict):
    """One bundled run for the person who opens the issue: see
    :func:`worldforge.evidence.story.run_story`."""

    run_id: str
    kind: str
    status: str
    command: str
    input_digest: str | None
    result_digest: str | None
    claim_boundary: str | None
    expected_signal: str
    observed_failure: str
    first_triage_step: str


class FindingRecord(TypedDict):
    """Where the gate found something: file, line (0: its name) and rule; ``container`` is the zip
    for a finding in a zip member."""

    file: str
    line: int
    rule: str
    container: NotRequired[str]


class GateRecord(TypedDict):
    """The manifest's ``gate``: which detector scanned how many files, and what it found."""

    detector: str
    passed: bool
    scanned_files: int
    finding_count: int
    findings: list[FindingRecord]


class EvidenceManifest(TypedDict):
    """``evidence_manifest.json``. ``gate`` is written with the bundle's final verdict (the copy the
    gate itself scans is written before the verdict exists, without it); ``issue_template`` and
    ``first_triage_step`` only in an issue bundle."""

    schema_version: int
    bundle_kind: Literal["evidence", "issue-run"]
    source_date: str | None
    sanitizer: str
    run_count: int
    runs: list[RunStory]
    files: list[FileRecord]
    redactions: list[RedactionRecord]
    fixture_digests: list[FixtureDigest]
    included_count: int
    excluded_count: int
    redaction_count: int
    safe_to_attach: bool
    bundle_digest: str
    issue_template: NotRequired[str]
    first_triage_step: NotRequired[str]
    gate: NotRequired[GateRecord]


def not_included(path: str, source: str, kind: str, data: bytes, *, reason: str) -> FileRecord:
    """A file record before anything is attached: the source digest, nothing in the bundle yet."""
    return {
        "path": path,
        "source": source,
        "kind": kind,
        "source_sha256": digest_bytes(data),
        "source_size": len(data),
        "included": False,
        "safe_to_attach": False,
        "sha256": None,
        "size": None,
        "redaction_count": 0,
        "reason": reason,
    }


def mark_included(record: FileRecord, data: bytes) -> None:
    """Make ``record`` the record of a file the bundle holds as ``data``: included, safe to attach
    (until the gate says otherwise), with the digest and size of the bundled bytes."""
    record["included"], record["safe_to_attach"] = True, True
    record["sha256"], record["size"] = digest_bytes(data), len(data)


def redaction_record(entry: Redaction) -> RedactionRecord:
    """A ledger entry as the manifest lists it."""
    return {"rule": entry.rule, "file": entry.file, "line": entry.line, "count": entry.count}


# ----------------------------------------------------------------------------------- reading


def _kind(hint: object) -> str:
    """How an error names a field's type: ``str``, ``int or null``, ``an object``, ``a list``."""
    options = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
    names = [
        "null"
        if option is type(None)
        else "an object"
        if is_typeddict(option)
        else "a list"
        if get_origin(option) is list
        else getattr(option, "__name__", repr(option))
        for option in options
    ]
    return " or ".join(names)


class _Mismatch(Exception):
    """A field of the read value does not fit the model: its path and what was expected."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '$'}: {message}")


@functools.cache
def _fields(record: type) -> tuple[tuple[str, object, bool], ...]:
    """``(key, type, optional)`` of a record model's fields, resolved once per model."""
    fields = []
    for key, hint in get_type_hints(record, include_extras=True).items():
        optional = get_origin(hint) is NotRequired
        fields.append((key, get_args(hint)[0] if optional else hint, optional))
    return tuple(fields)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check(value: object, hint: object, path: str) -> None:
    """Raise :class:`_Mismatch` at ``path`` unless ``value`` has the model's type ``hint`` (the
    shapes the models above use: records, lists, unions with ``None``, literals, scalars)."""
    origin = get_origin(hint)
    if is_typeddict(hint):
        if not isinstance(value, dict):
            raise _Mismatch(path, f"expected {_kind(hint)}")
        for key, field_hint, optional in _fields(hint):
            if key not in value:
                if optional:
                    continue
                raise _Mismatch(_join(path, key), "missing")
            _check(value[key], field_hint, _join(path, key))
    elif origin is list:
        if not isinstance(value, list):
            raise _Mismatch(path, f"expected {_kind(hint)}")
        (item,) = get_args(hint)
        for index, element in enumerate(value):
            _check(element, item, f"{path}[{index}]")
    elif origin in (Union, types.UnionType):
        for option in get_args(hint):
            try:
                _check(value, option, path)
                return
            except _Mismatch:
                continue
        raise _Mismatch(path, f"expected {_kind(hint)}")
    elif origin is Literal:
        if value not in get_args(hint):
            raise _Mismatch(path, f"expected one of {', '.join(map(repr, get_args(hint)))}")
    elif hint is type(None):
        if value is not None:
            raise _Mismatch(path, "expected null")
    elif hint in (str, bool, int):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise _Mismatch(path, f"expected {_kind(hint)}")
    else:  # a shape the models above do not use: a mistake here, not in the file
        raise TypeError(f"evidence manifest field type {hint!r} is not one this reader checks")


def parse_evidence_manifest(data: object, source: str = EVIDENCE_MANIFEST) -> EvidenceManifest:
    """``data`` as the typed manifest, every field checked; ``WorldForgeError`` naming ``source``
    and the first field that is missing or of the wrong type."""
    try:
        _check(data, EvidenceManifest, "")
    except _Mismatch as exc:
        raise WorldForgeError(f"{source}: {exc}.") from None
    # Safe: _check has just verified every field of the model, recursively.
    return cast(EvidenceManifest, data)


__all__ = [
    "EVIDENCE_MANIFEST",
    "EVIDENCE_SCHEMA_VERSION",
    "EvidenceManifest",
    "FileRecord",
    "FindingRecord",
    "FixtureDigest",
    "GateRecord",
    "RedactionRecord",
    "RunStory",
    "mark_included",
    "not_included",
    "parse_evidence_manifest",
    "redaction_record",
]
