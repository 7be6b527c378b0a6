"""One base for chat providers backed by model servers: settings, pool, clients, retries, events.

``ollama:<model>`` and ``openai:<model>`` differ only in how they talk to a server (the client
library, its errors, the shape of a reply). Everything around the wire is the same and lives here
once: the validated settings, one client per server, the :class:`ServerPool` that balances requests
over the servers and takes a failing one out of rotation, the retry loop with exponential backoff
(each further server adds an attempt, and a retry goes to another server at once when one is in
rotation), the preflight requests behind the cached runtime manifest, and one
:class:`~worldforge.providers.events.ProviderEvent` per attempt (``retry`` / ``success`` /
``failure``). A subclass supplies the wire hooks (``_new_client``, ``_retryable``, ``_describe``,
``_failure``, ``_preflight_retryable``, ``_fetch_manifest``) and its ``generate``.

A provider is built once, by the registry, with the run's options (:meth:`from_spec` in each
subclass); nothing reconfigures it afterwards, so its settings, pool and manifest describe one set
of servers for its whole life.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.providers.base import BaseProvider
from worldforge.providers.server_pool import ServerPool

R = TypeVar("R")


class ChatServerSettings(Protocol):
    """What the pooled base reads from a provider's settings (frozen dataclasses satisfy it)."""

    @property
    def model(self) -> str: ...

    @property
    def retries(self) -> int: ...

    @property
    def backoff_s(self) -> float: ...

    @property
    def request_timeout_s(self) -> float: ...

    @property
    def max_connections(self) -> int: ...

    @property
    def servers(self) -> tuple[str, ...]:
        """Every server of the model, the first one (preflight, manifest) first."""
        ...

    def identity(self) -> JSONObject:
        """Parameters that shape replies (servers, timeouts and retries excluded)."""
        ...


S = TypeVar("S", bound=ChatServerSettings)


