"""Layout 2: the team's only package, holding the program and its prompts."""
