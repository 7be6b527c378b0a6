"""Generation against model servers runs several trials at once, bounded by the servers'
connections, and changes no record: a slow loopback Ollama stub sees more than one request in
flight while the records and the result digest equal a one-at-a-time run's; with a second server
that fails every request, the run still completes with the same digest (the failing server is
taken out of rotation and its requests are retried on the other)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ollama_stub import OllamaStub
from tests.suites.test_science_birds import pixel_classifier  # noqa: F401 - fixture
from worldforge.forge import WorldForge
from worldforge.pcg.levels.glyphs import letter_program
from worldforge.suites.science_birds.generate import model_capacity
from worldforge.suites.science_birds.suite import evaluate
from worldforge.workspace import start_run

pytestmark = pytest.mark.usefixtures("model_env_free")

LATENCY_S = 0.04


class SlowModel:
    """A stub reply: the letter's program after a delay, counting requests in flight."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(LATENCY_S)
            letter = request["messages"][0]["content"].split('character "', 1)[1][0]
            seed = request["options"]["seed"]
            return f"Here you go.\n```\n{letter_program(letter, seed % 1000, request['model'])}```\n"
        finally:
            with self._lock:
                self.in_flight -= 1


@pytest.fixture
def servers() -> Iterator[tuple[OllamaStub, OllamaStub, SlowModel]]:
    model = SlowModel()
    with OllamaStub(models=["qwen2.5:latest"]) as good, OllamaStub(models=["qwen2.5:latest"]) as bad:
        good.reply = model
        bad.fail_next = [503] * 10_000
        yield good, bad, model


def _run(workspace: Path, hosts: list[str], connections: int) -> tuple[str, dict[str, Any]]:
    options = {
        "characters": "A-D",
        "trials": 2,
        "progress": False,
        "workers": 1,
        "ollama_host": hosts if len(hosts) > 1 else hosts[0],
        "max_connections": connections,
        "ollama_backoff_s": 0,
    }
    with start_run(workspace, kind="evaluation", argv=["test"], config=options) as run:
        forge = WorldForge(provider_options=options)
        report = evaluate(["ollama:qwen2.5"], forge=forge, options=options, run=run)
        records = run.completed_items()
        run.complete({"result_digest": report.provenance.result_digest})
    assert sum(r.metrics["ok_trials"] for r in report.results) == 16  # 2 programs x 4 letters x 2
    return report.provenance.result_digest, records


def test_trials_run_concurrently_with_the_sequential_records(
    tmp_path: Path,
    servers: tuple[OllamaStub, OllamaStub, SlowModel],
    pixel_classifier: None,  # noqa: F811
) -> None:
    good, bad, model = servers
    sequential, seq_records = _run(tmp_path / "one", [good.host], 1)
    assert model.peak == 1
    model.peak = 0
    concurrent, records = _run(tmp_path / "four", [good.host], 4)
    assert 1 < model.peak <= 4  # several trials at once, never above the server's limit
    assert concurrent == sequential
    assert records == seq_records  # the same records, exchanges included, item by item

    # a second server that fails every request: out of rotation, its requests retried on the first
    model.peak = 0
    failover, fo_records = _run(tmp_path / "failover", [good.host, bad.host], 2)
    assert [r for r in bad.requests if "messages" in r], "the failing server should have been tried"
    assert failover == sequential and fo_records == seq_records


def test_capacity_counts_servers_times_connections() -> None:
    forge = WorldForge(
        provider_options={"ollama_host": ["http://127.0.0.1:1", "http://127.0.0.1:2"], "max_connections": 3}
    )
    assert model_capacity(forge, ["ollama:qwen2.5", "mock:qwen"]) == {"ollama:qwen2.5": 6}
