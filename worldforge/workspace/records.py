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

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worldforge.core.errors import WorldForgeError
from worldforge.core.run_events import RunStatus
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


def _require(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise WorldForgeError(f"{where}: field {key!r} is missing or not {getattr(kind, '__name__', kind)}.")
    return value


@dataclass
class ItemsSummary:
    """How many items the run recorded and the digest over their record digests."""

    count: int
    digest: str

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "digest": self.digest}


@dataclass
class RunError:
    """Why a run stopped: the exception's type name and its sanitized one-line message."""

    type: str
    message: str

    def to_dict(self) -> dict[str, Any]:
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
    environment: dict[str, Any]
    #: The command's options as recorded (sanitized), and their canonical digest.
    config: dict[str, Any]
    config_digest: str
    #: Named inputs (files by raw-bytes digest, values by canonical digest), sorted by name.
    inputs: list[dict[str, Any]] = field(default_factory=list)
    #: Compact references to the dataset manifests the run cites.
    dataset_manifests: list[dict[str, Any]] = field(default_factory=list)
    #: Digest of kind, config, inputs and datasets: what must match for two runs to be comparable.
    input_digest: str | None = None
    #: Every file the run wrote: path, sha256, size, media type.
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

    def to_dict(self) -> dict[str, Any]:
        """The JSON object written to ``run_manifest.json``."""
        out: dict[str, Any] = {
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
        optional: dict[str, Any] = {
            "input_digest": self.input_digest,
            "artifacts": None if self.artifacts is None else list(self.artifacts),
            "items": None if self.items is None else self.items.to_dict(),
            "event_count": self.event_count,
            "event_chain_head": self.event_chain_head,
            "updated_at": self.updated_at,
            "finished_at": self.finished_at,
            "error": None if self.error is None else self.error.to_dict(),
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "run_manifest.json") -> RunManifest:
        """Read a manifest; ``WorldForgeError`` naming the field when it is not one this code knows."""
        if not isinstance(data, Mapping):
            raise WorldForgeError(f"{source}: expected a JSON object.")
        version = data.get("schema_version")
        problem = schema_version_problem(version)
        if problem is not None or not isinstance(version, int):
            raise WorldForgeError(f"{source}: {problem}.")
        items = data.get("items")
        error = data.get("error")
        return cls(
            schema_version=version,
            digest_recipe=_require(data, "digest_recipe", str, source),
            run_id=_require(data, "run_id", str, source),
            kind=_require(data, "kind", str, source),
            status=_status(data.get("status"), source),
            argv=[str(a) for a in _require(data, "argv", list, source)],
            command=_require(data, "command", str, source),
            created_at=_require(data, "created_at", str, source),
            worldforge_version=_require(data, "worldforge_version", str, source),
            environment=dict(_require(data, "environment", dict, source)),
            config=dict(_require(data, "config", dict, source)),
            config_digest=_require(data, "config_digest", str, source),
            inputs=list(data.get("inputs") or []),
            dataset_manifests=list(data.get("dataset_manifests") or []),
            input_digest=data.get("input_digest"),
            artifacts=None if data.get("artifacts") is None else list(data["artifacts"]),
            items=None
            if not isinstance(items, Mapping)
            else ItemsSummary(count=int(items["count"]), digest=str(items["digest"])),
            event_count=data.get("event_count"),
            event_chain_head=data.get("event_chain_head"),
            result_digest=data.get("result_digest"),
            claim_boundary=data.get("claim_boundary"),
            resume_count=int(data.get("resume_count") or 0),
            updated_at=data.get("updated_at"),
            finished_at=data.get("finished_at"),
            error=None
            if not isinstance(error, Mapping)
            else RunError(type=str(error.get("type")), message=str(error.get("message"))),
        )


def read_run_manifest(run_dir: Path) -> RunManifest:
    """The typed manifest of ``run_dir``; ``WorldForgeError`` naming the run and the field when the
    file is missing, not JSON, of a schema this code does not read, or lacks a field."""
    return RunManifest.from_dict(load_manifest(run_dir), source=f"{run_dir.name}/{MANIFEST_NAME}")


@dataclass(frozen=True)
class ItemFile:
    """``items/<slug>.<digest>.json``: one finished unit of work.

    ``record`` is the suite's own JSON record; ``record_digest`` is its canonical digest (what the
    run's items digest and ``runs diff`` compare), and ``input_digest`` is what must match for
    ``runs resume`` to reuse the item instead of recomputing it.
    """

    item_id: str
    input_digest: str
    record: Any
    record_digest: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "input_digest": self.input_digest,
            "record": self.record,
            "record_digest": self.record_digest,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "item file") -> ItemFile:
        if not isinstance(data, Mapping):
            raise WorldForgeError(f"{source}: expected a JSON object.")
        if "record" not in data:
            raise WorldForgeError(f"{source}: field 'record' is missing.")
        return cls(
            item_id=_require(data, "item_id", str, source),
            input_digest=_require(data, "input_digest", str, source),
            record=data["record"],
            record_digest=_require(data, "record_digest", str, source),
        )


__all__ = [
    "MIN_SCHEMA_VERSION",
    "ItemFile",
    "ItemsSummary",
    "RunError",
    "RunManifest",
    "read_run_manifest",
    "schema_version_problem",
]
