"""Request bodies are capped before they are read, and recorded replies are bounded.

A hostile program's 50 MB request used to be read whole and kept three times (the record, the
event, the sanitizer's memo). Now a body over ``MAX_REQUEST_BYTES`` is answered 413 from its
``Content-Length`` alone, what the client still sends is dropped in small pieces, and the
gateway goes on serving every trial.
"""

from __future__ import annotations

import http.client
import json
import socket
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from worldforge.forge import WorldForge
from worldforge.gateway import Gateway, TrialRoute
from worldforge.gateway.exchange import RECORDED_CHOICE_CHARS, Completion, Recorder, Request, safe_digest
from worldforge.gateway.server import MAX_REQUEST_BYTES
from worldforge.providers.mock_letters import letter_reply

pytestmark = pytest.mark.usefixtures("model_env_free")

HUGE = 50 * 1024 * 1024
HI = [{"role": "user", "content": "draw the letter"}]


class Run:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.events.append((kind, payload))


@pytest.fixture
def run() -> Run:
    return Run()


@pytest.fixture
def gateway(run: Run) -> Iterator[Gateway]:
    with Gateway(WorldForge(), models=["mock"], run=run) as gw:
        yield gw


def _trial(gw: Gateway, item: str, seed: int = 3) -> TrialRoute:
    return gw.open_trial(item, "mock", options={"target_character": "A", "trial_seed": seed}, seed=seed)


def _huge_body() -> Iterator[bytes]:
    """50 MB of a JSON body, produced 64 KiB at a time (the test never holds it)."""
    head = b'{"model": "mock", "messages": [{"role": "user", "content": "'
    tail = b'"}]}'
    yield head
    chunk = b"x" * 65536
    left = HUGE - len(head) - len(tail)
    while left > 0:
        yield chunk[: min(left, len(chunk))]
        left -= len(chunk)
    yield tail


def _chat(gw: Gateway, route: TrialRoute) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=15)
    payload = json.dumps({"model": "mock", "messages": HI}).encode()
    conn.request("POST", f"/t/{route.token}/v1/chat/completions", body=payload)
    answer = conn.getresponse()
    try:
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def test_a_50_mb_body_is_refused_413_unread_and_the_gateway_stays_healthy(gateway: Gateway, run: Run) -> None:
    hostile, other = _trial(gateway, "hostile__A__001"), _trial(gateway, "team__A__001")
    conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    headers = {"Content-Type": "application/json", "Content-Length": str(HUGE)}
    tracemalloc.start()
    try:
        conn.request("POST", f"/t/{hostile.token}/v1/chat/completions", body=_huge_body(), headers=headers)
        answer = conn.getresponse()
        status, raw = answer.status, answer.read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        conn.close()
    # neither the server's threads nor the client held the body: far less than one copy of it
    print(f"50 MB body refused: traced peak {peak} bytes")
    assert peak < 8 * 1024 * 1024, peak
    assert status == 413 and answer.getheader("Connection") == "close"
    assert json.loads(raw) == {
        "error": {
            "message": f"the request body is {HUGE} bytes; the limit is {MAX_REQUEST_BYTES} bytes.",
            "type": "invalid_request_error",
            "param": None,
            "code": "request_too_large",
        }
    }
    rejected = [p for k, p in run.events if k == "gateway.rejected"]
    assert rejected == [
        {
            "item_id": "hostile__A__001",
            "error": "request_too_large",
            "status": 413,
            "path": "/v1/chat/completions",
            "declared_bytes": HUGE,
            "limit_bytes": MAX_REQUEST_BYTES,
        }
    ]
    assert hostile.token not in json.dumps(run.events)
    # the other trial, and the hostile one itself, are still served
    for route in (other, hostile):
        status, body = _chat(gateway, route)
        assert status == 200 and body["choices"][0]["message"]["content"] == letter_reply("A", 3)
    assert gateway.close_trial(hostile)[0]["request"]["messages"] == HI  # only the served request
    assert len(gateway.close_trial(other)) == 1


def test_a_client_that_waits_for_100_continue_is_refused_before_sending(gateway: Gateway, run: Run) -> None:
    route = _trial(gateway, "t__A__001")
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as sock:
        head = (
            f"POST /t/{route.token}/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
            f"Content-Type: application/json\r\nContent-Length: {HUGE}\r\nExpect: 100-continue\r\n\r\n"
        )
        sock.sendall(head.encode())
        answer = sock.makefile("rb").read()  # the server answers and closes: no body was sent
    assert answer.startswith(b"HTTP/1.1 413 ") and b'"code":"request_too_large"' in answer
    assert [p["status"] for k, p in run.events if k == "gateway.rejected"] == [413]
    gateway.close_trial(route)


def test_a_body_without_a_length_is_refused_411(gateway: Gateway) -> None:
    route = _trial(gateway, "t__A__001")
    conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    conn.request(
        "POST",
        f"/t/{route.token}/v1/chat/completions",
        body=iter([json.dumps({"model": "mock", "messages": HI}).encode()]),
        encode_chunked=True,
        headers={"Transfer-Encoding": "chunked"},
    )
    answer = conn.getresponse()
    assert answer.status == 411 and json.loads(answer.read())["error"]["code"] == "length_required"
    conn.close()
    assert gateway.close_trial(route) == []


def test_the_openai_client_sees_an_openai_shaped_413(gateway: Gateway) -> None:
    openai = pytest.importorskip("openai")
    route = _trial(gateway, "t__A__001")
    client = openai.OpenAI(base_url=gateway.base_url, api_key=route.token, max_retries=0)
    just_over = [{"role": "user", "content": "x" * MAX_REQUEST_BYTES}]
    with pytest.raises(openai.APIStatusError) as refused:
        client.chat.completions.create(model="mock", messages=just_over)
    assert refused.value.status_code == 413 and "the limit is 1048576 bytes" in refused.value.message
    # a body under the limit is read and served as before
    under = [{"role": "user", "content": "x " * (MAX_REQUEST_BYTES // 4)}]
    reply = client.chat.completions.create(model="mock", messages=under)
    assert reply.choices[0].message.content == letter_reply("A", 3)
    assert len(gateway.close_trial(route)) == 1


# -- bounded records -----------------------------------------------------------------------------------


def test_a_huge_reply_is_recorded_cut_with_the_digest_of_the_whole() -> None:
    recorder = Recorder()
    request = Request("mock", HI, 2, 1, None)
    whole = "drop_block('b11', 3)\n" * (RECORDED_CHOICE_CHARS // 10)
    completion = Completion([whole, "short"], prompt_tokens=3, completion_tokens=9, model="m")
    record = recorder.exchange(request, completion, None)
    kept, short = record["response"]["choices"]
    assert short == "short" and kept.startswith(whole[:RECORDED_CHOICE_CHARS])
    dropped = len(whole) - RECORDED_CHOICE_CHARS
    assert kept[RECORDED_CHOICE_CHARS:] == (
        f"\n[... {dropped} characters not recorded; full text {safe_digest(whole)}]"
    )
    # the digest is of the reply as sent; the record says it cannot be replayed byte for byte
    assert record["response_digest"] == safe_digest(completion.raw()) and record["altered"] is True
    normal = recorder.exchange(request, Completion(["a", "b"], 3, 2, "m"), None)
    assert normal["response"]["choices"] == ["a", "b"] and "altered" not in normal
