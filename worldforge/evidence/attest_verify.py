"""Checking ``attestations.intoto.jsonl``: signatures, well-formed Statements, subjects against bytes.

``runs verify`` runs this after its digest checks, on a run, a bundle directory or a bundle zip
(read in place through :class:`Files`). Each kind of failure is *one* problem line naming what
failed, however many envelopes or files share it, so a reviewer reads the cause, not a cascade:

* ``nothing-signed``: keys were given (``--key``) but there is no attestation;
* ``envelope-malformed`` / ``statement-malformed``: a line is not a DSSE envelope holding an in-toto
  Statement v1 (type, subjects with SHA-256 digests, a known predicate type, a predicate object);
* ``unsigned`` / ``signature-invalid``: with keys, an envelope carries no signature, or none made
  by a given key (a wrong key, or a payload swapped under a signature);
* ``subject-mismatch``: an attested file is missing or its bytes differ (files the digest checks
  already named are not repeated);
* ``unattested-file``: a bundle file no Statement covers (a run attested in place covers only what
  it may disclose, so this applies to bundles).

Without keys the signature is not checked (``signature: unchecked``); the subjects still are.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TypedDict

from worldforge.core.digests import digest_bytes
from worldforge.evidence.dsse import INTOTO_PAYLOAD_TYPE, Envelope, EnvelopeError, parse_envelope
from worldforge.evidence.keys import VerifyKey, load_verify_key
from worldforge.evidence.manifest import EVIDENCE_MANIFEST
from worldforge.evidence.statement import PROVENANCE_TYPE, STATEMENT_TYPE, TEST_RESULT_TYPE
from worldforge.workspace.layout import ATTESTATION_NAME, LOCAL_DIR, LOCK_NAME
from worldforge.workspace.store import resolve_run_dir
from worldforge.workspace.verify import Problem

PREDICATE_TYPES = (TEST_RESULT_TYPE, PROVENANCE_TYPE)
_HEX = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Files:
    """The files of a run or bundle, by relative POSIX path, and a reader for their bytes."""

    names: frozenset[str]
    read: Callable[[str], bytes]

    @classmethod
    def of_dir(cls, root: Path) -> Files:
        names = frozenset(
            p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and not p.is_symlink()
        )
        return cls(names, lambda name: (root / name).read_bytes())

    @classmethod
    def of_zip(cls, archive: zipfile.ZipFile) -> Files:
        names = frozenset(i.filename for i in archive.infolist() if not i.is_dir())
        return cls(names, archive.read)


class AttestationRecord(TypedDict):
    """The ``attestation`` part of ``runs verify --format json``."""

    present: bool
    envelopes: int
    signature: str
    keyids: list[str]
    predicate_types: list[str]
    subjects: int
    problems: list[dict[str, str]]


@dataclass
class AttestationCheck:
    """What ``runs verify`` reports about the attestation (``signature``: verified, unchecked,
    unsigned, invalid, or none when there is no attestation)."""

    present: bool = False
    envelopes: int = 0
    signature: str = "none"
    keyids: list[str] = field(default_factory=list)
    predicate_types: list[str] = field(default_factory=list)
    subjects: int = 0
    problems: list[Problem] = field(default_factory=list)

    def add(self, code: str, message: str) -> None:
        self.problems.append(Problem(code, ATTESTATION_NAME, message))

    def to_dict(self) -> AttestationRecord:
        return {
            "present": self.present,
            "envelopes": self.envelopes,
            "signature": self.signature,
            "keyids": self.keyids,
            "predicate_types": self.predicate_types,
            "subjects": self.subjects,
            "problems": [p.to_dict() for p in self.problems],
        }


def _lines(numbers: Iterable[int]) -> str:
    found = sorted(numbers)
    return ("line " if len(found) == 1 else "lines ") + ", ".join(str(n) for n in found)


def _safe_name(name: str) -> bool:
    pure = PurePosixPath(name)
    return bool(name) and not pure.is_absolute() and ".." not in pure.parts and "\\" not in name


@dataclass(frozen=True)
class CheckedStatement:
    """What verification needs from a well-formed Statement: its predicate type and its subjects
    (name -> hex SHA-256), in the Statement's order."""

    predicate_type: str
    subjects: tuple[tuple[str, str], ...]


def statement_problem(payload: bytes) -> tuple[str | None, CheckedStatement | None]:
    """Why ``payload`` is not a well-formed in-toto Statement v1 of ours (``None`` if it is), and
    what it states once checked."""
    try:
        body = json.loads(payload)
    except ValueError:
        return "payload is not JSON", None
    if not isinstance(body, dict) or body.get("_type") != STATEMENT_TYPE:
        return f"_type is not {STATEMENT_TYPE}", None
    subjects = body.get("subject")
    if not isinstance(subjects, list) or not subjects:
        return "no subjects", None
    checked: list[tuple[str, str]] = []
    for entry in subjects:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not _safe_name(name):
            return "a subject has no safe relative name", None
        digest = entry.get("digest")
        hex_digest = digest.get("sha256") if isinstance(digest, dict) else None
        if not isinstance(hex_digest, str) or not _HEX.fullmatch(hex_digest):
            return f"subject {name} has no sha256 digest", None
        checked.append((name, hex_digest))
    predicate_type = body.get("predicateType")
    if not isinstance(predicate_type, str) or predicate_type not in PREDICATE_TYPES:
        return f"predicateType {predicate_type!r} is not one WorldForge writes", None
    if not isinstance(body.get("predicate"), dict) or not body["predicate"]:
        return "predicate is not an object", None
    return None, CheckedStatement(predicate_type, tuple(checked))


