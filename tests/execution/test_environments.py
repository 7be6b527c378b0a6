"""Installing a team's ``requirements.txt`` never runs the team's code on the host.

The file is read as a hostile team would write it: options that change the index, URLs, paths and
sdists with their own build backend are refused before pip starts; a wheel's start-up ``.pth`` file
does not run during installation; pip's environment holds none of the evaluator's credentials.
The team's lines are resolved together with the package environment's (the supported pin and the
base), here from wheelhouses of hand-written stand-in wheels, so nothing leaves the machine.
Tests that install for real need bubblewrap: they skip without it, and fail on CI (``CI=true``).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.sandboxing import require_sandbox
from worldforge.core.errors import WorldForgeError
from worldforge.execution import environments, pip_confined
from worldforge.execution.confine import Confinement, confine_command, python_hidden, python_paths
from worldforge.execution.environments import (
    SubmissionEnvironment,
    default_cache_root,
    environment_key,
    package_environment,
    plain_requirements,
    require_package,
    submission_environment,
)
from worldforge.execution.pip_confined import installer

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-planted-0001",
    "OPENAI_API_KEY": "sk-planted-0002",
    "PIP_CLIENT_CERT": "/root/planted-client.pem",
    "PIP_KEYRING_PROVIDER": "import",
    "PIP_CONFIG_FILE": "/root/planted-pip.conf",
    "NETRC": "/root/planted-netrc",
}
NO_WHEEL = "has no wheel for this Python"
#: What the package environment adds to a team's lines (llms4pcg's pin, then the base).
PACKAGE_LINES = ["llms4pcg==2.0.1", "python-dotenv", "numpy"]


@pytest.fixture
def sandboxed() -> None:
    """Real installs need bubblewrap: skipped where it is missing, a failure on CI."""
    require_sandbox()


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def _forbid_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a process was started: {args!r}")

    monkeypatch.setattr(environments.subprocess, "run", refuse)


def _install(
    tmp_path: Path, requirements: str, wheelhouse: Path, install: bool = True
) -> SubmissionEnvironment:
    return submission_environment(requirements, package="llms4pcg", install=install, where="team-x",
                                  cache_root=tmp_path / "envs", wheelhouse=str(wheelhouse))  # fmt: skip


def _wheel(folder: Path, name: str, files: dict[str, str], version: str = "1.0") -> Path:
    """A minimal pure-Python wheel ``name-version``, written by hand."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    contents = {
        **files,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    contents[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
    return wheel


def _hostile_sdist(folder: Path, marker: Path) -> Path:
    """An sdist with an in-tree PEP 517 backend whose every hook writes the environment it sees
    (credentials included) to ``marker`` on the host."""
    backend = (
        "import os, pathlib\n"
        f"def _steal():\n    pathlib.Path({str(marker)!r}).write_text(repr(dict(os.environ)))\n"
        "def get_requires_for_build_wheel(config_settings=None):\n    _steal(); return []\n"
        "def prepare_metadata_for_build_wheel(d, config_settings=None):\n    _steal(); raise SystemExit(1)\n"
        "def build_wheel(d, config_settings=None, metadata_directory=None):\n"
        "    _steal(); raise SystemExit(1)\n"
        "def build_sdist(d, config_settings=None):\n    _steal(); raise SystemExit(1)\n"
    )
    files = {
        "pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n\n'
        '[project]\nname = "hostile"\nversion = "1.0"\n',
        "backend.py": backend,
        "PKG-INFO": "Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n",
    }
    folder.mkdir(parents=True, exist_ok=True)
    sdist = folder / "hostile-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"hostile-1.0/{path}")
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return sdist


HOSTILE_LINES = [
    "--index-url http://127.0.0.1:9/simple",
    "-i http://127.0.0.1:9/simple",
    "--extra-index-url http://127.0.0.1:9/simple",
    "-f http://127.0.0.1:9/links",
    "--find-links=/tmp/links",
    "--trusted-host 127.0.0.1",
    "--pre",
    "--no-index",
    "-c constraints.txt",
    "pkg @ file:///tmp/pkg-1.0.tar.gz",
    "pkg @ https://127.0.0.1:9/pkg-1.0-py3-none-any.whl",
    "git+https://127.0.0.1:9/team/pkg.git",
    "https://127.0.0.1:9/pkg-1.0-py3-none-any.whl",
    "./local.tar.gz",
    "../sibling",
    "/abs/path",
    "file:pkg",
    "pkg-1.0.tar.gz",
    "local.whl",
    "-e .",
    "-r other.txt",
    "numpy==1.0 --config-settings=editable_mode=compat",
    'numpy; python_version == "${AWS_SECRET_ACCESS_KEY}"',
    "numpy ==",
    "numpy[",
]


@pytest.mark.parametrize("line", HOSTILE_LINES)
def test_a_line_that_is_not_a_plain_requirement_is_refused_before_pip(
    line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forbid_subprocess(monkeypatch)
    text = f"# pinned\nnumpy>=1.0\n{line}\n"
    refused = r"^team-x: requirements\.txt line 3: .* is refused: "
    with pytest.raises(WorldForgeError, match=refused) as caught:
        _install(tmp_path, text, tmp_path)
    assert line[:40] in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "envs").exists()


def test_plain_requirements_keep_extras_markers_and_hashes() -> None:
    text = (
        "numpy>=1.26  # comment\n"
        "\n"
        'requests[socks]==2.32.3 ; python_version >= "3.9" \\\n'
        "    --hash=sha256:70761cfe03c773ceb22aa2f671b4757976145175cdfca038c02654d061d6dcc6\n"
    )
    assert plain_requirements(text, "team-x") == [
        "numpy>=1.26",
        'requests[socks]==2.32.3; python_version >= "3.9" '
        "--hash=sha256:70761cfe03c773ceb22aa2f671b4757976145175cdfca038c02654d061d6dcc6",
    ]
    with pytest.raises(WorldForgeError, match=r"line 1: .*--hash after"):
        plain_requirements("numpy --hash sha256:00\n", "team-x")  # only the --hash=ALGO:HEX form
    assert plain_requirements("# nothing\n\n", "team-x") == []


def test_only_supported_packages_and_versions_get_an_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forbid_subprocess(monkeypatch)
    with pytest.raises(WorldForgeError, match=r"^team-x: 'openai' is not a supported competition package "
                       r"\(chatgpt4pcg 1\.2\.2, llms4pcg 2\.0\.1\)\.$"):  # fmt: skip
        require_package("openai", "team-x")
    require_package("llms4pcg", "team-x")
    message = r"^team-x: requirements\.txt asks for LLMs4PCG==2\.0\.0; submissions run on llms4pcg 2\.0\.1\.$"
    with pytest.raises(WorldForgeError, match=message):
        _install(tmp_path, "LLMs4PCG==2.0.0\n", tmp_path)
    assert not (tmp_path / "envs").exists()


def test_the_shared_cache_is_per_machine_and_never_writable_by_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_root() == tmp_path / "xdg" / "worldforge" / "submission-envs"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG rules ignore a relative path
    assert default_cache_root() == Path.home() / ".cache" / "worldforge" / "submission-envs"
    _forbid_subprocess(monkeypatch)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(WorldForgeError, match=r"the environment cache must be a folder owned by uid \d+ and "
                       r"writable by it alone"):  # fmt: skip
        package_environment("llms4pcg", cache_root=shared)


def _run_recorder(calls: list[dict[str, Any]], listing: str = "[]", pause: float = 0.0) -> Callable[..., Any]:
    """A stand-in for ``subprocess.run`` that records each confined pip, with the requirements pip
    would have read (the file bound at ``/installer/requirements.txt``)."""

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        bound = [argv[i - 1] for i, a in enumerate(argv) if a == "/installer/requirements.txt" and i > 1]
        lines = Path(bound[0]).read_text().split("\n")[:-1] if bound else None
        calls.append({"argv": list(argv), "requirements": lines, **kwargs})
        time.sleep(pause)
        out = listing if "list" in argv else ""
        return subprocess.CompletedProcess(argv, 0, stdout=out, stderr="")

    return run


def _setenv(argv: list[str]) -> dict[str, str]:
    return {argv[i + 1]: argv[i + 2] for i, arg in enumerate(argv) if arg == "--setenv"}


def test_pip_gets_no_credentials_and_runs_confined_then_the_cache_is_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: None
) -> None:
    monkeypatch.setattr(environments, "bubblewrap_status", lambda: (True, "bubblewrap (test)"))
    calls: list[dict[str, Any]] = []
    listed = '[{"name": "Probe", "version": "1.0"}, {"name": "llms4pcg", "version": "2.0.1"}]'
    monkeypatch.setattr(environments.subprocess, "run", _run_recorder(calls, listed))
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    env = _install(tmp_path, "probe==1.0\n", wheelhouse)
    assert env.kind == "venv" and env.packages == {"probe": "1.0", "llms4pcg": "2.0.1"}
    install, listing = calls
    # one resolution: the team's lines first, then the package pin and the base
    assert install["requirements"] == ["probe==1.0", *PACKAGE_LINES]
    for call in calls:
        argv = call["argv"]
        assert call["env"] == {} and Path(argv[0]).name == "bwrap" and "--clearenv" in argv
        assert "--die-with-parent" in argv
        text = " ".join(argv)
        for name, value in SECRETS.items():
            assert value not in text and (name not in text or name == "PIP_KEYRING_PROVIDER")
        inside = _setenv(argv)
        assert inside["HOME"] != os.path.expanduser("~") and inside["HOME"].startswith("/installer/")
        assert inside["PIP_KEYRING_PROVIDER"] == "disabled"
        assert set(inside) <= {*pip_confined.PIP_ENV_ALLOWED, "PATH", "HOME", "XDG_CONFIG_HOME", "LANG",
                               "TMPDIR", "PIP_KEYRING_PROVIDER"}  # fmt: skip
    argv = install["argv"]
    assert argv[argv.index("--only-binary") + 1] == ":all:" and "--no-cache-dir" in argv
    assert argv[argv.index("--no-index") + 2] == "/installer/wheelhouse"
    at = argv.index(str(wheelhouse))
    assert argv[at - 1 : at + 2] == ["--ro-bind", str(wheelhouse), "/installer/wheelhouse"]
    assert "--unshare-net" in argv  # a local wheelhouse needs no network
    assert "--unshare-net" in listing["argv"] and "list" in listing["argv"]
    prefix = Path(env.python).parent.parent
    assert prefix.parent == tmp_path / "envs"
    assert not list(prefix.rglob("*.pth"))  # self-contained: nothing layers the evaluator's packages in
    assert "include-system-site-packages = false" in (prefix / "pyvenv.cfg").read_text()
    if os.geteuid() == 0:
        assert any(Path(a).name == "setpriv" for a in argv)
        built = Path(env.python).parent.parent.rglob("*")
        assert all(p.stat().st_uid == 0 for p in built if not p.is_symlink())
    # a second call reuses the environment without starting anything
    _forbid_subprocess(monkeypatch)
    again = _install(tmp_path, "probe==1.0  # same\n", wheelhouse)
    assert again == env


