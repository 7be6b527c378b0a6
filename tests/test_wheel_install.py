"""A regular (non-editable) wheel install carries and finds its presets, programs and classifier.

An editable install reads data files from the checkout, so it cannot show that the package data
is complete. This test builds a wheel from a copy of the sources (offline, no build isolation),
installs it into a fresh virtual environment that borrows only the third-party dependencies of the
running one, and runs the installed command from a directory outside any checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "worldforge"
#: Package data that only exists as files: every one must be in the wheel, byte for byte.
DATA_DIRS = ("presets", "pcg/assets", "datasets/schemas")

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{args}: {done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the sources, so the build never writes into the checkout."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(PACKAGE, src / "worldforge", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = base / "dist"
    pip = [sys.executable, "-m", "pip"]
    _run(
        [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(dist), str(src)],
        base,
    )
    (found,) = dist.glob("worldforge-*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel installed; third-party packages come from the running venv."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], venv.parent)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    _run([*pip, "install", "-q", "--no-deps", "--no-index", str(wheel)], venv.parent)
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], venv)
    # A plain path entry: the running venv's own .pth files (its editable finder) are not processed.
    deps = sysconfig.get_paths()["purelib"]
    (Path(purelib.stdout.strip()) / "worldforge_test_dependencies.pth").write_text(deps + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORLDFORGE_", "PYTHON"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return venv, env


def test_wheel_carries_every_data_file(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        expected = {
            path.relative_to(REPO).as_posix(): path
            for folder in DATA_DIRS
            for path in (PACKAGE / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        }
        assert "worldforge/pcg/assets/letter-classifier/model.safetensors" in expected
        assert "worldforge/presets/programs/zero-shot-multi-turn/prompts/1.txt" in expected
        assert set(expected) <= names, sorted(set(expected) - names)
        for name, path in expected.items():
            assert archive.read(name) == path.read_bytes(), name


def test_installed_command_lists_presets_and_programs_outside_the_checkout(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    venv, env = installed
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    listed = _run(
        [str(venv / "bin" / "worldforge"), "benchmark", "--list-presets", "--format", "json"], outside, env
    )
    presets = {p["name"]: p for p in json.loads(listed.stdout)["presets"]}
    assert set(presets) == {"mock-smoke", "pcg-pipeline"}
    assert all("error" not in p for p in presets.values())
    assert presets["pcg-pipeline"]["harness"] == "pcg-pipeline"

    probe = (
        "import json, worldforge\n"
        "from worldforge.pcg.similarity.classifier import BUNDLED_DIR\n"
        "from worldforge.pcg.programs.prompt import builtin_programs_dir, resolve_programs\n"
        "print(json.dumps({'package': worldforge.__file__, 'programs_dir': str(builtin_programs_dir()),\n"
        "    'classifier_dir': str(BUNDLED_DIR),\n"
        "    'programs': {p.name: p.digest for p in resolve_programs(None)}}))\n"
    )
    seen = json.loads(_run([str(venv / "bin" / "python"), "-c", probe], outside, env).stdout)
    for key in ("package", "programs_dir", "classifier_dir"):
        assert Path(seen[key]).resolve().is_relative_to(venv.resolve()), seen[key]
    from worldforge.pcg.programs.prompt import resolve_programs

    assert seen["programs"] == {p.name: p.digest for p in resolve_programs(None)}


def test_installed_science_birds_eval_matches_the_checkout(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The default programs and the bundled classifier come from the wheel and score as in a checkout."""
    from worldforge.core.digests import digest_file
    from worldforge.pcg.similarity.classifier import BUNDLED_DIR

    venv, env = installed
    args = ["eval", "--suite", "science-birds", "--provider", "mock", "--trials", "2", "--characters", "A"]
    args += ["--workers", "1", "--format", "json"]
    reports = {}
    for label, command in (
        ("wheel", [str(venv / "bin" / "worldforge")]),
        ("checkout", [sys.executable, "-m", "worldforge"]),
    ):
        where = tmp_path / label
        where.mkdir()
        reports[label] = json.loads(_run([*command, *args], where, env if label == "wheel" else None).stdout)
    wheel_report = reports["wheel"]
    assert [r["scenario"] for r in wheel_report["results"]] == ["zero-shot", "zero-shot-multi-turn"]
    assert digest_file(BUNDLED_DIR / "model.safetensors") in json.dumps(wheel_report)
    scores = {label: [(r["scenario"], r["score"]) for r in rep["results"]] for label, rep in reports.items()}
    assert scores["wheel"] == scores["checkout"]
