"""The Python environment a submission's trials run in, and its identity.

Each competition package version runs in an environment of its own, never in WorldForge's: the
packages pin old clients (``llms4pcg`` 2.0.1 pins ``openai<2``), and the evaluator keeps its own.
The evaluator never imports them either (discovery is static), so they are not installed in it.

* **The package environment** of ``chatgpt4pcg`` 1.2.2 or ``llms4pcg`` 2.0.1
  (:data:`SUPPORTED_PACKAGES`) holds the package pin and the documented base every submission may
  import without listing it (:data:`BASE_DISTRIBUTIONS`: real requirements files often forget
  them), resolved by pip, so the package's own dependencies (``openai<2``) come in as it requires.
  ``--no-install`` runs a submission there whatever its ``requirements.txt`` says.
* **A team's requirements** are resolved together with that, in one pip resolution (the team's
  lines, the package pin, the base), so each (package, requirements) pair is one environment and
  pip, not layering, decides what wins. A team line naming the package must admit the supported
  version, else a one-line error says which version runs. A file with ``--hash`` options puts pip
  in hash-checking mode, in which every requirement must be pinned with a hash: the base is then
  added only for what the file does not list.

Every environment is a virtual environment made without the system site-packages: it sees the base
interpreter's standard library and its own ``site-packages``, nothing of the evaluator's. A sandbox
needs only the environment's folder and the base installation
(:func:`~worldforge.execution.confine.python_paths`), whose own ``site-packages`` it can hide
(:func:`~worldforge.execution.confine.python_hidden`).

Installing is untrusted work (the team picks the packages, and a package can carry code). Each rule
below closes one way for that code to run on the evaluator's host:

* **Plain requirements only.** Every line is parsed with ``packaging`` before pip starts. Option
  lines (``-i``, ``--extra-index-url``, ``-f``, ``-r``, ``-c``, ``-e``, ...), direct URLs, VCS links,
  local paths and archive names are refused with the line's number: the file can never change
  where packages come from. A requirement may carry ``--hash=ALGO:HEX`` options (they only narrow
  what pip accepts). A ``$`` is refused, since pip expands ``${VAR}`` in requirements files. pip
  reads a file written from the parsed requirements, never the team's own.
* **Wheels only** (``--only-binary :all:``): building an sdist runs its build backend, which is the
  team's code; installing a wheel runs nothing.
* **pip runs confined**, from the evaluator's index or a wheelhouse, with no credential
  (:mod:`worldforge.execution.pip_confined`); what it wrote becomes the evaluator's (owned by it,
  modes ``0755``/``0644``, no set-id bits, special files removed).
* **The environment's interpreter never starts outside a sandbox**, because a wheel's ``.pth`` file
  runs when it starts. The venv is created in-process without pip (nothing starts the new
  interpreter); ``pip list --path`` (which only reads metadata) runs in the sandbox too; the host
  only creates, chowns and renames files; trials start the interpreter in their own sandbox.
  (``--sandbox process`` runs a team's code on the host by the evaluator's explicit choice; a
  cached environment is then as trusted as the team's own files.)
* **No bubblewrap, no environment**: building fails closed whatever the sandbox mode, since the
  installer is not a trial and has no weaker mode.

Environments are slow to build and the same for every run, so they are cached per machine
(:func:`default_cache_root`: ``$XDG_CACHE_HOME/worldforge/submission-envs``, else
``~/.cache/worldforge/submission-envs``; a folder owned by the evaluator and writable by it alone,
since a planted environment would run in every later run). The folder name is a digest of the
recipe version, the requirements, the interpreter, pip's version, the index or wheelhouse (with its
file names) and the pip configuration that applies. An environment is built in a temporary folder
and renamed into place under a lock per digest, so parallel runs build it once, a crashed build is
never reused, nor anything an earlier recipe built.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_json
from worldforge.execution.confine import bubblewrap_status, is_root, sandbox_uid
from worldforge.execution.pip_confined import (
    INSIDE,
    PIP_SECONDS,
    Installer,
    installer,
    listed,
    pip_error,
    reclaim,
    run_pip,
)

#: The competition package versions submissions run against: one environment each.
SUPPORTED_PACKAGES = {"chatgpt4pcg": "1.2.2", "llms4pcg": "2.0.1"}
#: The documented base every submission may import without listing it (beside its package).
BASE_DISTRIBUTIONS = ("python-dotenv", "numpy")
#: How environments are built; a change here rebuilds every cached environment.
RECIPE = "wheels-only/3"
#: Endings pip reads as a local archive rather than a project name.
ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz",
                    ".tlz", ".tar.lz", ".tar.lzma", ".tar")  # fmt: skip
_HASH = re.compile(r"--hash=(?:sha256|sha384|sha512):[0-9a-fA-F]+")
_COMMENT = re.compile(r"(^|\s+)#.*$")
_NO_MATCH = re.compile(r"No matching distribution found for (\S+)")


@dataclass(frozen=True)
class SubmissionEnvironment:
    """Which interpreter runs the trials and what it resolves to (identity enters digests)."""

    python: str
    kind: str  # "package" (the package environment) | "venv" (with the team's requirements)
    packages: dict[str, str] = field(default_factory=dict)  # name -> version, resolved

    def identity(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "python": ".".join(map(str, sys.version_info[:3])),
            "packages": dict(sorted(self.packages.items())),
        }


def require_package(package: str, where: str) -> None:
    """Fail early (exit 2) when a submission targets a package no environment is built for."""
    if package not in SUPPORTED_PACKAGES:
        supported = ", ".join(f"{name} {version}" for name, version in sorted(SUPPORTED_PACKAGES.items()))
        raise WorldForgeError(f"{where}: {package!r} is not a supported competition package ({supported}).")


def package_requirements(package: str) -> list[str]:
    """The package environment's requirements: the supported pin and the documented base."""
    return [f"{package}=={SUPPORTED_PACKAGES[package]}", *BASE_DISTRIBUTIONS]


