"""The Python environment a submission's trials run in, and its identity.

Base: the environment WorldForge runs in, which the ``competition`` extra fills with the
competition packages (``chatgpt4pcg``, ``llms4pcg``) and their dependencies, ``python-dotenv`` and
``numpy`` (real requirements files often forget the last two). A submission without a
``requirements.txt`` (or with ``--no-install``) runs on that base directly.

A ``requirements.txt`` is installed into a virtual environment of its own, layered over the base:
its ``site-packages`` comes first and a ``.pth`` file appends the base's, so what the file pins
wins and everything else resolves to the base. (``venv --system-site-packages`` would expose the
interpreter's global site-packages, not those of the environment WorldForge runs in.)

Installing is untrusted work: the team picks the packages, and a package can carry code. Each rule
below closes one way for that code to run on the evaluator's host:

* **Plain requirements only.** Every line is parsed with ``packaging`` before pip starts. Option
  lines (``-i``, ``--extra-index-url``, ``-f``, ``-r``, ``-c``, ``-e``, ...), direct URLs, VCS links,
  local paths and archive names are refused with the line's number: the file can never change
  where packages come from. A requirement may carry ``--hash=ALGO:HEX`` options (they only narrow
  what pip accepts). A ``$`` is refused, since pip expands ``${VAR}`` in requirements files. pip
  reads a file written from the parsed requirements, never the team's own.
* **Wheels only** (``--only-binary :all:``): building an sdist runs its build backend, which is the
  team's code; installing a wheel runs nothing.
* **The evaluator's index.** pip's site-wide configuration (``/etc/xdg/pip/pip.conf``,
  ``/etc/pip.conf``, the interpreter's own ``pip.conf``) and an allowlist of ``PIP_*`` variables,
  with the caller's ``index_url`` over them, or a ``wheelhouse`` folder instead (offline:
  ``--no-index --find-links``). The user's pip configuration, ``PIP_CONFIG_FILE``, netrc files and
  keyrings never apply, and a source URL with ``user:password@`` is refused: no credential enters
  the installer.
* **pip runs confined** (:mod:`worldforge.execution.confine`): bubblewrap, an unprivileged kernel
  uid, an environment built from nothing, an empty tmpfs home, no cache. It sees the interpreter,
  the pip configuration and the local files it names, the wheelhouse and the requirements, all
  read-only. It writes only the target ``site-packages`` and a scratch folder: as root these two
  are handed to the sandbox's uid for the install, then taken back (owned by the evaluator, modes
  ``0755``/``0644``, no set-id bits, special files removed). It has a network only when a source
  may be remote.
* **The environment's interpreter never starts outside a sandbox**, because a wheel's ``.pth`` file
  runs when it starts. The venv is created in-process without pip (nothing starts the new
  interpreter); ``pip list --path`` (which only reads metadata) runs in the sandbox too; the host
  only creates, chowns and renames files; trials start the interpreter in their own sandbox.
  (``--sandbox process`` runs a team's code on the host by the evaluator's explicit choice; a
  cached environment is then as trusted as the team's own files.)
* **No bubblewrap, no install**: installing fails closed whatever the sandbox mode, since the
  installer is not a trial and has no weaker mode. ``--no-install`` runs on the base.

The environment is cached under a digest of the recipe version, the parsed requirements, the
Python version, the base's package versions, the index or wheelhouse (with its file names) and
the pip configuration that applies. It is built in a temporary folder and renamed into place, so
a crashed build is never reused, nor anything an earlier recipe built.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import site
import stat
import subprocess
import sys
import sysconfig
import venv
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_json
from worldforge.execution.confine import (
    Confinement,
    bubblewrap_status,
    confine_command,
    is_root,
    python_paths,
    sandbox_uid,
)

#: The documented base every submission may import without listing it.
BASE_DISTRIBUTIONS = ("chatgpt4pcg", "llms4pcg", "openai", "python-dotenv", "numpy")
PIP_SECONDS = 900
#: How environments are built; a change here rebuilds every cached environment.
RECIPE = "wheels-only/2"
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
#: Endings pip reads as a local archive rather than a project name.
ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz",
                    ".tlz", ".tar.lz", ".tar.lzma", ".tar")  # fmt: skip
#: Where the installer's own files appear inside its sandbox.
INSIDE = "/installer"
HOME_BYTES = 16 * 1024 * 1024
_HASH = re.compile(r"--hash=(?:sha256|sha384|sha512):[0-9a-fA-F]+")
_COMMENT = re.compile(r"(^|\s+)#.*$")
_NO_MATCH = re.compile(r"No matching distribution found for (\S+)")


@dataclass(frozen=True)
class SubmissionEnvironment:
    """Which interpreter runs the trials and what it resolves to (identity enters digests)."""

    python: str
    kind: str  # "current" | "venv"
    packages: dict[str, str] = field(default_factory=dict)  # name -> version, resolved

    def identity(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "python": ".".join(map(str, sys.version_info[:3])),
            "packages": dict(sorted(self.packages.items())),
        }


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def base_packages() -> dict[str, str]:
    """Versions of the documented base present in the current environment."""
    return {n: v for n in BASE_DISTRIBUTIONS if (v := _version(n)) is not None}


def require_package(package: str, where: str) -> None:
    """Fail early (exit 2) when the competition package a submission targets is not installed."""
    if _version(package) is None:
        raise WorldForgeError(
            f"{where}: needs the {package} package; install WorldForge's competition extra "
            "(pip install 'worldforge[competition]')."
        )


def current_environment() -> SubmissionEnvironment:
    return SubmissionEnvironment(sys.executable, "current", base_packages())


# --- the requirements file -------------------------------------------------------------------------


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """``(first line number, line)`` as pip reads them: ``\\`` continuations joined, comments (a
    ``#`` at the start or after white space) removed, blank lines dropped."""
    out: list[tuple[int, str]] = []
    parts: list[str] = []
    first = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.endswith("\\") and not raw.lstrip().startswith("#"):
            first = first if parts else number
            parts.append(raw[:-1])
            continue
        if parts:
            number, raw = first, "".join([*parts, raw])
            parts = []
        if line := _COMMENT.sub("", raw).strip():
            out.append((number, line))
    if parts and (line := _COMMENT.sub("", "".join(parts)).strip()):
        out.append((first, line))
    return out


def _canonical(line: str) -> str:
    """``line`` rewritten as ``name[extras]specifier; marker [--hash=...]``, or ``ValueError``
    saying why it is not a plain requirement."""
    # Imported here: ``packaging`` is needed only to install a team's requirements.
    from packaging.requirements import InvalidRequirement, Requirement

    if "$" in line:
        raise ValueError("pip would expand environment variables in it")
    if line.startswith("-"):
        raise ValueError("options could change where packages come from or build them")
    split = re.search(r"\s-", line)
    head, options = (line[: split.start()], line[split.start() :].split()) if split else (line, [])
    for option in options:
        if not _HASH.fullmatch(option):
            raise ValueError(f"{option.split('=')[0]} after a requirement (only --hash=ALGO:HEX is allowed)")
    if "://" in head or "\\" in head or head.startswith((".", "/", "~", "file:")):
        raise ValueError("URLs and paths could install code from anywhere (name a package)")
    try:
        req = Requirement(head)
    except InvalidRequirement as exc:
        raise ValueError((str(exc).splitlines() or ["not a requirement"])[0]) from None
    if req.url:
        raise ValueError("direct URLs could install code from anywhere (name a package)")
    if req.name.lower().endswith(ARCHIVE_SUFFIXES):
        raise ValueError("pip would read it as a local archive (name a package)")
    return " ".join([str(req), *options])


def plain_requirements(text: str, where: str) -> list[str]:
    """The requirements of a ``requirements.txt``, each rewritten canonically; a line that is
    anything else (an option, a URL, a path) is a :class:`WorldForgeError` naming it."""
    lines = []
    for number, line in _logical_lines(text):
        try:
            lines.append(_canonical(line))
        except ValueError as exc:
            shown = line if len(line) <= 160 else line[:157] + "..."
            raise WorldForgeError(
                f"{where}: requirements.txt line {number}: {shown!r} is refused: {exc}; "
                "only plain requirements are installed (name, extras, version, markers, --hash)."
            ) from None
    return lines


# --- the installer's configuration -----------------------------------------------------------------


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


def _site_configs() -> list[tuple[str, str, str]]:
    """``(origin, key, value)`` of every source key in pip's site-wide configuration files."""
    found: list[tuple[str, str, str]] = []
    for path in [*SITE_PIP_CONFIGS, os.path.join(sys.prefix, "pip.conf")]:
        if not os.path.isfile(path):
            continue
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
    configs = [p for p in [*SITE_PIP_CONFIGS, os.path.join(sys.prefix, "pip.conf")] if os.path.isfile(p)]
    identity = {
        "env": {k: env[k] for k in PIP_ENV_SOURCES if k in env},
        "config": {p: Path(p).read_text(encoding="utf-8", errors="replace") for p in configs},
        "index_url": index_url,
        "wheelhouse": None
        if wheelhouse is None
        else {"path": wheelhouse, "files": sorted(e.name for e in os.scandir(wheelhouse))},
    }
    return Installer(env, tuple(sorted({*configs, *paths})), remote, index_url, wheelhouse, identity)


def environment_key(lines: list[str], setup: Installer) -> str:
    """The cache folder name of the environment for parsed ``lines`` installed by ``setup``."""
    payload = {"recipe": RECIPE, "requirements": lines, "python": sys.version, "base": base_packages(),
               "installer": dict(setup.identity)}  # fmt: skip
    return digest_payload(payload).removeprefix("sha256:")[:24]


# --- building --------------------------------------------------------------------------------------


def _venv_site(folder: Path) -> Path:
    paths = sysconfig.get_paths(vars={"base": str(folder), "platbase": str(folder)})
    return Path(paths["purelib"])


def _pip_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("ERROR")]
    return lines[0] if lines else (stderr.strip().splitlines() or ["pip failed"])[-1]


