"""A whole competition field: one folder per team, in a folder or a ``.zip`` as the organisers publish it.

:func:`team_folders` lists the teams (every sub-folder, sorted) and what it ignored, with why: hidden
entries, ``__MACOSX/`` and AppleDouble ``._*`` litter from zips made on a Mac, files beside the team
folders, links (never followed). Each team folder is then loaded like any ``--program`` folder
(:mod:`worldforge.pcg.programs.submission`), which reads it through the safe walker.

A ``.zip`` is untrusted input read by the evaluator itself, so it is held to the walker's rules
before one byte is written: every member name must be a plain relative path (no absolute names, no
``..``; ``\\`` counts as a separator), no member may be a symbolic link, device, FIFO or socket (the
file-type bits of its external attributes), none may be encrypted or appear twice, and the caps on
count, depth, per-file and total size (:class:`~worldforge.execution.files.TreeBudget`) are checked
on the sizes the central directory declares. While extracting, a member that inflates beyond its
declared size (a zip bomb's lie) is refused. Files are written ``0644`` and folders ``0755``, inside
``extract_to`` only, never over anything. A failed extraction removes what it wrote. A zip whose only
top-level folder holds the team folders (``submissions/TeamA/...``) is unwrapped.

``extract_to`` may be reused: a completed extraction leaves a marker with the zip's digest, and the
same zip is then listed again without extracting it twice. Any other non-empty folder is refused.
"""

from __future__ import annotations

import lzma
import os
import shutil
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from worldforge.core.digests import digest_file
from worldforge.core.errors import WorldForgeError
from worldforge.execution.files import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    EntryKind,
    TreeBudget,
    TreeLimits,
    check_name,
    kind_of,
    shown,
)
from worldforge.pcg.programs.submission import macos_metadata

#: Caps of a whole field (a zip's members, or a folder's teams): many teams of up to 256 MB each.
FIELD_LIMITS = TreeLimits(
    max_files=100_000,
    max_file_bytes=MAX_FILE_BYTES,
    max_total_bytes=4 * 1024 * 1024 * 1024,
    max_depth=MAX_DEPTH + 2,
)
#: Written into ``extract_to`` once a zip is fully extracted (hidden: never a team).
MARKER = ".worldforge-extracted"
_SUPPORTED = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)
_CHUNK = 1 << 20
_TEAM_FILES = ("requirements.txt", "__init__.py")


@dataclass(frozen=True)
class TeamFolder:
    """One team of a field."""

    name: str  # the team folder's name
    path: Path  # a readable folder (inside the extraction folder for a zip)


def _refuse(label: str, message: str) -> WorldForgeError:
    return WorldForgeError(f"{shown(label)}: refused: {message}.")


@dataclass(frozen=True)
class _Member:
    info: zipfile.ZipInfo
    name: str  # checked relative path, "/" separators, no trailing "/"
    folder: bool


def _member_kind(info: zipfile.ZipInfo) -> EntryKind:
    """``file``/``folder``, or the special kind its Unix mode bits declare (refused by the budget)."""
    mode = info.external_attr >> 16
    kind = kind_of(mode) if stat.S_IFMT(mode) else "file"
    if kind not in ("file", "folder"):
        return kind
    return "folder" if info.filename.endswith(("/", "\\")) or kind == "folder" else "file"


