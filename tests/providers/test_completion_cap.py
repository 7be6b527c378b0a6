"""Providers honour a completion cap (``options["max_tokens"]``), as a server honours ``max_tokens``.

The model gateway passes what is left of a trial's token budget as this cap. A cap the reply does not
reach must change nothing (the digests of normal runs depend on it); one it reaches stops the reply
there, with ``finish_reason`` ``"length"``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ollama_stub import OllamaStub
from tests.openai_stub import OpenAIStub
from worldforge.core.errors import WorldForgeError
from worldforge.providers.mock import MockProvider
from worldforge.providers.mock_letters import cap_words, letter_reply
from worldforge.providers.ollama import OllamaProvider, OllamaSettings
from worldforge.providers.openai_compat import MAX_TOKENS_SENT, OpenAICompatProvider, OpenAISettings

HI = [{"role": "user", "content": "draw A"}]
LETTER = {"target_character": "A", "trial_seed": 11}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "WORLDFORGE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_cap_words_keeps_the_first_words_and_their_spacing() -> None:
    text = "Here is\n\n```python\ndrop_block('b11', 3)\n```\n"
    assert cap_words(text, 3) == ("Here is\n\n```python", True)
    assert cap_words(text, 6) == (text, False) and cap_words(text, 99) == (text, False)
    assert cap_words("  lead  words ", 1) == ("  lead", True)
    assert cap_words("a b", 0) == ("", True) and cap_words("", 0) == ("", False)


def test_the_mock_stops_at_the_cap_and_only_then_changes_anything() -> None:
    mock = MockProvider()
    whole = mock.generate(HI, options=LETTER)
    words = len(letter_reply("A", 11).split())
    for loose in (words, words + 1, 25_000):
        same = mock.generate(HI, options={**LETTER, "max_tokens": loose})
        assert same.text == whole.text and same.metadata == whole.metadata  # no finish_reason added
    cut = mock.generate(HI, options={**LETTER, "max_tokens": 7})
    assert cut.text == cap_words(whole.text, 7)[0] and len(cut.text.split()) == 7
    assert cut.metadata == {**whole.metadata, "eval_count": 7, "finish_reason": "length"}
    echo = mock.generate(HI, options={"max_tokens": 1})
    assert echo.text == "[mock" and echo.metadata["eval_count"] == 1
    for bad in (0, -3, True, "5", 2.0):
        with pytest.raises(WorldForgeError, match="options.max_tokens"):
            mock.generate(HI, options={**LETTER, "max_tokens": bad})


@pytest.fixture
def ollama() -> Iterator[OllamaStub]:
    with OllamaStub(models=["qwen2.5:latest"]) as server:
        yield server


def test_ollama_sends_the_cap_as_num_predict(ollama: OllamaStub) -> None:
    provider = OllamaProvider(OllamaSettings(model="qwen2.5", host=ollama.host))
    provider.generate(HI, options={"trial_seed": 1})
    provider.generate(HI, options={"trial_seed": 1, "max_tokens": 300})
    provider.generate(HI, options={"trial_seed": 1, "max_tokens": 300, "ollama_options": {"num_predict": 50}})
    provider.generate(HI, options={"trial_seed": 1, "max_tokens": 30, "ollama_options": {"num_predict": 50}})
    provider.generate(HI, options={"trial_seed": 1, "max_tokens": 30, "ollama_options": {"num_predict": -1}})
    sent = [r["options"].get("num_predict") for r in ollama.requests if "messages" in r]
    assert sent == [None, 300, 50, 30, 30]


@pytest.fixture
def openai_stub() -> Iterator[OpenAIStub]:
    with OpenAIStub(models=["stub-model"]) as server:
        yield server


def test_openai_sends_a_cap_servers_accept_and_leaves_out_a_larger_one(openai_stub: OpenAIStub) -> None:
    provider = OpenAICompatProvider(OpenAISettings(model="stub-model", base_url=openai_stub.base_url))
    assert provider.native_choices  # the gateway splits a cap across n choices for this provider
    provider.generate(HI, options={"trial_seed": 1})
    provider.generate(HI, options={"trial_seed": 1, "max_tokens": 195, "n": 128})
    provider.generate(HI, options={"trial_seed": 1, "max_tokens": MAX_TOKENS_SENT})
    provider.generate(HI, options={"trial_seed": 1, "max_tokens": MAX_TOKENS_SENT + 1})
    sent = [r.get("max_tokens") for r in openai_stub.chat_requests()]
    assert sent == [None, 195, MAX_TOKENS_SENT, None]
    assert openai_stub.chat_requests()[0] == {
        "model": "stub-model",
        "messages": HI,
        "temperature": 1.0,
        "n": 1,
        "seed": 1,
    }


def test_token_counts_read_from_metadata_or_records() -> None:
    from worldforge.core.errors import ProviderError
    from worldforge.providers.chat import token_count, usage_counts

    assert [token_count(v) for v in (None, 0, "", 7, 7.0, "7")] == [0, 0, 0, 7, 7, 7]
    assert usage_counts({"prompt_eval_count": 3, "eval_count": "4"}) == (3, 4)
    assert usage_counts({"prompt_tokens": 5, "prompt_eval_count": 3}) == (5, 0)
    with pytest.raises(ProviderError, match="token count"):
        token_count([1])
