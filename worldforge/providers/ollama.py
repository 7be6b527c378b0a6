"""``ollama:<model>``: chat generation through a local Ollama server with the official client.

The competition's 2025 edition generated every level with three open models served by Ollama, so
this provider is how a user reproduces that setting. It speaks the chat API with multi-turn message
lists and applies the competition's settings: temperature 1 by default and a seed per trial derived
from a master seed (see :func:`trial_seed`). Context size and request timeout are options.

Robustness is the point: a long evaluation makes thousands of calls, so connection errors, timeouts
and HTTP 5xx answers are retried with exponential backoff and, when the retries are spent, surface
as :class:`~worldforge.core.errors.ProviderError` -- the suite records that as a failed trial and
moves on. Client errors (4xx, for example an unknown model) are not retried; an HTTP error answer
raises :class:`~worldforge.core.errors.ProviderHTTPError` with its status and message, so the model
gateway can answer a program with the server's own status. Each attempt emits a
:class:`~worldforge.providers.events.ProviderEvent` (``retry`` / ``success`` / ``failure``).

The per-trial limits of the competition (25,000 prompt+completion tokens, a wall-clock budget) are
enforced by :class:`ChatTrial`, which drives the turns of a prompt program against any provider
with ``generate`` and reads the token counts providers return in their metadata
(``prompt_tokens`` / ``completion_tokens`` as OpenAI-compatible servers report them, else Ollama's
``prompt_eval_count`` / ``eval_count``, which this provider returns).

The ``ollama`` and ``httpx`` modules are imported lazily so ``import worldforge`` stays cheap.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from worldforge import heavy
from worldforge.config import project_config
from worldforge.core.digests import digest_payload
from worldforge.core.errors import ProviderError, ProviderHTTPError, WorldForgeError
from worldforge.providers.base import BaseProvider, GenerationResult, prefixed_options
from worldforge.providers.mock_letters import derive_seed
from worldforge.providers.server_pool import DEFAULT_MAX_CONNECTIONS, ServerPool

DEFAULT_HOST = "http://127.0.0.1:11434"
DEFAULT_TEMPERATURE = 1.0
DEFAULT_MASTER_SEED = 42
DEFAULT_REQUEST_TIMEOUT_S = 120.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_S = 1.0
#: The competition's per-trial token budget (prompt + completion over all turns of one trial).
TRIAL_TOKEN_LIMIT = 25_000
#: The 2025 package's per-trial wall-clock budget in seconds.
TRIAL_TIME_LIMIT_S = 500.0

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


def trial_seed(master_seed: int, *identity: object) -> int:
    """The sampling seed of one trial: derived from the master seed and the trial's identity.

    ``identity`` is (program, letter, trial) in the suite. Deriving rather than reusing one seed
    keeps trials independent samples (the 2024 package sent seed 42 on every call, which made the
    ten trials of a letter differ only through server nondeterminism) while keeping a rerun of the
    same trial reproducible.
    """
    return derive_seed("trial-seed/v1", int(master_seed), *identity)


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

    def identity(self) -> dict[str, Any]:
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
    metadata: dict[str, Any] = field(default_factory=dict)


def _is_retryable(exc: BaseException) -> bool:
    httpx = heavy.httpx()
    ollama = heavy.ollama()

    if isinstance(exc, ollama.ResponseError):
        return int(getattr(exc, "status_code", 0) or 0) >= 500
    return isinstance(exc, ConnectionError | httpx.TimeoutException | httpx.TransportError | TimeoutError)


def _describe(exc: BaseException) -> str:
    ollama = heavy.ollama()

    if isinstance(exc, ollama.ResponseError):
        return f"HTTP {exc.status_code}: {exc.error}"
    name = type(exc).__name__
    text = str(exc) or name
    return text if text.startswith(name) else f"{name}: {text}"


class OllamaProvider(BaseProvider):
    """The ``generate`` capability backed by an Ollama server (``ollama:<model>``)."""

    _capabilities = ("generate",)

    def __init__(self, settings: OllamaSettings, *, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__()
        self.settings = settings
        self.name = f"ollama:{settings.model}"
        self._sleep = sleep
        self._clients: dict[str, Any] = {}
        self._manifest: dict[str, Any] | None = None
        self.pool = ServerPool(settings.hosts, max_connections=settings.max_connections)

    def configure(self, options: Mapping[str, Any] | None) -> None:
        """Re-apply run options (``--ollama-host`` and ``ollama_*`` keys) after registry creation.

        The registry builds providers from their name alone; the suite calls this with the run's
        options so the host and limits chosen on the command line take effect.
        """
        settings = OllamaSettings.from_options(self.settings.model, options)
        if settings != self.settings:
            if settings.host != self.settings.host:
                self._manifest = None  # the manifest describes the model on one server
            else:
                self._manifest = (
                    None if self._manifest is None else {**self._manifest, "settings": settings.identity()}
                )
            self.settings = settings
            self._clients = {}
            self.pool = ServerPool(settings.hosts, max_connections=settings.max_connections)

    @classmethod
    def from_spec(cls, model: str, options: Mapping[str, Any] | None = None) -> OllamaProvider:
        """Factory for the registry: ``ollama:<model>`` → ``from_spec("<model>", options)``."""
        return cls(OllamaSettings.from_options(model, options))

    # -- plumbing -------------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The client of the first server (preflight, manifest)."""
        return self.client_for(self.settings.host)

    def client_for(self, host: str) -> Any:
        """One client per server (clients keep their connections); the first server's is ``client``."""
        client = self._clients.get(host)
        if client is None:
            ollama = heavy.ollama()

            client = self._clients[host] = ollama.Client(
                host=host, timeout=float(self.settings.request_timeout_s)
            )
        return client

    def _emit(self, phase: str, attempt: int, started: float, digest: str, message: str, **meta: Any) -> None:
        self.emit_attempt(phase, attempt, int(self.settings.retries), started, digest, message, **meta)

    # -- runtime manifest -----------------------------------------------------------------------

    def _preflight(self, call: Callable[[], Any]) -> Any:
        """One ``/api/tags`` or ``/api/show`` call, retried with backoff on HTTP 5xx and timeouts.

        A server that answers but is busy (loading a model, say) gets the same retries as a
        generation call; a refused connection fails at once, since nothing is listening.
        """
        httpx = heavy.httpx()
        ollama = heavy.ollama()

        attempts = int(self.settings.retries) + 1
        for attempt in range(1, attempts + 1):
            try:
                return call()
            except (ollama.ResponseError, httpx.TimeoutException, TimeoutError) as exc:
                busy = not isinstance(exc, ollama.ResponseError) or int(exc.status_code or 0) >= 500
                if not busy or attempt == attempts:
                    raise
                self._sleep(float(self.settings.backoff_s) * (2 ** (attempt - 1)))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def runtime_manifest(self) -> dict[str, Any]:
        """Model digest and parameters from ``/api/tags`` and ``/api/show`` (cached per provider).

        Raises :class:`WorldForgeError` when the model is not on the server (say how to pull it)
        and :class:`ProviderError` when the server cannot be reached, so a run fails before its
        first item instead of recording hundreds of identical failures.
        """
        if self._manifest is not None:
            return dict(self._manifest)
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
            raise ProviderError(f"ollama {self.settings.host}: {_describe(exc)}") from None
        except Exception as exc:
            if _is_retryable(exc):
                raise ProviderError(
                    f"ollama server {self.settings.host} unreachable ({_describe(exc)}); start it with "
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
        manifest = {
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
            "client": f"ollama-python {_client_version()}",
        }
        self._manifest = manifest
        return dict(manifest)

    # -- generation -----------------------------------------------------------------------------
    def chat(
        self, messages: Sequence[Mapping[str, str]], *, seed: int | None = None, **extra: Any
    ) -> GenerationReply:
        """One chat call with retries; returns the assistant text and token counters."""
        for i, message in enumerate(messages):
            if message.get("role") not in {"system", "user", "assistant"} or not isinstance(
                message.get("content"), str
            ):
                raise WorldForgeError(f"messages[{i}]: needs role system|user|assistant and string content.")
        call_options: dict[str, Any] = {"temperature": float(self.settings.temperature)}
        if seed is not None:
            call_options["seed"] = int(seed)
        if self.settings.num_ctx is not None:
            call_options["num_ctx"] = int(self.settings.num_ctx)
        call_options.update({k: v for k, v in extra.items() if v is not None})
        payload = [{"role": m["role"], "content": m["content"]} for m in messages]
        digest = digest_payload({"model": self.settings.model, "messages": payload, "options": call_options})
        # Each further server adds an attempt: a failing server is left for another one at once.
        attempts = int(self.settings.retries) + len(self.pool.urls)
        last: BaseException | None = None
        for attempt in range(1, attempts + 1):
            started = time.monotonic()
            with self.pool.lease() as lease:
                try:
                    response = self.client_for(lease.url).chat(
                        model=self.settings.model, messages=payload, options=call_options
                    )
                except Exception as exc:
                    if _is_retryable(exc):
                        lease.failed()  # out of rotation for a while
                    error: BaseException | None = exc
                else:
                    error = None
            if error is not None:
                last = error
                retry = _is_retryable(error) and attempt < attempts
                self._emit("retry" if retry else "failure", attempt, started, digest, _describe(error))
                if not retry:
                    break
                if not self.pool.has_alternative(lease.url):  # elsewhere at once, else back off
                    self._sleep(float(self.settings.backoff_s) * (2 ** (attempt - 1)))
                continue
            text = response.message.content or ""
            reply = GenerationReply(
                text=text,
                prompt_eval_count=int(response.prompt_eval_count or 0),
                eval_count=int(response.eval_count or 0),
                done_reason=response.done_reason,
                attempts=attempt,
                metadata={"model": response.model or self.settings.model},
            )
            self._emit(
                "success",
                attempt,
                started,
                digest,
                "ok",
                prompt_eval_count=reply.prompt_eval_count,
                eval_count=reply.eval_count,
            )
            return reply
        assert last is not None
        failed = f"{self.name}: generate failed after {attempt} attempt(s): {_describe(last)}"
        status = getattr(last, "status_code", None) if isinstance(last, heavy.ollama().ResponseError) else 0
        if isinstance(status, int) and status >= 400:
            raise ProviderHTTPError(failed, status, getattr(last, "error", None)) from None
        raise ProviderError(failed) from None

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
        metadata = {
            "prompt_eval_count": reply.prompt_eval_count,
            "eval_count": reply.eval_count,
            "done_reason": reply.done_reason,
            "attempts": reply.attempts,
            **reply.metadata,
        }
        return GenerationResult(provider=self.name, text=reply.text, metadata=metadata)


def _client_version() -> str:
    try:
        from importlib.metadata import version

        return version("ollama")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        return "unknown"


class TrialLimitExceeded(ProviderError):
    """A trial went over its token or wall-clock budget (the competition scores it 0)."""


@dataclass
class TrialTranscript:
    """The conversation of one trial: every message, the final reply and the token counts.

    ``prompt_tokens`` / ``completion_tokens`` are the server's counts summed over the calls and
    ``models`` the model ids it reported (in call order), so records show what was really served.
    """

    messages: list[dict[str, str]]
    final_reply: str
    tokens: int
    calls: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    models: list[str] = field(default_factory=list)


def usage_counts(metadata: Mapping[str, Any]) -> tuple[int, int]:
    """(prompt, completion) tokens of one call from a provider's metadata, either spelling."""
    prompt = metadata.get("prompt_tokens", metadata.get("prompt_eval_count"))
    completion = metadata.get("completion_tokens", metadata.get("eval_count"))
    return int(prompt or 0), int(completion or 0)


class ChatTrial:
    """Drive the turns of one prompt program for one trial, enforcing the competition's limits.

    Before each call the elapsed time is checked against ``max_seconds`` (over → the trial fails,
    as the package's ``TimeoutError``); after each call the cumulative prompt+completion tokens are
    checked against ``max_tokens`` (over → the trial fails, as the package's ``ValueError``). The
    reply to the last turn is the trial's output; earlier replies become assistant turns.
    """

    def __init__(
        self, *, max_tokens: int = TRIAL_TOKEN_LIMIT, max_seconds: float = TRIAL_TIME_LIMIT_S
    ) -> None:
        self.max_tokens = int(max_tokens)
        self.max_seconds = float(max_seconds)

    def run(
        self,
        generate: Callable[[list[dict[str, str]], dict[str, Any]], Any],
        prompts: Sequence[str],
        options: Mapping[str, Any],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> TrialTranscript:
        started = clock()
        messages: list[dict[str, str]] = []
        tokens = prompt_total = completion_total = 0
        models: list[str] = []
        reply = ""
        for index, prompt in enumerate(prompts):
            elapsed = clock() - started
            if elapsed > self.max_seconds:
                raise TrialLimitExceeded(
                    f"trial time limit: {elapsed:.1f} s elapsed before turn {index + 1} "
                    f"(limit {self.max_seconds:g} s)."
                )
            messages.append({"role": "user", "content": prompt})
            result = generate(list(messages), dict(options))
            text = getattr(result, "text", result)
            reply = text if isinstance(text, str) else str(text)
            meta = getattr(result, "metadata", None) or {}
            prompt_tokens, completion_tokens = usage_counts(meta)
            prompt_total += prompt_tokens
            completion_total += completion_tokens
            tokens += prompt_tokens + completion_tokens
            if isinstance(meta.get("model"), str):
                models.append(meta["model"])
            if tokens > self.max_tokens:
                raise TrialLimitExceeded(
                    f"trial token limit: {tokens} prompt+completion tokens after turn {index + 1} "
                    f"(limit {self.max_tokens})."
                )
            messages.append({"role": "assistant", "content": reply})
        return TrialTranscript(
            messages=messages,
            final_reply=reply,
            tokens=tokens,
            calls=len(prompts),
            prompt_tokens=prompt_total,
            completion_tokens=completion_total,
            models=models,
        )


def create_provider(model: str, options: Mapping[str, Any] | None = None) -> OllamaProvider:
    """Registry factory: the suffix of ``ollama:<model>`` (host from ``OLLAMA_HOST``/config until
    :meth:`OllamaProvider.configure` applies the run's options)."""
    return OllamaProvider.from_spec(model, options)


__all__ = [
    "DEFAULT_HOST",
    "TRIAL_TIME_LIMIT_S",
    "TRIAL_TOKEN_LIMIT",
    "ChatTrial",
    "GenerationReply",
    "OllamaProvider",
    "OllamaSettings",
    "TrialLimitExceeded",
    "TrialTranscript",
    "create_provider",
    "resolve_host",
    "trial_seed",
    "usage_counts",
]
