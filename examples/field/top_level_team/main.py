"""Layout 1: the program at the top of a team folder that is a package.

``from .common ...`` means this module only runs as part of the ``top_level_team`` package
(``python -m top_level_team.main`` from the folder above); prompts are read relative to the team
folder.
"""

from llms4pcg.competition import chat_with_llm, run_evaluation
from llms4pcg.models.trial_context import TrialContext
from llms4pcg.models.trial_loop import TrialLoop

from .common.messages import user_turn


class TopLevelLoop(TrialLoop):
    @staticmethod
    def run(ctx: TrialContext, target_character: str) -> str:
        return chat_with_llm(ctx, [user_turn("task.txt", target_character)])[0]


if __name__ == "__main__":
    run_evaluation("top_level_team", TopLevelLoop, num_trials=10)
