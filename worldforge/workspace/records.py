"""Typed, versioned models of what a run writes: ``run_manifest.json`` and ``items/*.json``.

The files on disk are canonical JSON (sorted keys, the project's ``pretty_json``); these models are
how code builds and reads them, so a field has one name, one type and one doc. ``to_dict`` omits
fields that were never set exactly as the writer always did, so ``from_dict(d).to_dict() == d`` for
every manifest and item file (tests hold that on real runs of every kind). Which
``schema_version`` this code reads is one rule (:func:`schema_version_problem`): the reader refuses
a manifest it breaks, with the field named, rather than misread it, and ``runs verify`` reports the
same sentence as a problem. Every reader of a run (list, show, verify, diff, prune, resume, replay,
bundles) goes through :func:`read_run_manifest`, so a field has one spelling in the code too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.errors import WorldForgeError
from worldforge.core.run_events import RunStatus
from worldforge.workspace.entries import InputEntry, read_input_entries
from worldforge.workspace.environment import EnvironmentSummary, read_environment
from worldforge.workspace.layout import DIGEST_RECIPE, MANIFEST_NAME, SCHEMA_VERSION, load_manifest

#: The oldest manifest ``schema_version`` this code reads (the first one written).
MIN_SCHEMA_VERSION = 1


def schema_version_problem(version: object) -> str | None:
    """Why a manifest's ``schema_version`` is one this code cannot read, or ``None`` when it can.

    The one rule for both sides: :meth:`RunManifest.from_dict` refuses what it names and ``runs
    verify`` reports it as a ``schema-version`` problem, so the two never disagree about a run.
    """
    if isinstance(version, bool) or not isinstance(version, int):
        return f"schema_version {version!r} is not an integer"
    if version > SCHEMA_VERSION:
        return f"schema_version {version} is newer than this worldforge reads ({SCHEMA_VERSION})"
    if version < MIN_SCHEMA_VERSION:
        return f"schema_version {version} is older than any manifest worldforge wrote ({MIN_SCHEMA_VERSION})"
    return None


def _status(value: object, source: str) -> RunStatus:
    if isinstance(value, str) and value in RunStatus.__members__.values():
        return RunStatus(value)
    known = ", ".join(s.value for s in RunStatus)
    raise WorldForgeError(f"{source}: field 'status' is {value!r}, not one of {known}.")


def _text(data: Mapping[str, object], key: str, where: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise WorldForgeError(f"{where}: field {key!r} is missing or not str.")
    return value


def _optional_text(data: Mapping[str, object], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise WorldForgeError(f"{where}: field {key!r} is neither str nor null.")
    return value


def _optional_count(data: Mapping[str, object], key: str, where: str) -> int | None:
    value = data.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise WorldForgeError(f"{where}: field {key!r} is neither int nor null.")
    return value


def _object(data: Mapping[str, object], key: str, where: str) -> JSONObject:
    value = data.get(key)
    if not isinstance(value, dict):
        raise WorldForgeError(f"{where}: field {key!r} is missing or not dict.")
    return dict(value)


def _objects(data: Mapping[str, object], key: str, where: str) -> list[JSONObject]:
    """An optional list of JSON objects (``null`` or absent: empty), each checked to be an object."""
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
        raise WorldForgeError(f"{where}: field {key!r} is not a list of objects.")
    return list(value)


class ItemsRecord(TypedDict):
    """A manifest's ``items``: see :class:`ItemsSummary`."""

    count: int
    digest: str


class ErrorRecord(TypedDict):
    """A manifest's ``error``: see :class:`RunError`."""

    type: str
    message: str


class RunManifestRecord(TypedDict):
    """``run_manifest.json`` as JSON: what :meth:`RunManifest.to_dict` writes (optional fields are
    left out until set)."""

    schema_version: int
    digest_recipe: str
    run_id: str
    kind: str
    status: str
    argv: list[str]
    command: str
    created_at: str
    worldforge_version: str
    environment: EnvironmentSummary
    config: JSONObject
    config_digest: str
    inputs: list[InputEntry]
    dataset_manifests: list[JSONObject]
    result_digest: str | None
    claim_boundary: str | None
    resume_count: int
    input_digest: NotRequired[str]
    artifacts: NotRequired[list[JSONObject]]
    items: NotRequired[ItemsRecord]
    event_count: NotRequired[int]
    event_chain_head: NotRequired[str]
    updated_at: NotRequired[str]
    finished_at: NotRequired[str]
    error: NotRequired[ErrorRecord]