def test_no_install_and_an_empty_file_use_the_package_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(environments, "bubblewrap_status", lambda: (True, "bubblewrap (test)"))
    calls: list[dict[str, Any]] = []
    listed = '[{"name": "llms4pcg", "version": "2.0.1"}]'
    monkeypatch.setattr(environments.subprocess, "run", _run_recorder(calls, listed))
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    base = package_environment("llms4pcg", cache_root=tmp_path / "envs", wheelhouse=str(wheelhouse))
    assert base.kind == "package" and base.packages == {"llms4pcg": "2.0.1"}
    assert [c["requirements"] for c in calls if c["requirements"]] == [PACKAGE_LINES]
    _forbid_subprocess(monkeypatch)
    assert _install(tmp_path, "no-such-distribution-wf==9.9\n", wheelhouse, install=False) == base
    assert _install(tmp_path, "# nothing to install\n", wheelhouse) == base


def test_a_hashed_file_keeps_its_own_pins_of_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pip's hash-checking mode needs every requirement pinned with a hash: the base is added only
    for what the file does not list, and the package pin stays when the file names it too."""
    monkeypatch.setattr(environments, "bubblewrap_status", lambda: (True, "bubblewrap (test)"))
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(environments.subprocess, "run", _run_recorder(calls))
    digest = "--hash=sha256:" + "0" * 64
    team = f"numpy==2.0.0 {digest}\nllms4pcg==2.0.1 {digest}\n"
    _install(tmp_path, team, tmp_path)
    assert calls[0]["requirements"] == [
        f"numpy==2.0.0 {digest}",
        f"llms4pcg==2.0.1 {digest}",
        "python-dotenv",
    ]


def test_parallel_builds_of_one_environment_install_once_and_leave_nothing_half_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(environments, "bubblewrap_status", lambda: (True, "bubblewrap (test)"))
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(environments.subprocess, "run", _run_recorder(calls, pause=0.3))
    root = tmp_path / "envs"
    root.mkdir()
    key = environment_key(PACKAGE_LINES, installer(wheelhouse=str(tmp_path)), "package")
    (root / f".{key}.build-crashed").mkdir()  # what a killed build leaves: never reused, removed
    found: list[SubmissionEnvironment] = []

    def build() -> None:
        found.append(package_environment("llms4pcg", cache_root=root, wheelhouse=str(tmp_path)))

    workers = [threading.Thread(target=build) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert len(found) == 3 and found[0] == found[1] == found[2]
    assert sum(1 for c in calls if "install" in c["argv"]) == 1
    assert sorted(p.name for p in root.iterdir()) == [f".{key}.lock", key]


@pytest.mark.parametrize("variable", ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"])
def test_a_source_url_with_credentials_is_refused(
    variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forbid_subprocess(monkeypatch)
    monkeypatch.setenv(variable, "https://user:hunter2@127.0.0.1:9/simple")
    with pytest.raises(WorldForgeError, match=f"^{variable}: a URL with credentials"):
        submission_environment(
            "numpy\n", package="llms4pcg", install=True, cache_root=tmp_path, where="team-x"
        )
    monkeypatch.delenv(variable)
    with pytest.raises(WorldForgeError, match=r"^submissions\.index_url: a URL with credentials"):
        installer(index_url="https://user:hunter2@127.0.0.1:9/simple")


def test_without_bubblewrap_building_fails_closed_but_a_cached_environment_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = (False, "bubblewrap (bwrap) is not installed")
    monkeypatch.setattr(environments, "bubblewrap_status", lambda: missing)
    _forbid_subprocess(monkeypatch)
    message = r"^team-x: bubblewrap is needed to install a team's requirements \(bubblewrap \(bwrap\) is not"
    with pytest.raises(WorldForgeError, match=message):
        _install(tmp_path, "numpy\n", tmp_path)
    with pytest.raises(
        WorldForgeError, match=r"^team-x: bubblewrap is needed to install the llms4pcg environment"
    ):
        _install(tmp_path, "numpy\n", tmp_path, install=False)
    monkeypatch.setattr(environments, "bubblewrap_status", lambda: (True, "bubblewrap (test)"))
    monkeypatch.setattr(environments.subprocess, "run", _run_recorder([]))
    built = _install(tmp_path, "numpy\n", tmp_path, install=False)
    monkeypatch.setattr(environments, "bubblewrap_status", lambda: missing)
    _forbid_subprocess(monkeypatch)
    assert _install(tmp_path, "numpy\n", tmp_path, install=False) == built


def test_the_cache_key_follows_recipe_index_and_wheelhouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ["numpy>=1.26"]
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    key = environment_key(lines, installer())
    assert environment_key(lines, installer()) == key
    keys = {
        key,
        environment_key(lines, installer(index_url="https://127.0.0.1:9/simple")),
        environment_key(lines, installer(index_url="https://127.0.0.1:8/simple")),
        environment_key(lines, installer(wheelhouse=str(one))),
        environment_key(lines, installer(wheelhouse=str(two))),
        environment_key(["numpy>=1.27"], installer()),
        environment_key(lines, installer(), "package"),
    }
    assert len(keys) == 7
    _wheel(one, "probe", {"probe/__init__.py": ""})
    assert environment_key(lines, installer(wheelhouse=str(one))) not in keys  # its wheels changed
    monkeypatch.setattr(environments, "RECIPE", "wheels-only/next")
    assert environment_key(lines, installer()) != key
    with pytest.raises(WorldForgeError, match="^--wheelhouse: .* is not a folder"):
        installer(wheelhouse=str(tmp_path / "missing"))


def _package_wheels(wheelhouse: Path) -> None:
    """Stand-ins for the package environment's pin and base: an offline resolution needs them."""
    _wheel(wheelhouse, "llms4pcg", {"llms4pcg/__init__.py": ""}, version="2.0.1")
    _wheel(wheelhouse, "python-dotenv", {"dotenv/__init__.py": ""})
    _wheel(wheelhouse, "numpy", {"numpy/__init__.py": ""})


