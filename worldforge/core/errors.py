"""The project's single error hierarchy.

Every failure the toolkit raises on purpose derives from :class:`WorldForgeException`, so callers
(and the CLI) can map failures to exit codes without string matching:

* :class:`WorldForgeError` — bad input or validation failure (CLI exit code 2). It is also a
  ``ValueError`` so generic callers that catch ``ValueError`` keep working.
* :class:`WorldStateError` — a persisted or provider-returned world state is malformed.
* :class:`ProviderError` — a provider failed at run time (network, timeout, server error).
* :class:`StageError` — a pipeline stage rejected its input with an official message (for example
  the converter's ``Width boundary is intruded.``); CLI exit code 1.
* :class:`GateFailure` — a gate the user asked for failed (budget, ``--fail-on-failure``); exit 1.
"""

from __future__ import annotations


class WorldForgeException(Exception):
    """Root of every exception raised deliberately by worldforge."""

    exit_code: int = 1


class WorldForgeError(WorldForgeException, ValueError):
    """Bad input: the message names the file, field or argument that is wrong."""

    exit_code = 2


class WorldStateError(WorldForgeError):
    """A world snapshot does not satisfy the world schema."""


class ProviderError(WorldForgeException, RuntimeError):
    """A provider failed while doing its work (not a problem with the caller's input)."""

    exit_code = 1


class StageError(WorldForgeException):
    """A pipeline stage failed on a well-formed request (official failure messages live here)."""

    exit_code = 1


class GateFailure(WorldForgeException):
    """A requested quality or budget gate did not pass."""

    exit_code = 1


__all__ = [
    "GateFailure",
    "ProviderError",
    "StageError",
    "WorldForgeError",
    "WorldForgeException",
    "WorldStateError",
]