def _plan(archive: zipfile.ZipFile, label: str, limits: TreeLimits) -> tuple[list[_Member], list[str]]:
    """Every member checked from the central directory, before anything is written: what to
    extract, and ``"NAME: why"`` for what is skipped."""
    budget = TreeBudget(limits, label)
    members: list[_Member] = []
    files: set[str] = set()
    folders: set[str] = set()
    macosx: dict[str, int] = {}
    hidden: dict[str, None] = {}
    ignored: list[str] = []
    for info in archive.infolist():
        name = info.filename.replace("\\", "/").rstrip("/")
        parts = check_name(name, label)
        if (why := macos_metadata(name)) is not None:
            if "__MACOSX" in parts:
                top = "/".join(parts[: parts.index("__MACOSX") + 1]) + "/"
                macosx[top] = macosx.get(top, 0) + 1
            else:
                ignored.append(f"{shown(name)}: {why}")
            continue
        if parts[0].startswith("."):  # never a team, never extracted (nor the marker's name)
            hidden.setdefault(f"{shown(parts[0])}: hidden", None)
            continue
        kind = _member_kind(info)
        budget.check_entry(name, kind, 0 if kind == "folder" else info.file_size)
        if info.flag_bits & 0x1:
            raise _refuse(label, f"{shown(name)} is encrypted")
        if kind == "file" and info.compress_type not in _SUPPORTED:
            raise _refuse(label, f"{shown(name)} uses an unsupported compression ({info.compress_type})")
        if name in files:
            raise _refuse(label, f"{shown(name)} appears twice in the archive")
        parents = {"/".join(parts[:i]) for i in range(1, len(parts))}
        if clash := sorted(parents & files):
            raise _refuse(label, f"{shown(name)} is inside {shown(clash[0])}, which is a file")
        (files if kind == "file" else folders).add(name)
        folders |= parents
        members.append(_Member(info, name, kind == "folder"))
    if clash := sorted(files & folders):
        raise _refuse(label, f"{shown(clash[0])} is both a file and a folder in the archive")
    notes = [
        f"{top}: macOS archive metadata ({n} entr{'ies' if n != 1 else 'y'})" for top, n in macosx.items()
    ]
    return members, [*notes, *hidden, *ignored]


def _write_member(archive: zipfile.ZipFile, member: _Member, target: Path, label: str) -> None:
    """One file, never more bytes than the central directory declared (a bomb is cut and refused)."""
    declared = member.info.file_size
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    written = 0
    try:
        os.fchmod(fd, 0o644)
        with archive.open(member.info) as source:
            while chunk := source.read(_CHUNK):
                written += len(chunk)
                if written > declared:
                    break
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
    except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, ValueError, NotImplementedError) as exc:
        # zipfile stops a member at its declared size and then fails its checksum: a bomb's lie
        # about its size ends here, as does a corrupt member.
        raise _refuse(label, f"{shown(member.name)} does not inflate to its declared {declared} bytes "
                             f"({type(exc).__name__}: {shown(str(exc))})") from None  # fmt: skip
    finally:
        os.close(fd)
    if written > declared:
        raise _refuse(label, f"{shown(member.name)} inflates beyond its declared {declared} bytes")
    if written != declared:
        raise _refuse(label, f"{shown(member.name)} inflates to {written} bytes, not the declared {declared}")


def _make_folder(path: Path) -> None:
    os.mkdir(path, 0o755)
    os.chmod(path, 0o755)  # whatever the umask


def _extract(archive: zipfile.ZipFile, members: list[_Member], root: Path, label: str) -> None:
    made: set[str] = set()
    for member in members:
        parts = member.name.split("/")
        for i in range(1, len(parts) + (1 if member.folder else 0)):
            sub = "/".join(parts[:i])
            if sub not in made:
                _make_folder(root / sub)
                made.add(sub)
        if not member.folder:
            _write_member(archive, member, root / member.name, label)


def _prepare_target(extract_to: Path, digest: str, label: str) -> bool:
    """Whether ``extract_to`` already holds this zip's extraction; refuses any other non-empty folder."""
    marker = extract_to / MARKER
    try:
        if marker.read_text(encoding="ascii").strip() == digest:
            return True
    except (OSError, UnicodeDecodeError):
        pass
    try:
        extract_to.mkdir(mode=0o755, parents=True, exist_ok=True)
        entries = os.listdir(extract_to)
    except OSError as exc:
        raise WorldForgeError(f"{shown(label)}: cannot extract into {extract_to} ({exc.strerror}).") from None
    if entries:
        raise WorldForgeError(
            f"{shown(label)}: cannot extract into {extract_to}: it is not empty and holds no extraction "
            "of this zip; choose an empty folder."
        )
    return False


