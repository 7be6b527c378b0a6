"""Offline verification of a run directory: artifact digests, input/result digests, the event chain.

Everything is recomputed from the bytes on disk with the project's one digest recipe; nothing is
trusted from the manifest except as the value to compare against. Each problem names the file and
what is wrong, so "verify failed" always comes with the first thing to look at.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.core.run_events import RunStatus
from worldforge.workspace.eventlog import read_chain
from worldforge.workspace.layout import (
    EVENTS_NAME,
    LOCAL_DIR,
    MANIFEST_NAME,
    RESULT_PATH,
    UNINDEXED_NAMES,
    RunLock,
    compute_input_digest,
    items_digest,
    load_manifest,
)
from worldforge.workspace.records import RunManifest, schema_version_problem


@dataclass
class Problem:
    code: str
    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "path": self.path, "message": self.message}


class BundledRun(TypedDict):
    """One run's line in a bundle's verification: its verdict and the files the bundle redacted."""

    run_id: str
    status: str | None
    ok: bool
    redacted_files: list[str]


class VerifyReportRecord(TypedDict):
    """``runs verify --format json``: what was checked and every problem found."""

    target: str
    kind: str
    run_id: str | None
    status: str | None
    ok: bool
    checked: dict[str, int]
    problems: list[dict[str, str]]
    runs: list[BundledRun]


@dataclass
class VerifyReport:
    target: str
    kind: str
    run_id: str | None = None
    status: str | None = None
    problems: list[Problem] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    runs: list[BundledRun] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, code: str, path: str, message: str) -> None:
        self.problems.append(Problem(code, path, message))

    def to_dict(self) -> VerifyReportRecord:
        return {
            "target": self.target,
            "kind": self.kind,
            "run_id": self.run_id,
            "status": self.status,
            "ok": self.ok,
            "checked": dict(sorted(self.checked.items())),
            "problems": [p.to_dict() for p in self.problems],
            "runs": self.runs,
        }


def _read(path: Path) -> bytes | None:
    """The file's bytes, ``None`` when it is missing or not a regular file (one open, no stat first)."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _check_file(report: VerifyReport, base: Path, entry: JSONObject, prefix: str = "") -> bytes | None:
    """Check one indexed file against its entry; its bytes (for the readers after it) or ``None``."""
    rel = str(entry.get("path"))
    data = _read(base / rel)
    if data is None:
        report.add("artifact-missing", prefix + rel, "artifact listed in the manifest is missing")
        return None
    if entry.get("size") is not None and len(data) != entry.get("size"):
        report.add(
            "artifact-size-mismatch", prefix + rel, f"size {len(data)} != recorded {entry.get('size')}"
        )
    if digest_bytes(data) != entry.get("sha256"):
        report.add("artifact-digest-mismatch", prefix + rel, "sha256 of the file does not match the manifest")
    return data


def _files(run_dir: Path) -> list[str]:
    """Every entry under ``run_dir`` that is not a real directory -- files, and links of any kind,
    a link to a directory included and not followed (so it is reported, not walked into) -- as
    sorted POSIX paths relative to it.

    ``os.walk`` rather than ``Path.rglob``: a 5,000-item run would otherwise build and stat 5,000
    ``Path`` objects only to turn them back into strings.
    """
    found: list[str] = []
    for root, dirs, names in os.walk(run_dir):
        rel_root = os.path.relpath(root, run_dir).replace(os.sep, "/")
        base = "" if rel_root == "." else rel_root + "/"
        found.extend(base + name for name in names)
        found.extend(base + name for name in dirs if os.path.islink(os.path.join(root, name)))
    return sorted(found)


def verify_run(run_dir: Path, *, prefix: str = "", skip_paths: frozenset[str] = frozenset()) -> VerifyReport:
    """Verify one run directory; ``skip_paths`` lists files whose bytes were replaced by a bundle's
    redaction (their source digest is then checked by the bundle verifier instead).

    A structurally broken (e.g. hand-edited) manifest or log is reported as a problem, never raised.
    """
    report = VerifyReport(target=prefix or run_dir.name, kind="run", run_id=run_dir.name)
    try:
        _verify_run(report, run_dir, prefix, skip_paths)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        report.add(
            "manifest-malformed",
            prefix + MANIFEST_NAME,
            f"unexpected structure ({type(exc).__name__}: {exc})",
        )
    return report


