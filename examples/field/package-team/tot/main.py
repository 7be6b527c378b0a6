"""Layout 2: a 2024 (chatgpt4pcg) program inside the team's package, run from the team folder."""

from chatgpt4pcg.competition import chat_with_chatgpt, run_evaluation
from chatgpt4pcg.models.trial_context import TrialContext
from chatgpt4pcg.models.trial_loop import TrialLoop

from tot.steps import first_step


class StepByStep(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        return chat_with_chatgpt(ctx, first_step(target_character))[0]


if __name__ == "__main__":
    run_evaluation("package-team", StepByStep, num_trials=10)