@dataclass
class ItemsSummary:
    """How many items the run recorded and the digest over their record digests."""

    count: int
    digest: str

    def to_dict(self) -> ItemsRecord:
        return {"count": self.count, "digest": self.digest}


@dataclass
class RunError:
    """Why a run stopped: the exception's type name and its sanitized one-line message."""

    type: str
    message: str

    def to_dict(self) -> ErrorRecord:
        return {"type": self.type, "message": self.message}


@dataclass
class RunManifest:
    """``run_manifest.json``: identity, status, inputs, artifacts and digests of one run.

    Portable by construction: argv is sanitized, paths are run- or cwd-relative, and the exact argv
    and start directory live apart in ``.local/invocation.json`` (never bundled).
    """

    #: ``DIR/runs/<run_id>/``; a UTC timestamp plus random suffix.
    run_id: str
    #: What made the run: ``evaluation``, ``benchmark``, ``pcg-stage``, ``pcg-extract``, ...
    kind: str
    #: ``running``, ``completed``, ``failed`` or ``interrupted``.
    status: RunStatus
    #: The sanitized command line, and the same as one shell-quoted string.
    argv: list[str]
    command: str
    created_at: str
    worldforge_version: str
    #: Python, platform, package version and the checkout's commit (informational, not digested).
    environment: EnvironmentSummary
    #: The command's options as recorded (sanitized), and their canonical digest.
    config: JSONObject
    config_digest: str
    #: Named inputs (files by raw-bytes digest, values by canonical digest), sorted by name.
    inputs: list[InputEntry] = field(default_factory=list)
    #: Compact references to the dataset manifests the run cites (open: a caller may cite any
    #: object with an ``id``; see :func:`worldforge.datasets.manifest_reference`).
    dataset_manifests: list[JSONObject] = field(default_factory=list)
    #: Digest of kind, config, inputs and datasets: what must match for two runs to be comparable.
    input_digest: str | None = None
    #: Every file the run wrote: path, sha256, size, media type (``runs verify`` reads them as the
    #: plain objects the event log's ``artifact.written`` payloads are too).
    artifacts: list[dict[str, Any]] | None = None
    items: ItemsSummary | None = None
    #: Length and head of the hash-chained ``events.jsonl``.
    event_count: int | None = None
    event_chain_head: str | None = None
    #: Canonical digest of ``results/result.json`` (``None`` until the run completes).
    result_digest: str | None = None
    claim_boundary: str | None = None
    resume_count: int = 0
    updated_at: str | None = None
    finished_at: str | None = None
    error: RunError | None = None
    schema_version: int = SCHEMA_VERSION
    digest_recipe: str = DIGEST_RECIPE

    def to_dict(self) -> RunManifestRecord:
        """The JSON object written to ``run_manifest.json``."""
        out: RunManifestRecord = {
            "schema_version": self.schema_version,
            "digest_recipe": self.digest_recipe,
            "run_id": self.run_id,
            "kind": self.kind,
            "status": self.status.value,
            "argv": list(self.argv),
            "command": self.command,
            "created_at": self.created_at,
            "worldforge_version": self.worldforge_version,
            "environment": self.environment,
            "config": self.config,
            "config_digest": self.config_digest,
            "inputs": list(self.inputs),
            "dataset_manifests": list(self.dataset_manifests),
            "result_digest": self.result_digest,
            "claim_boundary": self.claim_boundary,
            "resume_count": self.resume_count,
        }
        # Optional fields appear once set, in this order (as the writer always added them).
        if self.input_digest is not None:
            out["input_digest"] = self.input_digest
        if self.artifacts is not None:
            out["artifacts"] = list(self.artifacts)
        if self.items is not None:
            out["items"] = self.items.to_dict()
        if self.event_count is not None:
            out["event_count"] = self.event_count
        if self.event_chain_head is not None:
            out["event_chain_head"] = self.event_chain_head
        if self.updated_at is not None:
            out["updated_at"] = self.updated_at
        if self.finished_at is not None:
            out["finished_at"] = self.finished_at
        if self.error is not None:
            out["error"] = self.error.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: object, source: str = "run_manifest.json") -> RunManifest:
        """Read a manifest; ``WorldForgeError`` naming the field when it is not one this code knows."""
        if not isinstance(data, Mapping):
            raise WorldForgeError(f"{source}: expected a JSON object.")
        version = data.get("schema_version")
        problem = schema_version_problem(version)
        if problem is not None or not isinstance(version, int):
            raise WorldForgeError(f"{source}: {problem}.")
        items = data.get("items")
        error = data.get("error")
        argv = data.get("argv")
        if not isinstance(argv, list):
            raise WorldForgeError(f"{source}: field 'argv' is missing or not list.")
        artifacts = data.get("artifacts")
        return cls(
            schema_version=version,
            digest_recipe=_text(data, "digest_recipe", source),
            run_id=_text(data, "run_id", source),
            kind=_text(data, "kind", source),
            status=_status(data.get("status"), source),
            argv=[str(a) for a in argv],
            command=_text(data, "command", source),
            created_at=_text(data, "created_at", source),
            worldforge_version=_text(data, "worldforge_version", source),
            environment=read_environment(data.get("environment"), source),
            config=_object(data, "config", source),
            config_digest=_text(data, "config_digest", source),
            inputs=read_input_entries(data.get("inputs"), source),
            dataset_manifests=_objects(data, "dataset_manifests", source),
            input_digest=_optional_text(data, "input_digest", source),
            artifacts=None if artifacts is None else _objects(data, "artifacts", source),
            items=None
            if not isinstance(items, Mapping)
            else ItemsSummary(count=int(items["count"]), digest=str(items["digest"])),
            event_count=_optional_count(data, "event_count", source),
            event_chain_head=_optional_text(data, "event_chain_head", source),
            result_digest=_optional_text(data, "result_digest", source),
            claim_boundary=_optional_text(data, "claim_boundary", source),
            resume_count=int(data.get("resume_count") or 0),
            updated_at=_optional_text(data, "updated_at", source),
            finished_at=_optional_text(data, "finished_at", source),
            error=None
            if not isinstance(error, Mapping)
            else RunError(type=str(error.get("type")), message=str(error.get("message"))),
        )