def default_cache_root() -> Path:
    """Where environments are cached on this machine (shared by every run and workspace)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "worldforge" / "submission-envs"


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
    # Imported here: ``packaging`` is needed only to install requirements.
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


def _name(requirement: str) -> str:
    """The normalized project name of a requirement (a canonical line, or pip's ``name==1.0``)."""
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(re.split(r"[\s\[<>=!~;@(]", requirement, maxsplit=1)[0]))


def _with_package(team: list[str], package: str, where: str) -> list[str]:
    """The team's lines followed by the package environment's: one resolution for both (the
    team's first, so pip names a missing team requirement before a missing package)."""
    from packaging.requirements import Requirement

    version = SUPPORTED_PACKAGES[package]
    for line in team:
        req = Requirement(line.split(" --hash=", 1)[0])
        if _name(req.name) == package and not req.specifier.contains(version, prereleases=True):
            raise WorldForgeError(
                f"{where}: requirements.txt asks for {req}; submissions run on {package} {version}."
            )
    ours = package_requirements(package)
    if any(" --hash=" in line for line in team):
        listed_names = {_name(line) for line in team}
        ours = [line for line in ours if _name(line) not in listed_names]
    return [*team, *ours]


def environment_key(lines: list[str], setup: Installer, kind: str = "venv") -> str:
    """The cache folder name of the environment for the requirement ``lines`` installed by ``setup``."""
    try:
        pip = metadata.version("pip")
    except metadata.PackageNotFoundError:
        pip = None
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    payload = {"recipe": RECIPE, "kind": kind, "requirements": lines, "python": sys.version,
               "interpreter": base, "pip": pip, "installer": dict(setup.identity)}  # fmt: skip
    return digest_payload(payload).removeprefix("sha256:")[:24]


# --- the cache --------------------------------------------------------------------------------------


