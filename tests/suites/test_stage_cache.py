"""The suite's stage cache: one SQLite file, shared by the driver and forked level workers."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from worldforge.pcg.sim.png import PNG_END, PNG_SIGNATURE
from worldforge.suites.science_birds.stage_cache import DB_NAME, StageCache

PNG = PNG_SIGNATURE + b"\x00" * 20 + PNG_END


def test_entries_survive_the_process_and_count_hits_and_misses(tmp_path: Path) -> None:
    key = StageCache.key("extract", "v1", "sha256:" + "a" * 64)
    first = StageCache(tmp_path)
    assert first.get_json("extract", key) is None
    first.put_json("extract", key, {"program": "drop_block('b11', 3)", "calls": 1})
    first.put_blob("render", key, PNG)  # another kind under the same key does not overwrite it
    first.close()

    second = StageCache(tmp_path)
    assert second.get_json("extract", key) == {"program": "drop_block('b11', 3)", "calls": 1}
    assert second.get_blob("render", key) == PNG
    assert second.get_json("convert", StageCache.key("convert", "v1", key)) is None
    assert second.hits == {"extract": 1, "render": 1} and second.misses == {"convert": 1}
    assert second.entries() == {"extract": 1, "render": 1}
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(f"{DB_NAME}-")) == [DB_NAME]


def test_invalid_values_are_misses_not_results(tmp_path: Path) -> None:
    cache = StageCache(tmp_path)
    key = StageCache.key("render", "v1", "sha256:" + "b" * 64)
    cache.put_blob("render", key, PNG[:-3])  # a truncated PNG (no end chunk)
    cache.put_json("simulate", key, {"ok": 1})
    cache.close()
    with sqlite3.connect(tmp_path / DB_NAME) as conn:  # a value damaged on disk
        conn.execute("UPDATE entries SET value = ? WHERE kind = 'json'", (b'{"ok": ',))
    fresh = StageCache(tmp_path)
    assert fresh.get_blob("render", key) is None
    assert fresh.get_json("simulate", key) is None
    assert fresh.misses == {"render": 1, "simulate": 1}


@pytest.mark.parametrize("content", [b"this is not a database" * 100, b""])
def test_a_file_that_is_not_a_cache_is_set_aside_and_the_run_goes_on(tmp_path: Path, content: bytes) -> None:
    (tmp_path / DB_NAME).write_bytes(content)
    cache = StageCache(tmp_path)
    key = StageCache.key("convert", "v1", "sha256:" + "c" * 64)
    cache.put_json("convert", key, {"xml": "<Level/>"})
    cache.close()
    assert StageCache(tmp_path).get_json("convert", key) == {"xml": "<Level/>"}
    aside = [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
    if content:  # SQLite treats an empty file as a new database: nothing to set aside
        assert [p.read_bytes() for p in aside] == [content]
    else:
        assert aside == []


def test_another_format_is_set_aside(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / DB_NAME) as conn:
        conn.execute("PRAGMA user_version=99")
    cache = StageCache(tmp_path)
    cache.put_json("extract", "sha256:" + "d" * 64, {"a": 1})
    assert cache.entries() == {"extract": 1}
    assert any(".damaged-" in p.name for p in tmp_path.iterdir())


def test_a_locked_cache_is_a_miss_never_set_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from worldforge.suites.science_birds import stage_cache

    key = StageCache.key("extract", "v1", "sha256:" + "e" * 64)
    StageCache(tmp_path).put_json("extract", key, {"a": 1})
    monkeypatch.setattr(stage_cache, "_BUSY_TIMEOUT_S", 0.05)
    holder = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock past the timeout
    try:
        blocked = StageCache(tmp_path)
        blocked.put_json("extract", StageCache.key("extract", "v1", key), {"b": 2})  # kept in memory
        assert blocked.get_json("extract", StageCache.key("extract", "v1", key)) == {"b": 2}
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not any(".damaged-" in p.name for p in tmp_path.iterdir())
    assert StageCache(tmp_path).get_json("extract", key) == {"a": 1}


def _worker_writes(root: str, start: int) -> None:
    cache = StageCache(Path(root))
    for i in range(start, start + 200):
        cache.put_json("simulate", f"sha256:{i:064x}", {"i": i})


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_forked_processes_write_one_cache_at_once(tmp_path: Path) -> None:
    parent = StageCache(tmp_path)
    parent.put_json("simulate", f"sha256:{9999:064x}", {"i": 9999})  # open before the fork
    ctx = multiprocessing.get_context("fork")
    workers = [ctx.Process(target=_worker_writes, args=(str(tmp_path), n * 200)) for n in range(3)]
    for proc in workers:
        proc.start()
    _worker_writes(str(tmp_path), 600)  # the parent writes at the same time, on its own connection
    for proc in workers:
        proc.join(60)
        assert proc.exitcode == 0
    assert parent.entries() == {"simulate": 801}
    reader = StageCache(tmp_path)
    assert all(reader.get_json("simulate", f"sha256:{i:064x}") == {"i": i} for i in range(800))


def test_memory_only_cache_touches_no_disk(tmp_path: Path) -> None:
    cache = StageCache(None)
    cache.put_json("extract", "sha256:" + "f" * 64, [1, 2])
    assert cache.get_json("extract", "sha256:" + "f" * 64) == [1, 2]
    assert cache.path is None and cache.entries() == {}
