"""Helpers shared by the team's program."""
