"""Answering a run's requests from another run's recorded exchanges (``worldforge eval --replay``).

A recorded science-birds run holds, per item, every exchange its trial had with the model
(``exchanges`` in ``items/<item>.json``) and, in ``gateway/session.json``, the runtime manifest and
model identity of each provider as they were when it ran. A replay loads both: the identities
stand in for the providers' preflight (no server is contacted, it may be long gone), and each
request is answered from the exchange of the same trial (item id) with the same request digest.
A request that was not recorded is a per-trial failure naming the first field that differs from
the exchange recorded at its position; a recorded failure is answered with the same failure (a
model server's relayed refusal with its recorded status and body), so the replayed run ends with
the same records and the same result digest.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NotRequired, TypedDict

from worldforge.core.canonical import JSON, JSONObject, pretty_json
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact import sanitize_value
from worldforge.gateway.exchange import (
    Completion,
    GatewayError,
    Recorder,
    Request,
    completion_from_record,
    describe_difference,
)
from worldforge.gateway.upstream import TrialRoute
from worldforge.workspace.records import read_run_manifest
from worldforge.workspace.run import Run
from worldforge.workspace.store import resolve_run_dir

#: The run artifact that holds the providers' manifests and identities (what a replay stands on).
SESSION_PATH = "gateway/session.json"
SESSION_SCHEMA = 1
_SUITE = "science-birds"


class SessionProvider(TypedDict):
    """One provider of ``gateway/session.json``: its runtime manifest and model identity, both
    sanitized, and whether the sanitizer changed the identity."""

    manifest: JSON
    identity: JSON
    identity_redacted: NotRequired[bool]


class SessionPayload(TypedDict):
    """``gateway/session.json`` as written (:func:`session_payload`)."""

    schema_version: int
    providers: dict[str, SessionProvider]


def session_payload(manifests: Mapping[str, object], identities: Mapping[str, object]) -> SessionPayload:
    """``gateway/session.json``: each provider's runtime manifest and model identity, sanitized.

    An identity the sanitizer had to change is flagged: replaying it would describe another model.
    """
    providers: dict[str, SessionProvider] = {}
    for name in sorted(identities):
        identity = identities[name]
        shown = sanitize_value(identity)
        entry: SessionProvider = {"manifest": sanitize_value(manifests.get(name)), "identity": shown}
        if shown != identity:
            entry["identity_redacted"] = True
        providers[name] = entry
    return {"schema_version": SESSION_SCHEMA, "providers": providers}


def write_session(run: Run | None, manifests: Mapping[str, object], identities: Mapping[str, object]) -> None:
    """Record the session artifact in ``run`` (a no-op without a run workspace)."""
    if run is not None:
        payload = session_payload(manifests, identities)
        run.write_artifact(SESSION_PATH, pretty_json(payload), "application/json")


@dataclass
class ReplaySource:
    """A recorded run's exchanges by item id plus its providers' manifests and identities (open
    JSON, as read from the run's files)."""

    run_id: str
    exchanges: dict[str, list[JSONObject]]
    providers: JSONObject
    run_dir: Path | None = None
    notes: list[str] = field(default_factory=list)

    def _entry(self, name: str) -> JSONObject:
        entry = self.providers.get(name)
        if not isinstance(entry, dict):
            recorded = ", ".join(sorted(self.providers)) or "none"
            raise WorldForgeError(
                f"--replay {self.run_id}: no exchanges with {name!r} were recorded "
                f"(the run used: {recorded})."
            )
        return entry

    def manifest(self, name: str) -> JSON:
        """The runtime manifest recorded for ``name`` (stands in for the preflight)."""
        return self._entry(name).get("manifest")

    def identity(self, name: str) -> JSON:
        """The model identity recorded for ``name`` (what item input digests were computed from)."""
        entry = self._entry(name)
        if entry.get("identity_redacted"):
            raise WorldForgeError(
                f"--replay {self.run_id}: the recorded identity of {name!r} held secret-shaped text and "
                "was stored redacted, so it cannot stand in for the model."
            )
        return entry.get("identity")


def _read_json(path: Path) -> JSON:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise WorldForgeError(f"{path.name}: unreadable ({type(exc).__name__}).") from None


def load_replay(run_dir: str | Path) -> ReplaySource:
    """Load a recorded run directory; a run that cannot be replayed is a :class:`WorldForgeError`."""
    directory = Path(run_dir)
    manifest = read_run_manifest(directory)
    run_id = manifest.run_id or directory.name
    kind = manifest.kind
    if kind != "evaluation":
        raise WorldForgeError(f"--replay {run_id}: it is a {kind!r} run, not a {_SUITE} evaluation run.")
    evaluated = manifest.config.get("suite")
    if evaluated != _SUITE:
        raise WorldForgeError(
            f"--replay {run_id}: it evaluated {evaluated!r}; only {_SUITE} runs record model exchanges."
        )
    session_file = directory / SESSION_PATH
    if not session_file.is_file():
        raise WorldForgeError(
            f"--replay {run_id}: the run recorded no model exchanges (it ran without the gateway)."
        )
    session = _read_json(session_file)
    providers = session.get("providers") if isinstance(session, dict) else None
    if not isinstance(providers, dict):
        raise WorldForgeError(f"--replay {run_id}: {SESSION_PATH} lists no providers.")
    exchanges: dict[str, list[JSONObject]] = {}
    items = directory / "items"
    for path in sorted(items.glob("*.json")) if items.is_dir() else []:
        body = _read_json(path)
        if not isinstance(body, dict):
            continue
        record, item_id = body.get("record"), body.get("item_id")
        recorded = record.get("exchanges") if isinstance(record, dict) else None
        if isinstance(recorded, list) and isinstance(item_id, str):
            exchanges[item_id] = [e for e in recorded if isinstance(e, dict)]
    return ReplaySource(run_id, exchanges, dict(providers), directory)


def open_replay(workspace: str | Path | None, ref: str) -> ReplaySource:
    """``--replay REF``: resolve a run id (or unique prefix) in ``workspace`` and load it."""
    if workspace is None:
        raise WorldForgeError("--replay needs --workspace (the workspace that holds the recorded run).")
    if not isinstance(ref, str) or not ref.strip() or "/" in ref or ref.startswith("."):
        raise WorldForgeError(f"--replay {ref!r}: expected a run id from `worldforge runs list`.")
    try:
        run_dir = resolve_run_dir(workspace, ref.strip())
    except WorldForgeError as exc:
        raise WorldForgeError(f"--replay: {exc}") from None
    return load_replay(run_dir)


class ReplayUpstream:
    """Answers each request from the exchange recorded for its trial with the same request digest."""

    source = "replay"

    def __init__(self, replay: ReplaySource, recorder: Recorder) -> None:
        self.replay = replay
        self.recorder = recorder

    def complete(self, route: TrialRoute, request: Request, index: int) -> Completion:
        where = f"request {index + 1} of trial {route.item_id}"
        recorded = self.replay.exchanges.get(route.item_id)
        if recorded is None:
            raise GatewayError(
                "not_recorded",
                f"replay: run {self.replay.run_id} holds no exchanges for trial {route.item_id}.",
            )
        digest = request.digest
        for position, exchange in enumerate(recorded):
            if position in route.replayed or exchange.get("request_digest") != digest:
                continue
            route.replayed.add(position)
            error = exchange.get("error")
            if isinstance(error, Mapping):
                raise GatewayError.from_record(error)
            if exchange.get("altered"):
                raise GatewayError(
                    "not_recorded",
                    f"replay: the recorded reply to {where} was stored altered (secret-shaped text "
                    "redacted or unencodable characters escaped), so it cannot be replayed byte for byte.",
                )
            if not isinstance(exchange.get("response"), Mapping):
                raise GatewayError("not_recorded", f"replay: the recorded exchange for {where} has no reply.")
            return completion_from_record(exchange)
        at = recorded[index] if index < len(recorded) else None
        if at is not None and at.get("request_digest") == digest:
            detail = "the exchange recorded at this position was already used by an identical request"
        else:
            detail = describe_difference(at, request, self.recorder)
        raise GatewayError(
            "not_recorded", f"replay: {where} was not recorded in run {self.replay.run_id}: {detail}."
        )


__all__ = [
    "SESSION_PATH",
    "SessionPayload",
    "SessionProvider",
    "ReplaySource",
    "ReplayUpstream",
    "load_replay",
    "open_replay",
    "session_payload",
    "write_session",
]
