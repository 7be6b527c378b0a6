"""A model server's refusal reaches the program as the server sent it, is recorded, and replays.

A program that catches the ``openai`` client's ``BadRequestError`` to shorten its history must
behave the same behind the gateway as in front of the server itself: a client error of the server
(400, 404, 413, 422, and 429 once the provider's retries are spent) is relayed with the server's
status and an OpenAI-shaped body built from the server's; only the gateway's own failures (a
server error after retries, no connection) are 502.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from typing import Any

import pytest

from tests.ollama_stub import OllamaStub
from tests.openai_stub import OpenAIStub
from tests.providers.test_real_model import MODEL as REAL_MODEL
from tests.providers.test_real_model import N_CTX, LlamaServer, llama_server  # noqa: F401 - fixture
from worldforge.core.errors import ProviderHTTPError
from worldforge.forge import WorldForge
from worldforge.gateway import Gateway, ReplaySource
from worldforge.gateway.exchange import RELAYED_MESSAGE_CHARS, GatewayError, relayed_error

openai = pytest.importorskip("openai")

pytestmark = pytest.mark.usefixtures("model_env_free")

MODEL = "openai:stub-model"
ITEM = "openai__p__A__001"
LONG = [{"role": "user", "content": "draw the letter A " * 50}]
SECRET = "sk-upstream-key-never-relayed-4f8e2a"

#: llama.cpp server's answer to a prompt longer than its context (``exceed_context_size_error``).
LLAMA_CPP_400 = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5000,
        "n_ctx": 4096,
    }
}
#: The OpenAI API's answer to the same.
OPENAI_400 = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, your messages "
        "resulted in 5000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
OPENAI_404 = {
    "error": {
        "message": "The model `stub-model` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }
}
#: vLLM's shape: the error fields at the top of the body.
VLLM_422 = {
    "object": "error",
    "message": "[{'type': 'missing', 'loc': ('body', 'messages')}]",
    "type": "BadRequestError",
    "param": None,
    "code": 422,
}
OPENAI_429 = {
    "error": {
        "message": "Rate limit reached for stub-model on requests per min (RPM): Limit 3, Used 3, "
        "Requested 1. Please try again in 1s.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}


class Run:
    """Collects the gateway's events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.events.append((kind, payload))

    def exchanges(self) -> list[dict[str, Any]]:
        return [p for k, p in self.events if k == "gateway.exchange"]


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as server:
        yield server


def _forge(stub: OpenAIStub, retries: int = 0) -> WorldForge:
    options = {"openai_base_url": stub.base_url, "openai_retries": retries, "openai_backoff_s": 0}
    return WorldForge(provider_options={**options, "openai_max_retry_after_s": 0})


def _ask(gateway: Gateway, messages: list[dict[str, str]] = LONG) -> tuple[Any, list[dict[str, Any]]]:
    """One request from the official client (no client retries); the exception and the record."""
    route = gateway.open_trial(ITEM, MODEL, options={"trial_seed": 7}, seed=7, temperature=1.0)
    client = openai.OpenAI(base_url=gateway.base_url, api_key=route.token, max_retries=0)
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(model=MODEL, messages=messages)
    return raised.value, gateway.close_trial(route)


def _replay(exchanges: list[dict[str, Any]], messages: list[dict[str, str]] = LONG) -> tuple[Any, Any]:
    """The same request answered from the recorded exchanges: the exception and the record."""
    source = ReplaySource("run-recorded", {ITEM: exchanges}, {})
    with Gateway(models=[MODEL], replay=source) as gateway:
        return _ask(gateway, messages)


CASES = [
    pytest.param(400, LLAMA_CPP_400, openai.BadRequestError, id="llama.cpp-400-context"),
    pytest.param(400, OPENAI_400, openai.BadRequestError, id="openai-400-context"),
    pytest.param(404, OPENAI_404, openai.NotFoundError, id="404-model"),
    pytest.param(422, VLLM_422, openai.UnprocessableEntityError, id="vllm-422"),
]


@pytest.mark.parametrize(("status", "body", "raised"), CASES)
def test_a_client_error_is_relayed_with_the_servers_status_and_body(
    stub: OpenAIStub, status: int, body: dict[str, Any], raised: type[Any]
) -> None:
    run = Run()
    stub.fail_next = [(status, {}, body)]
    with Gateway(_forge(stub, retries=3), models=[MODEL], run=run) as gateway:
        error, (exchange,) = _ask(gateway)
    sent = body.get("error", body)
    shaped = {k: sent.get(k) for k in ("message", "type", "param", "code")}
    assert type(error) is raised and error.status_code == status
    assert error.body == shaped  # llama.cpp's n_prompt_tokens/n_ctx are left out
    assert error.message == f"Error code: {status} - {sent['message']}"
    assert len(stub.chat_requests()) == 1  # a client error is not retried
    assert exchange["error"] == {**shaped, "upstream_status": status}
    assert "response" not in exchange
    (event,) = run.exchanges()
    assert event["error"] == exchange["error"] and "retry_after" not in event
    # a replay answers the recorded error with the same status and body, and records it alike
    again, (replayed,) = _replay([exchange])
    assert type(again) is raised and again.status_code == status and again.body == shaped
    assert replayed == exchange


