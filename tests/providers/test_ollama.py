"""The ``ollama:<model>`` provider against a loopback server speaking Ollama's HTTP API."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ollama_stub import MODEL_DIGEST, OllamaStub
from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.providers.chat import ChatTrial, TrialLimitExceeded
from worldforge.providers.events import InMemoryEventSink
from worldforge.providers.ollama import (
    DEFAULT_HOST,
    OllamaProvider,
    OllamaSettings,
    resolve_host,
)
from worldforge.providers.registry import ProviderRegistry


@pytest.fixture
def stub() -> Iterator[OllamaStub]:
    with OllamaStub(models=["qwen2.5:latest", "gemma2:latest"]) as server:
        yield server


def _provider(stub: OllamaStub, model: str = "qwen2.5", **kw: Any) -> tuple[OllamaProvider, list[float]]:
    sleeps: list[float] = []
    settings = OllamaSettings(model=model, host=stub.host, backoff_s=0.5, **kw)
    provider = OllamaProvider(settings, sleep=sleeps.append)
    return provider, sleeps


def test_registry_resolves_ollama_models(monkeypatch: pytest.MonkeyPatch, stub: OllamaStub) -> None:
    monkeypatch.setenv("OLLAMA_HOST", stub.host)
    provider = ProviderRegistry(discover_entry_points=False).create("ollama:gemma2")
    assert isinstance(provider, OllamaProvider)
    assert provider.name == "ollama:gemma2" and provider.settings.host == stub.host
    assert provider.capabilities == frozenset({"generate"})


def test_messages_options_and_metadata_pass_through(stub: OllamaStub) -> None:
    provider, _ = _provider(stub, num_ctx=4096)
    sink = InMemoryEventSink()
    provider.bind_event_handler(sink)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "draw A"}]
    result = provider.generate(messages, options={"trial_seed": 1234})
    assert result.text == "echo: draw A"
    assert result.provider == "ollama:qwen2.5"
    assert result.metadata["prompt_eval_count"] == 10 and result.metadata["eval_count"] == 20
    assert result.metadata["done_reason"] == "stop" and result.metadata["attempts"] == 1
    (request,) = stub.requests
    assert request["model"] == "qwen2.5"
    assert request["messages"] == messages
    assert request["stream"] is False
    assert request["options"] == {"temperature": 1.0, "seed": 1234, "num_ctx": 4096}
    assert [e.phase for e in sink.events] == ["success"]
    assert sink.events[0].input_digest is not None and sink.events[0].metadata["eval_count"] == 20


def test_temperature_setting_is_sent(stub: OllamaStub) -> None:
    provider, _ = _provider(stub, temperature=0.25)
    provider.generate([{"role": "user", "content": "x"}], options={})
    assert stub.requests[0]["options"] == {"temperature": 0.25}


def test_multi_turn_trial_feeds_replies_back(stub: OllamaStub) -> None:
    stub.reply = lambda req: f"reply {len(req['messages'])}"
    provider, _ = _provider(stub)
    transcript = ChatTrial().run(
        lambda msgs, opts: provider.generate(msgs, options=opts),
        ["first turn", "second turn"],
        {"trial_seed": 7},
    )
    assert transcript.final_reply == "reply 3"
    assert transcript.tokens == 60 and transcript.calls == 2
    assert stub.requests[1]["messages"] == [
        {"role": "user", "content": "first turn"},
        {"role": "assistant", "content": "reply 1"},
        {"role": "user", "content": "second turn"},
    ]
    assert all(r["options"]["seed"] == 7 for r in stub.requests)


def test_trial_token_limit(stub: OllamaStub) -> None:
    stub.tokens = (12_000, 1_000)
    provider, _ = _provider(stub)
    with pytest.raises(
        TrialLimitExceeded, match=r"26000 prompt\+completion tokens after turn 2 \(limit 25000\)"
    ):
        ChatTrial().run(lambda m, o: provider.generate(m, options=o), ["a", "b", "c"], {})
    assert len(stub.requests) == 2  # the third turn is never sent


def test_trial_time_limit_checked_before_each_call(stub: OllamaStub) -> None:
    provider, _ = _provider(stub)
    ticks = iter([0.0, 0.0, 3.0])
    with pytest.raises(TrialLimitExceeded, match="before turn 2"):
        ChatTrial(max_seconds=2.0).run(
            lambda m, o: provider.generate(m, options=o), ["a", "b"], {}, clock=lambda: next(ticks)
        )
    assert len(stub.requests) == 1


def test_5xx_is_retried_with_backoff_then_succeeds(stub: OllamaStub) -> None:
    stub.fail_next = [500, 503]
    provider, sleeps = _provider(stub)
    sink = InMemoryEventSink()
    provider.bind_event_handler(sink)
    result = provider.generate([{"role": "user", "content": "hi"}], options={})
    assert result.text == "echo: hi" and result.metadata["attempts"] == 3
    assert sleeps == [0.5, 1.0]
    assert [(e.phase, e.attempt) for e in sink.events] == [("retry", 1), ("retry", 2), ("success", 3)]
    assert "HTTP 500" in sink.events[0].message


def test_5xx_exhausted_becomes_provider_error(stub: OllamaStub) -> None:
    stub.fail_next = [500] * 10
    provider, sleeps = _provider(stub, retries=2)
    with pytest.raises(
        ProviderError, match=r"generate failed after 3 attempt\(s\): HTTP 500: stub failure 500"
    ):
        provider.generate([{"role": "user", "content": "hi"}], options={})
    assert len(stub.requests) == 3 and sleeps == [0.5, 1.0]


def test_4xx_is_not_retried(stub: OllamaStub) -> None:
    provider, sleeps = _provider(stub, model="nope")
    with pytest.raises(ProviderError, match="HTTP 404: model 'nope' not found"):
        provider.generate([{"role": "user", "content": "hi"}], options={})
    assert len(stub.requests) == 1 and sleeps == []


def test_timeout_is_retried(stub: OllamaStub) -> None:
    stub.delay_s = 0.6
    provider, sleeps = _provider(stub, request_timeout_s=0.2, retries=1)
    with pytest.raises(ProviderError, match="after 2 attempt"):
        provider.generate([{"role": "user", "content": "hi"}], options={})
    assert sleeps == [0.5]


def test_connection_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sleeps: list[float] = []
    provider = OllamaProvider(
        OllamaSettings(model="m", host=f"http://127.0.0.1:{port}", retries=2), sleep=sleeps.append
    )
    with pytest.raises(ProviderError, match="Failed to connect to Ollama"):
        provider.generate([{"role": "user", "content": "hi"}], options={})
    assert sleeps == [1.0, 2.0]
    with pytest.raises(ProviderError, match="unreachable"):
        provider.runtime_manifest()


def test_runtime_manifest_records_model_digest(stub: OllamaStub) -> None:
    provider, _ = _provider(stub)
    manifest = provider.runtime_manifest()
    assert manifest["model_digest"] == MODEL_DIGEST
    assert manifest["details"]["quantization_level"] == "Q4_0"
    assert manifest["settings"] == {"model": "qwen2.5", "temperature": 1.0, "num_ctx": None}
    assert manifest["parameters"] == "temperature 0.8"
    assert "/api/tags" in stub.paths and "/api/show" in stub.paths
    missing, _ = _provider(stub, model="llama9")
    with pytest.raises(WorldForgeError, match="run `ollama pull llama9`"):
        missing.runtime_manifest()


def test_host_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    assert resolve_host() == DEFAULT_HOST
    (tmp_path / ".worldforge").mkdir()
    (tmp_path / ".worldforge" / "config.yaml").write_text(
        "ollama:\n  host: http://127.0.0.1:1111\n  timeout_s: 30\n"
    )
    assert OllamaSettings.from_options("m").request_timeout_s == 30.0
    assert resolve_host() == "http://127.0.0.1:1111"
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:2222")
    assert resolve_host() == "http://127.0.0.1:2222"
    assert resolve_host("http://127.0.0.1:3333") == "http://127.0.0.1:3333"
    settings = OllamaSettings.from_options(
        "qwen2.5", {"ollama_host": "http://127.0.0.1:4444", "num_ctx": 8192}
    )
    assert settings.host == "http://127.0.0.1:4444" and settings.num_ctx == 8192


def test_the_registry_builds_the_provider_once_with_the_run_options(
    stub: OllamaStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worldforge.forge import WorldForge

    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # what a provider without options uses
    forge = WorldForge(provider_options={"ollama_host": stub.host, "temperature": 0.5})
    provider = forge.provider("ollama:qwen2.5")
    assert isinstance(provider, OllamaProvider) and forge.provider("ollama:qwen2.5") is provider
    assert provider.settings.host == stub.host and provider.connection_capacity == 4
    assert forge.generate("ollama:qwen2.5", [{"role": "user", "content": "x"}]).text == "echo: x"
    assert stub.requests[0]["options"]["temperature"] == 0.5
    assert not hasattr(provider, "configure")  # nothing rebuilds a provider after the registry
    assert ProviderRegistry().create("ollama:qwen2.5").settings.host == "http://127.0.0.1:9"


def test_bad_settings_rejected() -> None:
    with pytest.raises(WorldForgeError, match="temperature"):
        OllamaSettings(model="m", temperature=3)
    with pytest.raises(WorldForgeError, match="model name is required"):
        OllamaSettings(model=" ")
    with pytest.raises(WorldForgeError, match="messages\\[0\\]"):
        OllamaProvider(OllamaSettings(model="m")).chat([{"role": "robot", "content": "x"}])


def test_stub_speaks_the_official_client_protocol(stub: OllamaStub) -> None:
    """The loopback server itself: generate/chat, streamed and not, tags, show, errors."""
    import ollama

    client = ollama.Client(host=stub.host)
    stub.reply = lambda req: "0123456789abcdefghij"
    assert client.generate(model="qwen2.5", prompt="p").response == "0123456789abcdefghij"
    pieces = [chunk.response for chunk in client.generate(model="qwen2.5", prompt="p", stream=True)]
    assert len(pieces) > 2 and "".join(pieces) == "0123456789abcdefghij"
    streamed = list(client.chat(model="gemma2", messages=[{"role": "user", "content": "x"}], stream=True))
    assert "".join(c.message.content or "" for c in streamed) == "0123456789abcdefghij"
    assert streamed[-1].done and streamed[-1].eval_count == 20
    assert [m.model for m in client.list().models] == ["qwen2.5:latest", "gemma2:latest"]
    assert client.show("qwen2.5").modelinfo == {"general.architecture": "stub"}
    with pytest.raises(ollama.ResponseError) as info:
        client.chat(model="nope", messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == 404 and info.value.error == "model 'nope' not found"
    assert stub.requests[0]["stream"] is False and stub.requests[1]["stream"] is True


@pytest.mark.parametrize(
    "host",
    ["http://127.0.0.1:99999", "ftp://127.0.0.1:9", "not a url", "http://127.0.0.1:9/?x=1", "", "http://:9"],
)
def test_malformed_host_is_a_usage_error_before_any_call(host: str) -> None:
    from worldforge.providers.ollama import OllamaSettings

    with pytest.raises(WorldForgeError, match="--ollama-host: .* is not a server address"):
        OllamaSettings(model="qwen2.5", host=host)


@pytest.mark.parametrize(
    "host",
    ["http://127.0.0.1:11434", "127.0.0.1:11434", "https://gpu-box", "http://[::1]:11434", "http://h/ollama"],
)
def test_host_forms_the_ollama_client_accepts(host: str) -> None:
    from worldforge.providers.ollama import OllamaSettings

    assert OllamaSettings(model="qwen2.5", host=host).host == host


def test_busy_server_preflight_is_retried(stub: OllamaStub) -> None:
    """A 5xx from /api/tags or /api/show (a server still loading) gets the generation retries."""
    stub.fail_next = [503, 500]
    provider, sleeps = _provider(stub)
    assert provider.runtime_manifest()["model_digest"] == MODEL_DIGEST
    assert sleeps == [0.5, 1.0]
    stub.fail_next = [500] * 10
    exhausted, _ = _provider(stub)
    with pytest.raises(ProviderError, match="HTTP 500"):
        exhausted.runtime_manifest()