def test_an_sdist_only_requirement_is_refused_and_never_built(
    tmp_path: Path, sandboxed: None, planted: None
) -> None:
    marker = tmp_path / "stolen.txt"
    wheelhouse = tmp_path / "wheelhouse"
    _hostile_sdist(wheelhouse, marker)
    _package_wheels(wheelhouse)
    with pytest.raises(WorldForgeError) as caught:
        _install(tmp_path, "hostile==1.0\n", wheelhouse)
    assert str(caught.value).startswith(f"team-x: requirements.txt: hostile==1.0 {NO_WHEEL} (only wheels")
    assert not marker.exists()
    assert not list((tmp_path / "envs").glob("*/environment.json"))
    assert [p.name for p in (tmp_path / "envs").iterdir() if not p.name.endswith(".lock")] == []


def test_a_wheelhouse_without_the_package_names_what_the_environment_misses(
    tmp_path: Path, sandboxed: None
) -> None:
    wheelhouse = tmp_path / "wheelhouse"
    _wheel(wheelhouse, "wfprobe", {"wfprobe/__init__.py": ""})
    with pytest.raises(WorldForgeError) as caught:
        _install(tmp_path, "wfprobe==1.0\n", wheelhouse)
    assert str(caught.value) == (
        f"team-x: the llms4pcg 2.0.1 environment cannot be built: llms4pcg==2.0.1 has no wheel in the "
        f"wheelhouse {wheelhouse} (it must hold the package, python-dotenv, numpy and their dependencies)"
    )


