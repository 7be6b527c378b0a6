#!/usr/bin/env python3
"""How loosely typed the package is: ``: Any`` and ``dict[str, Any]`` per 1,000 lines.

    python scripts/bench_typing.py [--package worldforge] [--output typing.json]

Counted on the syntax tree, not the text, so a comment or a docstring never counts and an alias
never hides one: ``JsonDict = dict[str, Any]`` (also ``JsonDict: TypeAlias = ...`` and
``type JsonDict = ...``) makes every later ``JsonDict`` annotation count as the ``dict[str, Any]``
it stands for, and ``Handle = Any`` makes ``x: Handle`` count as ``: Any``.

* ``any_params``: parameters and annotated names (``x: Any``, ``self.x: Any = ...``) typed
  ``Any`` itself (``: Any`` in the text).
* ``any_returns``: functions returning ``Any`` (reported, not part of the headline figure).
* ``dict_str_any``: every ``dict[str, Any]`` (or ``Dict[str, Any]``) in an annotation, wherever it
  sits inside it (``list[dict[str, Any]] | None`` counts once).

Guards, so that a lower headline cannot come from renaming the looseness (reported, not in the
headline): ``mapping_str_any`` (``Mapping``/``MutableMapping[str, Any]`` anywhere in an annotation),
``casts`` (calls of ``cast``/``typing.cast``) and ``type_ignores`` (``# type: ignore`` comments).

Prints one JSON object and writes it with ``--output``.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _is_any(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Any") or (
        isinstance(node, ast.Attribute) and node.attr == "Any"
    )


def _dict_str_any(node: ast.AST, aliases: dict[str, tuple[int, int]]) -> int:
    """``dict[str, Any]`` occurrences inside an annotation, aliases expanded."""
    count = 0
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Subscript)
            and isinstance(sub.value, ast.Name)
            and sub.value.id in ("dict", "Dict")
        ):
            args = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else []
            if len(args) == 2 and isinstance(args[0], ast.Name) and args[0].id == "str" and _is_any(args[1]):
                count += 1
        elif isinstance(sub, ast.Name) and sub.id in aliases:
            count += aliases[sub.id][1]
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):  # a string annotation
            try:
                count += _dict_str_any(ast.parse(sub.value, mode="eval").body, aliases)
            except SyntaxError:
                pass
    return count


def _alias_value(node: ast.stmt) -> tuple[str, ast.expr] | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        if "TypeAlias" in ast.unparse(node.annotation):
            return node.target.id, node.value
    if sys.version_info >= (3, 12) and isinstance(node, ast.TypeAlias):  # pragma: no cover - 3.12+
        return node.name.id, node.value
    return None


def _aliases(trees: list[ast.Module]) -> dict[str, tuple[int, int]]:
    """Module-level aliases of ``Any`` or of types holding ``dict[str, Any]``, by name:
    ``(is Any, dict[str, Any] count)``. Names are resolved across modules (aliases are imported)."""
    found: dict[str, tuple[int, int]] = {}
    for _ in range(3):  # aliases of aliases
        for tree in trees:
            for node in tree.body:
                alias = _alias_value(node)
                if alias is None or alias[0].startswith("__"):
                    continue
                name, value = alias
                is_any = int(
                    _is_any(value) or (isinstance(value, ast.Name) and found.get(value.id, (0, 0))[0] == 1)
                )
                dicts = _dict_str_any(value, {k: v for k, v in found.items() if k != name})
                if is_any or dicts:
                    found[name] = (is_any, dicts)
    return found


def _mapping_str_any(node: ast.AST) -> int:
    """``Mapping[str, Any]`` / ``MutableMapping[str, Any]`` occurrences inside an annotation."""
    count = 0
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript):
            name = sub.value.id if isinstance(sub.value, ast.Name) else getattr(sub.value, "attr", None)
            args = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else []
            if name in ("Mapping", "MutableMapping") and len(args) == 2 and _is_any(args[1]):
                count += 1
    return count


def _casts(tree: ast.Module) -> int:
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "cast")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "cast")
        )
    )


def _annotations(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, *[x for x in (a.vararg, a.kwarg) if x]]:
                if arg.annotation is not None:
                    yield "param", arg.annotation
            if node.returns is not None:
                yield "return", node.returns
        elif isinstance(node, ast.AnnAssign):
            if "TypeAlias" not in ast.unparse(node.annotation):
                yield "param", node.annotation


def measure(package: Path) -> dict[str, object]:
    files = sorted(package.rglob("*.py"))
    trees = [ast.parse(p.read_text("utf-8"), filename=str(p)) for p in files]
    lines = sum(len(p.read_text("utf-8").splitlines()) for p in files)
    aliases = _aliases(trees)
    any_params = any_returns = dict_str_any = mapping_str_any = 0
    casts = sum(_casts(tree) for tree in trees)
    type_ignores = sum(p.read_text("utf-8").count("# type: ignore") for p in files)
    for tree in trees:
        for kind, annotation in _annotations(tree):
            whole_any = _is_any(annotation) or (
                isinstance(annotation, ast.Name) and aliases.get(annotation.id, (0, 0))[0] == 1
            )
            if whole_any and kind == "param":
                any_params += 1
            elif whole_any:
                any_returns += 1
            dict_str_any += _dict_str_any(annotation, aliases)
            mapping_str_any += _mapping_str_any(annotation)

    def per_kloc(n: int) -> float:
        return round(1000 * n / lines, 2)

    return {
        "package": package.name,
        "lines": lines,
        "modules": len(files),
        "any_params": any_params,
        "any_params_per_kloc": per_kloc(any_params),
        "any_returns": any_returns,
        "dict_str_any": dict_str_any,
        "dict_str_any_per_kloc": per_kloc(dict_str_any),
        "aliases_expanded": sorted(aliases),
        "guards": {"mapping_str_any": mapping_str_any, "casts": casts, "type_ignores": type_ignores},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=ROOT / "worldforge")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    result = measure(args.package)
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    sys.stdout.write(text)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
