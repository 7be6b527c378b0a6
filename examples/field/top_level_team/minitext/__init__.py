"""A tiny text-template library the team ships with its program (vendored)."""
