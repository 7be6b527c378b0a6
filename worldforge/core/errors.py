"""The project's single error hierarchy.

Every failure the toolkit raises on purpose derives from :class:`WorldForgeException`, so callers
(and the CLI) can map failures to exit codes without string matching:

* :class:`WorldForgeError` — bad input or validation failure (CLI exit code 2). It is also a
  ``ValueError`` so generic callers that catch ``ValueError`` keep working.
* :class:`WorldStateError` — a persisted or provider-returned world state is malformed.
* :class:`ProviderError` — a provider failed at run time (network, timeout, server error);
  :class:`ProviderHTTPError` when its server answered with an HTTP error status.
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


class ProviderHTTPError(ProviderError):
    """A provider's server answered with an HTTP error status, once the provider's retries were spent.

    The status, the server's error body and its ``Retry-After`` header are kept as data, not only
    in the message, so that a relay (the model gateway) can answer its client as the server did: a
    program that shortens its history on the server's 400 for an over-long prompt must see that
    400, not a relay failure. ``body`` is the decoded error body (a mapping or a string, the API key
    already removed); ``retry_after`` the header's text as the server sent it.
    """

    def __init__(
        self, message: str, status: int, body: object = None, retry_after: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = int(status)
        self.body = body
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[type[ProviderHTTPError], tuple[str, int, object, str | None]]:
        # The data travels with the error across processes (pickling), not only the message.
        return (type(self), (str(self), self.status, self.body, self.retry_after))


class StageError(WorldForgeException):
    """A pipeline stage failed on a well-formed request (official failure messages live here)."""

    exit_code = 1


class GateFailure(WorldForgeException):
    """A requested quality or budget gate did not pass."""

    exit_code = 1


__all__ = [
    "GateFailure",
    "ProviderError",
    "ProviderHTTPError",
    "StageError",
    "WorldForgeError",
    "WorldForgeException",
    "WorldStateError",
]