def read_run_manifest(run_dir: Path) -> RunManifest:
    """The typed manifest of ``run_dir``; ``WorldForgeError`` naming the run and the field when the
    file is missing, not JSON, of a schema this code does not read, or lacks a field."""
    return RunManifest.from_dict(load_manifest(run_dir), source=f"{run_dir.name}/{MANIFEST_NAME}")


class ItemFileRecord(TypedDict):
    """An item file as JSON: what :meth:`ItemFile.to_dict` writes."""

    item_id: str
    input_digest: str
    record: JSON
    record_digest: str


@dataclass(frozen=True)
class ItemFile:
    """``items/<slug>.<digest>.json``: one finished unit of work.

    ``record`` is the suite's own JSON record; ``record_digest`` is its canonical digest (what the
    run's items digest and ``runs diff`` compare), and ``input_digest`` is what must match for
    ``runs resume`` to reuse the item instead of recomputing it.
    """

    item_id: str
    input_digest: str
    record: JSON
    record_digest: str

    def to_dict(self) -> ItemFileRecord:
        return {
            "item_id": self.item_id,
            "input_digest": self.input_digest,
            "record": self.record,
            "record_digest": self.record_digest,
        }

    @classmethod
    def from_dict(cls, data: object, source: str = "item file") -> ItemFile:
        if not isinstance(data, Mapping):
            raise WorldForgeError(f"{source}: expected a JSON object.")
        if "record" not in data:
            raise WorldForgeError(f"{source}: field 'record' is missing.")
        return cls(
            item_id=_text(data, "item_id", source),
            input_digest=_text(data, "input_digest", source),
            record=data["record"],
            record_digest=_text(data, "record_digest", source),
        )


def read_item_file(path: Path) -> ItemFile:
    """One ``items/*.json`` file; ``WorldForgeError`` naming the file when it cannot be read, is not
    JSON, or is not an item file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WorldForgeError(f"{path.name}: unreadable ({type(exc).__name__}).") from None
    return ItemFile.from_dict(data, source=path.name)


def iter_item_files(run_dir: Path) -> Iterator[ItemFile]:
    """The item files of a run in file-name order, skipping any that :func:`read_item_file`
    refuses: readers that compare or replay a run take what is intact, and ``runs verify`` names the
    rest."""
    folder = run_dir / "items"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            yield read_item_file(path)
        except WorldForgeError:
            continue


def read_item_files(run_dir: Path) -> dict[str, ItemFile]:
    """:func:`iter_item_files` by item id (a later file wins for an id listed twice)."""
    return {item.item_id: item for item in iter_item_files(run_dir)}


__all__ = [
    "MIN_SCHEMA_VERSION",
    "ErrorRecord",
    "ItemFile",
    "ItemFileRecord",
    "ItemsRecord",
    "ItemsSummary",
    "RunError",
    "RunManifest",
    "RunManifestRecord",
    "iter_item_files",
    "read_item_file",
    "read_item_files",
    "read_run_manifest",
    "schema_version_problem",
]
