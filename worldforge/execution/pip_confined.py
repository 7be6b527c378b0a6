"""The confined pip that builds submission environments: what it gets from the evaluator, how it runs.

Installing is untrusted work (the team picks packages, and a package can carry code), so pip never
runs as the evaluator:

* **The evaluator's index.** pip's site-wide configuration (``/etc/xdg/pip/pip.conf``,
  ``/etc/pip.conf``, the interpreter's own ``pip.conf``) and an allowlist of ``PIP_*`` variables,
  with the caller's ``index_url`` over them, or a ``wheelhouse`` folder instead (offline:
  ``--no-index --find-links``). The user's pip configuration, ``PIP_CONFIG_FILE``, netrc files and
  keyrings never apply, and a source URL with ``user:password@`` is refused: no credential enters
  the installer.
* **Confined** (:mod:`worldforge.execution.confine`): bubblewrap, an unprivileged kernel uid, an
  environment built from nothing, an empty tmpfs home, no cache. It sees the interpreter, the pip
  configuration and the local files it names, the wheelhouse and the requirements, all read-only.
  It writes only the folders the caller hands it (as root, handed to the sandbox's uid for the
  install and taken back by :func:`reclaim`). It has a network only when a source may be remote.
* **Checked output.** ``pip list`` runs confined too and its JSON is parsed, never trusted.

:mod:`worldforge.execution.environments` decides what is installed and where it is cached.
"""

from __future__ import annotations

import configparser
import json
import os
import stat
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from worldforge.core.errors import WorldForgeError
from worldforge.execution.confine import Confinement, confine_command, python_paths

PIP_SECONDS = 900
#: The evaluator's ``PIP_*`` variables that reach the confined pip: where packages come from, TLS
#: roots, timeouts. None names a credential (``PIP_CLIENT_CERT``, ``PIP_KEYRING_PROVIDER`` and
#: ``PIP_CONFIG_FILE`` stay out); a URL with credentials in one of them is refused.
PIP_ENV_ALLOWED = (
    "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CERT",
    "PIP_CONSTRAINT", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT", "PIP_TIMEOUT", "PIP_RETRIES",
    "PIP_DISABLE_PIP_VERSION_CHECK", "PIP_PROGRESS_BAR", "PIP_NO_CACHE_DIR",
)  # fmt: skip
#: Those of them that change what gets installed (they enter the cache key).
PIP_ENV_SOURCES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CONSTRAINT")
#: pip's site-wide configuration files on Linux (default ``XDG_CONFIG_DIRS``); the interpreter's
#: ``sys.prefix/pip.conf`` is read too.
SITE_PIP_CONFIGS = ("/etc/xdg/pip/pip.conf", "/etc/pip.conf")
#: Configuration keys naming where packages or TLS roots come from (local paths are bound).
CONFIG_SOURCES = ("index-url", "extra-index-url", "find-links", "cert", "constraint")
#: Where the installer's own files appear inside its sandbox.
INSIDE = "/installer"
HOME_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Installer:
    """What the confined pip gets from the evaluator: its ``PIP_*`` variables, the local paths
    its configuration names (bound read-only), whether a source is remote, and the identity of
    all that (it enters the cache key)."""

    env: Mapping[str, str]
    paths: tuple[str, ...]
    remote: bool
    index_url: str | None
    wheelhouse: str | None
    identity: Mapping[str, Any]

    def source_args(self) -> list[str]:
        """pip's arguments naming where packages come from (inside the sandbox)."""
        if self.wheelhouse is not None:
            return ["--no-index", "--find-links", f"{INSIDE}/wheelhouse"]
        return ["--index-url", self.index_url] if self.index_url else []

    def source_binds(self) -> dict[str, str]:
        return {self.wheelhouse: f"{INSIDE}/wheelhouse"} if self.wheelhouse is not None else {}

    @property
    def network(self) -> bool:
        """Whether pip needs a network: an index, or a remote ``find-links`` beside a wheelhouse."""
        return self.wheelhouse is None or self.remote

    def describe(self) -> str:
        """Where packages come from, in a few words (for an error)."""
        if self.wheelhouse is not None:
            return f"the wheelhouse {self.wheelhouse}"
        return f"the index {self.index_url}" if self.index_url else "the configured package index"


def _local_path(token: str, *, index: bool) -> str | None:
    """The host path a source token names (``None`` for a remote URL or a relative path). An
    index folder named ``simple`` stands for its parent: its pages link to files beside it."""
    if token.startswith("file:"):
        path = url2pathname(urlsplit(token).path)
    elif "://" in token:
        return None
    else:
        path = token
    if not os.path.isabs(path):
        return None
    path = os.path.normpath(path)
    if index and os.path.basename(path) == "simple":
        path = os.path.dirname(path)
    return path


def _config_files() -> list[str]:
    return [p for p in [*SITE_PIP_CONFIGS, os.path.join(sys.prefix, "pip.conf")] if os.path.isfile(p)]


def _site_configs() -> list[tuple[str, str, str]]:
    """``(origin, key, value)`` of every source key in pip's site-wide configuration files."""
    found: list[tuple[str, str, str]] = []
    for path in _config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error, UnicodeDecodeError) as exc:
            raise WorldForgeError(f"{path}: pip's configuration cannot be read: {exc}") from None
        for section in parser.sections():
            for key, value in parser.items(section):
                if (name := key.replace("_", "-")) in CONFIG_SOURCES:
                    found.append((f"{path} [{section}] {key}", name, value))
    return found


