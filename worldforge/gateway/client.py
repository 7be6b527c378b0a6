"""The trial side of the gateway: a standard-library client a prompt program calls for each turn.

:class:`TrialSession` is what :class:`~worldforge.providers.chat.ChatTrial` drives: its
``generate(messages, options)`` posts one chat completion to the trial's route and returns a
:class:`~worldforge.providers.base.GenerationResult` with the usage counts the trial limits read.
Gateway errors come back as the exceptions a direct provider call raises (a provider failure is a
:class:`ProviderError`, a bad request a :class:`WorldForgeError`, an exhausted budget
:class:`TrialLimitExceeded`, a model server's relayed refusal a :class:`ProviderHTTPError` naming
its status), with the gateway's message unchanged, so the item records of a run and of its replay
say the same thing.

One keep-alive connection per thread: the gateway is on loopback and a trial's turns follow one
another, so reconnecting per request would only add latency.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Mapping, Sequence

from worldforge.core.canonical import JSON, JSONObject
from worldforge.core.errors import ProviderError, ProviderHTTPError, WorldForgeError
from worldforge.gateway.records import ExchangeRecord
from worldforge.providers.base import GenerationResult
from worldforge.providers.chat import TrialLimitExceeded, token_count

_RETRYABLE = (
    http.client.RemoteDisconnected,
    ConnectionResetError,
    BrokenPipeError,
    http.client.BadStatusLine,
)


class GatewayClient:
    """JSON over HTTP/1.1 to a gateway on ``127.0.0.1:port``."""

    def __init__(self, port: int) -> None:
        self.port = int(port)
        self._local = threading.local()

    def _connection(self, fresh: bool = False) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None or fresh:
            if conn is not None:
                conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", self.port)
            self._local.conn = conn
        return conn

    def request(
        self, method: str, path: str, body: object = None, token: str | None = None
    ) -> tuple[int, JSON]:
        """One request; a keep-alive connection the server closed is reopened once."""
        payload = None if body is None else json.dumps(body, separators=(",", ":")).encode("ascii")
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        for attempt in (1, 2):
            conn = self._connection(fresh=attempt == 2)
            try:
                conn.request(method, path, body=payload, headers=headers)
                answer = conn.getresponse()
                raw = answer.read()
            except _RETRYABLE:
                if attempt == 2:
                    raise ProviderError("the model gateway closed the connection twice.") from None
                continue
            except OSError as exc:
                raise ProviderError(f"the model gateway is unreachable: {type(exc).__name__}.") from None
            try:
                return answer.status, json.loads(raw) if raw else None
            except ValueError:
                raise ProviderError(
                    f"the model gateway answered HTTP {answer.status} without JSON."
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def raise_for_error(status: int, body: object) -> None:
    """The exception a direct provider call would raise for a gateway error answer.

    The gateway's own errors carry their type as their code; one whose code differs is a model
    server's refusal the gateway relayed (its own type and code), raised as the provider would.
    """
    if status == 200:
        return
    error = body.get("error") if isinstance(body, Mapping) else None
    kind = error.get("type") if isinstance(error, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    text = str(message) if message else f"the model gateway answered HTTP {status}."
    if kind == "trial_limit":
        raise TrialLimitExceeded(text)
    if isinstance(error, Mapping) and error.get("code") != kind:
        raise ProviderHTTPError(f"HTTP {status}: {text}", status, dict(error))
    if kind in ("invalid_request_error", "model_not_found"):
        raise WorldForgeError(text)
    raise ProviderError(text)


class TrialSession:
    """A trial's view of the gateway: ``generate`` for :class:`ChatTrial`, ``chat`` for ``n`` choices."""

    def __init__(
        self, client: GatewayClient, token: str, model: str, exchanges: list[ExchangeRecord]
    ) -> None:
        self.client = client
        self.model = model
        self._token = token
        self._exchanges = exchanges

    @property
    def base_url(self) -> str:
        """The trial's OpenAI base URL (for clients that take a URL rather than a key)."""
        return f"http://127.0.0.1:{self.client.port}/t/{self._token}/v1"

    @property
    def exchanges(self) -> list[ExchangeRecord]:
        """The exchanges recorded for this trial so far, in order."""
        return list(self._exchanges)

    def chat(self, messages: Sequence[Mapping[str, str]], n: int = 1) -> JSONObject:
        """One chat completion (the OpenAI response object, as read from the wire); errors raise as
        described above."""
        body = {"model": self.model, "messages": [dict(m) for m in messages], "n": n}
        status, answer = self.client.request("POST", f"/t/{self._token}/v1/chat/completions", body)
        raise_for_error(status, answer)
        if not isinstance(answer, dict):
            raise ProviderError("the model gateway answered without a completion.")
        return answer

    def generate(
        self, messages: list[dict[str, str]], options: Mapping[str, object] | None = None
    ) -> GenerationResult:
        """The first choice's text plus usage counts; ``options`` are the gateway's to apply."""
        answer = self.chat(messages)
        choices = answer.get("choices")
        choice = _object(choices[0]) if isinstance(choices, list) and choices else {}
        usage = _object(answer.get("usage"))
        metadata: JSONObject = {
            "prompt_tokens": token_count(usage.get("prompt_tokens")),
            "completion_tokens": token_count(usage.get("completion_tokens")),
            "model": str(answer.get("model") or self.model),
            "finish_reason": choice.get("finish_reason"),
        }
        text = _object(choice.get("message")).get("content")
        return GenerationResult(provider=self.model, text=str(text or ""), metadata=metadata)


def _object(value: JSON) -> JSONObject:
    """A part of an answer that should be a JSON object (an empty one when it is missing)."""
    return value if isinstance(value, dict) else {}


__all__ = ["GatewayClient", "TrialSession", "raise_for_error"]
