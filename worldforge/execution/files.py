"""Reading untrusted folders: one walker, one reader, one copier, none of which follows a link.

A competition team's folder is read by the evaluator itself (to discover and digest the program, to
stage a private copy for the sandbox) before any sandbox exists, so every read here happens with the
evaluator's privileges. A symbolic link in that folder would make the evaluator read whatever it
points to (``/proc/self/environ`` puts the evaluator's API keys into the run's records; ``/dev/zero``
exhausts its memory), and a FIFO would block it forever. Hence:

* :func:`walk_tree` ``lstat``\\ s every entry and never follows a link. Symbolic links, FIFOs, sockets,
  devices, anything but a regular file or a folder, are refused with a :class:`WorldForgeError` of one
  line naming the entry relative to the folder and what it is. A link is refused even when it points
  inside the folder: telling a harmless link from a harmful one means resolving it, which is the
  thing to avoid, and a team can always ship the file itself. A hard link is a regular file and is
  accepted. Names in :data:`SKIPPED_NAMES` (caches, version control, ``.env`` secrets) are skipped
  without being looked at.
* The folder itself: the organiser's path to it is followed as given (``presets`` in a checkout is a
  link), but its last component must not be a link, and nothing below it is followed. Each folder is
  opened relative to its parent's descriptor with ``O_NOFOLLOW``, so swapping a folder for a link
  during the walk does not lead the walker outside.
* :func:`read_file` and :func:`copy_tree` open files the same way, with ``O_NONBLOCK`` (a FIFO swapped
  in after the walk does not block), check with ``fstat`` that the open file is the regular file that
  was walked (same device, inode and size), read at most one byte more than the walked size and refuse
  a file that grew, shrank, or whose digest differs from the walked one (a deleted file's inode number
  can be reused at once, so the digest is the check that holds when one was recorded).
* Caps (:class:`TreeLimits`): per file, in all, number of files and folders, nesting depth; checked on
  ``lstat`` sizes before anything is read, and again while reading. :class:`TreeBudget` applies them
  entry by entry so that a walker over another kind of listing (an archive's member list) refuses the
  same things with the same messages.

Order is deterministic: in each folder its files by name, then its subfolders by name, depth first
(``os.walk`` top-down with sorted names), with ``/`` separators. Submission digests list files in
this order, so it must not change. POSIX only (``O_NOFOLLOW``, ``dir_fd``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import unicodedata
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Literal, Protocol

from worldforge.core.digests import DIGEST_PREFIX
from worldforge.core.errors import WorldForgeError

#: Largest single file accepted (model weights in a submission belong to its environment, not here).
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Largest folder accepted, all files together (the competition allowed 1 GB; this is per trial copy).
MAX_TOTAL_BYTES = 256 * 1024 * 1024
#: Most files and folders together in one walk.
MAX_FILES = 5000
#: Deepest nesting accepted (components of a relative path).
MAX_DEPTH = 32
#: Names skipped without being looked at: caches, version control, editor and OS litter, the team's
#: ``.env`` with its API key (never copied into a trial nor digested).
SKIPPED_NAMES = frozenset(
    {"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".ruff_cache",
     ".ipynb_checkpoints", ".venv", "venv", ".idea", ".vscode", ".DS_Store", ".env"}
)  # fmt: skip
SKIPPED_SUFFIXES = (".pyc", ".pyo")

#: What an entry is, as named in refusals (a zip walker maps its members' modes through :func:`kind_of`).
EntryKind = Literal[
    "file", "folder", "symbolic link", "FIFO", "socket", "character device", "block device", "unknown"
]
_DESCRIBED: dict[str, str] = {
    "symbolic link": "a symbolic link",
    "FIFO": "a FIFO (named pipe)",
    "socket": "a socket",
    "character device": "a character device",
    "block device": "a block device",
    "unknown": "neither a regular file nor a folder",
    "folder": "a folder, not a file",
}
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CHUNK = 1 << 20
#: A folder listing is refused beyond this many names per allowed entry (skipped names included).
_LISTING_FACTOR = 4
_SHOWN_CHARS = 200
_CHANGED = "; it changed after the folder was listed"


@dataclass(frozen=True)
class TreeLimits:
    """The caps of one walk; the defaults are the module constants."""

    max_files: int = MAX_FILES  # files and folders together
    max_file_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = MAX_TOTAL_BYTES
    max_depth: int = MAX_DEPTH


DEFAULT_LIMITS = TreeLimits()


@dataclass(frozen=True)
class TreeFile:
    """One regular file found by a walk: where (relative, ``/``), how big, which inode."""

    path: str
    size: int
    device: int | None = None
    inode: int | None = None
    digest: str | None = None  # ``sha256:...`` when the walk read the file


class FileRecord(Protocol):
    """What :func:`read_file` and :func:`copy_tree` need of a listed file (``SubmissionFile`` fits)."""

    @property
    def path(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def digest(self) -> str | None: ...


def is_skipped(name: str) -> bool:
    """Whether a walk skips ``name`` by default (:data:`SKIPPED_NAMES`, :data:`SKIPPED_SUFFIXES`)."""
    return name in SKIPPED_NAMES or name.endswith(SKIPPED_SUFFIXES)


def kind_of(mode: int) -> EntryKind:
    """The kind of an entry from its ``st_mode`` (an ``lstat``'s, or an archive member's)."""
    kinds: tuple[tuple[Callable[[int], bool], EntryKind], ...] = (
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "folder"),
        (stat.S_ISLNK, "symbolic link"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    )
    return next((kind for test, kind in kinds if test(mode)), "unknown")


def shown(text: str) -> str:
    """``text`` safe for a one-line message: undecodable bytes as ``\\xNN``, control and line-breaking
    characters escaped, cut to a readable length (names and link targets are the team's choice)."""
    out: list[str] = []
    for ch in text[:_SHOWN_CHARS]:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch == "\\" or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out) + ("..." if len(text) > _SHOWN_CHARS else "")


