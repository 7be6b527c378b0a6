"""`.worldforge/config.yaml`: defaults, the shipped example, relative paths and unknown-key errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from worldforge.config import default_run_workspace, default_workspace_dir, load_config
from worldforge.core.errors import WorldForgeError

REPO = Path(__file__).resolve().parents[1]


def test_defaults_without_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)
    config = load_config()
    assert config.source is None and config.workspace_dir is None
    assert default_run_workspace() is None
    assert default_workspace_dir() == Path(".worldforge")
    assert config.retention.max_age_days == 30 and config.retention.keep_latest == 10
    assert config.ollama.host == "http://127.0.0.1:11434" and config.workers == 1


def test_example_config_parses() -> None:
    config = load_config(REPO / ".worldforge.example" / "config.yaml")
    assert config.workspace_dir == REPO / ".worldforge"
    assert config.workers == 2 and config.retention.young_hours == 24.0
    assert config.classifier.device == "cpu" and config.ollama.model is None
    assert config.submissions.index_url is None  # documented, commented out


def test_project_config_relative_to_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".worldforge").mkdir()
    (tmp_path / ".worldforge" / "config.yaml").write_text(
        "workspace_dir: out/ws\nretention:\n  keep_latest: 3\n"
        "classifier:\n  checkpoint: models/c.safetensors\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WORLDFORGE_CONFIG", raising=False)
    assert default_run_workspace() == tmp_path / "out" / "ws"
    config = load_config()
    assert config.retention.keep_latest == 3
    assert config.classifier.checkpoint == str(tmp_path / "models" / "c.safetensors")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("workspace_dr: x\n", "workspace_dr: unknown key (allowed: workspace_dir, retention"),
        ("retention:\n  keep_lastest: 3\n", "retention.keep_lastest: unknown key"),
        ("workers: 0\n", "workers: must be >= 1"),
        ("workers: two\n", "workers: expected an integer"),
        ("retention:\n  max_age_days: true\n", "retention.max_age_days: expected an integer"),
        ("ollama:\n  host: 127.0.0.1:11434\n", "ollama.host: expected an http(s) URL"),
        (
            "submissions:\n  index_url: pypi.example.org\n",
            "submissions.index_url: expected an http(s) or file",
        ),
        ("submissions:\n  index: https://x\n", "submissions.index: unknown key (allowed: index_url)"),
        ("submissions:\n  index_url: 3\n", "submissions.index_url: expected a string"),
        ("- a\n- b\n", "expected a mapping at the top level"),
        ("a: [\n", "invalid YAML"),
    ],
)
def test_invalid_configs_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(WorldForgeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(path)


def test_env_override_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLDFORGE_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(WorldForgeError, match="configuration file not found"):
        load_config()


def test_submissions_index_url(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("submissions:\n  index_url: https://pypi.example.org/simple\n")
    config = load_config(path)
    assert config.submissions.index_url == "https://pypi.example.org/simple"
    assert config.to_dict()["submissions"] == {"index_url": "https://pypi.example.org/simple"}
    path.write_text("submissions:\n  index_url: file:///srv/simple\n")
    assert load_config(path).submissions.index_url == "file:///srv/simple"
