"""The suite's content-addressed stage cache: one SQLite file per cache directory.

Every stage output (a reply, an extraction, a level, a simulation, a PNG, a softmax vector) is
stored under ``digest_payload({"stage", "version", "input"})``, so a hit is exact. A run stores
several entries per item from three processes at once (the driver and the level workers). Entries
used to be one file each, written to a temporary name and renamed: on this project's reference
machine creating a file costs 0.06-0.6 ms of kernel time, which for 780 items was 2-4 s of CPU,
more than a tenth of the whole suite. An insert into SQLite's write-ahead log costs about 0.03 ms.

Why SQLite (the standard library's ``sqlite3``): each insert is an atomic transaction, so a run
killed mid-write leaves either the entry or nothing; several processes may write at once (WAL mode,
a busy timeout for the short write lock); and a file that is not a database, or a damaged one, is
detected by SQLite itself. Commits are not fsynced (``synchronous=NORMAL`` in WAL mode): an
operating-system crash may lose the last entries, never corrupt the earlier ones, and a lost entry
is recomputed. Values are still validated when read (JSON that parses, a PNG with its signature
and end chunk), and a cache that cannot be opened is moved aside and started afresh: a cache never
fails a run.

A connection belongs to the process that opened it (forked workers open their own; SQLite
connections must not cross a ``fork``) and is shared by its threads under a lock.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from worldforge.core.canonical import JSON, canonical_json
from worldforge.core.digests import digest_payload
from worldforge.pcg.sim.png import PNG_END, PNG_SIGNATURE

#: The database in a cache directory (entries of every stage; ``PRAGMA user_version`` = format).
DB_NAME = "stages.sqlite"
FORMAT_VERSION = 1
_BUSY_TIMEOUT_S = 60.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS entries ("
    " key TEXT NOT NULL, kind TEXT NOT NULL, stage TEXT NOT NULL, value BLOB NOT NULL,"
    " PRIMARY KEY (key, kind)) WITHOUT ROWID"
)


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Not a database, a damaged one or another format (never a busy or locked one: that file is
    another process's live cache)."""
    if isinstance(exc, _FormatMismatch):
        return True
    return getattr(exc, "sqlite_errorname", "") in {"SQLITE_NOTADB", "SQLITE_CORRUPT"}


class _FormatMismatch(sqlite3.DatabaseError):
    pass


def _json_value(data: bytes) -> JSON:
    """The stored JSON (``None``, never a stored value, when it does not parse: a miss)."""
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError:
        return None


def _png_value(data: bytes) -> bytes | None:
    """The PNG if it is whole (its signature and end chunk): a write cut short is a miss."""
    return data if data.startswith(PNG_SIGNATURE) and data.endswith(PNG_END) else None