def _fail(label: str, message: str) -> WorldForgeError:
    return WorldForgeError(f"{shown(label)}: refused: {message}.")


def refusal(
    label: str, name: str, kind: EntryKind, target: str | None = None, *, changed: bool = False
) -> WorldForgeError:
    """The error for an entry of a kind that is never read (``target``: a link's text, not resolved;
    ``changed``: the entry was something else when the folder was listed)."""
    what = _DESCRIBED.get(kind, _DESCRIBED["unknown"])
    if kind == "symbolic link" and target is not None:
        what += f" (to {shown(target)})"
    return _fail(label, f"{shown(name)} is {what}" + (_CHANGED if changed else ""))


def check_name(name: str, label: str) -> list[str]:
    """The components of a relative ``/`` path, refused when it is absolute, has empty, ``.`` or
    ``..`` components, bytes that are not UTF-8, or control or line-breaking characters."""
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise _fail(label, f"{shown(name)} is not a plain relative path")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(label, f"{shown(name)} is not a UTF-8 name") from None
    if any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in name):
        raise _fail(label, f"{shown(name)} has control characters in its name")
    return parts


@dataclass
class TreeBudget:
    """One walk's running totals against its :class:`TreeLimits`.

    :meth:`check_entry` is the single place where an entry is accepted or refused, whatever lists the
    entries (a folder walk here, an archive's member list before anything is extracted).
    """

    limits: TreeLimits
    label: str
    entries: int = 0
    total_bytes: int = 0

    def check_entry(self, name: str, kind: EntryKind, size: int = 0, *, target: str | None = None) -> None:
        """Count ``name`` (a relative path) of ``kind`` and ``size``; raise if it may not be read."""
        parts = check_name(name, self.label)
        if len(parts) > self.limits.max_depth:
            raise _fail(self.label, f"{shown(name)} is nested deeper than {self.limits.max_depth} folders")
        if kind not in ("file", "folder"):
            raise refusal(self.label, name, kind, target)
        self.entries += 1
        if self.entries > self.limits.max_files:
            raise _fail(self.label, f"more than {self.limits.max_files} files and folders")
        if kind == "file":
            if size > self.limits.max_file_bytes:
                raise _fail(
                    self.label,
                    f"{shown(name)} is {size} bytes; the limit per file is {self.limits.max_file_bytes}",
                )
            self.total_bytes += size
            if self.total_bytes > self.limits.max_total_bytes:
                raise _fail(
                    self.label,
                    f"larger than {self.limits.max_total_bytes} bytes in all (reached at {shown(name)})",
                )


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _link_text(name: str, dir_fd: int | None = None) -> str | None:
    """A link's own text (``readlink`` reads the link, it does not follow it)."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def _unopenable(label: str, rel: str, dir_fd: int, name: str, exc: OSError, listed: bool) -> WorldForgeError:
    """Why ``name`` in ``dir_fd`` could not be opened as the file or folder it should be
    (``listed``: a walk accepted it earlier, so whatever it is now, it changed)."""
    st = _lstat_at(dir_fd, name)
    if st is None:
        return _fail(
            label, f"{shown(rel)} " + ("disappeared after the folder was listed" if listed else "is missing")
        )
    kind = kind_of(st.st_mode)
    if kind in ("file", "folder") and exc.errno not in (errno.ELOOP, errno.ENOTDIR):
        return WorldForgeError(f"{shown(label)}: cannot read {shown(rel)} ({exc.strerror}).")
    if kind in ("file", "folder"):
        return _fail(
            label,
            f"{shown(rel)} is {_DESCRIBED['folder'] if kind == 'folder' else 'not a folder'}"
            + (_CHANGED if listed else ""),
        )
    target = _link_text(name, dir_fd) if kind == "symbolic link" else None
    return refusal(label, rel, kind, target, changed=listed)


def _open_root(root: Path, label: str) -> int:
    """The walked folder, opened without following its last component."""
    try:
        return os.open(root, _DIR_FLAGS)
    except OSError as exc:
        try:
            st = os.lstat(root)
        except FileNotFoundError:
            raise WorldForgeError(f"{shown(label)}: not found.") from None
        kind = kind_of(st.st_mode)
        if kind == "symbolic link":
            target = shown(_link_text(str(root)) or "?")
            raise _fail(
                label, f"the folder itself is a symbolic link (to {target}); name the folder it points to"
            ) from None
        if kind != "folder":
            raise WorldForgeError(f"{shown(label)}: not a folder.") from None
        raise WorldForgeError(f"{shown(label)}: cannot be read ({exc.strerror}).") from None


def _open_dir_at(
    dir_fd: int, name: str, rel: str, label: str, expected: os.stat_result | None, listed: bool
) -> int:
    """Subfolder ``name`` of ``dir_fd`` (never through a link); ``expected``: the walk's ``lstat``."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _unopenable(label, rel, dir_fd, name, exc, listed) from None
    st = os.fstat(fd)
    if expected is not None and (st.st_dev, st.st_ino) != (expected.st_dev, expected.st_ino):
        os.close(fd)
        raise _fail(label, f"{shown(rel)} is another folder than the one listed{_CHANGED}")
    return fd


