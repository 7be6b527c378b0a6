"""The layer map of ``docs/architecture.md`` holds in the code: import-linter's contracts
(``[tool.importlinter]`` in pyproject.toml: the layers, and no specific provider module imported by
the gateway or a suite) pass, and no module takes part in an import circle, counting imports inside
functions, which Python resolves late but which still couple modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def test_layers_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Layers: lower layers never import higher ones KEPT" in proc.stdout
    assert "Providers: the gateway and suites never import a specific provider KEPT" in proc.stdout
    assert "Contracts: 2 kept, 0 broken." in proc.stdout


def test_no_import_circles() -> None:
    graph = grimp.build_graph("worldforge", cache_dir=None)
    circles = sorted(
        {
            tuple(sorted((module, imported)))
            for module in graph.modules
            for imported in graph.find_modules_directly_imported_by(module)
            if graph.chain_exists(importer=imported, imported=module)
        }
    )
    assert circles == []


def test_every_package_is_in_the_layer_map() -> None:
    """A new top-level package must be placed in a layer (and in docs/architecture.md)."""
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = sorted(
        p.name for p in (ROOT / "worldforge").iterdir() if p.is_dir() and (p / "__init__.py").is_file()
    )
    for name in packages:
        assert f'"worldforge.{name}' in config or f"| worldforge.{name}" in config, name
        assert f"worldforge/{name}/" in architecture, name
