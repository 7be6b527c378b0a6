"""Suite-wide test isolation.

Documentation snippets and custom-suite tests register suites in the process-wide registry; with
pytest-xdist, whichever test a worker runs next would otherwise see them (an extra name in "Known
suites: ..." messages), so every test gets the registry back as it found it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_suite_registry() -> Iterator[None]:
    from worldforge.evaluation.suite import SUITES

    saved = dict(SUITES._registered)
    yield
    SUITES._registered.clear()
    SUITES._registered.update(saved)


@pytest.fixture
def model_env_free(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No model key, server URL or project config from the machine running the tests, and an empty
    working directory: what model and gateway tests must not pick up by accident."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "WORLDFORGE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