def _descend(root_fd: int, parts: list[str], label: str, listed: bool) -> int:
    """A new descriptor for the folder ``parts`` below ``root_fd``, each step without following links."""
    fd = os.dup(root_fd)
    for i, part in enumerate(parts):
        try:
            child = _open_dir_at(fd, part, "/".join(parts[: i + 1]), label, None, listed)
        finally:
            os.close(fd)
        fd = child
    return fd


def _listing(dir_fd: int, rel: str, limits: TreeLimits, label: str) -> list[str]:
    names: list[str] = []
    bound = limits.max_files * _LISTING_FACTOR
    with os.scandir(dir_fd) as entries:
        for entry in entries:
            names.append(entry.name)
            if len(names) > bound:
                where = shown(rel) if rel else "the folder"
                raise _fail(label, f"{where} lists more than {bound} names")
    return sorted(names)


def _walk_dir(
    dir_fd: int,
    prefix: str,
    budget: TreeBudget,
    excluded: Callable[[str], bool],
    recursive: bool,
    out: list[TreeFile],
) -> None:
    folders: list[tuple[str, os.stat_result]] = []
    for name in _listing(dir_fd, prefix.rstrip("/"), budget.limits, budget.label):
        if excluded(name):
            continue
        rel = prefix + name
        check_name(rel, budget.label)  # before the name is used for anything
        st = _lstat_at(dir_fd, name)
        if st is None:
            raise _fail(budget.label, f"{shown(rel)} disappeared while the folder was listed")
        kind = kind_of(st.st_mode)
        if kind == "folder":
            if recursive:
                budget.check_entry(rel, kind)
                folders.append((name, st))
            continue
        target = _link_text(name, dir_fd) if kind == "symbolic link" else None
        budget.check_entry(rel, kind, st.st_size, target=target)
        out.append(TreeFile(rel, st.st_size, st.st_dev, st.st_ino))
    for name, st in folders:
        child = _open_dir_at(dir_fd, name, prefix + name, budget.label, st, True)
        try:
            _walk_dir(child, f"{prefix}{name}/", budget, excluded, recursive, out)
        finally:
            os.close(child)


