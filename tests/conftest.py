"""Suite-wide test isolation.

Documentation snippets and custom-suite tests register suites in the process-wide registry; with
pytest-xdist, whichever test a worker runs next would otherwise see them (an extra name in "Known
suites: ..." messages), so every test gets the registry back as it found it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _isolated_suite_registry() -> Iterator[None]:
    from worldforge.evaluation.suite import EvaluationSuite

    saved = dict(EvaluationSuite._registry)
    yield
    EvaluationSuite._registry.clear()
    EvaluationSuite._registry.update(saved)
