"""Several model servers: balancing with a per-server limit, a failing server out of rotation with
its request retried on another (two loopback stubs, one failing), and the CLI's repeatable flags."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.ollama_stub import OllamaStub
from tests.openai_stub import OpenAIStub
from worldforge.cli.eval_cmd import _typed_options
from worldforge.core.errors import WorldForgeError
from worldforge.providers.ollama import OllamaProvider, OllamaSettings
from worldforge.providers.openai_compat import OpenAICompatProvider
from worldforge.providers.openai_settings import OpenAISettings
from worldforge.providers.server_pool import ServerPool

pytestmark = pytest.mark.usefixtures("model_env_free")

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture
def two_openai() -> Iterator[tuple[OpenAIStub, OpenAIStub]]:
    with OpenAIStub(models=["m"]) as good, OpenAIStub(models=["m"]) as bad:
        yield good, bad


def test_requests_are_balanced_within_the_per_server_limit() -> None:
    pool = ServerPool(["http://a", "http://b"], max_connections=2)
    in_flight: dict[str, int] = {"http://a": 0, "http://b": 0}
    peak: dict[str, int] = {"http://a": 0, "http://b": 0}
    lock = threading.Lock()

    def request() -> None:
        with pool.lease() as lease:
            with lock:
                in_flight[lease.url] += 1
                peak[lease.url] = max(peak[lease.url], in_flight[lease.url])
            time.sleep(0.02)
            with lock:
                in_flight[lease.url] -= 1

    threads = [threading.Thread(target=request) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == {"http://a": 2, "http://b": 2}
    served = {url: row["served"] for url, row in pool.stats().items()}
    assert sum(served.values()) == 24 and min(served.values()) >= 8  # both servers carry the load


def test_a_failed_server_cools_down_then_returns() -> None:
    now = [100.0]
    pool = ServerPool(["http://a", "http://b"], max_connections=1, cooldown_s=30, clock=lambda: now[0])
    with pool.lease() as lease:
        assert lease.url == "http://a"
        lease.failed()
    assert pool.healthy() == ["http://b"] and pool.has_alternative("http://a")
    assert [_url(pool) for _ in range(3)] == ["http://b"] * 3
    now[0] += 31
    assert pool.healthy() == ["http://a", "http://b"]
    # every server down: the one that recovers first is still tried rather than failing the trial
    for _ in range(2):
        with pool.lease() as lease:
            lease.failed()
    assert pool.healthy() == []
    assert _url(pool) in {"http://a", "http://b"}
    with pytest.raises(WorldForgeError, match="--max-connections must be >= 1"):
        ServerPool(["http://a"], max_connections=0)


def _url(pool: ServerPool) -> str:
    with pool.lease() as lease:
        return lease.url


def test_openai_request_to_a_failing_server_is_retried_on_the_other(
    two_openai: tuple[OpenAIStub, OpenAIStub],
) -> None:
    good, bad = two_openai
    bad.fail_next = [503] * 50
    sleeps: list[float] = []
    settings = OpenAISettings.from_options(
        "m", {"openai_base_url": [bad.base_url, good.base_url], "max_connections": 2}
    )
    assert settings.base_urls == (bad.base_url, good.base_url) and settings.max_connections == 2
    provider = OpenAICompatProvider(settings, sleep=sleeps.append)
    replies = [provider.chat(HI, seed=i).texts[0] for i in range(4)]
    assert replies == ["echo: hi"] * 4
    assert len(bad.chat_requests()) == 1  # tried once, then out of rotation
    assert len(good.chat_requests()) == 4
    assert sleeps == []  # the retry went elsewhere at once, no backoff
    assert provider.pool.stats()[bad.base_url]["failures"] == 1


def test_ollama_request_to_a_dead_server_is_retried_on_the_other() -> None:
    with OllamaStub(models=["m"]) as good:
        dead = "http://127.0.0.1:9"  # discard port: nothing listens, the connection is refused
        sleeps: list[float] = []
        settings = OllamaSettings.from_options("m", {"ollama_host": [dead, good.host], "max_connections": 1})
        provider = OllamaProvider(settings, sleep=sleeps.append)
        assert [provider.chat(HI, seed=i).text != "" for i in range(3)] == [True] * 3
        assert len(good.requests) >= 3 and sleeps == []
        assert provider.pool.healthy() == [good.host]


def test_cli_server_options_are_repeatable_and_one_server_stays_a_string() -> None:
    one = _typed_options(None, None, None, None, None, None, ["http://127.0.0.1:1"], None, ["http://x/v1"])
    assert one == {"ollama_host": "http://127.0.0.1:1", "openai_base_url": "http://x/v1"}
    many = _typed_options(
        None, None, None, None, None, None, None, None, ["http://x/v1", "http://y/v1"], max_connections=3
    )
    assert many == {"openai_base_url": ["http://x/v1", "http://y/v1"], "max_connections": 3}
    with pytest.raises(WorldForgeError, match="must not be empty"):
        _typed_options(None, None, None, None, None, None, None, None, ["http://x/v1", " "])
