"""The one registry mechanism: names to objects or lazy ``module:attr`` references plus an
entry-point group, and the four registries built on it (providers, suites, executors, sandboxes).

The project's built-ins are declared twice on purpose, as entry points in ``pyproject.toml`` (what
other tools see) and as the fallback table each layer trusts (what a stale or absent installation
record cannot break); these tests keep the two equal and show both failure modes of the record.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from worldforge.core.errors import WorldForgeError
from worldforge.core.registry import BUILTIN, ENTRY_POINT, REGISTERED, Registry, choices, load_reference
from worldforge.evaluation.suite import BUILTIN_SUITES, SUITES, EvaluationSuite
from worldforge.execution import BUILTIN_EXECUTORS, EXECUTORS, create_executor, executor_names
from worldforge.execution.sandbox import ISOLATIONS, resolve_isolation
from worldforge.providers.base import ProviderFamily
from worldforge.providers.registry import BUILTIN_PROVIDERS, ProviderRegistry, builtin_capabilities

ROOT = Path(__file__).resolve().parents[2]
TABLES: dict[str, Registry[Any]] = {
    "worldforge.providers": ProviderRegistry(discover_entry_points=False)._registry,
    "worldforge.suites": SUITES,
    "worldforge.executors": EXECUTORS,
    "worldforge.sandboxes": ISOLATIONS,
}


class _Point:
    """An entry point as ``importlib.metadata`` hands it out, optionally of a named distribution."""

    def __init__(self, name: str, value: str, target: object = None, dist: str | None = None) -> None:
        self.name, self.value, self._target = name, value, target
        self.dist = type("Dist", (), {"name": dist})() if dist else None
        self.loads = 0

    def load(self) -> object:
        self.loads += 1
        return self._target


def _patch_entry_points(monkeypatch: pytest.MonkeyPatch, groups: dict[str, list[_Point]]) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: groups.get(group, []))


@pytest.mark.parametrize("group", sorted(TABLES))
def test_declared_entry_points_equal_the_fallback_table(group: str) -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["entry-points"]
    assert declared[group] == TABLES[group].builtin_references()
    assert TABLES[group].builtin_references()  # the table is not empty, so equality says something


@pytest.mark.parametrize("group", sorted(TABLES))
def test_installed_entry_points_are_the_project_table(group: str) -> None:
    """The editable install's record (refreshed by ``pip install -e . --no-deps``) says the same."""
    own = {
        ep.name: ep.value
        for ep in importlib.metadata.entry_points(group=group)
        if ep.dist is not None and ep.dist.name == "worldforge"
    }
    assert own == TABLES[group].builtin_references()
    for reference in own.values():  # every declared target really exists
        assert load_reference(reference, what=group) is not None


