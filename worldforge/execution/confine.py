"""Confining a command: the one place that builds a bubblewrap sandbox around untrusted work.

Two kinds of untrusted work run here: a submission's trial host (its Python, its files) and the
installer of its ``requirements.txt`` (pip, over wheels a team may have picked). Both start through
:func:`confine_command`, so the rules below hold for both:

* **An unprivileged kernel uid.** Started by root, bubblewrap runs *without* a user namespace (root
  sets up the mounts, so an interpreter in a ``0700`` home such as pyenv's can still be bound), and
  the command inside is started by ``setpriv`` as a uid that is neither 0 nor the evaluator's, with
  no groups, no capabilities and ``no_new_privs``. (``bwrap --unshare-user --uid N`` would not do:
  inside a user namespace created by root the sandbox's uid still maps to kernel uid 0, and a
  root-owned ``0600`` file stays readable.) Started by another user, bubblewrap creates a user
  namespace as usual and the kernel uid is that user's: :func:`kernel_uid_note` says so.
* **A minimal file system.** Nothing of the host is visible but the system's ``/usr`` (with the
  ``/bin``, ``/lib*`` links of a merged-``/usr`` system), a few files of ``/etc`` that the dynamic
  loader and Python read, the interpreter prefixes, and the paths the caller binds read-only. No
  ``/var``, ``/srv``, ``/run``, no home folder, no project source: a team's code cannot read
  another team's files or the evaluator's ``.env`` because they are not there. The root is
  remounted read-only; the only writable places are tmpfs mounts with a size.
* **Namespaces.** New PID, IPC, UTS, cgroup and (unless ``network=True``) network namespaces, a new
  session (no terminal injection), an environment built from nothing.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

#: Files of ``/etc`` a confined Python needs (the loader's cache, the time zone, Debian's links).
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives")
#: What a confined installer additionally needs to reach an index: name resolution and TLS roots.
NETWORK_ETC_FILES = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
)
#: Links of a merged-``/usr`` system (a folder on older systems: bound read-only instead).
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Kernel uids confined work runs as when the evaluator is root: far from any real account.
UID_BASE = 1_500_000_000
#: Default size of each tmpfs a sandbox gets (``/tmp``, ``/dev/shm``).
TMPFS_BYTES = 64 * 1024 * 1024
_counter = itertools.count()


@dataclass(frozen=True)
class Confinement:
    """What one confined command may see and use.

    ``ro_binds``/``rw_binds`` map a host path to its path inside (absent sources are skipped);
    ``tmpfs`` maps a path inside to its size in bytes; ``files`` are small files written inside
    (path -> text); ``env`` is the whole environment the command gets.
    """

    ro_binds: Mapping[str, str] = field(default_factory=dict)
    rw_binds: Mapping[str, str] = field(default_factory=dict)
    tmpfs: Mapping[str, int] = field(default_factory=lambda: {"/tmp": TMPFS_BYTES})
    env: Mapping[str, str] = field(default_factory=dict)
    network: bool = False
    chdir: str = "/tmp"
    #: Extra folders of ``/etc`` or elsewhere to bind read-only at the same path.
    system_paths: Sequence[str] = ()
    #: ``bwrap --die-with-parent``: the whole sandbox is killed when the *thread* that started
    #: bwrap exits, so killing bwrap (``subprocess.run``'s timeout) ends everything inside. Only for
    #: a command its starting thread waits on; a long-lived host started by a worker would die early.
    die_with_parent: bool = False
    #: Folders inside a read-only bind that stay empty inside (a read-only tmpfs over each).
    hidden: Sequence[str] = ()


def is_root() -> bool:
    """Whether the evaluator can confine work as another kernel uid (and manage cgroups)."""
    return os.geteuid() == 0


def sandbox_uid() -> int:
    """A fresh kernel uid for one sandbox (root only): distinct per sandbox of this evaluator, so
    two teams share no uid-scoped kernel state (key rings, signal permission)."""
    return UID_BASE + (os.getpid() % 100_000) * 1000 + next(_counter) % 1000


def kernel_uid_note() -> str:
    """One line for provenance: which kernel uid confined work runs as."""
    if is_root():
        return f"confined work runs as unprivileged kernel uids from {UID_BASE} (setpriv, no capabilities)"
    return f"confined work runs as the evaluator's own kernel uid {os.geteuid()} (not root: no uid change)"


def _pyvenv(prefix: str) -> dict[str, str] | None:
    """The ``key = value`` lines of ``prefix/pyvenv.cfg`` (``None`` when ``prefix`` is no venv)."""
    try:
        text = Path(prefix, "pyvenv.cfg").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    pairs = (line.partition("=") for line in text.splitlines() if "=" in line)
    return {key.strip().lower(): value.strip() for key, _, value in pairs}


def _base_prefixes(python: str, own: str) -> list[str]:
    """The installation ``python`` runs from: the folder above the binary it resolves to and,
    for a virtual environment, above the ``home`` its ``pyvenv.cfg`` names."""
    found = [str(Path(os.path.realpath(python)).parent.parent)]
    home = (_pyvenv(own) or {}).get("home")
    if home:
        found.append(str(Path(home).absolute().parent))
    return found


def python_paths(python: str) -> list[str]:
    """The folders a confined ``python`` needs: its own environment and the installation it runs
    from (interpreter and standard library); for the evaluator's own interpreter also the
    evaluator's prefixes and ``site-packages`` (the confined installer runs the evaluator's pip).
    Another interpreter's environment never needs the evaluator's packages."""
    own = str(Path(python).absolute().parent.parent)
    paths = [own, *_base_prefixes(python, own)]
    if own == os.path.abspath(sys.prefix):
        paths += [sys.prefix, sys.base_prefix, *_site_dirs()]
    return _outermost(p for p in paths if p and os.path.exists(p))


def python_hidden(python: str) -> list[str]:
    """The ``site-packages`` folders inside :func:`python_paths` that ``python`` never reads: those
    of the installation a virtual environment without system site-packages was made from (the
    evaluator's own packages, when it runs from that installation). A sandbox can hide them."""
    own = str(Path(python).absolute().parent.parent)
    config = _pyvenv(own)
    if config is None or config.get("include-system-site-packages", "false").lower() == "true":
        return []
    import site

    found = {p for base in _base_prefixes(python, own) for p in site.getsitepackages([base])}
    return sorted(p for p in found if os.path.isdir(p) and not p.startswith(own.rstrip(os.sep) + os.sep))


def _site_dirs() -> list[str]:
    import site

    return [p for p in site.getsitepackages() if os.path.isdir(p)]


def _outermost(paths: Iterable[str]) -> list[str]:
    """Distinct paths with those inside another one dropped (binding the outer one covers them)."""
    out: list[str] = []
    for path in sorted({os.path.abspath(p) for p in paths}, key=len):
        if not any(path == o or path.startswith(o.rstrip(os.sep) + os.sep) for o in out):
            out.append(path)
    return sorted(out)


def _system_args(network: bool, extra: Sequence[str]) -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for link in SYSTEM_LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    wanted = [*ETC_FILES, *(NETWORK_ETC_FILES if network else ()), *extra]
    present = _outermost(p for p in wanted if os.path.exists(p))
    for folder in _ancestors(present):
        # Made by bubblewrap on demand, /etc would be 0700 root's: nothing in it readable by the uid.
        args += ["--perms", "0755", "--dir", folder]
    for path in present:
        args += ["--ro-bind", path, path]
    return args


def _ancestors(targets: Iterable[str]) -> list[str]:
    """Every folder above a bind target, outermost first (``/usr`` and the system links excluded)."""
    found: set[str] = set()
    for target in targets:
        parent = os.path.dirname(os.path.abspath(target))
        while parent not in ("/", ""):
            found.add(parent)
            parent = os.path.dirname(parent)
    skip = ("/usr", *SYSTEM_LINKS, "/proc", "/dev")
    return sorted((f for f in found if not any(f == s or f.startswith(s + "/") for s in skip)),
                  key=lambda f: (f.count("/"), f))  # fmt: skip


def bwrap_args(spec: Confinement, *, uid: int | None = None) -> list[str]:
    """The ``bwrap`` command line (without the command) for ``spec``."""
    exe = shutil.which("bwrap") or "bwrap"
    args = [exe]
    if is_root():
        # Root sets up the mounts; the kernel uid changes after, through setpriv (see module doc).
        args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    else:
        args += ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        args += ["--cap-drop", "ALL"]
    if not spec.network:
        args.append("--unshare-net")
    if spec.die_with_parent:
        args.append("--die-with-parent")
    args += ["--new-session", "--clearenv"]
    args += _system_args(spec.network, spec.system_paths)
    targets = [t for s, t in [*spec.ro_binds.items(), *spec.rw_binds.items()] if os.path.exists(s)]
    for folder in _ancestors(targets):
        # bubblewrap would copy the mode of the host's folder (a 0700 home would stay closed).
        args += ["--perms", "0755", "--dir", folder]
    for source, target in sorted(spec.ro_binds.items(), key=lambda kv: kv[1]):
        if os.path.exists(source):
            args += ["--ro-bind", source, target]
    for source, target in sorted(spec.rw_binds.items(), key=lambda kv: kv[1]):
        if os.path.exists(source):
            args += ["--bind", source, target]
    for path in sorted(p for p in spec.hidden if os.path.isdir(p)):
        args += ["--size", "4096", "--perms", "0755", "--tmpfs", path, "--remount-ro", path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    for path, size in sorted({"/dev/shm": TMPFS_BYTES, **dict(spec.tmpfs)}.items()):
        args += ["--size", str(int(size)), "--perms", "1777", "--tmpfs", path]
    args += ["--remount-ro", "/"]
    for key, value in sorted(spec.env.items()):
        args += ["--setenv", key, value]
    args += ["--chdir", spec.chdir]
    return args


def setpriv_args(uid: int) -> list[str]:
    """Drop to kernel ``uid`` with no groups, no capabilities (inheritable, ambient or bounding)
    and ``no_new_privs``, before the confined command starts."""
    exe = "/usr/bin/setpriv" if os.path.exists("/usr/bin/setpriv") else (shutil.which("setpriv") or "setpriv")
    return [exe, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
            "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"]  # fmt: skip


def confine_command(argv: Sequence[str], spec: Confinement, *, uid: int | None = None) -> list[str]:
    """``argv`` confined by ``spec``: bubblewrap, and as root a drop to an unprivileged kernel uid
    (``uid``, default a fresh :func:`sandbox_uid`). The caller starts the result with an empty
    environment (the command's own comes from ``spec.env``)."""
    args = bwrap_args(spec)
    args.append("--")
    if is_root():
        args += setpriv_args(uid if uid is not None else sandbox_uid())
    return args + list(argv)


@lru_cache(maxsize=1)
def bubblewrap_status() -> tuple[bool, str]:
    """``(usable, detail)``: whether ``bwrap`` exists and can confine a command the way
    :func:`confine_command` does (namespaces, mounts and, as root, the uid change)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False, "bubblewrap (bwrap) is not installed"
    if is_root() and not (os.path.exists("/usr/bin/setpriv") or shutil.which("setpriv")):
        return False, "setpriv (util-linux) is not installed; it drops confined work to an unprivileged uid"
    probe = confine_command(["/bin/sh", "-c", "id -u"], Confinement(env={"PATH": "/usr/bin:/bin"}))
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, check=False, env={})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap failed to start: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return False, f"bwrap cannot create a sandbox here: {detail[-1] if detail else done.returncode}"
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    return True, version.strip() or "bwrap"


__all__ = [
    "Confinement",
    "ETC_FILES",
    "NETWORK_ETC_FILES",
    "TMPFS_BYTES",
    "UID_BASE",
    "bubblewrap_status",
    "bwrap_args",
    "confine_command",
    "is_root",
    "kernel_uid_note",
    "python_hidden",
    "python_paths",
    "sandbox_uid",
    "setpriv_args",
]
