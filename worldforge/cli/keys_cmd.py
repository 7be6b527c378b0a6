"""``worldforge keys generate DIR``: a key pair for signing attestations, for users without one.

The private key is written with mode 0600 and never read back by this command; the public key is
what reviewers (``runs verify --key``) and ``attest.trusted_keys`` use. The same pair can be made
with ``openssl genpkey -algorithm ed25519 -out worldforge-attest.key`` and ``openssl pkey -in
worldforge-attest.key -pubout -out worldforge-attest.pub``.
"""

from __future__ import annotations

from pathlib import Path

import typer

from worldforge.cli._common import cli_errors

keys_app = typer.Typer(
    name="keys",
    help="Signing keys for attestations (runs bundle --attest --sign-key, eval --attest).",
    no_args_is_help=True,
    add_completion=False,
)


@keys_app.command("generate")
def generate_cmd(
    directory: Path = typer.Argument(..., help="Folder for worldforge-attest.key and worldforge-attest.pub."),
    key_type: str = typer.Option(
        "ed25519", "--type", help="ed25519 (deterministic signatures) or ecdsa-p256."
    ),
) -> None:
    """Write a new private key (mode 0600) and its public key; never overwrites an existing key."""
    with cli_errors():
        from worldforge.evidence.keys import generate_keypair

        private_path, public_path, keyid = generate_keypair(directory, key_type)
        typer.echo(f"private key: {private_path} (keep it secret; sign with --sign-key)")
        typer.echo(f"public key:  {public_path} (give it to reviewers: runs verify --key)")
        typer.echo(f"keyid:       {keyid}")


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")


__all__ = ["keys_app", "register"]
