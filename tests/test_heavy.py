"""Heavy libraries load in one place, lazily, and a missing one names the extra that installs it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from worldforge import heavy
from worldforge.core.errors import WorldForgeError

PACKAGE = Path(__file__).resolve().parents[1] / "worldforge"
HEAVY = {"torch", "transformers", "huggingface_hub", "ray", "Box2D", "openai", "ollama", "httpx"}


def test_only_the_heavy_module_imports_heavy_libraries() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        # the sandboxed trial host runs outside the package's process and imports its client itself
        if path.relative_to(PACKAGE).as_posix() in ("heavy.py", "execution/trial_host.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            if any(name.split(".")[0] in HEAVY for name in names):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert offenders == []


def test_a_missing_library_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(
        WorldForgeError, match=r"^ray is not installed; pip install 'worldforge\[distributed\]'\.$"
    ):
        heavy.ray()
    with pytest.raises(
        WorldForgeError, match="no_such_library_xyz is not installed; pip install no_such_library_xyz"
    ):
        heavy.load("no_such_library_xyz")


def test_a_broken_dependency_of_a_present_library_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(name: str) -> object:
        raise ModuleNotFoundError("No module named 'sympy'", name="sympy")

    monkeypatch.setattr(heavy.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="sympy"):
        heavy.torch()


def test_cli_start_loads_none_of_them() -> None:
    names = sorted(HEAVY)
    code = f"import sys, worldforge, worldforge.cli.app; print([m for m in {names!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
