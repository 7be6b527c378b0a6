"""Installing a team's ``requirements.txt`` never runs the team's code on the host.

The file is read as a hostile team would write it: options that change the index, URLs, paths and
sdists with their own build backend are refused before pip starts; a wheel's start-up ``.pth`` file
does not run during installation; pip's environment holds none of the evaluator's credentials.
Tests that install for real need bubblewrap: they skip without it, and fail on CI (``CI=true``).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import stat
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.sandboxing import require_sandbox
from worldforge.core.errors import WorldForgeError
from worldforge.execution import environments
from worldforge.execution.confine import Confinement, confine_command, python_paths
from worldforge.execution.environments import (
    SubmissionEnvironment,
    environment_key,
    installer,
    plain_requirements,
    submission_environment,
)

SECRETS = {
    "AWS_SECRET_ACCESS_KEY": "aws-secret-planted-0001",
    "OPENAI_API_KEY": "sk-planted-0002",
    "PIP_CLIENT_CERT": "/root/planted-client.pem",
    "PIP_KEYRING_PROVIDER": "import",
    "PIP_CONFIG_FILE": "/root/planted-pip.conf",
    "NETRC": "/root/planted-netrc",
}
NO_WHEEL = "has no wheel for this Python"


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


def _install(tmp_path: Path, requirements: str, wheelhouse: Path) -> SubmissionEnvironment:
    return submission_environment(
        requirements, install=True, cache_root=tmp_path / "envs", where="team-x", wheelhouse=str(wheelhouse)
    )


def _wheel(folder: Path, name: str, files: dict[str, str]) -> Path:
    """A minimal pure-Python wheel ``name-1.0``, written by hand."""
    dist = f"{name}-1.0.dist-info"
    contents = {
        **files,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in contents.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    contents[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
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
        submission_environment(text, install=True, cache_root=tmp_path / "envs", where="team-x")
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


def _run_recorder(calls: list[dict[str, Any]], listing: str = "[]") -> Callable[..., Any]:
    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append({"argv": list(argv), **kwargs})
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
    listed = '[{"name": "Probe", "version": "1.0"}]'
    monkeypatch.setattr(environments.subprocess, "run", _run_recorder(calls, listed))
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    env = _install(tmp_path, "probe==1.0\n", wheelhouse)
    assert env.kind == "venv" and env.packages["probe"] == "1.0"
    install, listing = calls
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
        assert set(inside) <= {*environments.PIP_ENV_ALLOWED, "PATH", "HOME", "XDG_CONFIG_HOME", "LANG",
                               "TMPDIR", "PIP_KEYRING_PROVIDER"}  # fmt: skip
    argv = install["argv"]
    assert argv[argv.index("--only-binary") + 1] == ":all:" and "--no-cache-dir" in argv
    assert argv[argv.index("--no-index") + 2] == "/installer/wheelhouse"
    at = argv.index(str(wheelhouse))
    assert argv[at - 1 : at + 2] == ["--ro-bind", str(wheelhouse), "/installer/wheelhouse"]
    assert "--unshare-net" in argv  # a local wheelhouse needs no network
    assert "--unshare-net" in listing["argv"] and "list" in listing["argv"]
    if os.geteuid() == 0:
        assert any(Path(a).name == "setpriv" for a in argv)
        built = Path(env.python).parent.parent.rglob("*")
        assert all(p.stat().st_uid == 0 for p in built if not p.is_symlink())
    # a second call reuses the environment without starting anything
    _forbid_subprocess(monkeypatch)
    again = _install(tmp_path, "probe==1.0  # same\n", wheelhouse)
    assert again == env


@pytest.mark.parametrize("variable", ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"])
def test_a_source_url_with_credentials_is_refused(
    variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _forbid_subprocess(monkeypatch)
    monkeypatch.setenv(variable, "https://user:hunter2@127.0.0.1:9/simple")
    with pytest.raises(WorldForgeError, match=f"^{variable}: a URL with credentials"):
        submission_environment("numpy\n", install=True, cache_root=tmp_path, where="team-x")
    monkeypatch.delenv(variable)
    with pytest.raises(WorldForgeError, match=r"^submissions\.index_url: a URL with credentials"):
        installer(index_url="https://user:hunter2@127.0.0.1:9/simple")


def test_without_bubblewrap_installing_fails_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = (False, "bubblewrap (bwrap) is not installed")
    monkeypatch.setattr(environments, "bubblewrap_status", lambda: missing)
    _forbid_subprocess(monkeypatch)
    message = (
        r"^team-x: requirements\.txt: bubblewrap is needed to install a team's requirements .*no-install"
    )
    with pytest.raises(WorldForgeError, match=message):
        submission_environment("numpy\n", install=True, cache_root=tmp_path, where="team-x")
    base = submission_environment("numpy\n", install=False, cache_root=tmp_path, where="team-x")
    assert base.kind == "current" and base.python == sys.executable


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
    }
    assert len(keys) == 6
    _wheel(one, "probe", {"probe/__init__.py": ""})
    assert environment_key(lines, installer(wheelhouse=str(one))) not in keys  # its wheels changed
    monkeypatch.setattr(environments, "RECIPE", "wheels-only/3")
    assert environment_key(lines, installer()) != key
    with pytest.raises(WorldForgeError, match="^--wheelhouse: .* is not a folder"):
        installer(wheelhouse=str(tmp_path / "missing"))


def test_an_sdist_only_requirement_is_refused_and_never_built(
    tmp_path: Path, sandboxed: None, planted: None
) -> None:
    marker = tmp_path / "stolen.txt"
    wheelhouse = tmp_path / "wheelhouse"
    _hostile_sdist(wheelhouse, marker)
    with pytest.raises(WorldForgeError) as caught:
        _install(tmp_path, "hostile==1.0\n", wheelhouse)
    assert str(caught.value).startswith(f"team-x: requirements.txt: hostile==1.0 {NO_WHEEL} (only wheels")
    assert not marker.exists()
    assert not list((tmp_path / "envs").glob("*/environment.json"))
    assert not [p for p in (tmp_path / "envs").iterdir() if p.name.startswith(".")]  # nothing half-built left


def test_a_wheel_installs_without_starting_it_and_imports_inside_a_sandbox(
    tmp_path: Path, sandboxed: None, planted: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pth-ran-on-host.txt"
    wheelhouse = tmp_path / "wheelhouse"
    startup = f"import sys; sys.wf_probe_pth = 1; open({str(marker)!r}, 'w').write('ran')\n"
    _wheel(wheelhouse, "wfprobe", {"wfprobe/__init__.py": "VALUE = 42\n", "wfprobe-startup.pth": startup})
    env = _install(tmp_path, "wfprobe==1.0\n", wheelhouse)
    assert env.kind == "venv" and env.packages["wfprobe"] == "1.0"
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