def test_builtins_are_found_without_any_installation_record(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_entry_points(monkeypatch, {})
    assert ProviderRegistry().names() == sorted(BUILTIN_PROVIDERS) == ["mock", "ollama", "openai"]
    assert ProviderRegistry().create("mock:v2").name == "mock:v2"
    assert EvaluationSuite.registered_names() == sorted(BUILTIN_SUITES)
    assert EvaluationSuite.from_reference("physics").suite_id == "physics"
    assert Registry("executor", BUILTIN_EXECUTORS, group="worldforge.executors").names() == ["local", "ray"]


def test_a_stale_record_never_shadows_or_adds_a_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    """A record from an older version of the project: a renamed target and a removed name."""
    moved = _Point("mock", "worldforge.providers.gone:FAMILY", dist="worldforge")
    removed = _Point("oldprov", "worldforge.providers.oldprov:FAMILY", dist="worldforge")
    plugin_shadow = _Point("openai", "evil:FAMILY", dist="someone-else")
    _patch_entry_points(monkeypatch, {"worldforge.providers": [moved, removed, plugin_shadow]})
    registry = ProviderRegistry(discover_entry_points=True)
    assert registry.names() == ["mock", "ollama", "openai"]
    assert {info.source for info in registry.infos()} == {BUILTIN}
    assert registry.create("mock").name == "mock"
    assert moved.loads == removed.loads == plugin_shadow.loads == 0


def test_builtin_capabilities_are_read_from_the_provider_classes() -> None:
    derived = builtin_capabilities()
    assert derived == {
        "mock": ("predict", "score", "generate", "embed"),
        "ollama": ("generate",),
        "openai": ("generate",),
    }
    registry = ProviderRegistry(discover_entry_points=False)
    for name, full in (("mock", "mock"), ("ollama", "ollama:m"), ("openai", "openai:m")):
        assert set(derived[name]) == registry.create(full, {}).capabilities
    listed = {info.name: info.capabilities for info in registry.infos()}
    assert listed == derived


def test_a_provider_registered_by_reference_loads_lazily() -> None:
    registry = ProviderRegistry(discover_entry_points=False)
    registry.register("later", "tests.core.test_registry:make_plugin_provider")
    assert registry.is_known("later:x")
    assert registry.create("later:x").name == "later:x"
    registry.register("fam", "worldforge.providers.mock:FAMILY")  # a family gets the run's options
    assert registry.create("fam:v", {"any": 1}).name == "mock:v"
    registry.register("nothing", "tests.core.test_registry:NOT_A_FACTORY")
    with pytest.raises(
        WorldForgeError, match="provider 'nothing': int is neither a ProviderFamily nor callable"
    ):
        registry.create("nothing")


def make_plugin_provider(arg: str | None = None) -> Any:
    from worldforge.providers.mock import MockProvider

    provider = MockProvider(arg or "")
    provider.name = f"later:{arg}" if arg else "later"
    return provider


NOT_A_FACTORY = 3


def test_registry_precedence_replacement_and_one_line_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = _Point("plugged", "pkg:thing", target="from-plugin")
    shadow = _Point("base", "pkg:other", target="shadow")
    _patch_entry_points(monkeypatch, {"g": [plugin, shadow]})
    registry: Registry[object] = Registry("widget", {"base": "no_such_module_anywhere:attr"}, group="g")
    assert registry.names() == ["base", "plugged"]  # listing imports nothing
    assert [r.source for r in registry.registrations()] == [BUILTIN, ENTRY_POINT]
    assert registry.load("plugged", lambda n, k: "") == "from-plugin" and shadow.loads == 0
    with pytest.raises(WorldForgeError, match=r"^widget 'base' is not available in this installation\.$"):
        registry.load("base", lambda n, k: "")
    with pytest.raises(WorldForgeError, match=r"^no widget 'nope' among base, plugged$"):
        registry.load("nope", lambda n, known: f"no widget {n!r} among {', '.join(known)}")
    with pytest.raises(WorldForgeError, match="already registered"):
        registry.register("base", "x")
    mine = ("mine",)
    registry.register("plugged", mine)  # a process-local registration beats a plugin
    entry = registry.get("plugged")
    assert entry is not None and entry.source == REGISTERED
    assert registry.load("plugged", lambda n, k: "") is mine
    registry.unregister("plugged")
    assert registry.load("plugged", lambda n, k: "") == "from-plugin"
    with pytest.raises(WorldForgeError, match="is built in and cannot be replaced"):
        registry.register("base", "x", replace=True, replace_builtin=False)
    closed: Registry[str] = Registry("widget", {}, group="g", plugins=False)
    assert closed.names() == [] and plugin.loads == 2  # loaded on each use, never by listing


def test_load_reference_keeps_import_errors_of_installed_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_plugin_mod.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):  # a bug, not "not installed"
        load_reference("broken_plugin_mod:x", what="thing")
    with pytest.raises(WorldForgeError, match="not a 'module:attr' reference"):
        load_reference("no-colon", what="thing")
    with pytest.raises(WorldForgeError, match="worldforge.core.registry defines no Nope"):
        load_reference("worldforge.core.registry:Nope", what="thing")


def test_unknown_names_keep_their_one_line_errors() -> None:
    assert executor_names() == ["local", "ray"]
    with pytest.raises(
        WorldForgeError, match=r"^--executor: unknown executor 'dask'; choose one of local, ray\.$"
    ):
        create_executor("dask", 1)
    with pytest.raises(
        WorldForgeError, match=r"^--sandbox: expected auto, bubblewrap or process, got 'gvisor'\.$"
    ):
        resolve_isolation("gvisor")
    assert resolve_isolation("process") == "process"
    with pytest.raises(
        WorldForgeError, match=r"^Unknown provider 'ghost'\. Known providers: mock, ollama, openai\.$"
    ):
        ProviderRegistry(discover_entry_points=False).create("ghost")
    assert choices(["a"]) == "a" and choices(["a", "b", "c"]) == "a, b or c"


def test_sandboxes_take_no_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _Point("nosandbox", "evil:MODE", target=object())
    _patch_entry_points(monkeypatch, {"worldforge.sandboxes": [fake]})
    assert ISOLATIONS.names() == ["bubblewrap", "process"]
    with pytest.raises(WorldForgeError, match="expected auto, bubblewrap or process"):
        resolve_isolation("nosandbox")
    assert fake.loads == 0


def test_naming_the_builtins_imports_none_of_them() -> None:
    """Listing providers, suites and executors imports no provider client, suite, Ray or torch."""
    code = (
        "import sys\n"
        "from worldforge.providers.registry import ProviderRegistry\n"
        "from worldforge.evaluation.suite import EvaluationSuite\n"
        "from worldforge.execution import executor_names\n"
        "ProviderRegistry().infos(); EvaluationSuite.registered_names(); executor_names()\n"
        "bad = {'ray', 'torch', 'ollama', 'openai', 'httpx', 'worldforge.suites.science_birds.suite',\n"
        "       'worldforge.execution.ray'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_a_family_is_never_taken_for_a_provider() -> None:
    from worldforge.providers.mock import FAMILY

    assert isinstance(FAMILY, ProviderFamily) and not hasattr(FAMILY, "capabilities")
