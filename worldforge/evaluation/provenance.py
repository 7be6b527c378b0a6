"""Provenance envelope (``schema_version: 2``) attached to evaluation reports.

The envelope lets a reviewer map a cited number back to the package version, suite contract,
inputs and results without console logs. ``input_digest``/``result_digest`` are computed with the
project's one digest recipe (canonical JSON, RFC 8785) over payloads that exclude timestamps and
durations, so two identical runs have identical digests; ``created_at`` and ``event_count`` stay
outside the digests. ``command`` is recorded like the run manifest's argv: paths relative to the
directory the command ran in, other host locations as placeholders, secrets redacted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from worldforge.core.canonical import JSONObject, ensure_json_native
from worldforge.core.digests import is_digest
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact import sanitize_argv
from worldforge.reports.payload import ReportProvenance

PROVENANCE_SCHEMA_VERSION = 2
PROVENANCE_KINDS = ("evaluation", "benchmark")


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise WorldForgeError(f"provenance.{name}: must be a non-empty string.")
    return value


def _strings(value: object, name: str, *, allow_empty: bool = False) -> list[str]:
    """A list of strings; ``allow_empty`` for argv, where ``""`` is a legitimate argument."""
    if not isinstance(value, (list, tuple)):
        raise WorldForgeError(f"provenance.{name}: must be a list of strings.")
    for index, item in enumerate(value):
        if not isinstance(item, str) or (not item and not allow_empty):
            raise WorldForgeError(f"provenance.{name}[{index}]: must be a non-empty string.")
    return list(value)


def _portable_command(argv: list[str]) -> list[str]:
    """The command as the run manifest records it (see ``sanitize_argv``).

    Reports are shared: the raw argv would carry ``--workspace /tmp/...`` or a home-directory
    classifier path into every report format. Sanitizing here, where every envelope is built, covers
    the CLI, library callers and reports loaded back with :meth:`ProvenanceEnvelope.from_dict`.
    """
    return sanitize_argv(argv)


@dataclass(frozen=True, slots=True)
class ProvenanceEnvelope:
    """Audit block of a report. Fields mirror the documented envelope table."""

    kind: str
    suite_id: str
    suite_version: str
    worldforge_version: str
    created_at: str
    input_digest: str
    result_digest: str
    claim_boundary: str
    metric_semantics: str
    command: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)
    runtime_manifests: JSONObject = field(default_factory=dict)
    dataset_manifests: list[JSONObject] = field(default_factory=list)
    event_count: int = 0
    notes: str | None = None
    schema_version: int = PROVENANCE_SCHEMA_VERSION

    def __post_init__(self) -> None:
        if self.schema_version != PROVENANCE_SCHEMA_VERSION:
            raise WorldForgeError(
                f"provenance.schema_version: expected {PROVENANCE_SCHEMA_VERSION}, "
                f"got {self.schema_version!r}."
            )
        if self.kind not in PROVENANCE_KINDS:
            raise WorldForgeError(f"provenance.kind: must be one of {', '.join(PROVENANCE_KINDS)}.")
        for name in (
            "suite_id",
            "suite_version",
            "worldforge_version",
            "created_at",
            "claim_boundary",
            "metric_semantics",
        ):
            _text(getattr(self, name), name)
        for name in ("input_digest", "result_digest"):
            if not is_digest(getattr(self, name)):
                raise WorldForgeError(f"provenance.{name}: expected 'sha256:<64 hex>'.")
        object.__setattr__(
            self, "command", _portable_command(_strings(self.command, "command", allow_empty=True))
        )
        object.__setattr__(self, "providers", _strings(self.providers, "providers"))
        object.__setattr__(self, "capabilities", _strings(self.capabilities, "capabilities"))
        if not isinstance(self.runtime_manifests, dict):
            raise WorldForgeError("provenance.runtime_manifests: must be an object.")
        ensure_json_native(self.runtime_manifests, "provenance.runtime_manifests")
        if not isinstance(self.dataset_manifests, list) or not all(
            isinstance(ref, dict) for ref in self.dataset_manifests
        ):
            raise WorldForgeError("provenance.dataset_manifests: must be a list of objects.")
        ensure_json_native(self.dataset_manifests, "provenance.dataset_manifests")
        if (
            isinstance(self.event_count, bool)
            or not isinstance(self.event_count, int)
            or self.event_count < 0
        ):
            raise WorldForgeError("provenance.event_count: must be an integer >= 0.")
        if self.notes is not None:
            _text(self.notes, "notes")

    def to_dict(self) -> ReportProvenance:
        return {
            "schema_version": self.schema_version,
            "kind": self.kind,
            "suite_id": self.suite_id,
            "suite_version": self.suite_version,
            "worldforge_version": self.worldforge_version,
            "created_at": self.created_at,
            "command": list(self.command),
            "providers": list(self.providers),
            "capabilities": list(self.capabilities),
            "runtime_manifests": dict(self.runtime_manifests),
            "dataset_manifests": [dict(ref) for ref in self.dataset_manifests],
            "input_digest": self.input_digest,
            "result_digest": self.result_digest,
            "event_count": self.event_count,
            "claim_boundary": self.claim_boundary,
            "metric_semantics": self.metric_semantics,
            "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, payload: object) -> ProvenanceEnvelope:
        if not isinstance(payload, Mapping):
            raise WorldForgeError("provenance: expected an object.")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(payload) - names)
        if unknown:
            raise WorldForgeError(f"provenance.{unknown[0]}: unknown field.")
        try:
            return cls(**dict(payload))
        except TypeError as exc:
            raise WorldForgeError(f"provenance: {exc}.") from None

    def with_overrides(self, **fields: Any) -> ProvenanceEnvelope:
        """A revalidated copy with some fields replaced (the CLI sets ``command`` this way)."""
        return dataclasses.replace(self, **fields)


__all__ = ["PROVENANCE_KINDS", "PROVENANCE_SCHEMA_VERSION", "ProvenanceEnvelope"]
