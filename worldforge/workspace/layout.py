"""Run-directory layout: file names, path rules, item file names, digests over inputs/items, the lock.

Kept apart from :mod:`worldforge.workspace.run` so readers (``verify``, ``diff``, ``prune``, bundles)
share the exact same definitions as the writer without importing it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_payload, is_digest
from worldforge.core.errors import WorldForgeError
from worldforge.workspace.entries import InputEntry

SCHEMA_VERSION = 1
DIGEST_RECIPE = "wf-jcs-sha256/1"
MANIFEST_NAME = "run_manifest.json"
EVENTS_NAME = "events.jsonl"
LOCK_NAME = ".lock"
LOCAL_DIR = ".local"
RESULT_PATH = "results/result.json"
INVOCATION_PATH = f"{LOCAL_DIR}/invocation.json"  # exact argv and cwd; local-only, never bundled
# The service request a run answers (``runs resume`` asks it again): exact and local-only under
# ``.local/``, sanitized beside the manifest for people and bundles; outside every digest.
REQUEST_NAME = "request.json"
REQUEST_LOCAL_PATH = f"{LOCAL_DIR}/{REQUEST_NAME}"
# Signed in-toto attestations of a finished run (``eval --attest``) or of a bundle (at its root):
# beside the artifacts, never one of them, since they are written after the run's digests are final.
ATTESTATION_NAME = "attestations.intoto.jsonl"
RESERVED_EVENTS = ("run.started", "run.resumed", "run.finished", "run.failed")
#: Files a run holds beside its artifacts, never in its artifact index: the manifest, the event log,
#: the lock, the attestation (checked by ``runs verify`` against its own subjects) and the request
#: the run answers (outside every digest by design).
UNINDEXED_NAMES = (MANIFEST_NAME, EVENTS_NAME, LOCK_NAME, ATTESTATION_NAME, REQUEST_NAME)
_RESERVED_NAMES = {*UNINDEXED_NAMES, LOCAL_DIR}
_SLUG_RE = re.compile(r"[^A-Za-z0-9._-]+")


def read_invocation(run_dir: Path) -> tuple[list[str], Path] | None:
    """``(argv, start directory)`` of a run from its local invocation record, ``None`` if unusable.

    One reader for ``runs resume`` (re-invokes the command where it started) and for bundles (find
    the files the run read from where it ran, never from where the bundle is made).
    """
    import json

    try:
        record = json.loads((run_dir / INVOCATION_PATH).read_text(encoding="utf-8"))
        argv, cwd = [str(a) for a in record["argv"]], Path(str(record["cwd"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (argv, cwd) if cwd.is_absolute() else None


def safe_relpath(relpath: str) -> str:
    """Validate a run-relative artifact path (no absolute paths, ``..``, backslashes or reserved names)."""
    if not isinstance(relpath, str) or not relpath or "\\" in relpath or relpath.startswith("/"):
        raise WorldForgeError(f"artifact path {relpath!r}: must be a relative POSIX path inside the run.")
    parts = PurePosixPath(relpath).parts
    if any(part in ("", ".", "..") for part in parts) or parts[0] in _RESERVED_NAMES:
        raise WorldForgeError(f"artifact path {relpath!r}: escapes the run or names a reserved file.")
    return PurePosixPath(*parts).as_posix()


def item_filename(item_id: str) -> str:
    """File name for an item record: readable slug plus a digest suffix (ids may contain ``/`` or ``:``)."""
    slug = _SLUG_RE.sub("_", item_id).strip("._")[:80] or "item"
    return f"items/{slug}.{digest_payload(item_id)[7:19]}.json"


def dataset_ref_digest(ref: JSONObject) -> str:
    """The digest that identifies a compact dataset-manifest reference."""
    for key in ("sha256", "digest"):
        value = ref.get(key)
        if is_digest(value):
            return str(value)
    return digest_payload(ref)


def compute_input_digest(
    kind: str, config: JSONObject, inputs: Sequence[InputEntry], datasets: Sequence[JSONObject]
) -> str:
    """Digest of everything that determines a run's result (no timestamps, no argv, no host paths)."""
    return digest_payload(
        {
            "kind": kind,
            "config": config,
            "inputs": [
                {"name": e["name"], "digest": e["digest"]} for e in sorted(inputs, key=lambda e: e["name"])
            ],
            "dataset_manifests": sorted(dataset_ref_digest(ref) for ref in datasets),
        }
    )


def items_digest(items: Mapping[str, Mapping[str, object]]) -> str:
    """Digest over ``[item_id, input_digest, record_digest]`` triples sorted by item id.

    ``items`` maps item ids to their item files' JSON, or anything holding those two digests by
    the same names (the run writer passes its typed records, ``runs verify`` the files it read)."""
    return digest_payload([[k, items[k]["input_digest"], items[k]["record_digest"]] for k in sorted(items)])


def load_manifest(run_dir: Path) -> JSONObject:
    """Parse ``run_manifest.json`` as plain JSON; a missing or malformed file is a :class:`WorldForgeError`.

    Readers use :func:`worldforge.workspace.records.read_run_manifest` (the typed model built on
    this); the raw object is for ``runs verify``, which must report a manifest of another schema
    rather than refuse it."""
    path = run_dir / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorldForgeError(f"{run_dir.name}/{MANIFEST_NAME}: missing (not a run directory).") from None
    except (OSError, ValueError) as exc:
        raise WorldForgeError(f"{run_dir.name}/{MANIFEST_NAME}: unreadable JSON ({exc}).") from None
    if not isinstance(data, dict) or "run_id" not in data:
        raise WorldForgeError(f"{run_dir.name}/{MANIFEST_NAME}: not a run manifest object.")
    return data


class RunLock:
    """An exclusive ``flock`` on ``<run>/.lock``; released when the process dies, even by ``kill -9``."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_NAME
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise WorldForgeError(
                f"run {run_dir.name} is being written by another process; wait for it or pick another run."
            ) from None
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{os.getpid()}\n".encode())

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1

    @staticmethod
    def is_locked(run_dir: Path) -> bool:
        """True while some process (this one included) holds the run's lock."""
        path = run_dir / LOCK_NAME
        if not path.exists():
            return False
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False


__all__ = [
    "ATTESTATION_NAME",
    "DIGEST_RECIPE",
    "EVENTS_NAME",
    "INVOCATION_PATH",
    "LOCAL_DIR",
    "LOCK_NAME",
    "MANIFEST_NAME",
    "REQUEST_LOCAL_PATH",
    "REQUEST_NAME",
    "RESERVED_EVENTS",
    "UNINDEXED_NAMES",
    "RESULT_PATH",
    "SCHEMA_VERSION",
    "RunLock",
    "compute_input_digest",
    "dataset_ref_digest",
    "item_filename",
    "items_digest",
    "load_manifest",
    "read_invocation",
    "safe_relpath",
]
