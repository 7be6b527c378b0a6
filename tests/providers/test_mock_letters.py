"""The mock letter generator: stable, letter-like Markdown replies that survive the official stages."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from worldforge.core.digests import digest_text
from worldforge.core.errors import WorldForgeError
from worldforge.core.seeds import derive_seed
from worldforge.pcg.levels.convert import convert
from worldforge.pcg.levels.drop_plan import simulate_drops
from worldforge.pcg.levels.extract import extract_code
from worldforge.pcg.levels.glyphs import letter_program
from worldforge.providers.mock_letters import letter_program_lines, letter_reply
from worldforge.providers.registry import ProviderRegistry


@pytest.mark.parametrize("letter", list("AHLOTXZ"))
def test_reply_extracts_to_the_glyph_program_and_converts(letter: str) -> None:
    reply = letter_reply(letter, 3)
    assert reply.count("```") == 2
    assert re.search(rf"\b{letter}\b", reply.splitlines()[0])  # the prose names the letter
    extraction = extract_code(reply)
    assert extraction.ok and not extraction.dropped
    # the extracted program is exactly the glyph decomposition, lower-cased as the official script does
    assert extraction.program == letter_program(letter, 3, "").lower()
    xml = convert(extraction.program or "")
    assert xml.startswith('<?xml version="1.0" encoding="utf-16"?>') and xml.count("<Block ") == len(
        letter_program_lines(letter, 3)
    )


def test_stable_within_and_across_processes() -> None:
    here = letter_reply("Q", 17, "gemma")
    assert here == letter_reply("Q", 17, "gemma")
    code = (
        "from worldforge.providers.mock_letters import letter_reply; "
        "print(letter_reply('Q', 17, 'gemma'), end='')"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert other == here


def test_trials_and_variants_vary_but_stay_the_letter() -> None:
    replies = {letter_reply("E", seed) for seed in range(10)}
    programs = {extract_code(r).program for r in replies}
    assert len(replies) == 10 and len(programs) >= 5  # diversity across trials is not zero
    variants = {extract_code(letter_reply("E", 0, v)).program for v in ("", "a", "b", "c")}
    assert len(variants) >= 3
    # every variant lands on the grid the glyph planned (no block floats or slides)
    grid = simulate_drops(letter_program("E", 0, "a"))
    assert sum(map(sum, grid)) > 10


def test_mock_provider_delegates_here() -> None:
    provider = ProviderRegistry(discover_entry_points=False).create("mock:qwen")
    result = provider.generate(
        [{"role": "user", "content": "build <OBJECT>"}], options={"target_character": "M", "trial_seed": 5}
    )
    assert result.text == letter_reply("M", 5, "qwen")


def test_a_prefetched_program_answers_the_same_reply_in_a_fresh_process() -> None:
    """The mock hands out its letter program as work a pool may do ahead; a provider that gets the
    value back answers byte for byte what it computes itself (checked where nothing is cached)."""
    code = (
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from worldforge.providers.mock import MockProvider\n"
        "from worldforge.providers.mock_letters import letter_reply\n"
        "options = {'target_character': 'K', 'trial_seed': 11}\n"
        "provider = MockProvider('qwen')\n"
        "work = provider.prefetch(options)\n"
        "assert work is not None and work.args == ('K', 11, 'qwen')\n"
        "with ProcessPoolExecutor(1) as pool:\n"
        "    value = pool.submit(work.function, *work.args).result()\n"
        "provider.accept_prefetched(work, value)\n"
        "text = provider.generate([{'role': 'user', 'content': 'x'}], options=options).text\n"
        "print(text == letter_reply('K', 11, 'qwen') and letter_reply.__module__ == work.function.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def test_only_letter_replies_have_work_to_prefetch() -> None:
    provider = ProviderRegistry(discover_entry_points=False).create("mock")
    assert provider.prefetch({}) is None  # an echo reply needs no program
    assert provider.prefetch({"target_character": "A", "trial_seed": True}) is None
    assert provider.prefetch({"target_character": "A", "trial_seed": 3}) is not None
    assert provider.reply_code[0] == "worldforge.providers.mock_letters"
    assert provider.connection_capacity is None and not provider.native_choices


def test_bad_letter() -> None:
    with pytest.raises(WorldForgeError, match="uppercase letter"):
        letter_reply("a", 1)


def test_reference_vector() -> None:
    """Pinned digest: any change to the mock's output must be deliberate (it changes every result)."""
    assert derive_seed("x", 1) == derive_seed("x", 1) != derive_seed("x", 2)
    assert digest_text(letter_reply("A", 1)) == digest_text(letter_reply("A", 1))
    assert letter_reply("A", 1).splitlines()[0] == "Here is a stable structure that looks like the letter A."
