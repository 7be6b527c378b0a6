"""``openai:<model>``: chat generation through any OpenAI-compatible server with the official client.

The 2025 competition reached its three Ollama models through Ollama's OpenAI-compatible endpoint
(``http://localhost:11434/v1`` with a dummy key), and llama.cpp, vLLM and hosted APIs speak the
same protocol, so one provider covers them all. Calls carry the competition's settings: temperature
1 by default, ``n`` (default 1) and a per-trial ``seed`` derived from the master seed.

Where the server is: ``--openai-base-url`` (suite option ``openai_base_url``), else
``OPENAI_BASE_URL``, else ``openai.base_url`` in ``.worldforge/config.yaml``, else OpenAI's API.
The key comes from ``OPENAI_API_KEY`` or ``openai.api_key`` in the config; local servers need none,
so a placeholder is sent. The key lives only inside the client object: it is never part of
settings, manifests, metadata, events or error messages (messages are scrubbed of it, and a 401
body, which may echo part of the key, is never quoted).

Attempts are this provider's, not the client's (``max_retries=0``): connection errors, timeouts,
HTTP 429 and 5xx are retried with exponential backoff, waiting at least what ``Retry-After`` asks
(capped), and every attempt emits a ``retry`` / ``success`` / ``failure`` event. Other 4xx answers
are not retried. When retries are spent the call raises :class:`ProviderError`, which the suite
records as a failed trial; for an HTTP error answer a :class:`ProviderHTTPError` carrying the
status, the server's error body (the key removed) and its ``Retry-After``, so that the model
gateway can answer a program as the server did (a 400 for an over-long prompt stays a 400).

Usage counts are required: the competition's 25,000-token trial limit is enforced by
:class:`~worldforge.providers.chat.ChatTrial` from ``usage.prompt_tokens`` /
``usage.completion_tokens``, so a reply without them is a :class:`ProviderError` (a recorded
per-trial failure), and the preflight refuses a server whose probe reply carries none.

Settings, the server pool, retries, preflight and events are the pooled chat base's
(:mod:`worldforge.providers.pooled`); this module holds only the OpenAI wire: the client, its
errors, ``Retry-After``, the key scrubbing and the shape of a completion. The ``openai`` module is
imported lazily so ``import worldforge`` stays cheap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from worldforge import heavy
from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_payload
from worldforge.core.errors import ProviderError, ProviderHTTPError, WorldForgeError
from worldforge.providers.base import GenerationResult, ProviderFamily
from worldforge.providers.openai_settings import (
    OPENAI_API_URL,
    PLACEHOLDER_API_KEY,
    OpenAISettings,
    check_base_url,
    guess_server_kind,
    resolve_api_key,
    resolve_base_url,
    retry_after_s,
)
from worldforge.providers.pooled import PooledChatProvider, client_version, wire_messages

_PROBE_PROMPT = "Reply with OK."
#: The largest completion cap (``options["max_tokens"]``) sent on the wire as ``max_tokens``. A larger
#: one is left out: OpenAI refuses ``max_tokens`` above a model's output limit (4,096 for the
#: competition's ``gpt-3.5-turbo-0125``) and vLLM refuses a prompt plus ``max_tokens`` beyond the
#: context, so sending a generous cap could fail requests that would have completed, while a reply
#: longer than this is already bounded by the server's own limit.
MAX_TOKENS_SENT = 4096


@dataclass
class ChatReply:
    """What one chat call returned: the choices' texts plus the server's usage counts."""

    texts: list[str]
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    model: str
    attempts: int


def _status(exc: BaseException) -> int | None:
    openai = heavy.openai()

    return int(exc.status_code) if isinstance(exc, openai.APIStatusError) else None


def _is_retryable(exc: BaseException) -> bool:
    openai = heavy.openai()

    status = _status(exc)
    if status is not None:
        return status == 429 or status >= 500
    return isinstance(exc, openai.APIConnectionError | TimeoutError | ConnectionError)


def _body_message(body: object) -> str:
    if isinstance(body, Mapping):
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                return value
            if isinstance(value, Mapping):
                return _body_message(value)
        return ""
    return body if isinstance(body, str) else ""


class OpenAICompatProvider(PooledChatProvider[OpenAISettings]):
    """The ``generate`` capability backed by an OpenAI-compatible server (``openai:<model>``)."""

    family = "openai"
    #: ``n`` choices come from one request (the model gateway splits a completion cap across them).
    native_choices = True

    @classmethod
    def from_spec(cls, model: str, options: Mapping[str, Any] | None = None) -> OpenAICompatProvider:
        """Factory for the registry: ``openai:<model>`` → ``from_spec("<model>", run options)``."""
        return cls(OpenAISettings.from_options(model, options))

    # -- the wire ---------------------------------------------------------------------------------
    def _new_client(self, url: str) -> Any:
        """Attempts are the pooled base's, not the client's (``max_retries=0``)."""
        return heavy.openai().OpenAI(
            base_url=url,
            api_key=resolve_api_key(url),
            timeout=float(self.settings.request_timeout_s),
            max_retries=0,
        )

    def _retryable(self, exc: BaseException) -> bool:
        return _is_retryable(exc)

    def _attempt_meta(self, exc: BaseException) -> JSONObject:
        status = _status(exc)
        return {"status": status} if status is not None else {}

    def _keyless(self, value: Any) -> Any:
        """``value`` with the API key replaced in every string (a server may echo request headers
        in errors, and an error body is relayed to the program that made the request)."""
        if isinstance(value, str):
            for client in self._clients.values():
                key = getattr(client, "api_key", None)
                if isinstance(key, str) and len(key) >= 4 and key != PLACEHOLDER_API_KEY:
                    value = value.replace(key, "***")
            return value
        if isinstance(value, Mapping):
            return {str(k): self._keyless(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._keyless(v) for v in value]
        return value

    def _scrub(self, text: str) -> str:
        """One line, bounded, and never the key (a server may echo request headers in errors)."""
        line = " ".join(str(self._keyless(text)).split())
        return line if len(line) <= 300 else line[:297] + "..."

    def _failure(self, attempts: int, exc: BaseException) -> ProviderError:
        """The error a call raises once its attempts are spent: for an HTTP error answer, one that
        carries the status, the error body (never a 401's, which may quote the key) and the
        ``Retry-After`` the server sent with it."""
        message = f"{self.name}: generate failed after {attempts} attempt(s): {self._describe(exc)}"
        status = _status(exc)
        if status is None:
            return ProviderError(message)
        headers = getattr(getattr(exc, "response", None), "headers", None)
        retry_after = headers.get("retry-after") if headers is not None else None
        body = None if status == 401 else self._keyless(getattr(exc, "body", None))
        return ProviderHTTPError(message, status, body, str(retry_after) if retry_after else None)

    def _describe(self, exc: BaseException) -> str:
        openai = heavy.openai()

        status = _status(exc)
        if status == 401:
            return "HTTP 401: the server rejected the API key (check OPENAI_API_KEY)"
        if status is not None:
            assert isinstance(exc, openai.APIStatusError)
            return self._scrub(f"HTTP {status}: {_body_message(exc.body) or exc.message}")
        if isinstance(exc, json.JSONDecodeError):
            return (
                f"malformed reply from {self.settings.base_url}: invalid JSON ({exc.msg} at char {exc.pos})"
            )
        if isinstance(exc, openai.APITimeoutError):
            return f"request timed out after {float(self.settings.request_timeout_s):g} s"
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__
            detail = f": {type(cause).__name__}: {cause}" if cause is not None and str(cause) else ""
            return self._scrub(f"connection to {self.settings.base_url} failed{detail}")
        name = type(exc).__name__
        text = str(exc) or name
        return self._scrub(text if text.startswith(name) else f"{name}: {text}")

    def _delay(self, attempt: int, exc: BaseException) -> float:
        """Exponential backoff, at least what the server's ``Retry-After`` asks (capped)."""
        delay = float(self.settings.backoff_s) * (2 ** (attempt - 1))
        response = getattr(exc, "response", None)
        asked = retry_after_s(getattr(response, "headers", None))
        if asked is not None:
            delay = max(delay, min(asked, float(self.settings.max_retry_after_s)))
        return delay

    # -- runtime manifest -----------------------------------------------------------------------
    def _preflight_retryable(self, exc: BaseException) -> bool:
        """Retried like a generation call, except that a refused connection fails at once
        (nothing is listening)."""
        openai = heavy.openai()

        refused = isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError)
        return not refused and _is_retryable(exc)

    def _preflight_error(self, exc: BaseException, what: str) -> Exception:
        """A preflight failure as one clear error: usage errors exit 2, an unreachable server 1."""
        url, model = self.settings.base_url, self.settings.model
        status = _status(exc)
        if status == 401:
            return WorldForgeError(
                f"{url} rejected the API key (HTTP 401); set OPENAI_API_KEY to a key this server accepts."
            )
        if status == 404:
            hint = "" if urlsplit(url).path.rstrip("/").endswith("/v1") else " (does the URL need /v1?)"
            return WorldForgeError(
                f"model {model!r} is not available on {url}{hint}: {what} answered {self._describe(exc)}."
            )
        if status is not None and status < 500 and status != 429:
            return WorldForgeError(f"{url}: {what} failed: {self._describe(exc)}.")
        if _is_retryable(exc):
            return ProviderError(
                f"OpenAI-compatible server {url} unreachable: {self._describe(exc)}; start it or "
                "pass --openai-base-url."
            )
        return ProviderError(f"{url}: {what} failed: {self._describe(exc)}")

    def _fetch_manifest(self) -> JSONObject:
        """The served model and server kind from ``/models`` and a one-token probe.

        The probe shows what the server will answer for this model name (``response.model``) and
        that it reports usage counts; a wrong model name, a rejected key or a server without usage
        counts is a :class:`WorldForgeError` and an unreachable server a :class:`ProviderError`, so
        a run fails before its first item instead of recording hundreds of identical failures.
        """
        openai = heavy.openai()

        model = self.settings.model
        client = self.client
        entries: list[Any] = []
        headers: Mapping[str, str] = {}
        try:
            raw = self._preflight(client.models.with_raw_response.list)
            headers = raw.headers
            entries = list(getattr(raw.parse(), "data", None) or [])
        except openai.NotFoundError:
            entries = []  # a server without /models: the probe below still checks the model
        except Exception as exc:
            raise self._preflight_error(exc, "GET /models") from None
        ids = [str(getattr(e, "id", "")) for e in entries]
        entry = next((e for e in entries if getattr(e, "id", None) in (model, f"{model}:latest")), None)
        if entries and entry is None:
            served = ", ".join(sorted(ids)[:10])
            raise WorldForgeError(
                f"model {model!r} is not served by {self.settings.base_url} (it serves: {served})."
            )
        try:
            probe = self._preflight(
                lambda: client.chat.completions.with_raw_response.create(
                    model=model,
                    messages=[{"role": "user", "content": _PROBE_PROMPT}],
                    max_tokens=1,
                    temperature=0,
                    n=1,
                )
            )
            completion = probe.parse()
        except Exception as exc:
            raise self._preflight_error(exc, "a one-token chat completion") from None
        usage = getattr(completion, "usage", None)
        if getattr(usage, "prompt_tokens", None) is None or getattr(usage, "completion_tokens", None) is None:
            raise WorldForgeError(
                f"{self.settings.base_url} reports no usage counts for {model!r}; the 25,000-token "
                "trial limit cannot be enforced without them."
            )
        owned_by = getattr(entry, "owned_by", None) if entry is not None else None
        return {
            "provider": self.name,
            "kind": "openai-compatible",
            "model": model,
            "served_model": str(getattr(completion, "model", None) or model),
            "owned_by": owned_by,
            "settings": self.settings.identity(),
            "base_url": self.settings.base_url,
            "server": {
                "kind": guess_server_kind(owned_by, {**dict(headers), **dict(probe.headers)}, self.settings),
                "software": probe.headers.get("server") or headers.get("server"),
                "system_fingerprint": getattr(completion, "system_fingerprint", None),
            },
            "client": f"openai-python {client_version('openai')}",
        }

    # -- generation -----------------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        seed: int | None = None,
        n: int = 1,
        max_tokens: int | None = None,
    ) -> ChatReply:
        """One chat completion with retries; returns the choices' texts and the usage counts.

        ``max_tokens`` (per choice) is sent only when given, so uncapped requests stay as they were.
        """
        payload = wire_messages(messages)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise WorldForgeError(f"openai n: expected a positive integer, got {n!r}.")
        params: JSONObject = {"temperature": float(self.settings.temperature), "n": n}
        if seed is not None:
            params["seed"] = int(seed)
        if max_tokens is not None:
            params["max_tokens"] = int(max_tokens)
        digest = digest_payload({"model": self.settings.model, "messages": payload, "params": params})
        for url in self.pool.urls:
            self.client_for(url)  # a missing key is a usage error, not a failed attempt

        def request(client: Any) -> Any:
            return client.chat.completions.create(model=self.settings.model, messages=payload, **params)

        def accept(response: Any, attempt: int) -> tuple[ChatReply, JSONObject]:
            reply = self._reply(response, attempt)
            return reply, {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens}

        return self._send(digest, request, accept)

    def _reply(self, response: Any, attempt: int) -> ChatReply:
        """Validate a completion: choices with text content and usage counts, else a one-line error."""
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ProviderError(f"{self.name}: malformed reply from {self.settings.base_url}: no choices.")
        texts: list[str] = []
        for choice in choices:
            content = getattr(getattr(choice, "message", None), "content", None)
            if not isinstance(content, str):
                reason = getattr(choice, "finish_reason", None)
                raise ProviderError(
                    f"{self.name}: malformed reply from {self.settings.base_url}: a choice has no "
                    f"message content (finish_reason={reason})."
                )
            texts.append(content)
        usage = getattr(response, "usage", None)
        prompt = getattr(usage, "prompt_tokens", None)
        completion = getattr(usage, "completion_tokens", None)
        if not isinstance(prompt, int) or not isinstance(completion, int):
            raise ProviderError(
                f"{self.name}: the reply carries no usage counts (usage.prompt_tokens/completion_tokens), "
                "so the 25,000-token trial limit cannot be enforced."
            )
        return ChatReply(
            texts=texts,
            prompt_tokens=prompt,
            completion_tokens=completion,
            finish_reason=getattr(choices[0], "finish_reason", None),
            model=str(getattr(response, "model", None) or self.settings.model),
            attempts=attempt,
        )

    def generate(
        self, messages: list[dict[str, str]], *, options: Mapping[str, Any] | None = None
    ) -> GenerationResult:
        """The provider-protocol entry point: the first choice's text and the usage counts.

        ``options`` may carry ``trial_seed`` (sent as ``seed``), ``seed``, ``n`` and ``max_tokens``
        (a per-choice completion cap, sent when it is at most :data:`MAX_TOKENS_SENT`).
        """
        opts = dict(options or {})
        seed = opts.get("trial_seed", opts.get("seed"))
        cap = opts.get("max_tokens")
        reply = self.chat(
            messages,
            seed=None if seed is None else int(seed),
            n=opts.get("n") or 1,
            max_tokens=int(cap) if cap is not None and int(cap) <= MAX_TOKENS_SENT else None,
        )
        metadata: JSONObject = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "finish_reason": reply.finish_reason,
            "attempts": reply.attempts,
            "model": reply.model,
        }
        if len(reply.texts) > 1:
            metadata["choices"] = list(reply.texts)
        return GenerationResult(provider=self.name, text=reply.texts[0], metadata=metadata)


def create_provider(model: str, options: Mapping[str, Any] | None = None) -> OpenAICompatProvider:
    """Registry factory: the suffix of ``openai:<model>`` and the run's options
    (``openai_base_url``, ``openai_*`` keys; the URL falls back to ``OPENAI_BASE_URL``, then the
    config)."""
    return OpenAICompatProvider.from_spec(model, options)


#: What the registry builds for ``openai:<model>`` (``worldforge.providers`` entry point).
FAMILY = ProviderFamily(
    OpenAICompatProvider,
    create_provider,
    "Any OpenAI-compatible chat server (Ollama /v1, llama.cpp, vLLM, OpenAI); openai:<model>.",
    argument="required",
    example="openai:qwen2.5:32b-instruct-fp16",
)


__all__ = [
    "FAMILY",
    "MAX_TOKENS_SENT",
    "OPENAI_API_URL",
    "PLACEHOLDER_API_KEY",
    "ChatReply",
    "OpenAICompatProvider",
    "OpenAISettings",
    "check_base_url",
    "create_provider",
    "guess_server_kind",
    "resolve_base_url",
]