@pytest.mark.slow
def test_a_real_llama_cpp_server_refusing_a_long_prompt_is_a_400_as_without_the_gateway(
    llama_server: LlamaServer,  # noqa: F811
) -> None:
    model = f"openai:{REAL_MODEL}"
    forge = WorldForge(provider_options={"openai_base_url": llama_server.base_url})
    too_long = [{"role": "user", "content": "draw the letter A " * N_CTX}]
    direct = openai.OpenAI(base_url=llama_server.base_url, api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError) as server_said:
        direct.chat.completions.create(model=REAL_MODEL, messages=too_long, seed=7, temperature=1.0)
    with Gateway(forge, models=[model]) as gateway:
        route = gateway.open_trial(ITEM, model, options={"trial_seed": 7}, seed=7, temperature=1.0)
        client = openai.OpenAI(base_url=gateway.base_url, api_key=route.token, max_retries=0)
        with pytest.raises(openai.BadRequestError) as gateway_said:
            client.chat.completions.create(model=model, messages=too_long)
        (exchange,) = gateway.close_trial(route)
    assert gateway_said.value.status_code == 400 and gateway_said.value.body == server_said.value.body
    assert "maximum context length" in gateway_said.value.message
    assert exchange["error"]["upstream_status"] == 400


def test_a_413_from_a_proxy_becomes_an_openai_shaped_body(stub: OpenAIStub) -> None:
    stub.fail_next = [(413, {}, {"detail": "Request Entity Too Large"})]
    with Gateway(_forge(stub), models=[MODEL]) as gateway:
        error, (exchange,) = _ask(gateway)
    # the client has no class of its own for 413
    assert type(error) is openai.APIStatusError and error.status_code == 413
    shaped = {"message": "Request Entity Too Large", "type": "invalid_request_error", "param": None}
    assert error.body == {**shaped, "code": None}
    assert exchange["error"] == {**shaped, "code": None, "upstream_status": 413}
    again, _ = _replay([exchange])
    assert again.status_code == 413 and again.body == error.body


def test_a_429_is_retried_by_the_provider_then_relayed_with_retry_after(stub: OpenAIStub) -> None:
    run = Run()
    stub.fail_next = [(429, {"Retry-After": "1"}, OPENAI_429)] * 3
    with Gateway(_forge(stub, retries=2), models=[MODEL], run=run) as gateway:
        error, (exchange,) = _ask(gateway)
    assert len(stub.chat_requests()) == 3  # the provider's retries were spent first
    assert type(error) is openai.RateLimitError and error.status_code == 429
    assert error.body == OPENAI_429["error"] and error.response.headers["retry-after"] == "1"
    # the record holds no timing; the event says what the server asked
    assert exchange["error"] == {**OPENAI_429["error"], "upstream_status": 429}
    assert run.exchanges()[0]["retry_after"] == "1"
    again, _ = _replay([exchange])
    assert type(again) is openai.RateLimitError and again.body == error.body
    assert "retry-after" not in again.response.headers


def test_a_429_that_a_retry_outlives_is_answered(stub: OpenAIStub) -> None:
    stub.fail_next = [(429, {"Retry-After": "1"}, OPENAI_429)]
    with Gateway(_forge(stub, retries=2), models=[MODEL]) as gateway:
        route = gateway.open_trial(ITEM, MODEL, options={"trial_seed": 7}, seed=7)
        client = openai.OpenAI(base_url=gateway.base_url, api_key=route.token, max_retries=0)
        reply = client.chat.completions.create(model=MODEL, messages=LONG)
        (exchange,) = gateway.close_trial(route)
    assert reply.choices[0].message.content.startswith("echo: ") and "error" not in exchange


def test_a_server_error_after_retries_stays_the_gateways_502(stub: OpenAIStub) -> None:
    stub.fail_next = [500] * 3
    with Gateway(_forge(stub, retries=2), models=[MODEL]) as gateway:
        error, (exchange,) = _ask(gateway)
    assert type(error) is openai.InternalServerError and error.status_code == 502
    assert error.body["type"] == error.body["code"] == "provider_error"
    assert "HTTP 500: stub failure 500" in error.body["message"]
    assert set(exchange["error"]) == {"type", "message"}  # the gateway's own error, as before
    again, _ = _replay([exchange])
    assert again.status_code == 502 and again.body == error.body