def _signature(check: AttestationCheck, envelopes: list[tuple[int, Envelope]], keys: list[VerifyKey]) -> None:
    unsigned = [n for n, env in envelopes if not env.signatures]
    check.keyids = sorted({keyid for _, env in envelopes for keyid, _sig in env.signatures})
    if not keys:
        check.signature = "unchecked"
        return
    invalid = [n for n, env in envelopes if env.signatures and env.signed_by(keys) is None]
    if unsigned:
        check.add("unsigned", f"{_lines(unsigned)}: the envelope carries no signature")
    if invalid:
        names = ", ".join(f"{k.source} ({k.keyid[:12]})" for k in keys)
        check.add("signature-invalid", f"{_lines(invalid)}: no valid signature by {names}")
    check.signature = "verified" if not (unsigned or invalid) else ("unsigned" if not invalid else "invalid")


def verify_attestations(
    files: Files,
    keys: list[VerifyKey],
    *,
    require: bool = False,
    bundle: bool = False,
    flagged: frozenset[str] = frozenset(),
) -> AttestationCheck:
    """Check the attestation among ``files`` (see the module docstring); ``require``: keys were
    given on the command line, so a missing attestation fails; ``flagged``: paths the digest checks
    already reported."""
    check = AttestationCheck()
    if ATTESTATION_NAME not in files.names:
        if require:
            check.add("nothing-signed", "no attestations.intoto.jsonl: nothing here is signed")
        return check
    check.present = True
    envelopes: list[tuple[int, Envelope]] = []
    malformed: dict[int, str] = {}
    text = files.read(ATTESTATION_NAME).decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            envelope = parse_envelope(line)
        except EnvelopeError as exc:
            malformed[number] = str(exc)
            continue
        if envelope.payload_type != INTOTO_PAYLOAD_TYPE:
            malformed[number] = f"payloadType {envelope.payload_type!r}"
            continue
        envelopes.append((number, envelope))
    check.envelopes = len(envelopes) + len(malformed)
    if malformed:
        first = min(malformed)
        check.add("envelope-malformed", f"{_lines(malformed)}: not a DSSE envelope ({malformed[first]})")
    if not check.envelopes:
        check.add("envelope-malformed", "the file holds no envelope")
    _signature(check, envelopes, keys)
    bad_statements: dict[int, str] = {}
    attested: dict[str, str] = {}
    conflicting: set[str] = set()
    for number, envelope in envelopes:
        problem, statement = statement_problem(envelope.payload)
        if statement is None:
            bad_statements[number] = str(problem)
            continue
        check.predicate_types.append(statement.predicate_type)
        for name, digest in statement.subjects:
            if attested.setdefault(name, digest) != digest:
                conflicting.add(name)
    if bad_statements:
        first = min(bad_statements)
        check.add("statement-malformed", f"{_lines(bad_statements)}: {bad_statements[first]}")
    check.subjects = len(attested)
    differ = sorted(
        name
        for name, digest in attested.items()
        if name in conflicting
        or name not in files.names
        or digest_bytes(files.read(name)) != f"sha256:{digest}"
    )
    differ = [name for name in differ if name not in flagged]
    if differ:
        shown = ", ".join(differ[:3]) + (f" and {len(differ) - 3} more" if len(differ) > 3 else "")
        check.add("subject-mismatch", f"{len(differ)} attested file(s) missing or changed: {shown}")
    if bundle and envelopes and not bad_statements and not differ:  # else the cause is already named
        skip = (ATTESTATION_NAME, LOCK_NAME)
        loose = sorted(
            n
            for n in files.names
            if n not in attested and n not in skip and not n.startswith(LOCAL_DIR + "/")
        )
        if loose:
            shown = ", ".join(loose[:3]) + (f" and {len(loose) - 3} more" if len(loose) > 3 else "")
            check.add("unattested-file", f"{len(loose)} file(s) no Statement covers: {shown}")
    return check


def trusted_keys(paths: Iterable[str | Path]) -> list[VerifyKey]:
    """The public keys in ``paths`` (``--key`` values, or ``attest.trusted_keys``)."""
    return [load_verify_key(path) for path in paths]


def check_target(
    workspace_dir: str | Path,
    target: str,
    keys: list[VerifyKey],
    *,
    require: bool,
    flagged: frozenset[str] = frozenset(),
) -> AttestationCheck:
    """:func:`verify_attestations` on what ``runs verify TARGET`` names: a bundle zip (read in
    place), a bundle directory, or a run id / run directory."""
    path = Path(target)
    if path.is_file() and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return verify_attestations(
                Files.of_zip(archive), keys, require=require, bundle=True, flagged=flagged
            )
    if (path / EVIDENCE_MANIFEST).is_file():
        return verify_attestations(Files.of_dir(path), keys, require=require, bundle=True, flagged=flagged)
    run_dir = resolve_run_dir(workspace_dir, target)
    return verify_attestations(Files.of_dir(run_dir), keys, require=require, flagged=flagged)


__all__ = [
    "PREDICATE_TYPES",
    "AttestationCheck",
    "Files",
    "check_target",
    "CheckedStatement",
    "statement_problem",
    "trusted_keys",
    "verify_attestations",
]
