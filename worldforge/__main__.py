"""``python -m worldforge`` runs the CLI."""

from worldforge.cli.app import main

main()
