"""Command-line interface (typer). See :mod:`worldforge.cli.app`."""
