"""Layout 4: the team's package, with relative imports inside it."""
