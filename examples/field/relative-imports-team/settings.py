"""Settings at the top of the team folder, imported by absolute name from the team's package."""

PROMPT_FILE = "agent/prompts/build.txt"
PLACEHOLDER = "<OBJECT>"
