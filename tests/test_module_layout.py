"""Package layout rules: modules stay small, private names stay private, split modules re-export.

The rules are checked on the source tree rather than by review so that a module growing past the
limit, or a new ``from x import _helper`` across modules, fails the suite where it happens.
"""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from worldforge.core.errors import WorldForgeError

PACKAGE = Path(__file__).resolve().parents[1] / "worldforge"
MAX_MODULE_LINES = 600


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_every_module_is_under_the_size_limit() -> None:
    sizes = {
        p.relative_to(PACKAGE.parent).as_posix(): len(p.read_text("utf-8").splitlines()) for p in _modules()
    }
    assert len(sizes) > 50  # the walk really saw the package
    assert {name: n for name, n in sizes.items() if n >= MAX_MODULE_LINES} == {}


def _private_imports(source: str, here: str) -> list[str]:
    """``from worldforge.x import _name`` and ``worldforge_module._name`` uses in module ``here``."""
    tree = ast.parse(source)
    found: list[str] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("worldforge"):
            for alias in node.names:
                if _private(alias.name) and node.module != here:
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("worldforge"):
                    aliases[alias.asname or alias.name.split(".")[0]] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    offenders = {
        p.relative_to(PACKAGE.parent).as_posix(): hits
        for p in _modules()
        if (hits := _private_imports(p.read_text("utf-8"), _dotted(p)))
    }
    assert offenders == {}


def test_private_import_scan_catches_both_forms() -> None:
    source = (
        "from worldforge.pcg import glyphs\n"
        "from worldforge.evaluation.suite import _helper\n"
        "from worldforge.pcg.sample import _own\n"
        "value = glyphs._load_font\n"
        "public = glyphs.letter_grid\n"
    )
    hits = _private_imports(source, "worldforge.pcg.sample")
    assert hits == ["2: from worldforge.evaluation.suite import _helper", "4: glyphs._load_font"]


def _reexported(source: str) -> list[str]:
    """Names a module lists in ``__all__`` although it imports them from another worldforge module."""
    tree = ast.parse(source)
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("worldforge")
        for alias in node.names
    }
    exported: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            exported = [elt.value for elt in node.value.elts if isinstance(elt, ast.Constant)]
    return sorted(name for name in exported if name in imported)


# Deliberate public faces: the redaction rules' shared names,
# the HTML renderer's building blocks.
PUBLIC_FACES = {
    "worldforge/core/redact/rules.py",
    "worldforge/reports/html.py",
    "worldforge/providers/openai_compat.py",
}


def test_no_module_is_a_reexport_shim() -> None:
    """A name has one home: modules (not packages) export only what they define."""
    offenders = {
        rel: names
        for p in _modules()
        if p.name != "__init__.py"
        and (rel := p.relative_to(PACKAGE.parent).as_posix()) not in PUBLIC_FACES
        and (names := _reexported(p.read_text("utf-8")))
    }
    assert offenders == {}


def test_reexport_scan_sees_a_shim() -> None:
    source = "from worldforge.pcg.levels.drop_plan import Grid, plan_blocks\nX = 1\n__all__ = ['X', 'Grid']\n"
    assert _reexported(source) == ["Grid"]


def test_one_letters_definition() -> None:
    from worldforge.pcg.letters import LETTERS

    assert LETTERS == tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    defining = [
        p.relative_to(PACKAGE.parent).as_posix()
        for p in _modules()
        if '"ABCDEFGHIJKLMNOPQRSTUVWXYZ"' in p.read_text("utf-8")
    ]
    assert defining == ["worldforge/pcg/letters.py"]


def test_drop_plan_builds_a_hand_drawn_grid_without_fonts() -> None:
    from worldforge.pcg.levels.drop_plan import (
        balance_supports,
        blocks_to_program,
        grid_from_text,
        grid_to_text,
        plan_blocks,
        simulate_drops,
    )

    # A "T": the bar overhangs on both sides of the stem and must still land where it is drawn.
    target = grid_from_text("#####\n..#..\n..#..\n..#..")
    blocks = plan_blocks(target, rng=random.Random(1))
    built = simulate_drops(blocks_to_program(blocks))
    assert {(c, r) for r, row in enumerate(target) for c, v in enumerate(row) if v} <= {
        (c, r) for r, row in enumerate(built) for c, v in enumerate(row) if v
    }
    assert balance_supports(blocks) == set()
    assert grid_to_text(target).splitlines()[-4:] == [
        "#####" + "." * 15,
        "..#.." + "." * 15,
        "..#.." + "." * 15,
        "..#.." + "." * 15,
    ]


def test_balance_supports_reports_a_block_that_would_topple() -> None:
    from worldforge.pcg.levels.drop_plan import Block, balance_supports

    # A b31 resting on its leftmost cell only: its centre of mass is beyond the contact.
    leaning = [Block("b11", 3, 0), Block("b31", 4, 1)]
    assert balance_supports(leaning) == {(5, 0)}
    # Supported at its centre it stands.
    assert balance_supports([Block("b11", 4, 0), Block("b31", 4, 1)]) == set()


def test_dataset_references_keeps_compact_refs_and_rejects_other_values(tmp_path: Path) -> None:
    from worldforge.datasets import dataset_references, manifest_reference

    ref = {"id": "levels", "sha256": "sha256:" + "0" * 64, "entry_count": 1}
    out = dataset_references([ref])
    assert out == [ref] and out[0] is not ref  # a copy: callers may not mutate the caller's dict
    assert dataset_references(None) == []
    with pytest.raises(WorldForgeError, match=r"dataset_manifests\[1\]: expected a compact reference"):
        dataset_references([ref, 42])
    example = PACKAGE.parent / "examples" / "dataset-manifests" / "mock-evaluation-fixtures.json"
    assert dataset_references([example]) == [manifest_reference(example)]
    assert dataset_references([str(example)])[0]["id"] == "mock-evaluation-fixtures"
    with pytest.raises(WorldForgeError, match="dataset manifest not found"):
        dataset_references([tmp_path / "missing.json"])


def test_shipped_presets_are_package_data_found_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worldforge.benchmark.presets import list_presets, preset_dirs
    from worldforge.pcg.programs.prompt import BUILTIN_PROGRAMS, builtin_program, builtin_programs_dir
    from worldforge.presets import PRESETS_DIR, PROGRAMS_DIR

    assert PRESETS_DIR == PACKAGE / "presets" and builtin_programs_dir() == PROGRAMS_DIR
    monkeypatch.delenv("WORLDFORGE_PRESETS", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./presets here: only the package's own directory remains
    assert preset_dirs() == [PRESETS_DIR]
    assert [p["name"] for p in list_presets()] == ["mock-smoke", "pcg-pipeline"]
    for name in BUILTIN_PROGRAMS:
        assert builtin_program(name).source == PROGRAMS_DIR / name
    # The checkout's documented top-level path is a link to the same files, not a second copy.
    assert (PACKAGE.parent / "presets").resolve() == PRESETS_DIR
