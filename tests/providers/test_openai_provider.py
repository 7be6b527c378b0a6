"""The ``openai:<model>`` provider against a loopback server speaking the OpenAI HTTP API."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.openai_stub import OpenAIStub
from tests.suites.test_science_birds import pixel_classifier  # noqa: F401 - fixture
from worldforge.cli.app import app
from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.pcg.levels.glyphs import letter_program
from worldforge.providers.chat import ChatTrial, TrialLimitExceeded
from worldforge.providers.events import InMemoryEventSink
from worldforge.providers.openai_compat import (
    OPENAI_API_URL,
    OpenAICompatProvider,
    OpenAISettings,
    guess_server_kind,
    resolve_base_url,
)
from worldforge.providers.registry import ProviderRegistry

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-test-key-never-written-7f3a9c"
runner = CliRunner()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No key, URL or project config from the machine running the tests."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "WORLDFORGE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(models=["stub-model", "other-model"]) as server:
        yield server


def _provider(
    stub: OpenAIStub, model: str = "stub-model", **kw: Any
) -> tuple[OpenAICompatProvider, list[float]]:
    sleeps: list[float] = []
    settings = OpenAISettings(model=model, base_url=stub.base_url, backoff_s=0.5, **kw)
    return OpenAICompatProvider(settings, sleep=sleeps.append), sleeps


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


HI = [{"role": "user", "content": "hi"}]


def test_registry_resolves_openai_models(monkeypatch: pytest.MonkeyPatch, stub: OpenAIStub) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
    provider = ProviderRegistry(discover_entry_points=False).create("openai:qwen2.5:32b-instruct-fp16")
    assert isinstance(provider, OpenAICompatProvider)
    assert provider.name == "openai:qwen2.5:32b-instruct-fp16" and provider.settings.base_url == stub.base_url
    assert provider.capabilities == frozenset({"generate"})
    with pytest.raises(WorldForgeError, match="needs a model"):
        ProviderRegistry(discover_entry_points=False).create("openai")


def test_importing_worldforge_does_not_import_openai() -> None:
    code = (
        "import sys, worldforge, worldforge.providers.registry, worldforge.providers.openai_compat, "
        "worldforge.suites.science_birds.suite; print('openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_success_sends_competition_settings_and_returns_usage(stub: OpenAIStub) -> None:
    stub.usage = (523, 131)
    stub.served_model = "stub-model-q4_1"
    provider, _ = _provider(stub)
    sink = InMemoryEventSink()
    provider.bind_event_handler(sink)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "draw A"}]
    result = provider.generate(messages, options={"trial_seed": 1234, "target_character": "A"})
    assert result.text == "echo: draw A" and result.provider == "openai:stub-model"
    assert result.metadata == {
        "prompt_tokens": 523,
        "completion_tokens": 131,
        "finish_reason": "stop",
        "attempts": 1,
        "model": "stub-model-q4_1",
    }
    (request,) = stub.requests
    assert request == {"model": "stub-model", "messages": messages, "temperature": 1.0, "n": 1, "seed": 1234}
    assert stub.auth_headers == ["Bearer not-needed"]  # a placeholder: local servers check no key
    assert [e.phase for e in sink.events] == ["success"]
    assert sink.events[0].metadata == {"prompt_tokens": 523, "completion_tokens": 131}


def test_n_choices_and_temperature(stub: OpenAIStub) -> None:
    provider, _ = _provider(stub, temperature=0.25)
    reply = provider.chat(HI, n=3)
    assert reply.texts == ["echo: hi", "echo: hi #1", "echo: hi #2"]
    result = provider.generate(HI, options={"n": 2})
    assert result.text == "echo: hi" and result.metadata["choices"] == ["echo: hi", "echo: hi #1"]
    assert [r["n"] for r in stub.requests] == [3, 2] and stub.requests[0]["temperature"] == 0.25
    assert "seed" not in stub.requests[0]
    with pytest.raises(WorldForgeError, match="positive integer"):
        provider.chat(HI, n=0)


def test_chat_trial_enforces_the_token_limit_from_usage(stub: OpenAIStub) -> None:
    stub.reply = lambda req, i: f"reply {len(req['messages'])}"
    provider, _ = _provider(stub)
    transcript = ChatTrial().run(
        lambda msgs, opts: provider.generate(msgs, options=opts), ["first", "second"], {"trial_seed": 7}
    )
    assert transcript.final_reply == "reply 3" and transcript.tokens == 36
    assert (transcript.prompt_tokens, transcript.completion_tokens) == (22, 14)
    assert transcript.models == ["stub-model", "stub-model"]
    assert all(r["seed"] == 7 for r in stub.requests)
    stub.usage = (12_000, 1_000)
    with pytest.raises(TrialLimitExceeded, match=r"26000 prompt\+completion tokens after turn 2"):
        ChatTrial().run(lambda m, o: provider.generate(m, options=o), ["a", "b", "c"], {})


def test_500_and_429_are_retried_honouring_retry_after(stub: OpenAIStub) -> None:
    stub.fail_next = [500, (429, {"Retry-After": "3"})]
    provider, sleeps = _provider(stub)
    sink = InMemoryEventSink()
    provider.bind_event_handler(sink)
    result = provider.generate(HI, options={})
    assert result.text == "echo: hi" and result.metadata["attempts"] == 3
    assert sleeps == [0.5, 3.0]  # backoff, then the server's longer Retry-After
    assert [(e.phase, e.attempt) for e in sink.events] == [("retry", 1), ("retry", 2), ("success", 3)]
    assert sink.events[0].message == "HTTP 500: stub failure 500" and sink.events[1].metadata == {
        "status": 429
    }


def test_retry_after_forms_and_cap(stub: OpenAIStub) -> None:
    stub.fail_next = [
        (429, {"retry-after-ms": "2500"}),
        (503, {"Retry-After": formatdate(usegmt=True)}),  # a date in the past: plain backoff
        (429, {"Retry-After": "86400"}),
    ]
    provider, sleeps = _provider(stub, max_retry_after_s=10.0)
    assert provider.generate(HI, options={}).metadata["attempts"] == 4
    assert sleeps == [2.5, 1.0, 10.0]


def test_retries_exhausted_become_a_provider_error(stub: OpenAIStub) -> None:
    stub.fail_next = [503] * 10
    provider, sleeps = _provider(stub, retries=2)
    with pytest.raises(
        ProviderError, match=r"generate failed after 3 attempt\(s\): HTTP 503: stub failure 503"
    ):
        provider.generate(HI, options={})
    assert len(stub.requests) == 3 and sleeps == [0.5, 1.0]


def test_401_is_one_clear_error_without_the_key(monkeypatch: pytest.MonkeyPatch, stub: OpenAIStub) -> None:
    stub.api_key = "the-right-key"
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    provider, sleeps = _provider(stub)
    sink = InMemoryEventSink()
    provider.bind_event_handler(sink)
    with pytest.raises(ProviderError) as info:
        provider.generate(HI, options={})
    assert "HTTP 401: the server rejected the API key" in str(info.value)
    assert len(stub.requests) == 1 and sleeps == []  # not retried
    with pytest.raises(WorldForgeError, match="rejected the API key"):
        provider.runtime_manifest()
    assert stub.auth_headers[0] == f"Bearer {SECRET}"  # the stub echoed it back in its error body
    texts = [str(info.value), *(json.dumps(e.to_dict()) for e in sink.events)]
    assert not any(SECRET in t or SECRET[:12] in t for t in texts)
    monkeypatch.setenv("OPENAI_API_KEY", "the-right-key")
    fresh, _ = _provider(stub)
    assert fresh.generate(HI, options={}).text == "echo: hi"


def test_unknown_model(stub: OpenAIStub) -> None:
    provider, sleeps = _provider(stub, model="nope")
    with pytest.raises(
        WorldForgeError, match=r"model 'nope' is not served by .* \(it serves: other-model, stub-model\)"
    ):
        provider.runtime_manifest()
    with pytest.raises(ProviderError, match="HTTP 404: The model `nope` does not exist."):
        provider.generate(HI, options={})
    assert len(stub.chat_requests()) == 1 and sleeps == []  # a 404 is not retried


def test_server_without_models_listing_checks_the_model_with_the_probe(stub: OpenAIStub) -> None:
    stub.fail_next = [404]  # GET /v1/models
    provider, _ = _provider(stub, model="nope")
    with pytest.raises(WorldForgeError, match="model 'nope' is not available on .*: a one-token chat"):
        provider.runtime_manifest()
    stub.fail_next = [404]
    served, _ = _provider(stub)
    assert served.runtime_manifest()["owned_by"] is None


def test_malformed_replies_are_one_line_provider_errors(stub: OpenAIStub) -> None:
    provider, sleeps = _provider(stub)
    stub.malformed = "no-choices"
    with pytest.raises(
        ProviderError, match=r"malformed reply from http://127\.0\.0\.1:\d+/v1: no choices\.$"
    ):
        provider.generate(HI, options={})
    stub.malformed = "no-content"
    with pytest.raises(ProviderError, match=r"a choice has no message content \(finish_reason=length\)\.$"):
        provider.generate(HI, options={})
    stub.malformed = "not-json"
    with pytest.raises(
        ProviderError, match=r"after 1 attempt\(s\): malformed reply from .*: invalid JSON \("
    ):
        provider.generate(HI, options={})
    assert len(stub.requests) == 3 and sleeps == []


def test_missing_usage_fails_the_trial_and_the_preflight(stub: OpenAIStub) -> None:
    stub.usage = None
    provider, _ = _provider(stub)
    with pytest.raises(ProviderError, match="no usage counts .* 25,000-token trial limit cannot be enforced"):
        provider.generate(HI, options={})
    with pytest.raises(WorldForgeError, match="reports no usage counts for 'stub-model'"):
        provider.runtime_manifest()


def test_a_hang_times_out_and_is_retried(stub: OpenAIStub) -> None:
    stub.delay_s = 0.6
    provider, sleeps = _provider(stub, request_timeout_s=0.2, retries=1)
    with pytest.raises(ProviderError, match=r"after 2 attempt\(s\): request timed out after 0.2 s"):
        provider.generate(HI, options={})
    assert sleeps == [0.5]


def test_connection_refused() -> None:
    sleeps: list[float] = []
    url = f"http://127.0.0.1:{_free_port()}/v1"
    provider = OpenAICompatProvider(OpenAISettings(model="m", base_url=url, retries=2), sleep=sleeps.append)
    with pytest.raises(ProviderError, match=f"connection to {url} failed"):
        provider.generate(HI, options={})
    assert sleeps == [1.0, 2.0]
    sleeps.clear()
    with pytest.raises(ProviderError, match=f"OpenAI-compatible server {url} unreachable"):
        provider.runtime_manifest()
    assert sleeps == []  # nothing listening: the preflight fails at once


def test_runtime_manifest_records_served_model_and_server_kind(stub: OpenAIStub) -> None:
    stub.served_model = "stub-model-q4_1"
    stub.server_header = "llama.cpp"
    provider, _ = _provider(stub)
    manifest = provider.runtime_manifest()
    assert manifest["served_model"] == "stub-model-q4_1" and manifest["model"] == "stub-model"
    assert manifest["server"] == {
        "kind": "llama.cpp",
        "software": "llama.cpp",
        "system_fingerprint": "fp_stub",
    }
    assert manifest["base_url"] == stub.base_url and manifest["owned_by"] == "stub"
    assert manifest["settings"] == {"model": "stub-model", "temperature": 1.0}
    assert provider.runtime_manifest() == manifest and stub.paths.count("/v1/models") == 1  # cached
    (probe,) = stub.requests
    assert probe["max_tokens"] == 1


@pytest.mark.parametrize(
    ("owned_by", "headers", "url", "kind"),
    [
        ("vllm", {}, "http://h/v1", "vllm"),
        ("llamacpp", {}, "http://h/v1", "llama.cpp"),
        ("stub", {"Server": "llama.cpp"}, "http://h/v1", "llama.cpp"),
        ("me", {"server": "uvicorn"}, "http://h/v1", "llama-cpp-python"),
        ("library", {}, "http://localhost:11434/v1", "ollama"),
        ("system", {"openai-organization": "x"}, "https://gw.example/v1", "openai"),
        ("openai", {}, OPENAI_API_URL, "openai"),
        (None, {}, "http://h/v1", "openai-compatible"),
    ],
)
def test_server_kind_guess(owned_by: Any, headers: dict[str, str], url: str, kind: str) -> None:
    assert guess_server_kind(owned_by, headers, OpenAISettings(model="m", base_url=url)) == kind


def test_base_url_and_key_precedence(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stub: OpenAIStub
) -> None:
    from worldforge.config import load_config

    assert resolve_base_url() == OPENAI_API_URL
    (tmp_path / ".worldforge").mkdir()
    (tmp_path / ".worldforge" / "config.yaml").write_text(
        f"openai:\n  base_url: {stub.base_url}\n  api_key: {SECRET}\n  timeout_s: 30\n"
    )
    assert resolve_base_url() == stub.base_url
    assert OpenAISettings.from_options("m").request_timeout_s == 30.0
    assert load_config().to_dict()["openai"]["api_key"] == "***" and SECRET not in repr(load_config())
    stub.api_key = SECRET  # the key from the config reaches the server
    assert OpenAICompatProvider.from_spec("stub-model").generate(HI).text == "echo: hi"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:2222/v1")
    assert resolve_base_url() == "http://127.0.0.1:2222/v1"
    settings = OpenAISettings.from_options("m", {"openai_base_url": "http://127.0.0.1:3333/v1", "retries": 0})
    assert settings.base_url == "http://127.0.0.1:3333/v1" and settings.retries == 0
    provider = ProviderRegistry().create("openai:m", {"openai_base_url": stub.base_url, "temperature": 0.5})
    assert isinstance(provider, OpenAICompatProvider) and provider.native_choices
    assert provider.settings.base_url == stub.base_url and provider.settings.temperature == 0.5


def test_openai_api_without_a_key_is_a_usage_error_before_any_request() -> None:
    provider = OpenAICompatProvider(OpenAISettings(model="gpt-4o-mini", base_url=OPENAI_API_URL))
    with pytest.raises(WorldForgeError, match="needs an API key: set OPENAI_API_KEY"):
        provider.generate(HI, options={})


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:99999/v1",
        "ftp://127.0.0.1:9/v1",
        "127.0.0.1:11434/v1",
        "not a url",
        "http://127.0.0.1:9/v1?x=1",
        "",
        "http://:9/v1",
    ],
)
def test_malformed_base_url_is_a_usage_error(url: str) -> None:
    with pytest.raises(WorldForgeError, match="--openai-base-url: .* is not a server URL"):
        OpenAISettings(model="m", base_url=url)


def test_a_malformed_base_url_fails_before_any_provider_is_built() -> None:
    """Suites check the run's options with the registry's checker, whichever providers they name."""
    from worldforge.providers.registry import check_provider_options

    check_provider_options({"openai_base_url": None, "ollama_host": "anything"})
    with pytest.raises(WorldForgeError, match="--openai-base-url: 'ftp://x/v1' is not a server URL"):
        check_provider_options({"openai_base_url": ["http://127.0.0.1:9/v1", "ftp://x/v1"]})


def test_credentials_in_the_url_are_refused() -> None:
    with pytest.raises(WorldForgeError, match="carries credentials; pass the key in OPENAI_API_KEY"):
        OpenAISettings(model="m", base_url=f"http://user:{SECRET}@127.0.0.1:9/v1")


# -- the command line ------------------------------------------------------------------------------


def _letter_reply(request: dict[str, Any], index: int) -> str:
    """Like a model that follows the prompt: a fenced drop_block program for the named letter."""
    first = request["messages"][0]["content"]
    if 'character "' not in first:
        return "OK"  # the preflight's one-token probe
    letter = first.split('character "', 1)[1][0]
    return f"Here you go.\n```\n{letter_program(letter, int(request.get('seed', 0)) % 1000)}```\n"


def _eval_args(base_url: str, workspace: Path, model: str = "stub-model") -> list[str]:
    return [
        "eval", "--suite", "science-birds", "--provider", f"openai:{model}", "--openai-base-url", base_url,
        "--program", "zero-shot", "--characters", "A,L", "--trials", "2", "--workers", "1",
        "--run-workspace", str(workspace), "--format", "json",
    ]  # fmt: skip


def test_cli_eval_end_to_end(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    stub: OpenAIStub,
    pixel_classifier: None,  # noqa: F811
) -> None:
    stub.reply = _letter_reply
    stub.usage = (612, 97)
    stub.served_model = "stub-model-q4_1"
    stub.api_key = SECRET
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    workspace = tmp_path / "ws"
    result = runner.invoke(app, _eval_args(stub.base_url, workspace))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [(r["provider"], r["scenario"]) for r in report["results"]] == [("openai:stub-model", "zero-shot")]
    (run_dir,) = (workspace / "runs").iterdir()
    assert json.loads((run_dir / "run_manifest.json").read_text())["status"] == "completed"
    assert (run_dir / "reports" / "report.html").is_file()
    records = [json.loads(p.read_text()) for p in sorted((run_dir / "items").glob("*.json"))]
    records = [r.get("record", r) for r in records]
    assert len(records) == 4 and any(r["status"] == "ok" for r in records)  # levels were produced
    for record in records:
        assert record["usage"] == {
            "prompt_tokens": 612,
            "completion_tokens": 97,
            "served_models": ["stub-model-q4_1"],
        }
        assert record["tokens"] == 709
    chats = stub.chat_requests()
    assert len(chats) == 4 and {r["seed"] for r in chats} == {r["trial_seed"] for r in records}
    assert all(r["temperature"] == 1.0 and r["n"] == 1 for r in chats)
    manifest = report["provenance"]["runtime_manifests"]["openai:stub-model"]
    assert manifest["served_model"] == "stub-model-q4_1" and manifest["server"]["kind"] == "openai-compatible"
    # the key reached the server and nothing else: no file of the run, no output
    assert set(stub.auth_headers) == {f"Bearer {SECRET}"}
    written = [p for p in workspace.rglob("*") if p.is_file()]
    assert len(written) > 10
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]
    assert SECRET not in result.output


def test_cli_preflight_failures_are_one_line_errors(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stub: OpenAIStub
) -> None:
    def run(args: list[str]) -> tuple[int, list[str]]:
        result = runner.invoke(app, args)
        assert "Traceback" not in result.output
        return result.exit_code, [line for line in result.stderr.splitlines() if line.startswith("error:")]

    code, errors = run(_eval_args("http://127.0.0.1:99999/v1", tmp_path / "a"))
    assert code == 2 and len(errors) == 1 and "--openai-base-url: 'http://127.0.0.1:99999/v1'" in errors[0]
    assert not (tmp_path / "a").exists()  # refused before a run was created
    code, errors = run(_eval_args(stub.base_url, tmp_path / "b", model="nope"))
    assert code == 2 and len(errors) == 1 and "model 'nope' is not served by" in errors[0]
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    code, errors = run(_eval_args(dead, tmp_path / "c"))
    assert code == 1 and len(errors) == 1 and f"server {dead} unreachable" in errors[0]
    stub.api_key = "the-right-key"
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code, errors = run(_eval_args(stub.base_url, tmp_path / "d"))
    assert code == 2 and len(errors) == 1 and "rejected the API key (HTTP 401)" in errors[0]
    assert SECRET not in errors[0]
    assert not stub.chat_requests()  # no trial was attempted against a failing preflight


def test_per_trial_failures_are_recorded(
    stub: OpenAIStub,
    pixel_classifier: None,  # noqa: F811
) -> None:
    """After a good preflight, a reply without usage counts is a recorded failed trial."""
    from worldforge.forge import WorldForge
    from worldforge.suites.science_birds.suite import evaluate

    options = {
        "characters": "A",
        "trials": 2,
        "programs": ["zero-shot"],
        "progress": False,
        "workers": 1,
        "openai_base_url": stub.base_url,
        "openai_backoff_s": 0,
    }
    forge = WorldForge(provider_options=options)
    forge.runtime_manifest("openai:stub-model")  # the preflight passes, then usage disappears
    stub.usage = None
    report = evaluate(["openai:stub-model"], forge=forge, options=options)
    rows = report.sections["failed_trials"]["rows"]
    assert len(rows) == 2 and all("no usage counts" in r["error"] for r in rows)
    assert all(r["failed_stage"] == "generate" for r in rows)
    assert report.results[0].score == 0.0
