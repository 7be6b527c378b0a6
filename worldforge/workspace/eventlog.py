"""``events.jsonl``: an append-only, hash-chained, fsynced event log.

Each line is the canonical JSON of ``{seq, time, type, payload, prev}`` where ``prev`` is the
``sha256:`` digest of the previous line's bytes (``null`` on the first line). A reviewer can detect
an edited, dropped or reordered line offline, and a line cut short by ``kill -9`` is recognisable
because every complete line ends with ``\\n``. Every line is flushed to the OS as it is written, so it
survives ``kill -9``. Lifecycle lines (``run.started``/``resumed``/``finished``/``failed``) are fsynced
before ``append`` returns, which makes every earlier line durable too; other lines (provider events,
item completions, artifacts) are group-committed: fsynced with the next lifecycle line, at close, or
at most :data:`MAX_SYNC_LAG_S` after the previous fsync. Losing an unsynced item line to a power cut
only means ``resume`` recomputes that item, because item records are checked against their digest.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

from worldforge.core.canonical import JSONObject, canonical_json
from worldforge.core.digests import digest_bytes
from worldforge.core.errors import WorldForgeError

TERMINAL_EVENTS = ("run.finished", "run.failed")
MAX_SYNC_LAG_S = 1.0  # an appended line is fsynced at the latest this long after the previous fsync


def event_time() -> str:
    """Millisecond UTC timestamp for event lines (never part of a digested payload)."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S") + f".{now.microsecond // 1000:03d}Z"


class EventLine(TypedDict):
    """One line of ``events.jsonl`` as :meth:`EventLog.append` writes it."""

    seq: int
    time: str
    type: str
    payload: JSONObject
    prev: str | None


@dataclass
class ChainCheck:
    """Result of reading and checking an event log.

    ``events`` are the complete, chain-valid lines as the JSON objects they parse to: their seq and
    chain are checked, their ``type`` and ``payload`` are whatever the line holds (a reader narrows
    them, e.g. with :func:`worldforge.core.run_events.parse_event`).
    """

    events: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    head: str | None = None  # digest of the last complete line
    valid_bytes: int = 0  # length of the prefix made of complete, chain-valid lines
    truncated_line: int | None = None

    @property
    def terminal(self) -> dict[str, Any] | None:
        if self.events and self.events[-1].get("type") in TERMINAL_EVENTS:
            return self.events[-1]
        return None


def read_chain(path: Path) -> ChainCheck:
    """Parse ``events.jsonl`` and check seq numbers and the hash chain (never raises on content)."""
    check = ChainCheck()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        check.problems.append("events.jsonl is missing")
        return check
    prev: str | None = None
    offset = 0
    lines = data.split(b"\n")
    for index, raw in enumerate(lines, start=1):
        is_last = index == len(lines)
        if is_last:
            if raw:
                check.truncated_line = index
                check.problems.append(f"events.jsonl line {index} is truncated (no final newline)")
            break
        try:
            event = json.loads(raw)
        except ValueError:
            check.problems.append(f"events.jsonl line {index} is not valid JSON")
            break
        if not isinstance(event, dict):
            check.problems.append(f"events.jsonl line {index} is not an object")
            break
        if event.get("seq") != index:
            check.problems.append(f"events.jsonl line {index}: seq {event.get('seq')!r}, expected {index}")
            break
        if event.get("prev") != prev:
            check.problems.append(
                f"events.jsonl line {index}: hash chain broken (prev does not match line {index - 1})"
            )
            break
        try:
            if canonical_json(event) != raw:
                check.problems.append(f"events.jsonl line {index} is not in canonical form (edited?)")
                break
        except ValueError:
            check.problems.append(f"events.jsonl line {index} holds non-canonical values")
            break
        prev = digest_bytes(raw)
        check.events.append(event)
        offset += len(raw) + 1
        check.valid_bytes = offset
    check.head = prev
    return check


class EventLog:
    """Appends chained lines to ``events.jsonl``; thread-safe (provider events may come from pools)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        existing = read_chain(path) if path.exists() else ChainCheck()
        self.repaired_bytes = 0
        if path.exists():
            size = path.stat().st_size
            if existing.problems and existing.truncated_line is None:
                raise WorldForgeError(
                    f"{path.name}: {existing.problems[0]}; refusing to append to a damaged log."
                )
            if size > existing.valid_bytes:  # a line cut short by a crash: drop the partial tail
                self.repaired_bytes = size - existing.valid_bytes
                with open(path, "r+b") as handle:
                    handle.truncate(existing.valid_bytes)
                    handle.flush()
                    os.fsync(handle.fileno())
        self._seq = len(existing.events)
        self._prev = existing.head
        self.types = [str(e.get("type")) for e in existing.events]
        self.last_payloads: dict[str, JSONObject] = {}
        for event in existing.events:
            payload = event.get("payload")
            self.last_payloads[str(event.get("type"))] = payload if isinstance(payload, dict) else {}
        self._handle = open(path, "ab")  # noqa: SIM115 - closed in close()
        # Group commit: every line is written and flushed to the OS at once (so it survives kill -9).
        # Lifecycle lines are fsynced before ``append`` returns, which also makes every earlier line
        # durable; high-frequency provider events skip their own fsync and ride on the next one (or
        # on ``close``), so a provider call never waits for the disk.
        self._unsynced = 0
        self._last_sync = time.monotonic()

    @property
    def count(self) -> int:
        return self._seq

    @property
    def head(self) -> str | None:
        return self._prev

    def append(self, event_type: str, payload: JSONObject, *, wait_sync: bool = True) -> EventLine:
        """Append one line (written and flushed); with ``wait_sync`` fsync it and all earlier lines."""
        with self._lock:
            record: EventLine = {
                "seq": self._seq + 1,
                "time": event_time(),
                "type": event_type,
                "payload": payload,
                "prev": self._prev,
            }
            line = canonical_json(record)
            self._handle.write(line + b"\n")
            self._handle.flush()
            now = time.monotonic()
            if wait_sync or now - self._last_sync >= MAX_SYNC_LAG_S:
                os.fsync(self._handle.fileno())
                self._unsynced = 0
                self._last_sync = now
            else:
                self._unsynced += 1
            self._seq += 1
            self._prev = digest_bytes(line)
            self.types.append(event_type)
            self.last_payloads[event_type] = payload
            return record

    def sync(self) -> None:
        """fsync lines appended without ``wait_sync``."""
        with self._lock:
            if self._unsynced and not self._handle.closed:
                os.fsync(self._handle.fileno())
                self._unsynced = 0

    def close(self) -> None:
        self.sync()
        with self._lock:
            if not self._handle.closed:
                self._handle.close()


__all__ = ["TERMINAL_EVENTS", "ChainCheck", "EventLine", "EventLog", "event_time", "read_chain"]
