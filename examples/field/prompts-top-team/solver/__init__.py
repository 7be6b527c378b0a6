"""Layout 3: the program lives in a package; its prompts are at the top of the team folder."""