def wire_messages(messages: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """Chat turns as sent: ``role`` and ``content`` only, each checked (a bad turn is a usage error)."""
    for i, message in enumerate(messages):
        if message.get("role") not in {"system", "user", "assistant"} or not isinstance(
            message.get("content"), str
        ):
            raise WorldForgeError(f"messages[{i}]: needs role system|user|assistant and string content.")
    return [{"role": m["role"], "content": m["content"]} for m in messages]


class PooledChatProvider(BaseProvider, Generic[S]):
    """The ``generate`` capability backed by one model on one or more servers (see module docstring)."""

    _capabilities = ("generate",)
    #: The provider family (``ollama``, ``openai``): the provider is named ``<family>:<model>``.
    family = "chat"

    def __init__(self, settings: S, *, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__()
        self.settings = settings
        self.name = f"{self.family}:{settings.model}"
        self._sleep = sleep
        self._clients: dict[str, Any] = {}
        self._manifest: JSONObject | None = None
        self.pool = ServerPool(settings.servers, max_connections=settings.max_connections)

    @property
    def connection_capacity(self) -> int:
        """Every server's connection limit, summed: how many trials may wait on this model at once."""
        return len(self.pool.urls) * self.pool.max_connections

    # -- clients ------------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The client of the first server (preflight, manifest)."""
        return self.client_for(self.settings.servers[0])

    def client_for(self, url: str) -> Any:
        """One client per server (clients keep their connections); the first server's is ``client``."""
        client = self._clients.get(url)
        if client is None:
            client = self._clients[url] = self._new_client(url)
        return client

    # -- the wire hooks a subclass supplies ------------------------------------------------------
    def _new_client(self, url: str) -> Any:
        """A client library object talking to the server at ``url``."""
        raise NotImplementedError

    def _retryable(self, exc: BaseException) -> bool:
        """Whether a failed call may succeed when tried again (connection errors, timeouts, 5xx)."""
        raise NotImplementedError

    def _describe(self, exc: BaseException) -> str:
        """A failure as one line for events and errors (never holding a credential)."""
        raise NotImplementedError

    def _failure(self, attempts: int, exc: BaseException) -> ProviderError:
        """The error a call raises once its attempts are spent."""
        raise NotImplementedError

    def _preflight_retryable(self, exc: BaseException) -> bool:
        """Whether a failed preflight request is tried again (a busy server, not a refused one)."""
        raise NotImplementedError

    def _fetch_manifest(self) -> JSONObject:
        """The runtime manifest from the first server (through :meth:`_preflight`)."""
        raise NotImplementedError

    def _attempt_meta(self, exc: BaseException) -> JSONObject:
        """Extra event metadata for a failed attempt (none by default)."""
        return {}

    def _delay(self, attempt: int, exc: BaseException) -> float:
        """Seconds to wait before attempt ``attempt + 1``: exponential backoff."""
        return float(self.settings.backoff_s) * (2 ** (attempt - 1))

    # -- events, preflight, manifest -------------------------------------------------------------
    def _emit(
        self, phase: str, attempt: int, started: float, digest: str, message: str, **meta: JSON
    ) -> None:
        self.emit_attempt(phase, attempt, int(self.settings.retries), started, digest, message, **meta)

    def _preflight(self, call: Callable[[], R]) -> R:
        """One preflight request, retried with backoff while :meth:`_preflight_retryable` says so."""
        attempts = int(self.settings.retries) + 1
        for attempt in range(1, attempts + 1):
            try:
                return call()
            except Exception as exc:
                if not self._preflight_retryable(exc) or attempt == attempts:
                    raise
                self._sleep(self._delay(attempt, exc))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def runtime_manifest(self) -> JSONObject:
        """The model's manifest from the first server, fetched once (a failing preflight raises, so
        a run fails before its first item instead of recording hundreds of identical failures)."""
        if self._manifest is None:
            self._manifest = self._fetch_manifest()
        return dict(self._manifest)

    # -- one call with retries ---------------------------------------------------------------------
    def _send(
        self,
        digest: str,
        request: Callable[[Any], Any],
        accept: Callable[[Any, int], tuple[R, JSONObject]],
    ) -> R:
        """``request(client)`` on a leased server, retried; ``accept(response, attempt)`` turns the
        answer into the reply and the success event's metadata, or raises :class:`ProviderError`
        for a malformed answer (the server answered: retrying will not help)."""
        attempts = int(self.settings.retries) + len(self.pool.urls)
        last: BaseException | None = None
        attempt = 0
        for attempt in range(1, attempts + 1):
            started = time.monotonic()
            with self.pool.lease() as lease:
                try:
                    response = request(self.client_for(lease.url))
                except Exception as exc:
                    if self._retryable(exc):
                        lease.failed()  # out of rotation for a while
                    error: BaseException | None = exc
                else:
                    error = None
            if error is not None:
                last = error
                retry = self._retryable(error) and attempt < attempts
                self._emit(
                    "retry" if retry else "failure",
                    attempt,
                    started,
                    digest,
                    self._describe(error),
                    **self._attempt_meta(error),
                )
                if not retry:
                    break
                if not self.pool.has_alternative(lease.url):  # elsewhere at once, else back off
                    self._sleep(self._delay(attempt, error))
                continue
            try:
                reply, meta = accept(response, attempt)
            except ProviderError as exc:
                self._emit("failure", attempt, started, digest, str(exc))
                raise
            self._emit("success", attempt, started, digest, "ok", **meta)
            return reply
        assert last is not None
        raise self._failure(attempt, last) from None


def client_version(distribution: str) -> str:
    """The installed version of a client library (recorded in runtime manifests)."""
    try:
        from importlib.metadata import version

        return version(distribution)
    except Exception:  # pragma: no cover - metadata missing in odd installs
        return "unknown"


__all__ = ["ChatServerSettings", "PooledChatProvider", "client_version", "wire_messages"]
