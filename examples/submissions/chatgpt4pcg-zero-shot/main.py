"""A 2024 (ChatGPT4PCG 2) submission: one zero-shot turn through ``chat_with_chatgpt``.

Written the way competition entries are: prompt files read relative to this folder, a sibling
helper module, ``load_dotenv()``, and ``run_evaluation`` under the main guard.
"""

from chatgpt4pcg.competition import chat_with_chatgpt, run_evaluation
from chatgpt4pcg.models.trial_context import TrialContext
from chatgpt4pcg.models.trial_loop import TrialLoop
from dotenv import load_dotenv
from prompt_utils import fill_prompt

load_dotenv()


class ZeroShotPrompting(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        prompt = fill_prompt("prompts/zero_shot.txt", target_character)
        responses = chat_with_chatgpt(ctx, [{"role": "user", "content": prompt}])
        return responses[0]


if __name__ == "__main__":
    run_evaluation("zero_shot_2024", ZeroShotPrompting, num_trials=10)
