"""Helpers every CLI command uses: one error-to-exit-code mapping and sanitized messages.

Exit codes are a contract: 0 ok, 1 a gate or stage failed, 2 usage or validation error. Commands
stay thin: they parse options, call a layer, print, and let :func:`cli_errors` translate the
project's exception hierarchy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from worldforge.core.errors import WorldForgeError, WorldForgeException
from worldforge.core.redact import sanitize_text


def _sanitize(message: str) -> str:
    return sanitize_text(message)


def fail(message: str, *, code: int = 2, hint: str | None = None) -> typer.Exit:
    """Print a one-line error (plus optional hint) to stderr and return the Exit to raise."""
    line = " ".join(_sanitize(message).split())
    print(f"error: {line}", file=sys.stderr)
    if hint:
        print(f"hint: {_sanitize(hint)}", file=sys.stderr)
    return typer.Exit(code)


Hint = str | Callable[[str], str | None] | None


def _hint_for(hint: Hint, message: str) -> str | None:
    return hint(message) if callable(hint) else hint


@contextmanager
def cli_errors(hint: Hint = None) -> Iterator[None]:
    """Map project exceptions to exit codes with a one-line sanitized message.

    ``hint`` may be a function of the message, so a command only shows a hint that fits the error
    (a missing file should not be answered with "list the suites").
    """

    try:
        yield
    except WorldForgeException as exc:
        own = getattr(exc, "hint", None)
        raise fail(str(exc), code=exc.exit_code, hint=own or _hint_for(hint, str(exc))) from None
    except FileNotFoundError as exc:
        message = f"{exc.filename}: file not found."
        raise fail(message, code=2, hint=_hint_for(hint, message)) from None
    except (IsADirectoryError, NotADirectoryError, PermissionError, FileExistsError) as exc:
        # A path given on the command line is the wrong kind of thing (a directory where a file
        # goes, a file where a workspace goes) or not ours to touch: a usage error, not a crash.
        # Name the path the user gave (the second one for a rename onto a directory).
        target = exc.filename2 if isinstance(exc, IsADirectoryError) and exc.filename2 else exc.filename
        what = {
            IsADirectoryError: "is a directory, expected a file",
            NotADirectoryError: "a path component is a file, expected a directory",
            PermissionError: "permission denied",
            FileExistsError: "already exists",
        }[type(exc)]
        message = f"{target}: {what}." if target else f"{exc.strerror or what}."
        raise fail(message, code=2, hint=_hint_for(hint, message)) from None


def argv() -> list[str]:
    """The real argv vector of this invocation, program name normalised to ``worldforge``."""
    args = list(sys.argv)
    if args:
        args[0] = "worldforge"
    return args


def format_option(default: str, choices: Sequence[str], help: str = "Output format.") -> Any:
    """The ``--format`` option with its choices in the help (``[a|b|c]``); validate with
    :func:`check_format`, which gives the one-line error every usage error gets."""
    return typer.Option(default, "--format", metavar="[" + "|".join(choices) + "]", help=help)


def check_format(value: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else a ``WorldForgeError`` naming them (exit 2)."""

    if value not in choices:
        raise WorldForgeError(f"--format: {value!r} is not one of {', '.join(choices)}.")
    return value


def workspace_option(help: str) -> Any:
    """``--workspace``/``-w``: the one spelling every command uses for the run workspace folder."""
    return typer.Option(None, "--workspace", "-w", help=help)


def legacy_workspace_option(spelling: str) -> Any:
    """A hidden older spelling of ``--workspace`` (``--run-workspace`` on the commands that record a
    run, ``--workspace-dir`` on ``runs``), kept so documented command lines and scripts still work;
    merge it with :func:`workspace_choice`."""
    return typer.Option(None, spelling, hidden=True)


def workspace_choice(workspace: Path | None, legacy: Path | None, spelling: str) -> Path | None:
    """The workspace a command was given under either spelling; two different folders is a usage
    error (exit 2) rather than a silent pick."""
    if workspace is not None and legacy is not None and workspace != legacy:
        raise WorldForgeError(f"--workspace and {spelling} name different folders; give one of them.")
    return workspace if workspace is not None else legacy


__all__ = [
    "argv",
    "check_format",
    "cli_errors",
    "fail",
    "format_option",
    "legacy_workspace_option",
    "workspace_choice",
    "workspace_option",
]
