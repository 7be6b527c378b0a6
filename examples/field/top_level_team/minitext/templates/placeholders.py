"""The placeholder the competition's prompts use for the target letter."""

PLACEHOLDER = "<OBJECT>"