def test_a_wheel_installs_without_starting_it_and_imports_inside_a_sandbox(
    tmp_path: Path, sandboxed: None, planted: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pth-ran-on-host.txt"
    wheelhouse = tmp_path / "wheelhouse"
    startup = f"import sys; sys.wf_probe_pth = 1; open({str(marker)!r}, 'w').write('ran')\n"
    _wheel(wheelhouse, "wfprobe", {"wfprobe/__init__.py": "VALUE = 42\n", "wfprobe-startup.pth": startup})
    _package_wheels(wheelhouse)
    env = _install(tmp_path, "wfprobe==1.0\n", wheelhouse)
    assert env.kind == "venv" and env.packages["wfprobe"] == "1.0" and env.packages["llms4pcg"] == "2.0.1"
    assert not marker.exists()
    prefix = Path(env.python).parent.parent
    assert (prefix / "environment.json").is_file()
    for path in prefix.rglob("*"):
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        assert not mode & (stat.S_IWOTH | stat.S_IWGRP | stat.S_ISUID | stat.S_ISGID), path
        assert path.stat().st_uid == os.geteuid(), path
    home = "/home/probe"
    spec = Confinement(
        ro_binds={p: p for p in python_paths(env.python)},
        tmpfs={home: 8 * 1024 * 1024},
        env={"PATH": "/usr/bin:/bin", "HOME": home},
        chdir=home,
    )
    probe = [env.python, "-c", "import sys, wfprobe; print(wfprobe.VALUE, getattr(sys, 'wf_probe_pth', 0))"]
    done = subprocess.run(confine_command(probe, spec), env={}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["42", "1"]  # the .pth ran, inside the sandbox only
    assert not marker.exists()
    _forbid_subprocess(monkeypatch)
    again = _install(tmp_path, "wfprobe==1.0\n", wheelhouse)
    assert again == env


def test_a_virtual_environment_is_confined_without_the_evaluators_packages(
    tmp_path: Path, sandboxed: None
) -> None:
    """A venv needs its own folder and the installation it was made from, never the evaluator's
    ``site-packages``; those inside that installation can be hidden from the sandbox."""
    import site
    import venv

    folder = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = str(folder / "bin" / "python")
    paths = python_paths(python)
    evaluator_sites = [p for p in site.getsitepackages() if os.path.isdir(p)]
    assert str(folder) in paths and os.path.realpath(sys.base_prefix) in map(os.path.realpath, paths)
    hidden = python_hidden(python)
    for site_dir in evaluator_sites:  # bound only where the base installation holds it: then hidden
        assert site_dir in hidden or not any(site_dir.startswith(p + os.sep) for p in paths), site_dir
    base_python = os.path.join(sys.base_prefix, "bin", "python3")  # (the tests may run in a venv)
    assert python_hidden(base_python) == []  # no venv: nothing to hide
    home = "/home/probe"
    spec = Confinement(ro_binds={p: p for p in paths}, tmpfs={home: 8 * 1024 * 1024}, hidden=hidden,
                       env={"PATH": "/usr/bin:/bin", "HOME": home}, chdir=home)  # fmt: skip
    code = "import json, os, sys; print(json.dumps([sys.path, {p: os.listdir(p) for p in sys.argv[1:]}]))"
    probe = [python, "-c", code, *hidden]
    done = subprocess.run(confine_command(probe, spec), env={}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen_path, listings = json.loads(done.stdout)
    assert not set(seen_path) & set(evaluator_sites)
    assert listings == {p: [] for p in hidden}
