"""The request a run answers, recorded so that ``runs resume`` can ask the same service again.

A command that records a run hands :func:`~worldforge.workspace.run.start_run` its service's typed
request as JSON (``EvaluationRequest``, the ``pcg stage`` request, the benchmark request); the run
keeps it in two copies, both outside every digested payload, so recording it changes no digest:

* ``.local/request.json``, exact: the values the service got, host paths and all, because resuming
  must rebuild the very same request (and so the same configuration digest). Local-only like
  ``.local/invocation.json``: never bundled, never scanned as something that leaves the machine.
* ``request.json`` beside the manifest, sanitized like the run's configuration (paths relative to
  the start directory or placeholders, secrets redacted): what the run was asked, for people,
  ``runs show`` and bundles.

The workspace knows neither the requests' shapes nor the services: which service answers a run is
the reader's business (``worldforge runs resume`` maps the run's kind to it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from worldforge.core.canonical import JSONObject, ensure_json_native, pretty_json, to_json_native
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_text
from worldforge.core.redact import sanitize_value
from worldforge.workspace.layout import REQUEST_LOCAL_PATH, REQUEST_NAME

REQUEST_SCHEMA_VERSION = 1


class RequestFileRecord(TypedDict):
    """``request.json`` (both copies): what :meth:`RecordedRequest.to_dict` writes."""

    schema_version: int
    kind: str
    request: JSONObject


@dataclass(frozen=True)
class RecordedRequest:
    """A run's request: the run kind that names its service, and the service's request as JSON."""

    kind: str
    request: JSONObject = field(default_factory=dict)
    schema_version: int = REQUEST_SCHEMA_VERSION

    def to_dict(self) -> RequestFileRecord:
        return {"schema_version": self.schema_version, "kind": self.kind, "request": dict(self.request)}

    @classmethod
    def from_dict(cls, data: object, *, source: str = REQUEST_NAME) -> RecordedRequest:
        """The record in ``data``; a ``WorldForgeError`` naming ``source`` for any other shape, and for
        a schema version newer than this code reads (an older reader must not guess)."""
        if not isinstance(data, Mapping):
            raise WorldForgeError(f"{source}: not a request record object.")
        version, kind, request = data.get("schema_version"), data.get("kind"), data.get("request")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise WorldForgeError(f"{source}: schema_version must be a positive integer.")
        if version > REQUEST_SCHEMA_VERSION:
            raise WorldForgeError(
                f"{source}: schema version {version} is newer than this WorldForge reads "
                f"({REQUEST_SCHEMA_VERSION}); upgrade WorldForge to resume this run."
            )
        if not isinstance(kind, str) or not kind:
            raise WorldForgeError(f"{source}: kind must be a non-empty string.")
        if not isinstance(request, dict):
            raise WorldForgeError(f"{source}: request must be an object.")
        return cls(kind=kind, request=dict(request), schema_version=version)


def write_request(run_dir: Path, recorded: RecordedRequest) -> None:
    """Write both copies atomically: the exact one under ``.local/``, the sanitized one beside the
    manifest. ``WorldForgeError`` when the request is not JSON."""
    payload = to_json_native(recorded.to_dict())
    ensure_json_native(payload, "run request")
    atomic_write_text(run_dir / REQUEST_LOCAL_PATH, pretty_json(payload))
    atomic_write_text(run_dir / REQUEST_NAME, pretty_json(sanitize_value(payload)))


def read_request(run_dir: Path) -> RecordedRequest | None:
    """The exact request of the run in ``run_dir``; ``None`` when it recorded none (a run made
    before requests were kept, or by a command that does not resume)."""
    path = run_dir / REQUEST_LOCAL_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WorldForgeError(f"{run_dir.name}/{REQUEST_LOCAL_PATH}: unreadable ({exc.strerror}).") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise WorldForgeError(f"{run_dir.name}/{REQUEST_LOCAL_PATH}: unreadable JSON ({exc}).") from None
    return RecordedRequest.from_dict(data, source=f"{run_dir.name}/{REQUEST_LOCAL_PATH}")


__all__ = ["REQUEST_SCHEMA_VERSION", "RecordedRequest", "RequestFileRecord", "read_request", "write_request"]
