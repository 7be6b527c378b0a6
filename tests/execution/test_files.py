"""The untrusted-folder walker, reader and copier, as a hostile team would probe them.

Every refusal is one line naming the entry relative to the folder; nothing a link points to is ever
opened (the tests record every ``open`` the evaluator makes), and nothing blocks or grows without bound.
"""

from __future__ import annotations

import builtins
import io
import os
import signal
import socket
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worldforge.core.digests import digest_bytes
from worldforge.core.errors import WorldForgeError
from worldforge.execution import files
from worldforge.execution.files import (
    SKIPPED_NAMES,
    TreeBudget,
    TreeFile,
    TreeLimits,
    check_name,
    copy_tree,
    kind_of,
    read_file,
    shown,
    stat_file,
    walk_tree,
)

SECRET = "wf-test-secret-4f1c9e2a7b"


def _tree(root: Path, entries: dict[str, bytes]) -> Path:
    for rel, data in entries.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail instead of hanging: a blocking ``open`` or ``read`` is interrupted by ``SIGALRM``."""

    def _expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the process opens from now on (``os.open`` names, ``open`` paths)."""
    return record_opens(monkeypatch)


def record_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Spy on ``os.open`` and ``open``: the list fills with every path opened from now on."""
    seen: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        seen.append(os.fsdecode(path))
        return real_os_open(path, *args, **kwargs)

    def py_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(os.fsdecode(file) if not isinstance(file, int) else f"fd:{file}")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", py_open)
    monkeypatch.setattr(io, "open", py_open)
    return seen


def _refused(call: Callable[[], object]) -> str:
    with pytest.raises(WorldForgeError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and "\r" not in message
    return message


def _reference_order(root: Path) -> list[str]:
    """``os.walk`` top-down with sorted names: the order submission digests were pinned with."""
    out: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not files.is_skipped(d))
        out += [
            (Path(folder) / n).relative_to(root).as_posix() for n in sorted(names) if not files.is_skipped(n)
        ]
    return out


# -- what a walk lists ------------------------------------------------------------------------------------


def test_walk_lists_regular_files_in_os_walk_order_and_skips_caches(
    tmp_path: Path, opened: list[str]
) -> None:
    root = _tree(
        tmp_path / "team",
        {"z.txt": b"z", "b.py": b"bb", "a/x.py": b"x", "a/b/y.txt": b"yyy", "a/c.txt": b"",
         ".env": b"KEY=" + SECRET.encode(), "__pycache__/m.pyc": b"\0", "c.pyc": b"\0", ".git/HEAD": b"r"},
    )  # fmt: skip
    walked = walk_tree(root)
    assert [f.path for f in walked] == ["b.py", "z.txt", "a/c.txt", "a/x.py", "a/b/y.txt"]
    assert [f.path for f in walked] == _reference_order(root)
    assert [f.size for f in walked] == [2, 1, 0, 1, 3]
    assert all(f.inode == os.lstat(root / f.path).st_ino and f.digest is None for f in walked)
    assert not any(n in (".env", "__pycache__", "c.pyc", ".git", "HEAD") for n in opened)  # skipped unseen
    assert walk_tree(root) == walked
    with_digests = walk_tree(root, digests=True)
    assert [f.digest for f in with_digests] == [digest_bytes((root / f.path).read_bytes()) for f in walked]


def test_a_hard_link_is_a_regular_file(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {"a.py": b"print(1)\n"})
    os.link(root / "a.py", root / "b.py")
    walked = walk_tree(root)
    assert [f.path for f in walked] == ["a.py", "b.py"] and walked[0].inode == walked[1].inode
    assert read_file(root, walked[1]) == b"print(1)\n"


def test_under_and_non_recursive_list_one_subfolder(tmp_path: Path) -> None:
    root = _tree(tmp_path / "p", {"prompts/2.txt": b"b", "prompts/1.txt": b"a", "prompts/sub/3.txt": b"c"})
    (root / "prompts" / "dir.txt").mkdir()
    assert [f.path for f in walk_tree(root, under="prompts", recursive=False)] == [
        "prompts/1.txt",
        "prompts/2.txt",
    ]
    (root / "other").mkdir()
    (root / "other" / "prompts").symlink_to(root / "prompts")
    message = _refused(lambda: walk_tree(root / "other", under="prompts"))
    assert message == f"{root / 'other'}: refused: prompts is a symbolic link (to {root / 'prompts'})."


# -- links and special files: refused without being opened -----------------------------------------------


def test_a_link_to_the_evaluators_environment_is_refused_unopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opened: list[str]
) -> None:
    monkeypatch.setenv("WF_TEST_API_KEY", SECRET)
    root = _tree(tmp_path / "team-x", {"main.py": b"x = 1\n", "prompts/1.txt": b"<OBJECT>"})
    (root / "prompts" / "key.txt").symlink_to("/proc/self/environ")
    message = _refused(lambda: walk_tree(root, label="team-x"))
    assert message == "team-x: refused: prompts/key.txt is a symbolic link (to /proc/self/environ)."
    assert SECRET not in message
    assert not [p for p in opened if "environ" in p or p.endswith("key.txt")]


def test_a_link_to_dev_zero_fails_fast(tmp_path: Path, opened: list[str]) -> None:
    root = _tree(tmp_path / "team", {"main.py": b""})
    (root / "weights.bin").symlink_to("/dev/zero")
    opened.clear()
    with deadline(5):
        message = _refused(lambda: walk_tree(root))
    assert message.endswith("refused: weights.bin is a symbolic link (to /dev/zero).")
    assert not [p for p in opened if p.endswith(("/dev/zero", "weights.bin"))]


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {"main.py": b""})
    os.mkfifo(root / "pipe.txt")
    with deadline(5):
        assert _refused(lambda: walk_tree(root)) == f"{root}: refused: pipe.txt is a FIFO (named pipe)."


def test_a_socket_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _tree(tmp_path / "team", {"main.py": b""})
    monkeypatch.chdir(root)  # a socket path must be short
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock")
        assert _refused(lambda: walk_tree(root)) == f"{root}: refused: sock is a socket."


def test_a_device_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {"main.py": b""})
    try:
        os.mknod(root / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("creating a device node needs privileges")
    assert _refused(lambda: walk_tree(root)) == f"{root}: refused: null is a character device."


@pytest.mark.parametrize(
    ("target", "shown_as"),
    [
        ("/etc", "/etc"),  # a folder outside
        ("main.py", "main.py"),  # a file inside the folder: refused too (no resolving to tell them apart)
        ("missing", "missing"),  # dangling
        ("../../outside\nline", "../../outside\\nline"),  # the text is escaped: still one line
    ],
)
def test_every_symbolic_link_is_refused(
    tmp_path: Path, target: str, shown_as: str, opened: list[str]
) -> None:
    root = _tree(tmp_path / "team", {"main.py": b"", "lib/util.py": b""})
    (root / "lib" / "link").symlink_to(target)
    assert (
        _refused(lambda: walk_tree(root)) == f"{root}: refused: lib/link is a symbolic link (to {shown_as})."
    )
    assert "link" not in opened


def test_a_linked_folder_is_refused_not_entered(tmp_path: Path, opened: list[str]) -> None:
    outside = _tree(tmp_path / "outside", {"secret.txt": SECRET.encode()})
    root = _tree(tmp_path / "team", {"main.py": b""})
    (root / "data").symlink_to(outside)
    opened.clear()
    assert _refused(lambda: walk_tree(root)) == f"{root}: refused: data is a symbolic link (to {outside})."
    assert not [p for p in opened if "secret" in p or p == "data"]


def test_the_folder_itself_may_not_be_a_link_but_its_parents_may(tmp_path: Path) -> None:
    real = _tree(tmp_path / "real", {"team/main.py": b"x"})
    (tmp_path / "alias").symlink_to(real / "team")
    message = _refused(lambda: walk_tree(tmp_path / "alias"))
    assert message == (
        f"{tmp_path / 'alias'}: refused: the folder itself is a symbolic link (to {real / 'team'}); "
        "name the folder it points to."
    )
    (tmp_path / "parent").symlink_to(real)
    assert [f.path for f in walk_tree(tmp_path / "parent" / "team")] == ["main.py"]
    assert _refused(lambda: walk_tree(tmp_path / "nope")) == f"{tmp_path / 'nope'}: not found."
    assert (
        _refused(lambda: walk_tree(real / "team" / "main.py"))
        == f"{real / 'team' / 'main.py'}: not a folder."
    )


def test_names_that_are_not_utf8_or_hold_line_breaks_are_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {"main.py": b""})
    with open(os.fsencode(root) + b"/caf\xe9.py", "wb"):
        pass
    assert _refused(lambda: walk_tree(root)) == f"{root}: refused: caf\\xe9.py is not a UTF-8 name."
    os.unlink(os.fsencode(root) + b"/caf\xe9.py")
    (root / "two\nlines.txt").write_bytes(b"")
    message = _refused(lambda: walk_tree(root))
    assert message == f"{root}: refused: two\\nlines.txt has control characters in its name."


# -- caps -------------------------------------------------------------------------------------------------


def test_caps_are_checked_from_lstat_before_anything_is_read(tmp_path: Path, opened: list[str]) -> None:
    root = _tree(tmp_path / "team", {"a.txt": b"x" * 10, "b.txt": b"y" * 10, "d/c.txt": b"z"})
    opened.clear()
    big = TreeLimits(max_file_bytes=9)
    assert (
        _refused(lambda: walk_tree(root, limits=big))
        == f"{root}: refused: a.txt is 10 bytes; the limit per file is 9."
    )
    total = TreeLimits(max_total_bytes=15)
    assert _refused(lambda: walk_tree(root, limits=total)) == (
        f"{root}: refused: larger than 15 bytes in all (reached at b.txt)."
    )
    count = TreeLimits(max_files=3)  # files and folders together: a.txt, b.txt, d, d/c.txt
    assert (
        _refused(lambda: walk_tree(root, limits=count)) == f"{root}: refused: more than 3 files and folders."
    )
    assert not [p for p in opened if p.endswith(".txt")]
    assert len(walk_tree(root, limits=TreeLimits(max_files=4, max_file_bytes=10, max_total_bytes=21))) == 3


def test_depth_cap(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {"a/b/c/d.txt": b"x"})
    assert [f.path for f in walk_tree(root, limits=TreeLimits(max_depth=4))] == ["a/b/c/d.txt"]
    assert _refused(lambda: walk_tree(root, limits=TreeLimits(max_depth=3))) == (
        f"{root}: refused: a/b/c/d.txt is nested deeper than 3 folders."
    )


def test_a_huge_sparse_file_is_refused_unread(tmp_path: Path, opened: list[str]) -> None:
    root = tmp_path / "team"
    root.mkdir()
    with open(root / "huge.bin", "wb") as handle:
        handle.truncate(files.MAX_FILE_BYTES + 1)
    opened.clear()
    message = _refused(lambda: walk_tree(root))
    cap = files.MAX_FILE_BYTES
    assert message == f"{root}: refused: huge.bin is {cap + 1} bytes; the limit per file is {cap}."
    assert "huge.bin" not in opened


def test_a_folder_listing_too_many_names_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {f"{i}.pyc": b"" for i in range(9)})
    assert _refused(lambda: walk_tree(root, limits=TreeLimits(max_files=2))) == (
        f"{root}: refused: the folder lists more than 8 names."
    )


# -- the reader: the file read is the file walked ----------------------------------------------------------


def _walked(tmp_path: Path, data: bytes = b"print('hi')\n") -> tuple[Path, TreeFile]:
    root = _tree(tmp_path / "team", {"pkg/main.py": data})
    (entry,) = walk_tree(root)
    return root, entry


def test_read_file_returns_the_walked_bytes(tmp_path: Path) -> None:
    root, entry = _walked(tmp_path)
    assert read_file(root, entry) == b"print('hi')\n"


def test_a_file_swapped_for_a_fifo_after_the_walk_does_not_block(tmp_path: Path) -> None:
    root, entry = _walked(tmp_path)
    os.unlink(root / entry.path)
    os.mkfifo(root / entry.path)
    with deadline(5):
        message = _refused(lambda: read_file(root, entry))
    assert message == (
        f"{root}: refused: pkg/main.py is a FIFO (named pipe); it changed after the folder was listed."
    )


def test_a_file_swapped_for_a_link_after_the_walk_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WF_TEST_API_KEY", SECRET)
    root, entry = _walked(tmp_path)
    os.unlink(root / entry.path)
    (root / entry.path).symlink_to("/proc/self/environ")
    message = _refused(lambda: read_file(root, entry))
    assert message == (
        f"{root}: refused: pkg/main.py is a symbolic link (to /proc/self/environ); "
        "it changed after the folder was listed."
    )
    assert SECRET not in message


def test_a_folder_swapped_for_a_link_after_the_walk_is_not_followed(tmp_path: Path) -> None:
    root, entry = _walked(tmp_path)
    outside = _tree(tmp_path / "outside", {"main.py": b"print('hi')\n"})
    (root / "pkg").rename(tmp_path / "moved")
    (root / "pkg").symlink_to(outside)
    assert _refused(lambda: read_file(root, entry)) == (
        f"{root}: refused: pkg is a symbolic link (to {outside}); it changed after the folder was listed."
    )


def test_a_file_replaced_by_another_of_the_same_size_is_refused(tmp_path: Path) -> None:
    root, entry = _walked(tmp_path)
    (root / entry.path).rename(tmp_path / "kept")  # kept alive: its inode number is not reused
    (root / entry.path).write_bytes(b"print('HI')\n")
    assert _refused(lambda: read_file(root, entry)) == (
        f"{root}: refused: pkg/main.py is another file than the one listed; "
        "it changed after the folder was listed."
    )
    os.unlink(root / entry.path)
    assert _refused(lambda: read_file(root, entry)) == (
        f"{root}: refused: pkg/main.py disappeared after the folder was listed."
    )


def test_a_file_that_grew_after_the_walk_is_refused(tmp_path: Path) -> None:
    root, entry = _walked(tmp_path)
    with open(root / entry.path, "ab") as handle:
        handle.write(b"#" * 100)
    assert _refused(lambda: read_file(root, entry)) == (
        f"{root}: refused: pkg/main.py is 112 bytes, 12 when the folder was listed."
    )


@pytest.mark.parametrize(("change", "word"), [(b"x" * (1 << 22), "grew"), (b"", "shrank")])
def test_a_file_changing_while_it_is_read_is_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: bytes, word: str
) -> None:
    root, entry = _walked(tmp_path)
    real_read = os.read
    reads: list[int] = []

    def read(fd: int, n: int) -> bytes:
        if not reads:  # after the checks on open, before the first byte
            with open(root / entry.path, "ab" if change else "r+b") as handle:
                handle.write(change) if change else handle.truncate(3)
        chunk = real_read(fd, n)
        reads.append(len(chunk))
        return chunk

    monkeypatch.setattr(os, "read", read)
    message = _refused(lambda: read_file(root, entry))
    assert message == f"{root}: refused: pkg/main.py {word} while it was read (listed at 12 bytes)."
    assert sum(reads) <= entry.size + 1  # never more than one byte past the listed size


def test_read_file_refuses_a_record_over_the_cap_or_with_a_bad_path(tmp_path: Path) -> None:
    root, _ = _walked(tmp_path)
    small = TreeLimits(max_file_bytes=10)
    message = _refused(lambda: read_file(root, TreeFile("pkg/main.py", 100), limits=small))
    assert message == f"{root}: refused: pkg/main.py is 100 bytes; the limit per file is 10."
    for bad in ("../team/pkg/main.py", "/etc/passwd", "pkg//main.py", "pkg/./main.py", ""):
        with pytest.raises(WorldForgeError, match="is not a plain relative path"):
            read_file(root, TreeFile(bad, 1))


def test_stat_file_looks_at_one_name(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {"requirements.txt": b"numpy\n"})
    found = stat_file(root, "requirements.txt")
    assert found is not None and (found.path, found.size) == ("requirements.txt", 6)
    assert stat_file(root, "absent.txt") is None
    (root / "link.txt").symlink_to("/proc/self/environ")
    assert _refused(lambda: stat_file(root, "link.txt")) == (
        f"{root}: refused: link.txt is a symbolic link (to /proc/self/environ)."
    )
    (root / "d").mkdir()
    assert _refused(lambda: stat_file(root, "d")) == f"{root}: refused: d is a folder, not a file."


# -- the copier -------------------------------------------------------------------------------------------


def test_copy_tree_copies_exactly_the_walked_files_readable_by_another_uid(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {"main.py": b"m", "a/b/c.txt": b"c" * 3000, ".env": b"KEY=1"})
    walked = walk_tree(root, digests=True)
    old = os.umask(0o077)
    try:
        copy_tree(walked, root, tmp_path / "stage")
    finally:
        os.umask(old)
    stage = tmp_path / "stage"
    assert sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file()) == [
        "a/b/c.txt",
        "main.py",
    ]
    assert (stage / "a" / "b" / "c.txt").read_bytes() == b"c" * 3000
    assert stat.S_IMODE(os.lstat(stage / "main.py").st_mode) == 0o644
    assert (
        stat.S_IMODE(os.lstat(stage / "a").st_mode)
        == stat.S_IMODE(os.lstat(stage / "a" / "b").st_mode)
        == 0o755
    )


def test_copy_tree_refuses_a_file_changed_since_the_walk_and_removes_its_copy(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {"main.py": b"print(1)\n", "z.py": b"print(2)\n"})
    walked = walk_tree(root, digests=True)
    with open(root / "z.py", "r+b") as handle:  # same inode, same size, other bytes
        handle.write(b"import os")
    message = _refused(lambda: copy_tree(walked, root, tmp_path / "stage"))
    assert message == f"{root}: refused: z.py has other bytes than when the folder was listed."
    assert not (tmp_path / "stage" / "z.py").exists()


def test_copy_tree_accepts_records_without_inodes_and_checks_their_digest(tmp_path: Path) -> None:
    root = _tree(tmp_path / "team", {"main.py": b"print(1)\n"})
    record = TreeFile("main.py", 9, digest=digest_bytes(b"print(1)\n"))
    copy_tree([record], root, tmp_path / "stage")
    assert (tmp_path / "stage" / "main.py").read_bytes() == b"print(1)\n"
    os.unlink(root / "main.py")
    (root / "main.py").symlink_to("/dev/zero")
    with deadline(5):
        message = _refused(lambda: copy_tree([record], root, tmp_path / "again"))
    assert message.endswith(
        "main.py is a symbolic link (to /dev/zero); it changed after the folder was listed."
    )
    forged = TreeFile("../outside.py", 1)
    assert "is not a plain relative path" in _refused(lambda: copy_tree([forged], root, tmp_path / "third"))
    assert not (tmp_path / "outside.py").exists()


# -- the pieces an archive walker reuses --------------------------------------------------------------------


def test_budget_check_entry_refuses_what_a_walk_refuses() -> None:
    budget = TreeBudget(
        TreeLimits(max_files=3, max_file_bytes=10, max_total_bytes=15, max_depth=2), "team.zip"
    )
    budget.check_entry("a", "folder")
    budget.check_entry("a/b.py", "file", 10)
    with pytest.raises(WorldForgeError, match=r"^team.zip: refused: a/l is a symbolic link \(to /etc\)\.$"):
        budget.check_entry("a/l", "symbolic link", 0, target="/etc")
    with pytest.raises(WorldForgeError, match=r"larger than 15 bytes in all \(reached at c.py\)"):
        budget.check_entry("c.py", "file", 6)
    for name in ("/etc/passwd", "../x", "a/../../x", "a//b", "./a"):
        with pytest.raises(WorldForgeError, match="is not a plain relative path"):
            check_name(name, "team.zip")
    with pytest.raises(WorldForgeError, match="nested deeper than 2 folders"):
        budget.check_entry("a/b/c", "file", 0)


def test_kinds_and_shown_names() -> None:
    modes = (
        stat.S_IFREG,
        stat.S_IFDIR,
        stat.S_IFLNK,
        stat.S_IFIFO,
        stat.S_IFSOCK,
        stat.S_IFCHR,
        stat.S_IFBLK,
        0,
    )
    kinds = [
        "file",
        "folder",
        "symbolic link",
        "FIFO",
        "socket",
        "character device",
        "block device",
        "unknown",
    ]
    assert [kind_of(m) for m in modes] == kinds
    assert shown("a\nb\u2028c\u202ed\udce9") == "a\\nb\\u2028c\\u202ed\\xe9"
    assert shown("x" * 500) == "x" * 200 + "..."


# -- property: any tree of regular files copies exactly; any special entry is refused ----------------------

_NAME = st.text("abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=6).filter(
    lambda n: n not in SKIPPED_NAMES
)
_PATHS = st.lists(st.lists(_NAME, min_size=1, max_size=3).map("/".join), min_size=1, max_size=12, unique=True)


def _consistent(paths: list[str]) -> list[str]:
    """Drop paths that would need a file to also be a folder."""
    out: list[str] = []
    for p in paths:
        if not any(q.startswith(p + "/") or p.startswith(q + "/") for q in out):
            out.append(p)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(paths=_PATHS, data=st.data())
def test_property_copies_are_byte_identical_and_specials_refused(
    paths: list[str], data: st.DataObject
) -> None:
    entries = {p: data.draw(st.binary(max_size=64)) for p in _consistent(paths)}
    with tempfile.TemporaryDirectory() as scratch:
        root = _tree(Path(scratch) / "team", entries)
        walked = walk_tree(root, digests=True)
        assert [f.path for f in walked] == _reference_order(root) and walk_tree(root, digests=True) == walked
        assert sorted(f.path for f in walked) == sorted(entries)
        copy_tree(walked, root, Path(scratch) / "copy")
        assert {f.path: (Path(scratch) / "copy" / f.path).read_bytes() for f in walked} == entries
        folder = data.draw(st.sampled_from(sorted({p.rpartition("/")[0] for p in entries})))
        special = (root / folder / "zz-special") if folder else root / "zz-special"
        kind = data.draw(st.sampled_from(["link", "fifo"]))
        special.symlink_to("/proc/self/environ") if kind == "link" else os.mkfifo(special)
        rel = special.relative_to(root).as_posix()
        with deadline(5):
            message = _refused(lambda: walk_tree(root))
        what = "a symbolic link (to /proc/self/environ)" if kind == "link" else "a FIFO (named pipe)"
        assert message == f"{root}: refused: {rel} is {what}."
