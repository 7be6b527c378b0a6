"""The ``worldforge`` command: a thin typer app that wires command groups together.

Only typer/rich and the small command modules are imported here; every heavy dependency (torch,
transformers, Box2D, the ollama client) is imported inside the command that needs it, so
``worldforge --help`` stays fast.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="worldforge",
    help="Reproducible evaluation of world/level-generating providers with attachable evidence.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Command modules register themselves on ``app`` through ``register(app)``.
_COMMAND_MODULES = (
    "worldforge.cli.eval_cmd",
    "worldforge.cli.runs_cmd",
    "worldforge.cli.datasets_cmd",
    "worldforge.cli.benchmark_cmd",
    "worldforge.cli.pcg_cmd",
    "worldforge.cli.keys_cmd",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)


def _print_version(value: bool) -> None:
    """Eager: ``worldforge --version`` answers before click asks for a command."""
    if value:
        from worldforge import __version__

        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the worldforge version and exit.",
        is_eager=True,
        callback=_print_version,
    ),
) -> None:
    """WorldForge: evaluation suites, run workspaces, evidence bundles and the Science Birds PCG suite."""


_register_all()


def main() -> None:
    """Console-script entry point."""
    app()


__all__ = ["app", "main"]