def _cache_folder(cache_root: Path | None) -> Path:
    """The cache folder, made when missing; refused when anyone but the evaluator could write it
    (an environment planted there would be reused by every later run)."""
    root = cache_root if cache_root is not None else default_cache_root()
    try:
        root.mkdir(mode=0o755, parents=True, exist_ok=True)
        st = os.stat(root)
    except OSError as exc:
        raise WorldForgeError(f"{root}: the environment cache cannot be made: {exc}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise WorldForgeError(
            f"{root}: the environment cache must be a folder owned by uid {os.geteuid()} and writable "
            "by it alone (set XDG_CACHE_HOME to use another place)."
        )
    return root


@contextmanager
def _building(root: Path, key: str) -> Iterator[None]:
    """Hold the build lock of ``key`` (blocking): one build per digest on this machine at a time."""
    fd = os.open(root / f".{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _cached(folder: Path) -> SubmissionEnvironment | None:
    ready, python = folder / "environment.json", folder / "bin" / "python"
    if not (ready.is_file() and python.exists()):
        return None
    try:
        saved = json.loads(ready.read_text(encoding="utf-8"))
        return SubmissionEnvironment(str(python), str(saved["kind"]), dict(saved["packages"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- building --------------------------------------------------------------------------------------


def _venv_site(folder: Path) -> Path:
    paths = sysconfig.get_paths(vars={"base": str(folder), "platbase": str(folder)})
    return Path(paths["purelib"])


def _install_error(stderr: str, where: str, package: str, team: list[str], setup: Installer) -> str:
    """One line: which requirement could not be installed, and whose it is."""
    version = SUPPORTED_PACKAGES[package]
    team_names = {_name(line) for line in team}
    if found := _NO_MATCH.search(stderr):
        missing = found.group(1)
        if _name(missing) in team_names:
            return (
                f"{where}: requirements.txt: {missing} has no wheel for this Python (only wheels "
                "are installed: building a package would run the team's code)"
            )
        return (
            f"{where}: the {package} {version} environment cannot be built: {missing} has no wheel in "
            f"{setup.describe()} (it must hold the package, {', '.join(BASE_DISTRIBUTIONS)} and their "
            "dependencies)"
        )
    if team:
        return f"{where}: requirements.txt cannot be installed with {package} {version}: {pip_error(stderr)}"
    return f"{where}: the {package} {version} environment cannot be built: {pip_error(stderr)}"


def _install(root: Path, key: str, record: dict[str, Any], setup: Installer, where: str) -> None:
    """Build the environment in a temporary folder of ``root`` and rename it to ``root/key``."""
    lines, package, team = record["requirements"], record["package"], record["team"]
    building = Path(tempfile.mkdtemp(prefix=f".{key}.build-", dir=root))
    scratch = Path(tempfile.mkdtemp(prefix=f".{key}.tmp-", dir=root))
    uid = sandbox_uid() if is_root() else None
    try:
        # In-process and without pip: nothing starts the new interpreter.
        venv.EnvBuilder(with_pip=False, symlinks=True).create(building)
        own_site = _venv_site(building)
        own_site.mkdir(parents=True, exist_ok=True)
        (building / "requirements.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        if uid is not None:
            for path in (own_site, scratch):
                os.chown(path, uid, uid)
        writable = {str(own_site): f"{INSIDE}/target", str(scratch): f"{INSIDE}/tmp"}
        binds = {str(building / "requirements.txt"): f"{INSIDE}/requirements.txt", **setup.source_binds()}
        args = ["install", "--only-binary", ":all:", "--no-cache-dir", "--quiet", "--no-warn-script-location",
                "--target", f"{INSIDE}/target", *setup.source_args(),
                "-r", f"{INSIDE}/requirements.txt"]  # fmt: skip
        try:
            done = run_pip(args, setup, binds, writable, network=setup.network, uid=uid)
        finally:
            reclaim(own_site)
        if done.returncode != 0:
            raise WorldForgeError(_install_error(done.stderr, where, package, team, setup))
        listing = run_pip(["list", "--format=json", "--path", f"{INSIDE}/target"], setup,
                          {str(own_site): f"{INSIDE}/target"}, {str(scratch): f"{INSIDE}/tmp"},
                          network=False, uid=uid)  # fmt: skip
        if listing.returncode != 0:
            raise WorldForgeError(
                f"{where}: listing the installed packages failed: {pip_error(listing.stderr)}"
            )
        atomic_write_json(building / "environment.json", {**record, "packages": listed(listing.stdout)})
        reclaim(building)  # readable by a sandbox's uid whatever the evaluator's umask
        building.rename(root / key)
    except subprocess.TimeoutExpired:
        raise WorldForgeError(
            f"{where}: installing the environment took longer than {PIP_SECONDS} s."
        ) from None
    finally:
        shutil.rmtree(building, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


def _environment(
    team: list[str], package: str, *, cache_root: Path | None, where: str, index_url: str | None,
    wheelhouse: str | None,
) -> SubmissionEnvironment:  # fmt: skip
    """The cached environment of ``package`` with the team's parsed requirement lines (built when
    missing, which needs bubblewrap)."""
    require_package(package, where)
    kind = "venv" if team else "package"
    lines = _with_package(team, package, where) if team else package_requirements(package)
    setup = installer(index_url, wheelhouse)
    root = _cache_folder(cache_root)
    key = environment_key(lines, setup, kind)
    if (found := _cached(root / key)) is not None:
        return found
    usable, detail = bubblewrap_status()
    if not usable:
        what = "a team's requirements" if team else f"the {package} environment"
        raise WorldForgeError(
            f"{where}: bubblewrap is needed to install {what} ({detail}; Debian: apt-get install bubblewrap)."
        )
    with _building(root, key):
        if (found := _cached(root / key)) is not None:  # built by another run while this one waited
            return found
        for stale in root.glob(f".{key}.*-*"):  # left by a build that crashed (the lock is free)
            shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(root / key, ignore_errors=True)  # unreadable: never reused
        record = {"recipe": RECIPE, "kind": kind, "package": package, "team": team, "requirements": lines}
        _install(root, key, record, setup, where)
    if (found := _cached(root / key)) is None:
        raise WorldForgeError(f"{where}: the environment was built but is not in {root / key}")
    return found


def package_environment(
    package: str, *, cache_root: Path | None = None, index_url: str | None = None,
    wheelhouse: str | None = None, where: str | None = None,
) -> SubmissionEnvironment:  # fmt: skip
    """The environment of a supported competition package (its pin and the documented base),
    from the cache under ``cache_root`` (default :func:`default_cache_root`) or built there."""
    return _environment([], package, cache_root=cache_root, where=where or package, index_url=index_url,
                        wheelhouse=wheelhouse)  # fmt: skip


def submission_environment(
    requirements: str | None, *, package: str, install: bool, where: str, cache_root: Path | None = None,
    index_url: str | None = None, wheelhouse: str | None = None,
) -> SubmissionEnvironment:  # fmt: skip
    """The environment a submission's trials run in: its package's, with its ``requirements.txt``
    installed in the same resolution unless ``install`` is false (``--no-install``). Packages come
    from ``index_url`` (over pip's site-wide index) or offline from ``wheelhouse``."""
    team = plain_requirements(requirements, where) if install and requirements is not None else []
    return _environment(team, package, cache_root=cache_root, where=where, index_url=index_url,
                        wheelhouse=wheelhouse)  # fmt: skip


__all__ = [
    "ARCHIVE_SUFFIXES",
    "BASE_DISTRIBUTIONS",
    "RECIPE",
    "SUPPORTED_PACKAGES",
    "SubmissionEnvironment",
    "default_cache_root",
    "environment_key",
    "package_environment",
    "package_requirements",
    "plain_requirements",
    "require_package",
    "submission_environment",
]
