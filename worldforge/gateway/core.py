"""The recording gateway: every model request of a run goes through it, and every exchange is kept.

A run starts one :class:`Gateway` (a loopback OpenAI-compatible endpoint), opens a route per
trial, and lets the trial's prompt program talk to ``/t/<token>/v1`` (or to ``/v1`` with the token
as bearer key). For each request the gateway

1. resolves the trial from its token (an unknown token is refused: other local processes cannot
   spend a run's budget), checks the model and the request;
2. applies the run's policy: the trial's seed and the provider's configured temperature are what
   is forwarded (a program's own ``seed``/``temperature`` is recorded, never used), and the trial's
   token and time budget are checked before anything is sent;
3. asks its upstream, the trial's provider or a recorded run (``--replay``);
4. records the exchange (see :mod:`worldforge.gateway.exchange`) in the trial's list, which the
   item record carries, and as a ``gateway.exchange`` event with its timing. A request still
   unanswered when its trial ends is recorded too, as a ``trial_ended`` error (see
   :meth:`Gateway.close_trial`).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from worldforge.core.errors import ProviderError, WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.gateway.client import GatewayClient, TrialSession
from worldforge.gateway.exchange import (
    Completion,
    GatewayError,
    Recorder,
    completion_body,
    parse_request,
)
from worldforge.gateway.replay import ReplaySource, ReplayUpstream
from worldforge.gateway.server import LoopbackServer
from worldforge.gateway.upstream import ProviderUpstream, TrialRoute, Upstream
from worldforge.providers.ollama import TRIAL_TIME_LIMIT_S, TRIAL_TOKEN_LIMIT


class Gateway:
    """A loopback OpenAI-compatible endpoint in front of a forge's providers (or a recorded run).

    Use as a context manager (``with Gateway(forge, models=[...], run=run) as gateway:``); open one
    route per trial with :meth:`trial`.
    """

    def __init__(
        self,
        forge: Any = None,
        *,
        models: Sequence[str] = (),
        run: Any = None,
        replay: ReplaySource | None = None,
    ) -> None:
        self.recorder = Recorder()
        self.upstream: Upstream = (
            ReplayUpstream(replay, self.recorder) if replay is not None else ProviderUpstream(forge)
        )
        self.replay = replay
        self.models = list(models)
        self.run = run
        self.exchange_count = 0
        self.failed_count = 0
        self._routes: dict[str, TrialRoute] = {}
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None
        self._client: GatewayClient | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> Gateway:
        if self._server is None:
            self._server = LoopbackServer(self.dispatch)
            self._client = GatewayClient(self._server.port)
            self._emit(
                "gateway.started",
                {
                    "models": self.models,
                    "upstream": self.upstream.source,
                    "replay_of": self.replay.run_id if self.replay is not None else None,
                },
            )
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        if self._client is not None:
            self._client.close()
        self._server.close()
        self._server = self._client = None
        self._emit("gateway.stopped", {"exchanges": self.exchange_count, "failed": self.failed_count})

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise WorldForgeError("the model gateway is not running.")
        return self._server.port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (the trial token goes in the bearer key)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def replaying(self) -> bool:
        return self.replay is not None

    # -- trials -----------------------------------------------------------------------------------
    def open_trial(
        self,
        item_id: str,
        model: str,
        *,
        options: Mapping[str, Any] | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        max_tokens: int = TRIAL_TOKEN_LIMIT,
        max_seconds: float = TRIAL_TIME_LIMIT_S,
        aliases: Sequence[str] = (),
    ) -> TrialRoute:
        """Register a trial; its token authorizes requests until :meth:`close_trial`."""
        route = TrialRoute(
            token=secrets.token_urlsafe(18),
            item_id=item_id,
            model=model,
            options=dict(options or {}),
            seed=seed,
            temperature=temperature,
            max_tokens=int(max_tokens),
            max_seconds=float(max_seconds),
            aliases=tuple(aliases),
        )
        with self._lock:
            self._routes[route.token] = route
        return route

    def close_trial(self, route: TrialRoute) -> list[dict[str, Any]]:
        """Retire the trial's token and return its recorded exchanges.

        A request still waiting for its upstream (the trial was killed at its time limit while the
        model was answering) is recorded as a ``trial_ended`` exchange: the evidence shows what the
        trial was waiting for, and the reply that arrives later is left out of the trial's record.
        """
        with self._lock:
            self._routes.pop(route.token, None)
        with route.lock:
            for index, request in sorted(route.pending.items()):
                error = GatewayError(
                    "trial_ended",
                    f"the trial ended before the answer to request {index + 1} arrived.",
                )
                route.exchanges.append(self.recorder.exchange(request, None, error))
                self._emit_exchange(route, index, route.exchanges[-1])
            route.pending.clear()
            return list(route.exchanges)

    @contextmanager
    def trial(
        self,
        item_id: str,
        model: str,
        **policy: Any,
    ) -> Iterator[TrialSession]:
        """A route for one trial and a client session bound to it (see :meth:`open_trial`)."""
        if self._client is None:
            raise WorldForgeError("the model gateway is not running.")
        route = self.open_trial(item_id, model, **policy)
        try:
            yield TrialSession(self._client, route.token, model, route.exchanges)
        finally:
            self.close_trial(route)

    # -- HTTP dispatch ----------------------------------------------------------------------------
    def dispatch(self, method: str, path: str, token: str | None, body: Any) -> tuple[int, Any]:
        """Answer one HTTP request (called on the server's threads)."""
        with self._lock:
            route = self._routes.get(token) if token else None
        if path == "/v1/models" and method == "GET":
            names = [route.model] if route is not None else self.models
            data = [
                {"id": n, "object": "model", "created": 0, "owned_by": "worldforge-gateway"} for n in names
            ]
            return 200, {"object": "list", "data": data}
        if path != "/v1/chat/completions" or method != "POST":
            return 404, GatewayError("model_not_found", f"unknown route {method} {path}").body()
        if route is None:
            error = GatewayError(
                "authentication_error", "unknown trial: use the trial's route or its token as the API key."
            )
            return error.status, error.body()
        return self.chat(route, body)

    def chat(self, route: TrialRoute, body: Any) -> tuple[int, Any]:
        """One chat completion for ``route``: validate, apply the policy, answer, record."""
        started = time.perf_counter()
        try:
            request = parse_request(body, route.model, route.seed, route.temperature, route.aliases)
        except GatewayError as exc:
            self._emit(
                "gateway.rejected",
                {"item_id": route.item_id, "error": exc.kind, "message": sanitize_text(exc.message)},
            )
            return exc.status, exc.body()
        with route.lock:
            index = route.next_index
            route.next_index += 1
            route.pending[index] = request
        completion: Completion | None = None
        error: GatewayError | None = None
        try:
            self._check_budget(route, index)
            completion = self.upstream.complete(route, request, index)
        except GatewayError as exc:
            error = exc
        except (ProviderError, WorldForgeError) as exc:
            kind = "provider_error" if isinstance(exc, ProviderError) else "invalid_request_error"
            error = GatewayError(kind, sanitize_text(str(exc)))
        except Exception as exc:  # a provider bug: the trial fails, the run goes on
            error = GatewayError("provider_error", sanitize_text(f"{type(exc).__name__}: {exc}"))
        exchange = self.recorder.exchange(request, completion, error)
        with route.lock:
            # None: the trial ended while this request waited, and close_trial recorded it.
            late = route.pending.pop(index, None) is None
            if not late:
                route.exchanges.append(exchange)
            if completion is not None:
                route.tokens += completion.prompt_tokens + completion.completion_tokens
        with self._lock:
            self.exchange_count += 1
            self.failed_count += error is not None
        timing = {"duration_ms": round((time.perf_counter() - started) * 1000.0, 3)}
        self._emit_exchange(route, index, exchange, **timing, **({"after_trial_end": True} if late else {}))
        if error is not None:
            return error.status, error.body()
        assert completion is not None
        return 200, completion_body(completion, request.digest)

    def _check_budget(self, route: TrialRoute, index: int) -> None:
        """The competition's per-call checks, on the gateway's side of the wire."""
        elapsed = time.monotonic() - route.started
        if elapsed > route.max_seconds:
            raise GatewayError(
                "trial_limit",
                f"trial time limit: {elapsed:.1f} s elapsed before request {index + 1} "
                f"(limit {route.max_seconds:g} s).",
            )
        if route.tokens > route.max_tokens:
            raise GatewayError(
                "trial_limit",
                f"trial token limit: {route.tokens} prompt+completion tokens before request {index + 1} "
                f"(limit {route.max_tokens}).",
            )

    def _emit_exchange(self, route: TrialRoute, index: int, exchange: dict[str, Any], **extra: Any) -> None:
        """The ``gateway.exchange`` event: the recorded exchange with the trial, position and source."""
        self._emit(
            "gateway.exchange",
            {"item_id": route.item_id, "index": index, "source": self.upstream.source, **extra, **exchange},
        )

    def _emit(self, event_type: str, payload: dict[str, Any]) -> None:
        emit = getattr(self.run, "emit", None)
        if callable(emit):
            emit(event_type, payload)


__all__ = ["Gateway"]