def _verify_run(report: VerifyReport, run_dir: Path, prefix: str, skip_paths: frozenset[str]) -> None:
    try:
        raw = load_manifest(run_dir)
    except WorldForgeError as exc:
        report.add("manifest-unreadable", prefix + MANIFEST_NAME, str(exc))
        return
    report.run_id = str(raw.get("run_id"))
    problem = schema_version_problem(raw.get("schema_version"))
    if problem is not None:  # the fields of another schema cannot be checked against this one
        report.add("schema-version", prefix + MANIFEST_NAME, problem)
        return
    try:
        manifest = RunManifest.from_dict(raw, source=prefix + MANIFEST_NAME)
    except WorldForgeError as exc:
        report.add("manifest-malformed", prefix + MANIFEST_NAME, str(exc))
        return
    if manifest.run_id != run_dir.name:
        report.add("run-id-mismatch", prefix + MANIFEST_NAME, "run_id does not match the directory name")
    status = manifest.status

    # Event chain ------------------------------------------------------------------
    events: list[JSONObject] = []
    if EVENTS_NAME in skip_paths:
        report.checked["events"] = 0
    else:
        chain = read_chain(run_dir / EVENTS_NAME)
        events = chain.events
        report.checked["events"] = len(events)
        for problem in chain.problems:
            code = "truncated-line" if "truncated" in problem else "event-chain"
            report.add(code, prefix + EVENTS_NAME, problem)
        if events and events[0].get("type") != "run.started":
            report.add("event-chain", prefix + EVENTS_NAME, "first event is not run.started")
        terminal = chain.terminal
        if terminal is None:
            locked = RunLock.is_locked(run_dir) if not prefix else False
            if status == RunStatus.RUNNING and locked:
                report.add("run-in-progress", prefix + EVENTS_NAME, "the run is still being written")
            else:
                status = RunStatus.INTERRUPTED if status == RunStatus.RUNNING else status
                report.add(
                    "missing-terminal-event",
                    prefix + EVENTS_NAME,
                    f"no run.finished/run.failed event: the run was interrupted (last event "
                    f"#{len(events)} {events[-1].get('type') if events else 'none'}); "
                    f"`worldforge runs resume {run_dir.name}` continues it",
                )
        else:
            recorded = (terminal.get("payload") or {}).get("status")
            if recorded != manifest.status.value:
                report.add(
                    "status-mismatch",
                    prefix + MANIFEST_NAME,
                    f"manifest status {manifest.status.value!r} but the log ends with {recorded!r}",
                )
            if manifest.event_count != len(events) or manifest.event_chain_head != chain.head:
                report.add(
                    "event-count-mismatch",
                    prefix + EVENTS_NAME,
                    f"manifest records {manifest.event_count} events / another chain head; "
                    f"the log has {len(events)}",
                )
    report.status = status.value

    # Artifacts --------------------------------------------------------------------
    index: dict[str, JSONObject] = {}
    for event in events:
        payload: JSON = event.get("payload")
        if event.get("type") in ("artifact.written", "item.completed"):
            path = payload.get("path") if isinstance(payload, dict) else None
            if not isinstance(payload, dict) or not isinstance(path, str) or not path:
                report.add(
                    "event-malformed",
                    prefix + EVENTS_NAME,
                    f"event #{event.get('seq')} names no artifact path",
                )
                continue
            index[path] = payload
    for entry in manifest.artifacts or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            report.add("manifest-malformed", prefix + MANIFEST_NAME, "an artifacts entry has no path")
            continue
        logged = index.get(str(entry["path"]))
        if logged is not None and logged.get("sha256") != entry.get("sha256"):
            report.add(
                "manifest-event-mismatch",
                prefix + str(entry.get("path")),
                "manifest and event log disagree on this artifact's digest",
            )
        index.setdefault(entry["path"], entry)
    contents: dict[str, bytes] = {}  # the items' bytes, read once for both checks
    for rel in sorted(index):
        if rel not in skip_paths:
            data = _check_file(report, run_dir, index[rel], prefix)
            if data is not None and rel.startswith("items/"):
                contents[rel] = data
    report.checked["artifacts"] = len(index)
    for rel in _files(run_dir):
        if rel in UNINDEXED_NAMES or rel.startswith(LOCAL_DIR + "/"):
            continue
        if rel not in index and status in (RunStatus.COMPLETED, RunStatus.FAILED):
            report.add("unindexed-file", prefix + rel, "file is not listed in the manifest or event log")

    # Digests ----------------------------------------------------------------------
    manifest_intact = MANIFEST_NAME not in skip_paths  # a bundle may have redacted the manifest copy
    if manifest_intact and digest_payload(manifest.config) != manifest.config_digest:
        report.add("config-digest-mismatch", prefix + MANIFEST_NAME, "config_digest does not match config")
    expected_input = compute_input_digest(
        manifest.kind, manifest.config, manifest.inputs, manifest.dataset_manifests
    )
    if manifest_intact and expected_input != manifest.input_digest:
        report.add(
            "input-digest-mismatch", prefix + MANIFEST_NAME, "input_digest does not match the recorded inputs"
        )
    items: dict[str, JSONObject] = {}
    for rel in index:
        if rel not in contents:  # not an item record, skipped, or missing (reported above)
            continue
        try:
            body = json.loads(contents[rel].decode("utf-8"))
            if digest_payload(body["record"]) != body["record_digest"]:
                report.add("item-digest-mismatch", prefix + rel, "record_digest does not match the record")
            items[body["item_id"]] = body
        except (ValueError, KeyError, TypeError):
            report.add("item-unreadable", prefix + rel, "item record is not valid JSON with item_id/record")
    report.checked["items"] = len(items)
    if status in (RunStatus.COMPLETED, RunStatus.FAILED) and not any(
        p.startswith("items/") for p in skip_paths
    ):
        recorded_items = manifest.items.digest if manifest.items is not None else None
        if recorded_items != items_digest(items):
            report.add(
                "items-digest-mismatch",
                prefix + MANIFEST_NAME,
                "items digest does not match the item records",
            )
    if manifest.status == RunStatus.COMPLETED:
        result_file = run_dir / RESULT_PATH
        if RESULT_PATH in skip_paths:
            pass
        elif not result_file.is_file():
            report.add("result-missing", prefix + RESULT_PATH, "completed run has no result payload")
        else:
            try:
                payload = json.loads(result_file.read_text(encoding="utf-8"))
                if digest_payload(payload) != manifest.result_digest:
                    report.add(
                        "result-digest-mismatch",
                        prefix + RESULT_PATH,
                        "result_digest does not match results/result.json",
                    )
            except ValueError:
                report.add("result-unreadable", prefix + RESULT_PATH, "result payload is not valid JSON")


__all__ = ["Problem", "VerifyReport", "verify_run"]
