"""Hostile replies never break a run and are never executed; each is a recorded per-trial failure.

Also: an Ollama model served by the loopback stub goes through the same suite, and a server that
keeps failing gives recorded per-trial failures instead of aborting the run.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest

from tests.ollama_stub import OllamaStub
from tests.suites.test_science_birds import PixelClassifier, pixel_classifier  # noqa: F401 - fixture
from worldforge.forge import WorldForge
from worldforge.pcg.levels.glyphs import letter_program
from worldforge.providers.base import BaseProvider, GenerationResult
from worldforge.providers.mock_letters import letter_reply
from worldforge.suites.science_birds.stages import MAX_REPLY_CHARS
from worldforge.suites.science_birds.suite import evaluate


def _hostile_replies(marker: Path) -> dict[str, str]:
    quoted = str(marker).replace("'", "")
    return {
        "A": "```python\n" + "drop_block('b11', 3)\n" * 20 + "```\n" + "x" * (MAX_REPLY_CHARS + 1),
        "B": "```python\ndrop_block('b11', 3)\n```\n\x00\x01\x02 binary \x7f tail",
        "C": (
            f"```python\nimport os\nos.system('touch {quoted}')\n"
            "for i in range(3):\n    drop_block('b11', i)\n```"
        ),
        "D": (
            "```\ndrop_block('b11\"/></GameObjects><script>alert(1)</script>', 3)\n```\n"
            "<Level><script>x</script>"
        ),
        "E": "```\n" + "drop_block('b11', 5)\n" * 10_000 + "```",
        "F": "I would stack blocks to make an F, but here is no code, just <b>prose</b>.",
        "G": letter_reply("G", 1),  # a normal reply in the same run still scores
    }


class HostileProvider(BaseProvider):
    name = "hostile"
    _capabilities = ("generate",)

    def __init__(self, replies: dict[str, str]) -> None:
        super().__init__()
        self.replies = replies

    def runtime_manifest(self) -> dict[str, Any]:
        return {"provider": "hostile", "model": "hostile-v1"}

    def generate(
        self, messages: list[dict[str, str]], *, options: dict[str, Any] | None = None
    ) -> GenerationResult:
        letter = (options or {})["target_character"]
        return self.instrumented(
            "generate", {"letter": letter}, lambda: GenerationResult(self.name, self.replies[letter], {})
        )


def test_hostile_replies_are_recorded_failures(tmp_path: Path, pixel_classifier: None) -> None:  # noqa: F811
    marker = tmp_path / "PWNED"
    forge = WorldForge()
    forge.register_provider("hostile", HostileProvider(_hostile_replies(marker)))
    options = {"characters": "A-G", "trials": 2, "programs": ["zero-shot"], "progress": False, "workers": 1}
    report = evaluate(["hostile"], forge=forge, options=options)
    failures = {row["item"].split("__")[2]: row for row in report.sections["failed_trials"]["rows"]}
    assert set(failures) == set("ABCDEF")
    assert failures["A"]["failed_stage"] == "generate"
    assert f"characters; the limit is {MAX_REPLY_CHARS}" in failures["A"]["error"]
    assert (
        failures["B"]["failed_stage"] == "generate" and "binary/control character" in failures["B"]["error"]
    )
    assert failures["C"]["failed_stage"] == "convert" or failures["C"]["failed_stage"] == "extract"
    assert not marker.exists()  # the os.system call was never executed
    assert failures["D"]["failed_stage"] in {"extract", "convert"}
    assert failures["E"]["failed_stage"] == "extract" and "10000 drop_block calls" in failures["E"]["error"]
    assert failures["F"] == {
        "item": failures["F"]["item"],
        "failed_stage": "extract",
        "error": "Code not found.",
    }
    (result,) = report.results
    assert result.metrics["failed_trials"] == 12 and result.metrics["ok_trials"] == 2
    assert result.metrics["failures_by_stage"]["generate"] == 4
    # injected markup is shown as text in the HTML report, never as markup
    only_d = evaluate(["hostile"], forge=forge, options={**options, "characters": "D"})
    worst = only_d.sections["worst_levels"]["rows"]
    assert worst and "<script>alert(1)</script>" in worst[0]["program_text"]
    page = only_d.to_html()
    assert "<script>" not in page
    assert html.escape("<script>", quote=False) in page or "&lt;script&gt;" in page


def test_ollama_models_through_the_suite(pixel_classifier: None) -> None:  # noqa: F811
    with OllamaStub(models=["qwen2.5:latest", "phi3:latest"]) as stub:
        # The stub answers like a model: a fenced program for the letter named in the prompt.
        def reply(request: dict[str, Any]) -> str:
            first = request["messages"][0]["content"]
            letter = first.split('character "', 1)[1][0]
            seed = request["options"]["seed"]
            return f"Here you go.\n```\n{letter_program(letter, seed % 1000, request['model'])}```\n"

        stub.reply = reply
        options = {
            "characters": "HI",
            "trials": 2,
            "progress": False,
            "workers": 1,
            "ollama_host": stub.host,
            "ollama_backoff_s": 0,
        }
        forge = WorldForge(provider_options=options)
        report = evaluate(["ollama:qwen2.5", "ollama:phi3"], forge=forge, options=options)
        chats = [r for r in stub.requests if "messages" in r]
        # 2 models x 2 programs x 2 letters x 2 trials; the multi-turn program sends 2 turns
        assert len(chats) == 2 * 2 * 2 * (1 + 2)
        multi = [r for r in chats if len(r["messages"]) == 3]
        assert multi and all(r["messages"][1]["role"] == "assistant" for r in multi)
        assert all(r["options"]["temperature"] == 1.0 for r in chats)
        assert {r.provider for r in report.results} == {"ollama:qwen2.5", "ollama:phi3"}
        assert all(r.metrics["ok_trials"] == 4 for r in report.results)
        manifests = report.provenance.runtime_manifests
        assert manifests["ollama:qwen2.5"]["model_digest"] == "a" * 64

        # replies that blow the 25,000-token trial budget are recorded failures with the reason
        stub.tokens = (20_000, 6_000)
        forge = WorldForge(provider_options=options)
        over = evaluate(["ollama:phi3"], forge=forge, options={**options, "seed": 5})
        rows = over.sections["failed_trials"]["rows"]
        assert len(rows) == 8 and all(
            "26000 prompt+completion tokens after turn 1" in r["error"] for r in rows
        )
        stub.tokens = (10, 20)

        # a server that keeps answering 500 -> every trial is a recorded failure, the run completes
        stub.fail_next = [500] * 1000
        failed = evaluate(
            ["ollama:qwen2.5"], forge=_forge_with_manifest_cached(stub), options={**options, "seed": 7}
        )
        assert all(r.metrics["failed_trials"] == 4 and r.score == 0.0 for r in failed.results)
        rows = failed.sections["failed_trials"]["rows"]
        assert rows and all("HTTP 500" in row["error"] and row["failed_stage"] == "generate" for row in rows)


def _forge_with_manifest_cached(stub: OllamaStub) -> WorldForge:
    """A forge whose ollama provider already fetched its manifest (the 500s start afterwards)."""
    saved = list(stub.fail_next)
    stub.fail_next = []
    options = {"ollama_host": stub.host, "ollama_backoff_s": 0, "ollama_retries": 1}
    forge = WorldForge(provider_options=options)
    forge.runtime_manifest("ollama:qwen2.5")
    stub.fail_next = saved
    return forge


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
