"""Layout 4: run as ``python -m agent.loop`` from the team folder, under another team name."""

from llms4pcg.competition import chat_with_llm, run_evaluation
from llms4pcg.models.trial_context import TrialContext
from llms4pcg.models.trial_loop import TrialLoop

from .conversation import opening


class Builder(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        return chat_with_llm(ctx, opening(target_character))[0]


if __name__ == "__main__":
    run_evaluation("something-else", Builder, num_trials=10, characters=["A", "B"])
