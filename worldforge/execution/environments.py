"""The Python environment a submission's trials run in, and its identity.

Base: the environment WorldForge runs in, which the ``competition`` extra fills with the
competition packages (``chatgpt4pcg``, ``llms4pcg``) and their dependencies, ``python-dotenv`` and
``numpy`` (real requirements files often forget the last two). A submission without a
``requirements.txt`` (or with ``--no-install``) runs on that base directly.

A ``requirements.txt`` is installed into a virtual environment of its own, layered over the base:
its ``site-packages`` comes first and a ``.pth`` file appends the base's, so what the file pins
wins and everything else resolves to the base. (``venv --system-site-packages`` would expose the
interpreter's global site-packages, not those of the environment WorldForge runs in.) The
environment is cached by the digest of the file, the Python version and the base's package
versions, built in a temporary folder and renamed into place, so a crashed build is never reused.
An unsatisfiable requirement is a clear error naming the program.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from worldforge.core.digests import digest_payload, digest_text
from worldforge.core.errors import WorldForgeError
from worldforge.core.io import atomic_write_json

#: The documented base every submission may import without listing it.
BASE_DISTRIBUTIONS = ("chatgpt4pcg", "llms4pcg", "openai", "python-dotenv", "numpy")
PIP_SECONDS = 900


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


def _requirement_lines(text: str) -> list[str]:
    lines = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            lines.append(line)
    return lines


def _venv_site(folder: Path) -> Path:
    paths = sysconfig.get_paths(vars={"base": str(folder), "platbase": str(folder)})
    return Path(paths["purelib"])


def _pip_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("ERROR")]
    return lines[0] if lines else (stderr.strip().splitlines() or ["pip failed"])[-1]


def build_environment(requirements: str, cache_root: Path, where: str) -> SubmissionEnvironment:
    """The cached virtual environment for ``requirements`` over the base (built when missing)."""
    lines = _requirement_lines(requirements)
    base = base_packages()
    if not lines:
        return SubmissionEnvironment(sys.executable, "current", base)
    key = digest_payload(
        {"requirements": digest_text(requirements), "python": sys.version, "base": base}
    ).removeprefix("sha256:")[:24]
    folder = cache_root / key
    ready = folder / "environment.json"
    python = folder / "bin" / "python"
    if ready.is_file() and python.exists():
        saved = json.loads(ready.read_text(encoding="utf-8"))
        return SubmissionEnvironment(str(python), "venv", dict(saved["packages"]))
    building = cache_root / f".{key}.{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    building.parent.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(building)], check=True,
                       capture_output=True, timeout=PIP_SECONDS)  # fmt: skip
        own_site = _venv_site(building)
        own_site.mkdir(parents=True, exist_ok=True)
        (own_site / "worldforge-base.pth").write_text(
            "\n".join(p for p in site.getsitepackages() if os.path.isdir(p)) + "\n", encoding="utf-8"
        )
        req_file = building / "requirements.txt"
        req_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
             "--quiet", "--target", str(own_site), "-r", str(req_file)],
            capture_output=True, text=True, timeout=PIP_SECONDS, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise WorldForgeError(f"{where}: requirements.txt cannot be installed: {_pip_error(done.stderr)}")
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "list", "--disable-pip-version-check", "--format=json",
             "--path", str(own_site)],
            capture_output=True, text=True, timeout=PIP_SECONDS, check=False,
        )  # fmt: skip
        own = {str(d["name"]).lower(): str(d["version"]) for d in json.loads(listed.stdout or "[]")}
        packages = {**base, **own}
        atomic_write_json(building / "environment.json", {"packages": packages, "requirements": lines})
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
    return build_environment(requirements, cache_root, where)


def submission_environment(
    requirements: str | None, *, install: bool, cache_root: Path, where: str
) -> SubmissionEnvironment:
    """``--no-install`` or no requirements: the current environment; else the cached venv."""
    if not install or requirements is None:
        return current_environment()
    return build_environment(requirements, cache_root, where)


__all__ = [
    "BASE_DISTRIBUTIONS",
    "SubmissionEnvironment",
    "base_packages",
    "build_environment",
    "current_environment",
    "require_package",
    "submission_environment",
]
