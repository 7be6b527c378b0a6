"""Layout 3: reads ``prompts/zero_shot.txt`` relative to the team folder; no run_evaluation call."""

from pathlib import Path

from llms4pcg.competition import chat_with_llm
from llms4pcg.models.trial_context import TrialContext
from llms4pcg.models.trial_loop import TrialLoop


class ZeroShotFromTop(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        prompt = Path("prompts/zero_shot.txt").read_text(encoding="utf-8")
        message = {"role": "user", "content": prompt.replace("<OBJECT>", target_character)}
        return chat_with_llm(ctx, [message])[0]
