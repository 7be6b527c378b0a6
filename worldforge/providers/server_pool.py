"""Several servers for one model: requests balanced with a per-server concurrency limit, and a
failing server taken out of rotation for a while with its request retried on another.

Generation for a cohort needs more than one model server, and servers fail (restarts, overload).
A :class:`ServerPool` hands out one server per request (:meth:`ServerPool.lease`): the healthy
server with the fewest requests in flight, never more than ``max_connections`` at once on one
server (further callers wait for a free slot). A request whose server failed with a retryable error
reports it (:meth:`Lease.failed`); that server then gets no request for ``cooldown_s`` seconds, and
the caller's next attempt goes to another server without waiting. When every server is cooling
down, the one that recovers first is tried rather than failing the trial.

Replies do not depend on which server answered (the same model and parameters everywhere; the run
manifest records the model's digest from the first server), so the pool never changes a record.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from worldforge.core.errors import WorldForgeError

DEFAULT_MAX_CONNECTIONS = 4
DEFAULT_COOLDOWN_S = 30.0


@dataclass
class _Server:
    url: str
    in_flight: int = 0
    down_until: float = 0.0
    served: int = 0
    failures: int = 0


@dataclass
class Lease:
    """One request's server; call :meth:`failed` when the server (not the request) was at fault."""

    url: str
    pool: ServerPool = field(repr=False)
    _failed: bool = False

    def failed(self) -> None:
        self._failed = True


class ServerPool:
    """Balances requests over ``urls`` (see the module docstring). Thread-safe."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        unique = list(dict.fromkeys(urls))
        if not unique:
            raise WorldForgeError("a server pool needs at least one server address.")
        if isinstance(max_connections, bool) or int(max_connections) < 1:
            raise WorldForgeError(f"--max-connections must be >= 1, got {max_connections!r}.")
        self._servers = [_Server(url) for url in unique]
        self.max_connections = int(max_connections)
        self.cooldown_s = float(cooldown_s)
        self._clock = clock
        self._cond = threading.Condition()
        self._turn = 0

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self._servers]

    def healthy(self) -> list[str]:
        """Servers in rotation now."""
        now = self._clock()
        with self._cond:
            return [s.url for s in self._servers if s.down_until <= now]

    def stats(self) -> dict[str, dict[str, int]]:
        """Requests served and failures per server (informational)."""
        with self._cond:
            return {s.url: {"served": s.served, "failures": s.failures} for s in self._servers}

    def _pick(self) -> _Server | None:
        now = self._clock()
        free = [s for s in self._servers if s.in_flight < self.max_connections]
        if not free:
            return None
        up = [s for s in free if s.down_until <= now]
        if not up:
            if any(s.down_until <= now for s in self._servers):
                return None  # a healthy server is only busy: wait for its slot
            return min(free, key=lambda s: s.down_until)  # all cooling down: the first to recover
        n = len(self._servers)
        # fewest in flight; ties go round-robin so idle servers share the load
        best = min(up, key=lambda s: (s.in_flight, (self._servers.index(s) - self._turn) % n))
        self._turn = (self._servers.index(best) + 1) % n
        return best

    @contextmanager
    def lease(self) -> Iterator[Lease]:
        """A server for one request (waits while every usable server is at its limit)."""
        with self._cond:
            server = self._pick()
            while server is None:
                self._cond.wait(timeout=0.5)
                server = self._pick()
            server.in_flight += 1
        lease = Lease(server.url, self)
        try:
            yield lease
        finally:
            with self._cond:
                server.in_flight -= 1
                if lease._failed:
                    server.failures += 1
                    server.down_until = self._clock() + self.cooldown_s
                else:
                    server.served += 1
                    server.down_until = 0.0
                self._cond.notify_all()

    def has_alternative(self, url: str) -> bool:
        """Whether another server than ``url`` is in rotation (then a retry need not wait)."""
        return any(u != url for u in self.healthy())


__all__ = ["DEFAULT_COOLDOWN_S", "DEFAULT_MAX_CONNECTIONS", "Lease", "ServerPool"]
