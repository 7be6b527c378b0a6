"""One run in a run workspace: ``DIR/runs/<run-id>/`` with a manifest, an event log and artifacts.

The :func:`start_run` context manager is the only way commands create or resume runs, so every
command gets the same guarantees:

* the run directory is created exclusively and locked (``fcntl.flock`` on ``.lock``) for as long as
  the block runs, so two processes never write one run while any number of runs share a workspace;
* ``run_manifest.json`` is rewritten atomically (temp + fsync + rename) and holds only portable
  paths (run-relative, repo-relative or ``<external>/name``);
* ``events.jsonl`` is hash-chained and fsynced per line; it starts with ``run.started`` and ends
  with ``run.finished`` or ``run.failed`` (status ``failed`` or ``interrupted``);
* per-item records are written before their ``item.completed`` event, so after ``kill -9`` the
  event log says exactly which items may be reused by ``resume``;
* input and result digests use the one recipe of :mod:`worldforge.core.digests`; timestamps live
  only in fields that are never digested.
"""

from __future__ import annotations

import contextlib
import json
import mimetypes
import os
import shlex
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from worldforge.core.canonical import (
    JSON,
    JSONObject,
    ensure_json_native,
    json_object,
    pretty_json,
    to_json_native,
)
from worldforge.core.digests import digest_bytes, digest_file, digest_payload, require_digest
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_bytes, atomic_write_json
from worldforge.core.paths import portable_path
from worldforge.core.redact import sanitize_argv, sanitize_text, sanitize_value
from worldforge.core.run_events import (
    ArtifactWritten,
    FrameworkEvent,
    ItemCompleted,
    RunFailed,
    RunFinished,
    RunResumed,
    RunStarted,
    RunStatus,
    parse_event,
)
from worldforge.core.timeutil import utc_now_iso
from worldforge.workspace.entries import InputEntry
from worldforge.workspace.environment import environment_summary
from worldforge.workspace.eventlog import EventLog, read_chain
from worldforge.workspace.ids import create_run_dir, require_run_id, run_id_time
from worldforge.workspace.layout import (
    EVENTS_NAME,
    INVOCATION_PATH,
    MANIFEST_NAME,
    RESERVED_EVENTS,
    RESULT_PATH,
    RunLock,
    compute_input_digest,
    dataset_ref_digest,
    item_filename,
    items_digest,
    safe_relpath,
)
from worldforge.workspace.records import (
    ItemFile,
    ItemsSummary,
    RunError,
    RunManifest,
    RunManifestRecord,
    read_run_manifest,
)
from worldforge.workspace.requests import RecordedRequest, read_request, write_request


