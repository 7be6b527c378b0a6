"""A valid 2024 program that does not qualify: its prompt hard-codes answers for five letters."""

from pathlib import Path

from chatgpt4pcg.competition import chat_with_chatgpt, run_evaluation
from chatgpt4pcg.models.trial_context import TrialContext
from chatgpt4pcg.models.trial_loop import TrialLoop


class Recipes(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        prompt = Path("prompts/recipes.txt").read_text(encoding="utf-8")
        messages = [{"role": "user", "content": prompt.replace("<OBJECT>", target_character)}]
        return chat_with_chatgpt(ctx, messages)[0]


if __name__ == "__main__":
    run_evaluation("hard-coded-team", Recipes, num_trials=10)
