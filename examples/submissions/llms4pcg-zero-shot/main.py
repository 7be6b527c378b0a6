"""A 2025 (LLMs4PCG) submission: one zero-shot turn through ``chat_with_llm``."""

from pathlib import Path

from llms4pcg.competition import chat_with_llm, run_evaluation
from llms4pcg.models.trial_context import TrialContext
from llms4pcg.models.trial_loop import TrialLoop


class ZeroShot(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        prompt = Path("prompts/zero_shot.txt").read_text(encoding="utf-8")
        prompt = prompt.replace("<OBJECT>", target_character)
        return chat_with_llm(ctx, [{"role": "user", "content": prompt}])[0]


if __name__ == "__main__":
    run_evaluation(
        "zero_shot_2025",
        ZeroShot,
        num_trials=10,
        model_name="qwen2.5:32b-instruct-fp16",
        local_model_base_url="http://localhost:11434/v1",
    )
