"""``ollama:<model>``: chat generation through a local Ollama server with the official client.

The competition's 2025 edition generated every level with three open models served by Ollama, so
this provider is how a user reproduces that setting. It speaks the chat API with multi-turn message
lists and applies the competition's settings: temperature 1 by default and a seed per trial derived
from a master seed (see :func:`worldforge.core.seeds.trial_seed`). Context size and request timeout
are options.

Robustness is the point: a long evaluation makes thousands of calls, so connection errors, timeouts
and HTTP 5xx answers are retried with exponential backoff and, when the retries are spent, surface
as :class:`~worldforge.core.errors.ProviderError` -- the suite records that as a failed trial and
moves on. Client errors (4xx, for example an unknown model) are not retried; an HTTP error answer
raises :class:`~worldforge.core.errors.ProviderHTTPError` with its status and message, so the model
gateway can answer a program with the server's own status. Each attempt emits a
:class:`~worldforge.providers.events.ProviderEvent` (``retry`` / ``success`` / ``failure``).

Settings, the server pool, retries, preflight and events are the pooled chat base's
(:mod:`worldforge.providers.pooled`); this module holds only what is Ollama's: its settings, its
client and errors, and the shape of its replies. The per-trial limits of the competition are
enforced by :class:`~worldforge.providers.chat.ChatTrial` from the ``prompt_eval_count`` /
``eval_count`` this provider returns.

The ``ollama`` and ``httpx`` modules are imported lazily so ``import worldforge`` stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from worldforge import heavy
from worldforge.config import project_config
from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_payload
from worldforge.core.errors import ProviderError, ProviderHTTPError, WorldForgeError
from worldforge.providers.base import GenerationResult, ProviderFamily, prefixed_options
from worldforge.providers.chat import TRIAL_TIME_LIMIT_S, TRIAL_TOKEN_LIMIT
from worldforge.providers.pooled import PooledChatProvider, client_version, wire_messages
from worldforge.providers.server_pool import DEFAULT_MAX_CONNECTIONS

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_TEMPERATURE = 1.0
DEFAULT_REQUEST_TIMEOUT_S = 120.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_S = 1.0

_SETTING_KEYS = (
    "host",
    "max_connections",
    "temperature",
    "num_ctx",
    "request_timeout_s",
    "retries",
    "backoff_s",
    "max_tokens_per_trial",
    "max_trial_seconds",
)


def resolve_host(explicit: str | None = None) -> str:
    """Host precedence: explicit option (``--ollama-host``), ``OLLAMA_HOST``, config, default."""
    if explicit:
        return explicit
    env = os.environ.get("OLLAMA_HOST")
    if env:
        return env
    configured = _config_host()
    return configured or DEFAULT_HOST


def _config_host() -> str | None:
    """``ollama.host`` from ``.worldforge/config.yaml`` when the file exists."""
    config = project_config()
    return str(config.ollama.host) if config is not None and config.ollama.host else None


def _check_host(host: str) -> None:
    """Reject a host that is not an http(s) server address before anything is sent.

    Accepts what the ollama client accepts (``http://h:p``, ``https://h/prefix``, ``h:p``, ``h``);
    a bad scheme, a port that is not a number in 1-65535, a query, a fragment or whitespace is a
    usage error naming the value, instead of an "unreachable" failure after the run has started.
    """
    from urllib.parse import urlsplit

    text = str(host).strip()
    candidate = text if "://" in text else f"http://{text}"
    try:
        parts = urlsplit(candidate)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or not text
        or any(ch.isspace() for ch in text)
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or (port is not None and not 1 <= port <= 65535)
    ):
        raise WorldForgeError(
            f"--ollama-host: {host!r} is not a server address "
            f"(expected http://HOST:PORT, e.g. {DEFAULT_HOST})."
        )


@dataclass(frozen=True)
class OllamaSettings:
    """Everything that shapes a call; validated once so a bad flag fails before the run starts."""

    model: str
    host: str = DEFAULT_HOST
    temperature: float = DEFAULT_TEMPERATURE
    num_ctx: int | None = None
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    max_tokens_per_trial: int = TRIAL_TOKEN_LIMIT
    max_trial_seconds: float = TRIAL_TIME_LIMIT_S
    #: Further servers of the same model (``--ollama-host`` given several times): requests are
    #: balanced over ``host`` and these, ``max_connections`` at a time per server.
    more_hosts: tuple[str, ...] = ()
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    @property
    def hosts(self) -> tuple[str, ...]:
        return (self.host, *self.more_hosts)

    @property
    def servers(self) -> tuple[str, ...]:
        """The pooled base's name for :attr:`hosts`."""
        return self.hosts

    def __post_init__(self) -> None:
        if not self.model or not self.model.strip():
            raise WorldForgeError("ollama provider: a model name is required, e.g. 'ollama:qwen2.5'.")
        if not 0.0 <= float(self.temperature) <= 2.0:
            raise WorldForgeError(f"ollama.temperature: {self.temperature} is outside [0, 2].")
        if self.num_ctx is not None and int(self.num_ctx) < 256:
            raise WorldForgeError(f"ollama.num_ctx: {self.num_ctx} is below 256 tokens.")
        if float(self.request_timeout_s) <= 0 or float(self.max_trial_seconds) <= 0:
            raise WorldForgeError("ollama timeouts must be positive seconds.")
        if int(self.retries) < 0 or float(self.backoff_s) < 0:
            raise WorldForgeError("ollama.retries and ollama.backoff_s must be >= 0.")
        if int(self.max_tokens_per_trial) <= 0:
            raise WorldForgeError("ollama.max_tokens_per_trial must be positive.")
        for host in self.hosts:
            _check_host(host)
        if isinstance(self.max_connections, bool) or int(self.max_connections) < 1:
            raise WorldForgeError(f"--max-connections must be >= 1, got {self.max_connections!r}.")

    @classmethod
    def from_options(cls, model: str, options: Mapping[str, Any] | None = None) -> OllamaSettings:
        """Build settings from suite/CLI options (``ollama_host``/``host``, ``ollama_*`` keys)."""
        values = prefixed_options("ollama", _SETTING_KEYS, options)
        hosts = values.get("host")
        if isinstance(hosts, (list, tuple)):  # --ollama-host given several times
            values["more_hosts"] = tuple(str(h) for h in hosts[1:])
            hosts = str(hosts[0]) if hosts else None
        values["host"] = resolve_host(hosts)
        if "max_connections" in values:
            values["max_connections"] = int(values["max_connections"])
        if "request_timeout_s" not in values:
            config = project_config()
            if config is not None:
                values["request_timeout_s"] = float(config.ollama.timeout_s)
        return cls(model=model, **values)

    def identity(self) -> JSONObject:
        """Parameters that shape replies (host, timeouts and retries excluded: they do not)."""
        return {"model": self.model, "temperature": float(self.temperature), "num_ctx": self.num_ctx}


@dataclass
class GenerationReply:
    """What one chat call returned (text plus the counters the trial limits need)."""

    text: str
    prompt_eval_count: int
    eval_count: int
    done_reason: str | None
    attempts: int
    metadata: JSONObject = field(default_factory=dict)


class OllamaProvider(PooledChatProvider[OllamaSettings]):
    """The ``generate`` capability backed by an Ollama server (``ollama:<model>``)."""

    family = "ollama"

    @classmethod
    def from_spec(cls, model: str, options: Mapping[str, Any] | None = None) -> OllamaProvider:
        """Factory for the registry: ``ollama:<model>`` → ``from_spec("<model>", run options)``."""
        return cls(OllamaSettings.from_options(model, options))

    # -- the wire ---------------------------------------------------------------------------------
    def _new_client(self, url: str) -> Any:
        return heavy.ollama().Client(host=url, timeout=float(self.settings.request_timeout_s))

    def _retryable(self, exc: BaseException) -> bool:
        httpx = heavy.httpx()
        ollama = heavy.ollama()

        if isinstance(exc, ollama.ResponseError):
            return int(exc.status_code or 0) >= 500
        return isinstance(exc, ConnectionError | httpx.TimeoutException | httpx.TransportError | TimeoutError)

    def _describe(self, exc: BaseException) -> str:
        ollama = heavy.ollama()

        if isinstance(exc, ollama.ResponseError):
            return f"HTTP {exc.status_code}: {exc.error}"
        name = type(exc).__name__
        text = str(exc) or name
        return text if text.startswith(name) else f"{name}: {text}"

    def _failure(self, attempts: int, exc: BaseException) -> ProviderError:
        """An HTTP error answer keeps its status and message (the gateway answers with them)."""
        failed = f"{self.name}: generate failed after {attempts} attempt(s): {self._describe(exc)}"
        if isinstance(exc, heavy.ollama().ResponseError):
            status = exc.status_code
            if isinstance(status, int) and status >= 400:
                return ProviderHTTPError(failed, status, exc.error)
        return ProviderError(failed)

    def _preflight_retryable(self, exc: BaseException) -> bool:
        """A server that answers but is busy (loading a model, say: HTTP 5xx) or times out gets the
        same retries as a generation call; a refused connection fails at once (nothing listens)."""
        httpx = heavy.httpx()
        ollama = heavy.ollama()

        if isinstance(exc, ollama.ResponseError):
            return int(exc.status_code or 0) >= 500
        return isinstance(exc, httpx.TimeoutException | TimeoutError)

    # -- runtime manifest -------------------------------------------------------------------------
    def _fetch_manifest(self) -> JSONObject:
        """Model digest and parameters from ``/api/tags`` and ``/api/show``.

        Raises :class:`WorldForgeError` when the model is not on the server (say how to pull it)
        and :class:`ProviderError` when the server cannot be reached.
        """
        ollama = heavy.ollama()

        model = self.settings.model
        try:
            listed = self._preflight(self.client.list)
            show = self._preflight(lambda: self.client.show(model))
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise WorldForgeError(
                    f"ollama model {model!r} is not available on {self.settings.host}; "
                    f"run `ollama pull {model}`."
                ) from None
            raise ProviderError(f"ollama {self.settings.host}: {self._describe(exc)}") from None
        except Exception as exc:
            if self._retryable(exc):
                raise ProviderError(
                    f"ollama server {self.settings.host} unreachable ({self._describe(exc)}); start it with "
                    "`ollama serve` or pass --ollama-host."
                ) from None
            raise
        digest = None
        wanted = {model, model if ":" in model else f"{model}:latest"}
        for entry in getattr(listed, "models", None) or []:
            if entry.model in wanted or getattr(entry, "name", None) in wanted:
                digest = entry.digest
                break
        details = show.details.model_dump(exclude_none=True) if show.details is not None else {}
        return {
            "provider": self.name,
            "kind": "ollama",
            "model": model,
            "model_digest": digest,
            "details": details,
            "parameters": show.parameters or "",
            "template_digest": digest_payload(show.template or ""),
            "capabilities": list(show.capabilities or []),
            "settings": self.settings.identity(),
            "host": self.settings.host,
            "client": f"ollama-python {client_version('ollama')}",
        }

    # -- generation -------------------------------------------------------------------------------
    def chat(
        self, messages: Sequence[Mapping[str, str]], *, seed: int | None = None, **extra: Any
    ) -> GenerationReply:
        """One chat call with retries; returns the assistant text and token counters."""
        payload = wire_messages(messages)
        call_options: JSONObject = {"temperature": float(self.settings.temperature)}
        if seed is not None:
            call_options["seed"] = int(seed)
        if self.settings.num_ctx is not None:
            call_options["num_ctx"] = int(self.settings.num_ctx)
        call_options.update({k: v for k, v in extra.items() if v is not None})
        digest = digest_payload({"model": self.settings.model, "messages": payload, "options": call_options})

        def request(client: Any) -> Any:
            return client.chat(model=self.settings.model, messages=payload, options=call_options)

        def accept(response: Any, attempt: int) -> tuple[GenerationReply, JSONObject]:
            reply = GenerationReply(
                text=response.message.content or "",
                prompt_eval_count=int(response.prompt_eval_count or 0),
                eval_count=int(response.eval_count or 0),
                done_reason=response.done_reason,
                attempts=attempt,
                metadata={"model": response.model or self.settings.model},
            )
            return reply, {"prompt_eval_count": reply.prompt_eval_count, "eval_count": reply.eval_count}

        return self._send(digest, request, accept)

    def generate(
        self, messages: list[dict[str, str]], *, options: Mapping[str, Any] | None = None
    ) -> GenerationResult:
        """The provider-protocol entry point: returns a ``GenerationResult`` (core contract).

        ``options`` may carry ``trial_seed`` (used as the sampling seed), ``seed``, per-call
        Ollama options under ``ollama_options`` and ``max_tokens``, a completion cap (the model
        gateway's share of the trial's token budget) sent as ``num_predict``, or as the smaller of
        the two when ``ollama_options`` sets a positive ``num_predict`` of its own.
        """
        opts = dict(options or {})
        seed = opts.get("trial_seed", opts.get("seed"))
        extra = dict(opts.get("ollama_options") or {})
        cap = opts.get("max_tokens")
        if cap is not None:
            own = extra.get("num_predict")
            if isinstance(own, int) and not isinstance(own, bool) and own > 0:
                extra["num_predict"] = min(int(cap), own)
            else:
                extra["num_predict"] = int(cap)
        reply = self.chat(messages, seed=None if seed is None else int(seed), **extra)
        metadata: JSONObject = {
            "prompt_eval_count": reply.prompt_eval_count,
            "eval_count": reply.eval_count,
            "done_reason": reply.done_reason,
            "attempts": reply.attempts,
            **reply.metadata,
        }
        return GenerationResult(provider=self.name, text=reply.text, metadata=metadata)


def create_provider(model: str, options: Mapping[str, Any] | None = None) -> OllamaProvider:
    """Registry factory: the suffix of ``ollama:<model>`` and the run's options (``ollama_host``,
    ``ollama_*`` keys; the host falls back to ``OLLAMA_HOST``, then the config)."""
    return OllamaProvider.from_spec(model, options)


#: What the registry builds for ``ollama:<model>`` (``worldforge.providers`` entry point).
FAMILY = ProviderFamily(
    OllamaProvider,
    create_provider,
    "Local LLM through an Ollama server; ollama:<model>.",
    argument="required",
    example="ollama:qwen2.5",
)


__all__ = [
    "DEFAULT_HOST",
    "FAMILY",
    "GenerationReply",
    "OllamaProvider",
    "OllamaSettings",
    "create_provider",
    "resolve_host",
]