def walk_tree(
    root: str | Path,
    *,
    limits: TreeLimits = DEFAULT_LIMITS,
    excluded: Callable[[str], bool] = is_skipped,
    label: str | None = None,
    under: str = "",
    recursive: bool = True,
    digests: bool = False,
) -> list[TreeFile]:
    """Every regular file below ``root`` in walk order (module docstring), checked against ``limits``.

    ``excluded(name)`` is asked for every file and folder name before it is looked at; an excluded
    folder is not entered. ``under`` starts the walk at a subfolder (reached without following links)
    while paths stay relative to ``root``; ``recursive=False`` lists one folder and ignores its
    subfolders. ``digests=True`` also reads every file through :func:`read_file`'s checks and records
    its digest, which :func:`copy_tree` then verifies. Errors name the entry and start with ``label``
    (default: ``root``).
    """
    base = Path(root)
    where = label if label is not None else str(base)
    budget = TreeBudget(limits, where)
    out: list[TreeFile] = []
    root_fd = _open_root(base, where)
    try:
        parts = check_name(under, where) if under else []
        start = _descend(root_fd, parts, where, False)
        try:
            _walk_dir(start, under + "/" if under else "", budget, excluded, recursive, out)
        finally:
            os.close(start)
        if digests:
            out = [replace(f, digest=_pump(root_fd, f, limits, where, None)) for f in out]
    finally:
        os.close(root_fd)
    return out


def stat_file(
    root: str | Path, name: str, *, limits: TreeLimits = DEFAULT_LIMITS, label: str | None = None
) -> TreeFile | None:
    """The one file ``name`` below ``root`` as a walk would list it; ``None`` if nothing has that name.

    Anything but a regular file under that name (a link, a folder, a FIFO) is refused.
    """
    base = Path(root)
    where = label if label is not None else str(base)
    parts = check_name(name, where)
    root_fd = _open_root(base, where)
    try:
        dir_fd = _descend(root_fd, parts[:-1], where, False)
    finally:
        os.close(root_fd)
    try:
        st = _lstat_at(dir_fd, parts[-1])
        if st is None:
            return None
        kind = kind_of(st.st_mode)
        target = _link_text(parts[-1], dir_fd) if kind == "symbolic link" else None
    finally:
        os.close(dir_fd)
    if kind == "folder":
        raise refusal(where, name, kind)
    TreeBudget(limits, where).check_entry(name, kind, st.st_size, target=target)
    return TreeFile(name, st.st_size, st.st_dev, st.st_ino)


def _open_file(root_fd: int, entry: FileRecord, limits: TreeLimits, label: str) -> int:
    """``entry`` opened for reading, verified to be the regular file the walk listed."""
    parts = check_name(entry.path, label)
    rel = shown(entry.path)
    if entry.size > limits.max_file_bytes:
        raise _fail(label, f"{rel} is {entry.size} bytes; the limit per file is {limits.max_file_bytes}")
    dir_fd = _descend(root_fd, parts[:-1], label, True)
    try:
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            raise _unopenable(label, entry.path, dir_fd, parts[-1], exc, True) from None
    finally:
        os.close(dir_fd)
    st = os.fstat(fd)
    kind = kind_of(st.st_mode)
    listed = (getattr(entry, "device", None), getattr(entry, "inode", None))
    problem = None
    if kind != "file":
        problem = f"{rel} is {_DESCRIBED.get(kind, kind)}{_CHANGED}"
    elif None not in listed and listed != (st.st_dev, st.st_ino):
        problem = f"{rel} is another file than the one listed{_CHANGED}"
    elif st.st_size != entry.size:
        problem = f"{rel} is {st.st_size} bytes, {entry.size} when the folder was listed"
    if problem is not None:
        os.close(fd)
        raise _fail(label, problem)
    return fd


