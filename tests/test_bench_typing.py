"""``scripts/bench_typing.py`` counts what the issue measures, aliases included, and cannot be
lowered by renaming: a small package with known counts."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).parents[1] / "scripts" / "bench_typing.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_typing", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_counts_aliases_guards_and_ignores_text(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "aliases.py").write_text(
        textwrap.dedent(
            """
            from typing import Any, Mapping, TypeAlias, cast
            JsonDict = dict[str, Any]
            Rows: TypeAlias = list[JsonDict]
            Handle = Any
            """
        )
    )
    (package / "use.py").write_text(
        textwrap.dedent(
            '''
            """A docstring saying dict[str, Any] and x: Any counts for nothing."""
            from typing import Any, Mapping, cast
            from pkg.aliases import Handle, JsonDict, Rows

            def f(a: Any, b: JsonDict, c: Rows | None, d: Handle, e: "dict[str, Any]") -> Any:
                # dict[str, Any] in a comment does not count
                return cast(int, a)  # type: ignore[no-any-return]

            def g(m: Mapping[str, Any], n: dict[str, int]) -> dict[str, Any]:
                value: Any = m
                return {}
            '''
        )
    )
    result = _script().measure(package)
    assert result["any_params"] == 3  # a, d (alias of Any), value
    assert result["any_returns"] == 1
    assert result["dict_str_any"] == 4  # b, c (alias of an alias), e (string), g's return
    assert result["guards"] == {"mapping_str_any": 1, "casts": 1, "type_ignores": 1}
    assert result["aliases_expanded"] == ["Handle", "JsonDict", "Rows"]
