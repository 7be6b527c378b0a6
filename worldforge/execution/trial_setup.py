"""What a trial process does to itself before a submission's code runs: namespaces, privileges, imports.

Loaded by path by :mod:`worldforge.execution.trial_host` (the host runs as ``python -I -B
trial_host.py`` with its own folder removed from ``sys.path``, so a plain ``import`` of a sibling
would fail, or find a team's module of the same name). Standard library only, like the host: it runs
under a submission's own virtual environment too.

**Importing the entry.** The organisers ran each program from its team folder, so the trial's
working directory is the private copy of that folder and its entry module is imported by its dotted
path from there (``tot/main.py`` is ``tot.main``: relative imports inside ``tot`` work), with
``sys.path`` = the team folder, the entry module's own folder (``python tot/main.py`` puts it first),
then the base environment.

An entry whose relative imports reach the team folder itself (``from .common import x`` in a
top-level ``main.py``) could only have been run with the team folder as a package (``python -m
Team.main`` from its parent). Such an entry is imported as ``<package>.<module>``, the package being
the team folder: named after the folder (characters that cannot be in a Python name become ``_``; a
trailing ``_`` is added while the name is a keyword, a standard-library module or a module the trial
has already imported, so the team's package never shadows one), its ``__init__.py`` run if it has
one, its ``__path__`` the trial's copy. Nothing else goes on ``sys.path`` for it, so absolute imports
of the team's own top-level modules keep working beside the relative ones.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import keyword
import os
import re
import sys
from collections.abc import Collection
from types import ModuleType
from typing import Any

_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWUSER, _CLONE_NEWPID = 0x20000, 0x8000000, 0x10000000, 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_REC, _MS_PRIVATE = 2, 4, 0x4000, 0x40000
_PR_SET_DUMPABLE, _PR_CAPBSET_DROP = 4, 24


def libc() -> Any:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def set_dumpable(on: bool) -> None:
    """Whether this process's ``/proc`` files (its pipes, its memory) are open to its own uid."""
    libc().prctl(_PR_SET_DUMPABLE, 1 if on else 0, 0, 0, 0)


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    encode = lambda v: v.encode() if v is not None else None  # noqa: E731
    result = libc().mount(encode(source), encode(target), encode(fstype), flags, encode(data))
    _check(result, f"mount {target}")


def enter_trial_namespaces(cfg: dict[str, Any]) -> None:
    """Give the coming trial namespaces of its own (called in a forked child of the host).

    A user namespace (owning the rest, so no privilege is needed), a PID namespace for the
    trial's processes (the host and its relay are not in it: the trial cannot see or signal them,
    and when the namespace's first process ends the kernel kills all of them), an IPC namespace
    (SysV objects and POSIX queues a trial leaves die with it) and a mount namespace with a fresh,
    sized ``/tmp`` and ``/dev/shm`` (nothing a trial writes is seen by the next)."""
    uid, gid = os.getuid(), os.getgid()
    set_dumpable(True)  # the host is not: its /proc files would be root's
    _check(libc().unshare(_CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWIPC | _CLONE_NEWNS), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
            handle.write(text)
    # From here on this stage (outside the trial's PID namespace, like the host) keeps its /proc
    # files closed to the trial, which shares its uid: the trial turns dumping on for itself only.
    set_dumpable(False)
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE, None)
    for target, size in (("/tmp", cfg["trial_tmp_bytes"]), ("/dev/shm", cfg["shm_bytes"])):
        _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={int(size)},mode=1777")


def drop_privileges() -> None:
    """No capabilities left in the trial's user namespace (it could otherwise unmount its own
    ``/tmp`` and see the host's), and the out-of-memory killer's first choice in the sandbox."""
    import ctypes

    lib = libc()
    for cap in range(64):
        if lib.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    _check(lib.capset(header, data), "capset")
    set_dumpable(True)
    try:
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as handle:
            handle.write("1000")
    except OSError:
        pass


def dotted(relpath: str) -> str:
    """The module name of a ``.py`` file relative to the team folder (``tot/main.py`` -> ``tot.main``)."""
    return relpath[: -len(".py")].replace("/", ".")


def search_path(team_dir: str, relpath: str, base: list[str]) -> list[str]:
    """``sys.path`` for a trial: the team folder, the entry module's folder, then ``base``."""
    entry_dir = os.path.join(team_dir, os.path.dirname(relpath)) if "/" in relpath else team_dir
    return list(dict.fromkeys([team_dir, entry_dir, *base]))


def reaches_team_folder(source: str | bytes, relpath: str) -> bool:
    """Whether the entry's relative imports climb to the team folder itself (``from . import x`` in
    a top-level module, ``from .. import x`` one folder down): only a package import can run it."""
    depth = relpath.count("/")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False  # the plain import reports the error
    return any(isinstance(node, ast.ImportFrom) and node.level > depth for node in ast.walk(tree))


def package_name(team: str, taken: Collection[str]) -> str:
    """The name the team folder is imported under as a package (module docstring)."""
    name = re.sub(r"\W", "_", team) or "team"
    if not name.isidentifier():
        name = "_" + name
    stdlib: Collection[str] = getattr(sys, "stdlib_module_names", ())  # Python 3.10+
    while keyword.iskeyword(name) or name in taken or name in stdlib:
        name += "_"
    return name


def _as_package(name: str, team_dir: str) -> None:
    """Register the team folder as package ``name`` (running its ``__init__.py`` if there is one)."""
    init = os.path.join(team_dir, "__init__.py")
    if os.path.isfile(init):
        spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[team_dir])
    else:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [team_dir]
    if spec is None:  # pragma: no cover - a .py path always has a spec
        raise ImportError(f"cannot import the team folder as package {name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        if spec.loader is not None:
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise


def entry_import_name(
    team_dir: str, relpath: str, team: str, taken: Collection[str]
) -> tuple[str, str | None]:
    """``(module name to import, package the team folder becomes or None)`` for the entry ``relpath``."""
    with open(os.path.join(team_dir, relpath), "rb") as handle:
        source = handle.read()
    if not reaches_team_folder(source, relpath):
        return dotted(relpath), None
    package = package_name(team, taken)
    return f"{package}.{dotted(relpath)}", package


def import_entry(team_dir: str, relpath: str, team: str) -> ModuleType:
    """Import the entry module of the team folder copy ``team_dir`` (the working directory)."""
    name, package = entry_import_name(team_dir, relpath, team, set(sys.modules))
    if package is not None:
        _as_package(package, team_dir)
    return importlib.import_module(name)


__all__ = [
    "dotted",
    "drop_privileges",
    "enter_trial_namespaces",
    "entry_import_name",
    "import_entry",
    "libc",
    "package_name",
    "reaches_team_folder",
    "search_path",
    "set_dumpable",
]
