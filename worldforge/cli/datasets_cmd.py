"""``worldforge datasets``: print the dataset-manifest JSON Schema, validate manifests, show references."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from worldforge.cli._common import cli_errors
from worldforge.core.canonical import pretty_json

datasets_app = typer.Typer(
    name="datasets",
    help="Dataset manifests (schema_version 1): schema, validation and compact references.",
    no_args_is_help=True,
    add_completion=False,
)


@datasets_app.command("schema")
def schema_cmd() -> None:
    """Print the shipped JSON Schema for dataset manifests."""
    with cli_errors():
        from worldforge.datasets import manifest_schema

        sys.stdout.write(pretty_json(manifest_schema()))


@datasets_app.command("validate")
def validate_cmd(
    files: list[Path] = typer.Argument(..., help="Manifest JSON file(s)."),
    root: Path | None = typer.Option(
        None, "--root", help="Repository root for local fixtures (default: nearest)."
    ),
) -> None:
    """Validate manifests (schema, safe paths, fixture checksums, stable URIs); exit 2 naming the field."""
    with cli_errors():
        from worldforge.datasets import manifest_reference

        for file in files:
            ref = manifest_reference(file, root=root)
            typer.echo(f"ok: {file}: {ref['id']} ({ref['entry_count']} entries) {ref['sha256']}")


@datasets_app.command("ref")
def ref_cmd(
    file: Path = typer.Argument(..., help="Manifest JSON file."),
    root: Path | None = typer.Option(
        None, "--root", help="Repository root for local fixtures (default: nearest)."
    ),
) -> None:
    """Print the compact reference that provenance and run manifests record."""
    with cli_errors():
        from worldforge.datasets import manifest_reference

        sys.stdout.write(pretty_json(manifest_reference(file, root=root)))


def register(app: typer.Typer) -> None:
    app.add_typer(datasets_app, name="datasets")


__all__ = ["datasets_app", "register"]