def _install_error(stderr: str, where: str) -> str:
    if found := _NO_MATCH.search(stderr):
        return (
            f"{where}: requirements.txt: {found.group(1)} has no wheel for this Python (only wheels "
            "are installed: building a package would run the team's code)"
        )
    return f"{where}: requirements.txt cannot be installed: {_pip_error(stderr)}"


def _confined_pip(
    args: list[str], setup: Installer, binds: Mapping[str, str], writable: Mapping[str, str],
    *, network: bool, uid: int | None,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``python -m pip ARGS`` of the evaluator's interpreter, confined, as kernel ``uid``."""
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


def _reclaim(top: Path) -> None:
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


def _listed(stdout: str) -> dict[str, str]:
    """``pip list --format=json`` output (written in the sandbox: checked, never trusted)."""
    try:
        rows = json.loads(stdout or "[]")
    except json.JSONDecodeError:
        rows = None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise WorldForgeError("the installed packages cannot be listed (pip list gave no JSON list)")
    return {str(r.get("name", "")).lower(): str(r.get("version", "")) for r in rows if r.get("name")}


def _cached(folder: Path) -> SubmissionEnvironment | None:
    ready, python = folder / "environment.json", folder / "bin" / "python"
    if not (ready.is_file() and python.exists()):
        return None
    saved = json.loads(ready.read_text(encoding="utf-8"))
    return SubmissionEnvironment(str(python), "venv", dict(saved["packages"]))


def _install(folder: Path, lines: list[str], setup: Installer, where: str) -> None:
    """Build the environment in a temporary folder next to ``folder`` and rename it into place."""
    building = folder.parent / f".{folder.name}.{os.getpid()}"
    scratch = folder.parent / f".{folder.name}.{os.getpid()}.tmp"
    for path in (building, scratch):
        shutil.rmtree(path, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    uid = sandbox_uid() if is_root() else None
    try:
        # In-process and without pip: nothing starts the new interpreter.
        venv.EnvBuilder(with_pip=False, symlinks=True).create(building)
        own_site = _venv_site(building)
        own_site.mkdir(parents=True, exist_ok=True)
        (building / "requirements.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        scratch.mkdir(mode=0o700)
        if uid is not None:
            for path in (own_site, scratch):
                os.chown(path, uid, uid)
        writable = {str(own_site): f"{INSIDE}/target", str(scratch): f"{INSIDE}/tmp"}
        binds = {str(building / "requirements.txt"): f"{INSIDE}/requirements.txt"}
        if setup.wheelhouse is not None:
            binds[setup.wheelhouse] = f"{INSIDE}/wheelhouse"
            source = ["--no-index", "--find-links", f"{INSIDE}/wheelhouse"]
        else:
            source = ["--index-url", setup.index_url] if setup.index_url else []
        args = ["install", "--only-binary", ":all:", "--no-cache-dir", "--quiet", "--no-warn-script-location",
                "--target", f"{INSIDE}/target", *source, "-r", f"{INSIDE}/requirements.txt"]  # fmt: skip
        network = setup.wheelhouse is None or setup.remote
        try:
            done = _confined_pip(args, setup, binds, writable, network=network, uid=uid)
        finally:
            _reclaim(own_site)
        if done.returncode != 0:
            raise WorldForgeError(_install_error(done.stderr, where))
        listing = _confined_pip(["list", "--format=json", "--path", f"{INSIDE}/target"], setup,
                                {str(own_site): f"{INSIDE}/target"}, {str(scratch): f"{INSIDE}/tmp"},
                                network=False, uid=uid)  # fmt: skip
        if listing.returncode != 0:
            raise WorldForgeError(f"{where}: requirements.txt: listing the installed packages failed: "
                                  f"{_pip_error(listing.stderr)}")  # fmt: skip
        own = _listed(listing.stdout)
        # Written last, by the evaluator: whatever a wheel shipped under this name is replaced.
        (own_site / "worldforge-base.pth").write_text(
            "\n".join(p for p in site.getsitepackages() if os.path.isdir(p)) + "\n", encoding="utf-8"
        )
        record = {"packages": {**base_packages(), **own}, "requirements": lines, "recipe": RECIPE}
        atomic_write_json(building / "environment.json", record)
        try:
            building.rename(folder)
        except OSError:  # another run built it first
            shutil.rmtree(building, ignore_errors=True)
    except subprocess.TimeoutExpired:
        shutil.rmtree(building, ignore_errors=True)
        raise WorldForgeError(
            f"{where}: installing requirements.txt took longer than {PIP_SECONDS} s."
        ) from None
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def build_environment(
    requirements: str, cache_root: Path, where: str, *, index_url: str | None = None,
    wheelhouse: str | None = None,
) -> SubmissionEnvironment:  # fmt: skip
    """The cached virtual environment for ``requirements`` over the base (built when missing,
    which needs bubblewrap)."""
    lines = plain_requirements(requirements, where)
    if not lines:
        return current_environment()
    setup = installer(index_url, wheelhouse)
    folder = cache_root / environment_key(lines, setup)
    if (found := _cached(folder)) is not None:
        return found
    usable, detail = bubblewrap_status()
    if not usable:
        raise WorldForgeError(
            f"{where}: requirements.txt: bubblewrap is needed to install a team's requirements "
            f"({detail}); --no-install runs the submission on the base environment."
        )
    _install(folder, lines, setup, where)
    if (found := _cached(folder)) is None:
        raise WorldForgeError(f"{where}: requirements.txt: the environment was built but is not in {folder}")
    return found


def submission_environment(
    requirements: str | None, *, install: bool, cache_root: Path, where: str,
    index_url: str | None = None, wheelhouse: str | None = None,
) -> SubmissionEnvironment:  # fmt: skip
    """``--no-install`` or no requirements: the current environment; else the cached venv,
    installed from ``index_url`` (over pip's site-wide index) or offline from ``wheelhouse``."""
    if not install or requirements is None:
        return current_environment()
    return build_environment(requirements, cache_root, where, index_url=index_url, wheelhouse=wheelhouse)


__all__ = [
    "BASE_DISTRIBUTIONS",
    "Installer",
    "RECIPE",
    "SubmissionEnvironment",
    "base_packages",
    "build_environment",
    "current_environment",
    "environment_key",
    "installer",
    "plain_requirements",
    "require_package",
    "submission_environment",
]
