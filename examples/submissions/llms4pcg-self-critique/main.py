"""A 2025 (LLMs4PCG) submission with self-critique: draft, critique, revise (three turns).

Each turn goes through ``chat_with_llm`` with the whole conversation so far; the reply to the last
turn is returned unchanged, as the rules require. ``n=2`` on the draft shows the package's
several-choices form: the longer draft is kept.
"""

from pathlib import Path

from llms4pcg.competition import chat_with_llm, run_evaluation
from llms4pcg.models.trial_context import TrialContext
from llms4pcg.models.trial_loop import TrialLoop

PROMPTS = Path("prompts")


def turn(name: str, letter: str) -> str:
    return (PROMPTS / name).read_text(encoding="utf-8").replace("<OBJECT>", letter)


class SelfCritique(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        messages = [{"role": "user", "content": turn("0_task.txt", target_character)}]
        drafts = chat_with_llm(ctx, messages, n=2)
        messages.append({"role": "assistant", "content": max(drafts, key=len)})
        messages.append({"role": "user", "content": turn("1_critique.txt", target_character)})
        critique = chat_with_llm(ctx, messages)[0]
        messages.append({"role": "assistant", "content": critique})
        messages.append({"role": "user", "content": turn("2_revise.txt", target_character)})
        return chat_with_llm(ctx, messages)[0]


if __name__ == "__main__":
    run_evaluation(
        "self_critique",
        SelfCritique,
        num_trials=10,
        model_name="qwen2.5:32b-instruct-fp16",
        local_model_base_url="http://localhost:11434/v1",
    )