def _clear(extract_to: Path) -> None:
    for name in os.listdir(extract_to):
        path = extract_to / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _unzip(source: Path, extract_to: Path, limits: TreeLimits) -> list[str]:
    label = str(source)
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as exc:
        raise WorldForgeError(f"{shown(label)}: not a readable zip file ({shown(str(exc))}).") from None
    with archive:
        members, ignored = _plan(archive, label, limits)
        digest = digest_file(source)
        if _prepare_target(extract_to, digest, label):
            return ignored
        try:
            _extract(archive, members, extract_to, label)
            (extract_to / MARKER).write_text(digest + "\n", encoding="ascii")
        except BaseException:
            _clear(extract_to)
            raise
    return ignored


def _holds_team_files(folder: Path) -> bool:
    """Whether ``folder`` looks like one team's own folder (Python files, requirements, prompts)."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False) and entry.name == "prompts":
                    return True
                if entry.is_file(follow_symlinks=False) and (
                    entry.name.endswith(".py") or entry.name in _TEAM_FILES
                ):
                    return True
    except OSError:
        return False
    return False


def _why_ignored(entry: os.DirEntry[str]) -> str | None:
    """Why a top-level entry of a field is not a team, or ``None`` when it is one."""
    if entry.name == MARKER:
        return ""
    if entry.name == "__MACOSX":
        return "macOS archive metadata"
    if entry.name.startswith("._"):
        return "AppleDouble metadata"
    if entry.name.startswith("."):
        return "hidden"
    if entry.is_symlink():
        return "a symbolic link (not followed)"
    if not entry.is_dir(follow_symlinks=False):
        return "a file, not a team folder"
    try:
        check_name(entry.name, "")
    except WorldForgeError:
        return "not a usable folder name"
    return None


def _list(root: Path, label: str, limits: TreeLimits) -> tuple[list[TeamFolder], list[str]]:
    teams: list[TeamFolder] = []
    ignored: list[str] = []
    try:
        with os.scandir(root) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as exc:
        raise WorldForgeError(f"{shown(label)}: cannot be read ({exc.strerror}).") from None
    if len(entries) > limits.max_files:
        raise _refuse(label, f"more than {limits.max_files} entries")
    for entry in entries:
        why = _why_ignored(entry)
        if why is None:
            teams.append(TeamFolder(entry.name, root / entry.name))
        elif why:
            ignored.append(f"{shown(entry.name)}: {why}")
    return teams, ignored


def _unwrapped(root: Path) -> Path:
    """The single folder a zip wraps its teams in (``submissions/``), when that is what it holds."""
    try:
        with os.scandir(root) as listing:  # hidden entries and macOS litter were not extracted
            folders = [e for e in listing if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
    except OSError:
        return root
    if len(folders) != 1 or _holds_team_files(root) or _holds_team_files(Path(folders[0].path)):
        return root
    return Path(folders[0].path)


def team_folders(
    source: str | Path, *, extract_to: Path | None = None, limits: TreeLimits = FIELD_LIMITS
) -> tuple[list[TeamFolder], list[str]]:
    """The teams of a field folder or ``.zip`` (sorted by name) and ``"NAME: why"`` for every
    entry ignored (module docstring). A zip is extracted into ``extract_to``, which it requires."""
    path = Path(source)
    label = str(source)
    try:
        mode = path.stat().st_mode  # the organiser's own path is followed as given
    except OSError:
        raise WorldForgeError(f"{shown(label)}: not found.") from None
    if stat.S_ISDIR(mode):
        return _list(path, label, limits)
    if not (stat.S_ISREG(mode) and path.suffix.lower() == ".zip"):
        raise WorldForgeError(f"{shown(label)}: not a folder of team folders nor a .zip of them.")
    if extract_to is None:
        raise WorldForgeError(f"{shown(label)}: a .zip of teams needs a folder to extract it into.")
    zipped = _unzip(path, Path(extract_to), limits)
    root = _unwrapped(Path(extract_to))
    teams, ignored = _list(root, label, limits)
    return teams, [*zipped, *ignored]


__all__ = ["FIELD_LIMITS", "MARKER", "TeamFolder", "team_folders"]