def installer(index_url: str | None = None, wheelhouse: str | None = None) -> Installer:
    """The confined pip's configuration; a wheelhouse installs offline (``index_url`` then does
    not apply). A source URL carrying credentials is a :class:`WorldForgeError` naming it."""
    env = {k: os.environ[k] for k in PIP_ENV_ALLOWED if k in os.environ}
    sources = _site_configs()
    sources += [(k, k.lower().removeprefix("pip_").replace("_", "-"), v) for k, v in env.items()]
    if wheelhouse is not None:
        index_url = None
        if not os.path.isdir(wheelhouse):
            raise WorldForgeError(f"--wheelhouse: {wheelhouse} is not a folder.")
        wheelhouse = os.path.abspath(wheelhouse)
    elif index_url is not None:
        sources.append(("submissions.index_url", "index-url", index_url))
    paths: list[str] = []
    remote = False
    for origin, key, value in sources:
        for token in value.split():
            if "://" in token and "@" in urlsplit(token).netloc:
                raise WorldForgeError(
                    f"{origin}: a URL with credentials (user:password@) is never passed to the "
                    "installer of a team's requirements."
                )
            if key in ("cert", "constraint"):
                paths += [token] if os.path.isabs(token) else []
            elif (path := _local_path(token, index=key != "find-links")) is not None:
                paths.append(path)
            elif "://" in token and key == "find-links":
                remote = True
    configs = _config_files()
    identity = {
        "env": {k: env[k] for k in PIP_ENV_SOURCES if k in env},
        "config": {p: Path(p).read_text(encoding="utf-8", errors="replace") for p in configs},
        "index_url": index_url,
        "wheelhouse": None
        if wheelhouse is None
        else {"path": wheelhouse, "files": sorted(e.name for e in os.scandir(wheelhouse))},
    }
    return Installer(env, tuple(sorted({*configs, *paths})), remote, index_url, wheelhouse, identity)


def run_pip(
    args: list[str], setup: Installer, binds: Mapping[str, str], writable: Mapping[str, str],
    *, network: bool, uid: int | None,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``python -m pip ARGS`` of the evaluator's interpreter, confined, as kernel ``uid``; its
    scratch folder must be bound writable at ``INSIDE/tmp``."""
    home = f"{INSIDE}/home"
    env = {
        **setup.env,
        "PATH": f"{os.path.dirname(sys.executable)}:/usr/bin:/bin",
        "HOME": home,
        "XDG_CONFIG_HOME": f"{home}/.config",
        "LANG": "C.UTF-8",
        "TMPDIR": f"{INSIDE}/tmp",
        "PIP_KEYRING_PROVIDER": "disabled",
    }
    spec = Confinement(
        ro_binds={**{p: p for p in [*python_paths(sys.executable), *setup.paths]}, **binds},
        rw_binds=writable,
        tmpfs={home: HOME_BYTES},
        env=env,
        network=network,
        chdir=home,
        die_with_parent=True,
    )
    argv = [sys.executable, "-I", "-m", "pip", *args, "--disable-pip-version-check", "--no-input"]
    return subprocess.run(confine_command(argv, spec, uid=uid), env={}, capture_output=True, text=True,
                          timeout=PIP_SECONDS, check=False)  # fmt: skip


def reclaim(top: Path) -> None:
    """Make what a sandbox wrote under ``top`` the evaluator's: owned by it, modes ``0755`` or
    ``0644`` (no set-id bits, nothing writable by others), special files removed; symbolic links
    are neither followed nor changed. Runs after the sandbox has ended, so nothing races it."""
    uid, gid = os.geteuid(), os.getegid()
    stack = [str(top)]
    while stack:
        path = stack.pop()
        st = os.lstat(path)
        if (st.st_uid, st.st_gid) != (uid, gid):
            os.lchown(path, uid, gid)
        if stat.S_ISLNK(st.st_mode):
            continue
        if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            os.unlink(path)
            continue
        os.chmod(path, 0o755 if stat.S_ISDIR(st.st_mode) or st.st_mode & 0o111 else 0o644)
        if stat.S_ISDIR(st.st_mode):
            with os.scandir(path) as entries:
                stack.extend(entry.path for entry in entries)


def listed(stdout: str) -> dict[str, str]:
    """``pip list --format=json`` output (written in the sandbox: checked, never trusted)."""
    try:
        rows = json.loads(stdout or "[]")
    except json.JSONDecodeError:
        rows = None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise WorldForgeError("the installed packages cannot be listed (pip list gave no JSON list)")
    return {str(r.get("name", "")).lower(): str(r.get("version", "")) for r in rows if r.get("name")}


def pip_error(stderr: str) -> str:
    """pip's first ``ERROR`` line (else its last line): the one line an error message carries."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("ERROR")]
    return lines[0] if lines else (stderr.strip().splitlines() or ["pip failed"])[-1]


__all__ = [
    "HOME_BYTES",
    "INSIDE",
    "Installer",
    "PIP_ENV_ALLOWED",
    "PIP_ENV_SOURCES",
    "PIP_SECONDS",
    "installer",
    "listed",
    "pip_error",
    "reclaim",
    "run_pip",
]