class RunInterrupted(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM during a run."""


def _sanitize_argv(argv: list[str]) -> list[str]:
    return sanitize_argv(argv)


class SerializedEvent(Protocol):
    """What a provider event sink receives: an event that serializes to its JSON payload."""

    def to_dict(self) -> Mapping[str, object]: ...


class Run:
    """A run being written. Obtain one from :func:`start_run`; see the module docstring."""

    def __init__(self, workspace_dir: Path, run_dir: Path, manifest: RunManifest, lock: RunLock) -> None:
        self.workspace_dir = workspace_dir
        self.dir = run_dir
        self.run_id: str = manifest.run_id
        self.kind: str = manifest.kind
        self._manifest = manifest
        self._lock = lock
        self._mutex = threading.RLock()
        self._inputs: dict[str, InputEntry] = {e["name"]: e for e in manifest.inputs}
        self._datasets: dict[str, JSONObject] = {dataset_ref_digest(r): r for r in manifest.dataset_manifests}
        self._artifacts: dict[str, dict[str, Any]] = {a["path"]: a for a in manifest.artifacts or []}
        self._items: dict[str, ItemFile] = {}
        self._recorded_inputs: dict[str, str] | None = None
        self._recorded_datasets: set[str] | None = None
        self.finished = False
        self.log = EventLog(run_dir / EVENTS_NAME)

    # ------------------------------------------------------------------ manifest
    @property
    def manifest(self) -> RunManifestRecord:
        """The manifest as written to ``run_manifest.json`` (a copy)."""
        return self._manifest.to_dict()

    @property
    def record(self) -> RunManifest:
        """The manifest as its typed model (a copy)."""
        return RunManifest.from_dict(self._manifest.to_dict())

    @property
    def status(self) -> RunStatus:
        return self._manifest.status

    @property
    def input_digest(self) -> str:
        return compute_input_digest(
            self.kind, self._manifest.config, list(self._inputs.values()), list(self._datasets.values())
        )

    def _write_manifest(self) -> None:
        with self._mutex:
            m = self._manifest
            m.inputs = [self._inputs[k] for k in sorted(self._inputs)]
            m.dataset_manifests = [self._datasets[k] for k in sorted(self._datasets)]
            m.input_digest = self.input_digest
            m.artifacts = [self._artifacts[k] for k in sorted(self._artifacts)]
            m.items = ItemsSummary(count=len(self._items), digest=self._items_digest())
            m.event_count = self.log.count
            m.event_chain_head = self.log.head
            m.updated_at = utc_now_iso()
            atomic_write_json(self.dir / MANIFEST_NAME, m.to_dict())

    def _items_digest(self) -> str:
        return items_digest({item_id: item.to_dict() for item_id, item in self._items.items()})

    # ------------------------------------------------------------------ inputs
    def _set_input(self, entry: InputEntry) -> None:
        name = entry["name"]
        with self._mutex:
            if self._recorded_inputs is not None:
                recorded = self._recorded_inputs.get(name)
                if recorded is None:
                    raise WorldForgeError(
                        f"resume {self.run_id}: input {name!r} was not part of the original run; "
                        "inputs drifted, start a new run instead."
                    )
                if recorded != entry["digest"]:
                    raise WorldForgeError(
                        f"resume {self.run_id}: input {name!r} changed since the run started "
                        f"(recorded {recorded}, now {entry['digest']}); start a new run instead."
                    )
            self._inputs[name] = entry
            self._write_manifest()

    def add_input_digest(self, name: str, path: str | Path, digest: str, size: int) -> str:
        """Record a file input already read and digested elsewhere (an untrusted folder read by
        the safe walker): the path is not opened again, so a link swapped in since is never followed."""
        self._set_input(
            {
                "name": name,
                "kind": "file",
                "digest": digest,
                "size": int(size),
                "path": portable_path(Path(path)),
            }
        )
        return digest

    def add_input_file(self, name: str, path: str | Path) -> str:
        """Record a file input by the digest of its raw bytes; returns the digest."""
        file_path = Path(path)
        if not file_path.is_file():
            raise WorldForgeError(f"{path}: input file {name!r} not found.")
        digest = digest_file(file_path)
        entry: InputEntry = {
            "name": name,
            "kind": "file",
            "digest": digest,
            "size": file_path.stat().st_size,
            "path": portable_path(file_path),
        }
        self._set_input(entry)
        return digest

    def add_input_value(self, name: str, value: object) -> str:
        """Record a structured input by the digest of its canonical JSON; small values are kept for diffs.

        ``value`` may be any JSON-native value (anything else is a ``WorldForgeError`` naming it)."""
        ensure_json_native(value, f"input {name}")
        digest = digest_payload(value)
        entry: InputEntry = {"name": name, "kind": "value", "digest": digest}
        if len(pretty_json(value)) <= 4096:
            entry["value"] = sanitize_value(value)
        self._set_input(entry)
        return digest

    def add_dataset_refs(self, refs: Sequence[JSONObject]) -> None:
        """Record compact dataset-manifest references (see :func:`worldforge.datasets.manifest_reference`)."""
        with self._mutex:
            for ref in refs:
                if not isinstance(ref, dict) or not ref.get("id"):
                    raise WorldForgeError("dataset reference: expected an object with an 'id'.")
                ensure_json_native(ref, f"dataset reference {ref.get('id')}")
                digest = dataset_ref_digest(ref)
                if self._recorded_datasets is not None and digest not in self._recorded_datasets:
                    raise WorldForgeError(
                        f"resume {self.run_id}: dataset manifest {ref['id']!r} changed since the run started "
                        f"(now {digest}); start a new run instead."
                    )
                self._datasets[digest] = sanitize_value(ref)
            self._write_manifest()

    # ------------------------------------------------------------------ events
    def emit(
        self, event_type: str, payload: Mapping[str, object] | None = None, *, wait_sync: bool = False
    ) -> None:
        """Append an event of any non-reserved type to ``events.jsonl``; ``payload`` must convert to
        a JSON object (tuples and mappings become lists and objects)."""
        if not isinstance(event_type, str) or not event_type.strip():
            raise WorldForgeError("event type: must be a non-empty string.")
        if event_type in RESERVED_EVENTS:
            raise WorldForgeError(f"event type {event_type!r} is written by the run itself.")
        body = json_object(to_json_native(payload or {}), f"event {event_type}")
        self.log.append(event_type, body, wait_sync=wait_sync)

    def emit_event(self, event: FrameworkEvent, *, wait_sync: bool = False) -> None:
        """Append one of the framework's typed events (see :mod:`worldforge.core.run_events`)."""
        self.emit(event.TYPE, event.to_dict(), wait_sync=wait_sync)

    def _log(self, event: FrameworkEvent, *, wait_sync: bool = True) -> None:
        """Append an event the run writes itself (lifecycle, items, artifacts: reserved or not)."""
        self.log.append(event.TYPE, event.to_dict(), wait_sync=wait_sync)

    def event_sink(self, event: SerializedEvent | Mapping[str, object]) -> None:
        """A provider event sink: ``WorldForge(event_sinks=[run.event_sink])`` (an event, or its
        payload as a mapping).

        The line is written and flushed before the call returns (it survives ``kill -9``); its fsync
        is group-committed with the next lifecycle event, so provider latency excludes disk flushes.
        """
        payload = dict(event) if isinstance(event, Mapping) else event.to_dict()
        self.emit("provider.event", payload, wait_sync=False)

    # ------------------------------------------------------------------ items
    def completed_items(self) -> dict[str, JSON]:
        """``{item_id: record}`` of items already finished (non-empty only when resuming)."""
        with self._mutex:
            return {k: v.record for k, v in self._items.items()}

    def completed_item_digests(self) -> dict[str, str]:
        """``{item_id: input_digest}`` of finished items, to reuse only items whose inputs still match."""
        with self._mutex:
            return {k: v.input_digest for k, v in self._items.items()}

    def record_item(self, item_id: str, input_digest: str, record: object) -> str:
        """Write ``items/<item>.json`` then log ``item.completed``; returns the record digest."""
        if not isinstance(item_id, str) or not item_id:
            raise WorldForgeError("item id: must be a non-empty string.")
        require_digest(input_digest, f"item {item_id} input_digest")
        native: JSON = to_json_native(record)
        ensure_json_native(native, f"item {item_id}")
        record_digest = digest_payload(native)
        relpath = item_filename(item_id)
        item = ItemFile(item_id, input_digest, native, record_digest)
        body = pretty_json(item.to_dict()).encode("utf-8")
        with self._mutex:
            atomic_write_bytes(self.dir / relpath, body)
            sha256 = digest_bytes(body)
            self._artifacts[relpath] = {
                "path": relpath,
                "sha256": sha256,
                "size": len(body),
                "media_type": "application/json",
            }
            self._items[item_id] = item
            completed = ItemCompleted(
                item_id=item_id,
                input_digest=input_digest,
                record_digest=record_digest,
                path=relpath,
                sha256=sha256,
                size=len(body),
            )
            self._log(completed, wait_sync=False)
        return record_digest

    # ------------------------------------------------------------------ artifacts
    def write_artifact(self, relpath: str, data: str | bytes, media_type: str | None = None) -> Path:
        """Atomically write ``data`` under the run, index it and log ``artifact.written``."""
        rel = safe_relpath(relpath)
        blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        kind = media_type or mimetypes.guess_type(rel)[0] or "application/octet-stream"
        with self._mutex:
            target = atomic_write_bytes(self.dir / rel, blob)
            event = ArtifactWritten(path=rel, sha256=digest_bytes(blob), size=len(blob), media_type=kind)
            self._artifacts[rel] = event.to_dict()
            self._log(event, wait_sync=False)
        return target

    # ------------------------------------------------------------------ terminal states
    def complete(self, result_payload: object, claim_boundary: str | None = None) -> str:
        """Finish the run: write ``results/result.json``, set ``result_digest`` and status ``completed``."""
        payload = to_json_native(result_payload)
        ensure_json_native(payload, "result_payload")
        result_digest = digest_payload(payload)
        self.write_artifact(RESULT_PATH, pretty_json(payload), "application/json")
        with self._mutex:
            m = self._manifest
            m.status = RunStatus.COMPLETED
            m.result_digest = result_digest
            if claim_boundary is not None:
                m.claim_boundary = claim_boundary
            m.finished_at = utc_now_iso()
            m.error = None
            self._log(
                RunFinished(
                    status=RunStatus.COMPLETED,
                    input_digest=self.input_digest,
                    result_digest=result_digest,
                    item_count=len(self._items),
                    items_digest=self._items_digest(),
                )
            )
            self.finished = True
            self._write_manifest()
        return result_digest

    def _terminate(self, status: RunStatus, exc: BaseException) -> None:
        message = sanitize_text(" ".join(str(exc).split()))[:500] or type(exc).__name__
        with self._mutex:
            error = RunError(type=type(exc).__name__, message=message)
            self._manifest.status = status
            self._manifest.error = error
            self._manifest.finished_at = utc_now_iso()
            self._log(RunFailed(status=status, type=error.type, message=error.message))
            self.finished = True
            self._write_manifest()

    def _close(self) -> None:
        self.log.close()
        self._lock.release()


# ---------------------------------------------------------------------- creation / resume


def _new_run(
    workspace: Path, kind: str, argv: list[str], config: JSONObject, request: RecordedRequest | None
) -> Run:
    run_id, run_dir = create_run_dir(workspace / "runs")
    lock = RunLock(run_dir)
    env = environment_summary()
    clean_argv = _sanitize_argv(list(argv))
    created = run_id_time(run_id)
    manifest = RunManifest(
        run_id=run_id,
        kind=kind,
        status=RunStatus.RUNNING,
        argv=clean_argv,
        command=shlex.join(clean_argv),
        created_at=created.strftime("%Y-%m-%dT%H:%M:%SZ") if created else utc_now_iso(),
        worldforge_version=env["worldforge_version"],
        environment=env,
        config=config,
        config_digest=digest_payload(config),
    )
    # The exact argv and cwd are kept local-only (never bundled) so ``runs resume`` can re-invoke them.
    atomic_write_json(run_dir / INVOCATION_PATH, {"argv": [str(a) for a in argv], "cwd": os.getcwd()})
    if request is not None:  # what ``runs resume`` asks the service again
        write_request(run_dir, request)
    run = Run(workspace, run_dir, manifest, lock)
    run._log(
        RunStarted(
            run_id=run_id,
            kind=kind,
            argv=clean_argv,
            config_digest=manifest.config_digest,
            worldforge_version=env["worldforge_version"],
        )
    )
    run._write_manifest()
    return run


def _resume_run(
    workspace: Path,
    kind: str,
    argv: list[str],
    config: JSONObject,
    run_id: str,
    request: RecordedRequest | None,
) -> Run:
    require_run_id(run_id)
    run_dir = workspace / "runs" / run_id
    if not (run_dir / MANIFEST_NAME).is_file():
        raise WorldForgeError(f"resume {run_id}: no such run under {portable_path(workspace)}/runs.")
    lock = RunLock(run_dir)
    try:
        manifest = read_run_manifest(run_dir)
        previous = manifest.status
        if previous == RunStatus.COMPLETED:
            raise WorldForgeError(f"resume {run_id}: the run already completed; nothing to resume.")
        if manifest.kind != kind:
            raise WorldForgeError(f"resume {run_id}: recorded kind {manifest.kind!r} is not {kind!r}.")
        if manifest.config_digest != digest_payload(config):
            raise WorldForgeError(
                f"resume {run_id}: the configuration changed since the run started "
                f"(recorded {manifest.config_digest}, now {digest_payload(config)}); "
                "start a new run instead."
            )
        run = Run(workspace, run_dir, manifest, lock)
    except BaseException:
        lock.release()
        raise
    for stale in run_dir.rglob(".*.tmp"):  # temp files of atomic writes cut short by a crash
        stale.unlink(missing_ok=True)
    if request is not None and read_request(run_dir) is None:  # resumable by request from now on
        write_request(run_dir, request)
    run._recorded_inputs = {e["name"]: e["digest"] for e in manifest.inputs}
    run._recorded_datasets = {dataset_ref_digest(r) for r in manifest.dataset_manifests}
    _rebuild_from_events(run)
    previous_status = RunStatus.INTERRUPTED if previous == RunStatus.RUNNING else previous
    manifest.status = RunStatus.RUNNING
    manifest.resume_count += 1
    manifest.finished_at = None
    manifest.error = None
    run._log(
        RunResumed(
            attempt=manifest.resume_count,
            previous_status=previous_status,
            reused_items=len(run._items),
            repaired_bytes=run.log.repaired_bytes,
            argv=_sanitize_argv(list(argv)),
        )
    )
    run._write_manifest()
    return run


def _rebuild_from_events(run: Run) -> None:
    """Reload the artifact index and finished items from the event log (the durable record)."""
    chain = read_chain(run.dir / EVENTS_NAME)
    for line in chain.events:
        try:
            event = parse_event(str(line.get("type")), line.get("payload") or {})
            if isinstance(event, ArtifactWritten):
                run._artifacts[event.path] = event.to_dict()
            elif isinstance(event, ItemCompleted):
                path = run.dir / safe_relpath(event.path)
                if not path.is_file() or digest_file(path) != event.sha256:
                    continue  # the record did not survive intact: recompute the item
                item = ItemFile.from_dict(json.loads(path.read_text(encoding="utf-8")))
                if digest_payload(item.record) != item.record_digest:
                    continue
                run._items[event.item_id] = item
                run._artifacts[event.path] = {
                    "path": event.path,
                    "sha256": event.sha256,
                    "size": event.size,
                    "media_type": "application/json",
                }
        except (KeyError, TypeError, ValueError, WorldForgeError):
            continue  # a malformed line describes nothing reusable; the item is recomputed


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise RunInterrupted(f"terminated by signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def start_run(
    workspace_dir: str | Path,
    kind: str,
    argv: list[str],
    config: Mapping[str, object],
    resume_run_id: str | None = None,
    request: Mapping[str, object] | None = None,
) -> Iterator[Run]:
    """Create (or resume) a run under ``workspace_dir/runs/`` and finalise it when the block exits.

    An exception marks the run ``failed``; ``KeyboardInterrupt`` or SIGTERM mark it ``interrupted``;
    leaving the block without :meth:`Run.complete` marks it ``failed`` too. The exception is re-raised.
    ``request`` is the service's request as JSON, recorded (outside every digest, see
    :mod:`worldforge.workspace.requests`) so that ``runs resume`` can ask the service again; a run
    started without one cannot be resumed by ``runs resume``.
    """
    if not isinstance(kind, str) or not kind.strip():
        raise WorldForgeError("run kind: must be a non-empty string.")
    native_config = json_object(to_json_native(dict(config or {})), "run config")
    clean_config: JSONObject = sanitize_value(native_config)  # the same object, secrets redacted
    workspace = Path(workspace_dir)
    recorded: RecordedRequest | None = None
    if request is not None:  # checked before a run exists: a bad request leaves nothing behind
        exact = json_object(to_json_native(dict(request)), "run request")
        recorded = RecordedRequest(kind=kind, request=exact)
    if resume_run_id:
        run = _resume_run(workspace, kind, list(argv), clean_config, resume_run_id, recorded)
    else:
        run = _new_run(workspace, kind, list(argv), clean_config, recorded)
    try:
        with _sigterm_as_interrupt():
            try:
                yield run
            except KeyboardInterrupt as exc:
                if not run.finished:
                    run._terminate(RunStatus.INTERRUPTED, exc)
                raise
            except BaseException as exc:
                if not run.finished:
                    run._terminate(RunStatus.FAILED, exc)
                raise
            if not run.finished:
                ended = WorldForgeError("the command ended without completing the run")
                run._terminate(RunStatus.FAILED, ended)
    finally:
        run._close()


@contextlib.contextmanager
def optional_run(
    workspace_dir: str | Path | None,
    kind: str,
    argv: list[str],
    config: Mapping[str, object],
    resume_run_id: str | None = None,
    request: Mapping[str, object] | None = None,
) -> Iterator[Run | None]:
    """:func:`start_run` when a workspace is given, else ``None`` (commands without ``--workspace``).

    Resuming needs a workspace: ``--resume-run`` without one is a usage error, not a silent new run.
    """
    if workspace_dir is None:
        if resume_run_id:
            raise WorldForgeError("--resume-run needs --workspace.")
        yield None
        return
    with start_run(
        workspace_dir, kind=kind, argv=argv, config=config, resume_run_id=resume_run_id, request=request
    ) as run:
        yield run


__all__ = [
    "Run",
    "RunInterrupted",
    "SerializedEvent",
    "optional_run",
    "start_run",
]
