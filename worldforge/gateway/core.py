"""The recording gateway: every model request of a run goes through it, and every exchange is kept.

A run starts one :class:`Gateway` (a loopback OpenAI-compatible endpoint), opens a route per
trial, and lets the trial's prompt program talk to ``/t/<token>/v1`` (or to ``/v1`` with the token
as bearer key). For each request the gateway

1. resolves the trial from its token (an unknown token is refused: other local processes cannot
   spend a run's budget), checks the model and the request;
2. applies the run's policy: the trial's seed and the provider's configured temperature are what
   is forwarded (a program's own ``seed``/``temperature`` is recorded, never used), and the trial's
   time budget is checked when the request arrives, as the competition packages check it;
3. bounds what the request may spend (its *allowance*, see "Token budget" below) and asks its
   upstream, the trial's provider or a recorded run (``--replay``);
4. records the exchange (see :mod:`worldforge.gateway.exchange`) in the trial's list, which the
   item record carries, and as a ``gateway.exchange`` event with its timing. A request still
   unanswered when its trial ends is recorded too, as a ``trial_ended`` error (see
   :meth:`Gateway.close_trial`).
5. answers the program: the completion, or an OpenAI-shaped error. A model server's refusal
   (an over-long prompt, an unknown model, a rate limit once the provider's retries are spent) is
   answered with the server's status and error body, ``Retry-After`` included, as the server would
   have answered the program (:func:`~worldforge.gateway.exchange.relayed_error`); a 502 is only
   ever the gateway's own failure.

Token budget. The competition packages count ``usage.prompt_tokens + usage.completion_tokens``
after each call and fail the trial once the total passes 25,000; they never stop a call from
spending, so one request (``n=128``) could spend any amount before that check. The gateway keeps
the same count (:attr:`TrialRoute.tokens`, :attr:`TrialRoute.over_budget`) and also bounds each
request: its allowance is what is left of the budget (``max_tokens - tokens``), forwarded as a
completion cap (how ``n`` > 1 choices share it: :mod:`worldforge.gateway.upstream`). A trial
already past its budget is refused (``trial_limit``), as before; one exactly at it gets an
allowance of one token (the package makes that call and fails the trial after it, whatever it
costs, so the cheapest answer changes nothing). A request that would have stayed within the budget
is answered exactly as without a cap (``n`` > 1 choices made by one server request: see
:mod:`~worldforge.gateway.upstream` for the one exception); a cap only cuts answers that take the
trial past its budget, which fails it anyway, and one request spends at most its allowance plus
the prompt of the call that crosses it.

Run token limit (``max_run_tokens``, ``eval --max-run-tokens``). The same count, summed over every
answer this gateway forwards (:attr:`Gateway.run_tokens`), with the allowances of the requests in
flight held against it. A request's allowance is also cut to what is left of the run's limit; when
nothing is left the request is refused (``run_limit``) and every later one too. A trial refused
that way, whose answer such a cut shortened, or whose answer took the count past the limit (a
prompt is only counted once answered) is *stopped* (:attr:`Gateway.stopped_items`): its item is not
recorded, so ``runs resume`` runs it again, and :attr:`Gateway.stopped` says why generation
stopped. The recorded items therefore never hold more than the limit; the gateway's own count
passes it by at most the prompts of the calls that cross it, as a trial's does.

A trial's requests in flight hold their allowances, so two concurrent requests cannot each spend
the whole remainder. A request that arrives while another of its trial is upstream goes at once
when what is not held covers its own ``max_tokens`` (times ``n``); otherwise it waits for the
trial's requests in flight to be answered and then gets the whole remainder, so the cap it gets is
the one it would have got had the program sent it after them (the answers stay the same; only the
time changes). The forwarded cap is reported in the ``gateway.exchange`` event, never in the record.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.errors import ProviderError, ProviderHTTPError, WorldForgeError
from worldforge.core.redact import sanitize_text
from worldforge.core.run_events import EventRecorder, GatewayExchange
from worldforge.forge import WorldForge
from worldforge.gateway.client import GatewayClient, TrialSession
from worldforge.gateway.exchange import (
    Completion,
    GatewayError,
    Recorder,
    Request,
    completion_body,
    parse_request,
    relayed_error,
    served_digest,
)
from worldforge.gateway.records import ExchangeRecord, GatewayAnswer, ModelList
from worldforge.gateway.replay import ReplaySource, ReplayUpstream
from worldforge.gateway.server import MAX_REQUEST_BYTES, LoopbackServer
from worldforge.gateway.upstream import ProviderUpstream, TrialRoute, Upstream
from worldforge.providers.chat import TRIAL_TIME_LIMIT_S, TRIAL_TOKEN_LIMIT

#: How often a request waiting for its trial's budget looks again (it is also woken on each answer).
_WAIT_POLL_S = 0.5


class Gateway:
    """A loopback OpenAI-compatible endpoint in front of a forge's providers (or a recorded run).

    Use as a context manager (``with Gateway(forge, models=[...], run=run) as gateway:``); open one
    route per trial with :meth:`trial`.
    """

    def __init__(
        self,
        forge: WorldForge | None = None,
        *,
        models: Sequence[str] = (),
        run: EventRecorder | None = None,
        replay: ReplaySource | None = None,
        max_run_tokens: int | None = None,
    ) -> None:
        if max_run_tokens is not None and (isinstance(max_run_tokens, bool) or int(max_run_tokens) < 1):
            raise WorldForgeError(f"--max-run-tokens: expected a positive integer, got {max_run_tokens!r}.")
        self.recorder = Recorder()
        self.upstream: Upstream
        if replay is not None:
            self.upstream = ReplayUpstream(replay, self.recorder)
        elif forge is not None:
            self.upstream = ProviderUpstream(forge)
        else:
            raise WorldForgeError("the model gateway needs a forge to forward to or a run to replay.")
        self.replay = replay
        self.models = list(models)
        self.run = run
        self.exchange_count = 0
        self.failed_count = 0
        #: Wall-seconds of each item's requests, by item id (the clock: for the event log only).
        self.item_seconds: dict[str, float] = {}
        #: The run's token limit for this gateway's requests (``None``: none), what its answers
        #: counted, and what the requests in flight hold.
        self.max_run_tokens = None if max_run_tokens is None else int(max_run_tokens)
        self.run_tokens = 0
        self._run_held = 0
        #: Why generation stopped (the run's token limit), ``None`` while it goes on.
        self.stopped: str | None = None
        #: Trials a run-limit refusal or cut reached: their items are left unrecorded.
        self.stopped_items: set[str] = set()
        self._routes: dict[str, TrialRoute] = {}
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None
        self._client: GatewayClient | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> Gateway:
        if self._server is None:
            self._server = LoopbackServer(self.dispatch, self._refused)
            self._client = GatewayClient(self._server.port)
            self._emit(
                "gateway.started",
                {
                    "models": list(self.models),
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
        options: Mapping[str, object] | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        max_tokens: int = TRIAL_TOKEN_LIMIT,
        max_seconds: float = TRIAL_TIME_LIMIT_S,
        aliases: Sequence[str] = (),
    ) -> TrialRoute:
        """Register a trial; its token authorizes requests until :meth:`close_trial`."""
        if int(max_tokens) < 1:
            raise WorldForgeError(f"trial token budget: expected a positive integer, got {max_tokens!r}.")
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

    def close_trial(self, route: TrialRoute) -> list[ExchangeRecord]:
        """Retire the trial's token and return its recorded exchanges.

        A request still waiting for its upstream (the trial was killed at its time limit while the
        model was answering) is recorded as a ``trial_ended`` exchange: the evidence shows what the
        trial was waiting for, and the reply that arrives later is left out of the trial's record.
        """
        with self._lock:
            self._routes.pop(route.token, None)
        with route.lock:
            route.closed = True
            route.settled.notify_all()
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
        *,
        options: Mapping[str, object] | None = None,
        seed: int | None = None,
        temperature: float | None = None,
        max_tokens: int = TRIAL_TOKEN_LIMIT,
        max_seconds: float = TRIAL_TIME_LIMIT_S,
        aliases: Sequence[str] = (),
    ) -> Iterator[TrialSession]:
        """A route for one trial and a client session bound to it (see :meth:`open_trial`)."""
        if self._client is None:
            raise WorldForgeError("the model gateway is not running.")
        route = self.open_trial(
            item_id,
            model,
            options=options,
            seed=seed,
            temperature=temperature,
            max_tokens=max_tokens,
            max_seconds=max_seconds,
            aliases=aliases,
        )
        try:
            yield TrialSession(self._client, route.token, model, route.exchanges)
        finally:
            self.close_trial(route)

    # -- HTTP dispatch ----------------------------------------------------------------------------
    def dispatch(
        self, method: str, path: str, token: str | None, body: object
    ) -> tuple[int, GatewayAnswer, dict[str, str]]:
        """Answer one HTTP request (called on the server's threads): status, body, extra headers."""
        with self._lock:
            route = self._routes.get(token) if token else None
        if path == "/v1/models" and method == "GET":
            names = [route.model] if route is not None else self.models
            models: ModelList = {
                "object": "list",
                "data": [
                    {"id": n, "object": "model", "created": 0, "owned_by": "worldforge-gateway"}
                    for n in names
                ],
            }
            return 200, models, {}
        if path != "/v1/chat/completions" or method != "POST":
            return 404, GatewayError("model_not_found", f"unknown route {method} {path}").body(), {}
        if route is None:
            error = GatewayError(
                "authentication_error", "unknown trial: use the trial's route or its token as the API key."
            )
            return error.status, error.body(), {}
        return self.chat(route, body)

    def chat(self, route: TrialRoute, body: object) -> tuple[int, GatewayAnswer, dict[str, str]]:
        """One chat completion for ``route``: validate, apply the policy, answer, record."""
        started = time.perf_counter()
        try:
            request = parse_request(body, route.model, route.seed, route.temperature, route.aliases)
        except GatewayError as exc:
            self._emit(
                "gateway.rejected",
                {"item_id": route.item_id, "error": exc.kind, "message": sanitize_text(exc.message)},
            )
            return exc.status, exc.body(), {}
        with route.lock:
            index = route.next_index
            route.next_index += 1
            route.pending[index] = request
        completion: Completion | None = None
        error: GatewayError | None = None
        cut = False
        try:
            self._check_time(route, index)
            cut = self._reserve(route, request, index)
            completion = self.upstream.complete(route, request, index)
        except GatewayError as exc:
            error = exc
        except ProviderHTTPError as exc:  # the server refused: relayed as it answered, else a 502
            error = relayed_error(exc) or GatewayError("provider_error", sanitize_text(str(exc)))
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
            if request.allowance is not None:
                route.reserved -= request.allowance
            if completion is not None:
                if not late:
                    route.served.update(served_digest(text) for text in completion.texts)
                route.tokens += completion.prompt_tokens + completion.completion_tokens
                if route.exceeded_at is None and route.over_budget:
                    route.exceeded_at = route.tokens
            route.settled.notify_all()
        with self._lock:
            self.exchange_count += 1
            self.failed_count += error is not None
            if self.max_run_tokens is not None and request.allowance is not None:
                self._run_held -= request.allowance
            if completion is not None:
                self.run_tokens += completion.prompt_tokens + completion.completion_tokens
                over = self.max_run_tokens is not None and self.run_tokens > self.max_run_tokens
                if over or (cut and (completion.capped or completion.not_asked)):
                    # It took the run past its limit, or the limit shortened it (not the model's
                    # whole answer): either way the trial is redone when the run resumes.
                    self._stop(route.item_id)
            seconds = time.perf_counter() - started
            self.item_seconds[route.item_id] = self.item_seconds.get(route.item_id, 0.0) + seconds
        extra: JSONObject = {"duration_ms": round(seconds * 1000.0, 3)}
        if request.allowance is not None:
            extra["budget"] = {
                "allowance": request.allowance,
                "max_tokens": request.max_tokens,
                "capped": bool(completion is not None and completion.capped),
                "not_asked": completion.not_asked if completion is not None else 0,
            }
        if late:
            extra["after_trial_end"] = True
        if error is not None and error.retry_after is not None:
            extra["retry_after"] = error.retry_after
        self._emit_exchange(route, index, exchange, **extra)
        if error is not None:
            return error.status, error.body(), error.headers()
        assert completion is not None
        return 200, completion_body(completion, request.digest), {}

    def _check_time(self, route: TrialRoute, index: int) -> None:
        """The competition's per-call time check, on the gateway's side of the wire."""
        elapsed = time.monotonic() - route.started
        if elapsed > route.max_seconds:
            raise GatewayError(
                "trial_limit",
                f"trial time limit: {elapsed:.1f} s elapsed before request {index + 1} "
                f"(limit {route.max_seconds:g} s).",
            )

    def _reserve(self, route: TrialRoute, request: Request, index: int) -> bool:
        """Set and hold the request's allowance (see "Token budget"), waiting if it must; whether
        the run's token limit cut it (see "Run token limit").

        Refused (``trial_limit``) when the trial is past its budget once its other requests are
        answered; given up (``trial_ended``) when the trial closes while it waits; refused
        (``run_limit``) when the run's limit is spent.
        """
        demand = None if request.max_tokens is None else request.max_tokens * request.n
        with route.lock:
            while True:
                if route.closed:
                    raise GatewayError(
                        "trial_ended",
                        f"the trial ended before the answer to request {index + 1} arrived.",
                    )
                free = route.max_tokens - route.tokens - route.reserved
                if route.reserved == 0 or (demand is not None and free >= demand):
                    break
                route.settled.wait(_WAIT_POLL_S)
            if route.over_budget:
                raise GatewayError(
                    "trial_limit",
                    f"trial token limit: {route.tokens} prompt+completion tokens before request "
                    f"{index + 1} (limit {route.max_tokens}).",
                )
            # Exactly at the budget the package still makes the call (and fails the trial after
            # it, whatever it costs): the smallest allowance lets it, at the least cost.
            free = max(free, 1)
            wanted = free if demand is None else min(free, demand)
            allowance, cut = self._hold_run(route.item_id, wanted, index)
            request.allowance = allowance
            route.reserved += allowance
            return cut

    def _hold_run(self, item_id: str, allowance: int, index: int) -> tuple[int, bool]:
        """The allowance cut to what is left of the run's limit and held against it, and whether it
        was cut; ``run_limit`` when nothing is left (or generation already stopped)."""
        if self.max_run_tokens is None:
            return allowance, False
        with self._lock:
            left = self.max_run_tokens - self.run_tokens - self._run_held
            if self.stopped is not None or left < 1:
                self._stop(item_id)
                raise GatewayError(
                    "run_limit",
                    f"run token limit: {self.run_tokens} prompt+completion tokens counted before "
                    f"request {index + 1} of {item_id} (limit {self.max_run_tokens}).",
                )
            held = min(allowance, left)
            self._run_held += held
            return held, held < allowance

    def _stop(self, item_id: str) -> None:
        """Record that generation stopped at ``item_id`` (the caller holds ``_lock``)."""
        self.stopped_items.add(item_id)
        if self.stopped is None:
            self.stopped = (
                f"the run's token limit ({self.max_run_tokens} prompt+completion tokens, "
                f"--max-run-tokens) was reached after {self.run_tokens} tokens; the items done are "
                "kept and `worldforge runs resume` runs the rest."
            )
            self._emit(
                "gateway.run_limit", {"max_run_tokens": self.max_run_tokens, "tokens": self.run_tokens}
            )

    def _refused(self, token: str | None, path: str, status: int, length: int | None) -> None:
        """A request the server refused before reading its body (too large, or of no stated length).

        Logged as ``gateway.rejected`` with the trial it named (the token itself is never logged)
        and the size it declared; the body was never read, so nothing of it is kept.
        """
        with self._lock:
            route = self._routes.get(token) if token else None
        self._emit(
            "gateway.rejected",
            {
                "item_id": route.item_id if route is not None else None,
                "error": "request_too_large" if status == 413 else "invalid_request_error",
                "status": status,
                "path": sanitize_text(path)[:200],
                "declared_bytes": length,
                "limit_bytes": MAX_REQUEST_BYTES,
            },
        )

    def _emit_exchange(self, route: TrialRoute, index: int, exchange: ExchangeRecord, **extra: JSON) -> None:
        """The ``gateway.exchange`` event: the recorded exchange with the trial, position and source."""
        if self.run is not None:
            event = GatewayExchange.of(route.item_id, index, self.upstream.source, exchange, **extra)
            self.run.emit(event.TYPE, event.to_dict())

    def _emit(self, event_type: str, payload: JSONObject) -> None:
        if self.run is not None:
            self.run.emit(event_type, payload)


__all__ = ["Gateway"]