def test_no_connection_stays_the_gateways_502() -> None:
    with OpenAIStub() as gone:
        forge = _forge(gone)
    with Gateway(forge, models=[MODEL]) as gateway:
        error, (exchange,) = _ask(gateway)
    assert error.status_code == 502 and exchange["error"]["type"] == "provider_error"
    assert "upstream_status" not in exchange["error"]


def test_the_upstream_key_echoed_in_an_error_is_never_relayed(
    stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    echo = {"error": {"message": f"bad request for key {SECRET}", "type": "invalid_request_error"}}
    stub.fail_next = [(400, {}, echo)]
    with Gateway(_forge(stub), models=[MODEL]) as gateway:
        error, exchanges = _ask(gateway)
    assert SECRET not in json.dumps(error.body) and SECRET not in json.dumps(exchanges)
    assert error.body["message"] == "bad request for key ***"


def test_records_of_the_same_refusal_are_byte_identical(stub: OpenAIStub) -> None:
    records = []
    for _ in range(2):
        stub.fail_next = [(400, {}, LLAMA_CPP_400)]
        with Gateway(_forge(stub), models=[MODEL]) as gateway:
            records.append(json.dumps(_ask(gateway)[1], sort_keys=True))
    assert records[0] == records[1]


def test_an_ollama_context_refusal_is_a_400() -> None:
    message = "the input length exceeds the context length"
    with OllamaStub() as stub:
        forge = WorldForge(provider_options={"ollama_host": stub.host, "ollama_retries": 0})
        stub.fail_next = [(400, message)]
        with Gateway(forge, models=["ollama:qwen2.5"]) as gateway:
            route = gateway.open_trial("ollama__p__A__001", "ollama:qwen2.5", seed=7)
            client = openai.OpenAI(base_url=gateway.base_url, api_key=route.token, max_retries=0)
            with pytest.raises(openai.BadRequestError) as raised:
                client.chat.completions.create(model="ollama:qwen2.5", messages=LONG)
            (exchange,) = gateway.close_trial(route)
    shaped = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    assert raised.value.status_code == 400 and raised.value.body == shaped
    assert exchange["error"] == {**shaped, "upstream_status": 400}


def test_a_prompt_program_trial_fails_naming_the_servers_status(stub: OpenAIStub) -> None:
    stub.fail_next = [(400, {}, LLAMA_CPP_400)]
    with Gateway(_forge(stub), models=[MODEL]) as gateway:
        with gateway.trial(ITEM, MODEL, options={"trial_seed": 7}, seed=7) as session:
            with pytest.raises(ProviderHTTPError) as raised:
                session.chat(LONG)
    assert raised.value.status == 400
    assert str(raised.value) == f"HTTP 400: {LLAMA_CPP_400['error']['message']}"


def test_relayed_errors_are_bounded_and_only_for_client_errors() -> None:
    huge = ProviderHTTPError("x", 400, {"error": {"message": "m" * (RELAYED_MESSAGE_CHARS * 2)}})
    relayed = relayed_error(huge)
    assert relayed is not None and len(relayed.message) == RELAYED_MESSAGE_CHARS
    assert relayed.body()["error"]["type"] == "invalid_request_error"
    for status in (401, 403, 500, 503):
        assert relayed_error(ProviderHTTPError("x", status, OPENAI_400)) is None
    text = relayed_error(ProviderHTTPError("x", 404, None))
    assert text is not None and text.message == "HTTP 404 from the model server."
    # a Retry-After only travels with a 429, and only as a plain header value
    odd = relayed_error(ProviderHTTPError("x", 429, "slow down", "1\r\nX-Evil: 1"))
    assert odd is not None and odd.headers() == {} and odd.code == "rate_limit_exceeded"
    assert GatewayError("trial_limit", "over").headers() == {}
    # the gateway's own errors keep their shape (the trial's budget refusal stays 429)
    own = GatewayError("trial_limit", "over")
    assert own.status == 429 and own.body()["error"]["code"] == "trial_limit"
    assert own.recorded() == {"type": "trial_limit", "message": "over"}


def test_the_error_keeps_its_data_across_processes() -> None:
    error = ProviderHTTPError("HTTP 429: slow", 429, {"error": {"message": "slow"}}, "2")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.status, copy.body, copy.retry_after) == ("HTTP 429: slow", 429, error.body, "2")