class StageCache:
    """Stage outputs in memory, and in ``<root>/stages.sqlite`` when a directory is given.

    JSON values (``get_json``/``put_json``) and PNG blobs (``get_blob``/``put_blob``) are separate
    kinds of entry under the same key space. Counters of hits and misses per stage feed the run's
    timings.
    """

    def __init__(self, root: Path | None) -> None:
        self.root = root
        #: ``(kind, key) -> value``: what :meth:`put_json` was given (or its JSON form read back
        #: from disk), or a PNG's bytes.
        self._memory: dict[tuple[str, str], object] = {}
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self.hits: dict[str, int] = {}
        self.misses: dict[str, int] = {}

    @staticmethod
    def key(stage: str, version: str, input_digest: str) -> str:
        return digest_payload({"stage": stage, "version": version, "input": input_digest})

    @property
    def path(self) -> Path | None:
        """The database file (``None`` for a memory-only cache)."""
        return self.root / DB_NAME if self.root is not None else None

    # -- the connection ------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection | None:
        """This process's connection (opened on first use; called with the lock held)."""
        if self.root is None:
            return None
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None  # inherited across a fork: never used, never closed here
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise  # locked beyond the timeout, disk full, ...: the caller treats it as a miss
            self._set_aside()
            self._conn = self._open()
        self._pid = os.getpid()
        return self._conn

    def _open(self) -> sqlite3.Connection:
        assert self.root is not None
        self.root.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.root / DB_NAME, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, FORMAT_VERSION):
                raise _FormatMismatch(f"stage cache format {version}")
            conn.execute(_SCHEMA)
            if version == 0:
                conn.execute(f"PRAGMA user_version={FORMAT_VERSION}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _set_aside(self) -> None:
        """Move an unreadable database (and its log) aside, so the next open starts afresh."""
        assert self.root is not None
        stamp = f"{int(time.time())}-{os.getpid()}"
        for suffix in ("", "-wal", "-shm"):
            src = self.root / f"{DB_NAME}{suffix}"
            try:
                os.replace(src, self.root / f"{DB_NAME}{suffix}.damaged-{stamp}")
            except FileNotFoundError:
                pass

    def _read(self, key: str, kind: str) -> bytes | None:
        with self._lock:
            try:
                conn = self._connection()
                if conn is None:
                    return None
                query = "SELECT value FROM entries WHERE key = ? AND kind = ?"
                row = conn.execute(query, (key, kind)).fetchone()
            except sqlite3.Error:
                return None  # a damaged cache is a miss; the value is recomputed
        return bytes(row[0]) if row is not None else None

    def _write(self, key: str, kind: str, stage: str, data: bytes) -> None:
        with self._lock:
            try:
                conn = self._connection()
                if conn is not None:
                    conn.execute(
                        "INSERT OR REPLACE INTO entries (key, kind, stage, value) VALUES (?, ?, ?, ?)",
                        (key, kind, stage, data),
                    )
            except sqlite3.Error:
                pass  # the value stays in memory; a later run recomputes it

    def close(self) -> None:
        """Close this process's connection (the entries are already committed)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    # -- entries -------------------------------------------------------------------------------

    def _count(self, table: dict[str, int], stage: str) -> None:
        with self._lock:
            table[stage] = table.get(stage, 0) + 1

    def _get(self, stage: str, key: str, kind: str, decode: Callable[[bytes], object]) -> object:
        """The entry from memory, else from disk if ``decode`` accepts it (``None``: invalid)."""
        value = self._memory.get((kind, key))
        if value is None:
            data = self._read(key, kind)
            value = decode(data) if data is not None else None
            if value is not None:
                self._memory[(kind, key)] = value
        self._count(self.hits if value is not None else self.misses, stage)
        return value

    def get_json(self, stage: str, key: str) -> object:
        """The value stored under ``key`` (``None``: a miss). The cache keeps no schema: each stage
        checks that the value has the shape it stores (``records.is_*_value``) and recomputes
        otherwise."""
        return self._get(stage, key, "json", _json_value)

    def put_json(self, stage: str, key: str, value: object) -> None:
        """Store a JSON-native value (its canonical JSON on disk; the object itself in memory)."""
        self._memory[("json", key)] = value
        self._write(key, "json", stage, canonical_json(value))

    def get_blob(self, stage: str, key: str) -> bytes | None:
        data = self._get(stage, key, "png", _png_value)
        return data if isinstance(data, bytes) else None

    def put_blob(self, stage: str, key: str, data: bytes) -> None:
        self._memory[("png", key)] = data
        self._write(key, "png", stage, data)

    def entries(self) -> dict[str, int]:
        """Stored entries per stage (for diagnostics and tests)."""
        with self._lock:
            try:
                conn = self._connection()
                if conn is None:
                    return {}
                rows = conn.execute("SELECT stage, COUNT(*) FROM entries GROUP BY stage").fetchall()
            except sqlite3.Error:
                return {}
        return {str(stage): int(count) for stage, count in rows}


__all__ = ["DB_NAME", "StageCache"]