def _pump(
    root_fd: int, entry: FileRecord, limits: TreeLimits, label: str, sink: Callable[[bytes], object] | None
) -> str:
    """Stream ``entry``'s bytes into ``sink``; its digest. Reads at most one byte past the listed size."""
    fd = _open_file(root_fd, entry, limits, label)
    try:
        h = hashlib.sha256()
        n = 0
        while chunk := os.read(fd, min(_CHUNK, entry.size + 1 - n)):
            n += len(chunk)
            if n > entry.size:
                raise _fail(
                    label, f"{shown(entry.path)} grew while it was read (listed at {entry.size} bytes)"
                )
            h.update(chunk)
            if sink is not None:
                sink(chunk)
        if n < entry.size:
            raise _fail(label, f"{shown(entry.path)} shrank while it was read (listed at {entry.size} bytes)")
    finally:
        os.close(fd)
    digest = DIGEST_PREFIX + h.hexdigest()
    if entry.digest is not None and digest != entry.digest:
        raise _fail(label, f"{shown(entry.path)} has other bytes than when the folder was listed")
    return digest


def read_file(
    root: str | Path, entry: FileRecord, *, limits: TreeLimits = DEFAULT_LIMITS, label: str | None = None
) -> bytes:
    """The bytes of one listed file of ``root``, read with the checks of the module docstring."""
    base = Path(root)
    where = label if label is not None else str(base)
    chunks: list[bytes] = []
    root_fd = _open_root(base, where)
    try:
        _pump(root_fd, entry, limits, where, chunks.append)
    finally:
        os.close(root_fd)
    return b"".join(chunks)


def _make_dirs(destination: Path, parts: list[str], made: set[str], label: str) -> None:
    for i in range(len(parts)):
        rel = "/".join(parts[: i + 1])
        if rel in made:
            continue
        folder = destination / rel
        try:
            os.mkdir(folder, 0o755)
        except FileExistsError:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                raise WorldForgeError(f"{shown(label)}: cannot copy into {folder}: not a folder.") from None
        os.chmod(folder, 0o755)  # whatever the umask; a folder this copy made or checked above
        made.add(rel)


def _create(target: Path, label: str) -> int:
    try:
        return os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise WorldForgeError(f"{shown(label)}: cannot copy to {target} ({exc.strerror}).") from None


def copy_tree(
    files: Iterable[FileRecord],
    source_root: str | Path,
    destination: str | Path,
    *,
    limits: TreeLimits = DEFAULT_LIMITS,
    label: str | None = None,
) -> None:
    """Copy exactly ``files`` (as listed by a walk) from ``source_root`` into ``destination``.

    Sources are opened as :func:`read_file` does; a file whose bytes no longer match its listed size
    or digest is refused and its partial copy removed. Created folders are ``0755`` and files
    ``0644`` whatever the umask, so that a sandbox running as another uid can read them; the mode of
    ``destination`` itself (created if missing) is the caller's. Target files must not exist yet.
    """
    base = Path(source_root)
    where = label if label is not None else str(base)
    target_root = Path(destination)
    target_root.mkdir(parents=True, exist_ok=True)
    made: set[str] = set()
    budget = TreeBudget(limits, where)  # the records' own sizes, capped as a walk caps them
    root_fd = _open_root(base, where)
    try:
        for entry in files:
            parts = check_name(entry.path, where)
            budget.check_entry(entry.path, "file", entry.size)
            _make_dirs(target_root, parts[:-1], made, where)
            target = target_root.joinpath(*parts)
            out = _create(target, where)
            try:
                os.fchmod(out, 0o644)
                _pump(root_fd, entry, limits, where, partial(_write_all, out))
            except BaseException:
                os.close(out)
                with suppress(OSError):
                    os.unlink(target)
                raise
            os.close(out)
    finally:
        os.close(root_fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


__all__ = [
    "DEFAULT_LIMITS",
    "EntryKind",
    "FileRecord",
    "MAX_DEPTH",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_TOTAL_BYTES",
    "SKIPPED_NAMES",
    "SKIPPED_SUFFIXES",
    "TreeBudget",
    "TreeFile",
    "TreeLimits",
    "check_name",
    "copy_tree",
    "is_skipped",
    "kind_of",
    "read_file",
    "refusal",
    "shown",
    "stat_file",
    "walk_tree",
]
