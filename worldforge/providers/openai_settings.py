"""Settings of the ``openai:<model>`` provider: where the server is, which key, how to retry.

Kept apart from the provider so that validating ``--openai-base-url`` (the suite does it before a
run is created) needs no client library, and so the rules that keep the key out of every record
live in one short module. Precedence for the server: ``--openai-base-url`` (suite option
``openai_base_url``), ``OPENAI_BASE_URL``, ``openai.base_url`` in ``.worldforge/config.yaml``, then
OpenAI's API; for the key: ``OPENAI_API_KEY``, ``openai.api_key`` in the config, then a placeholder
(local servers check none). The key is resolved only when the client is built and is never a field
of :class:`OpenAISettings`, so no manifest, record or message derived from the settings can hold it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from worldforge.config import project_config
from worldforge.core.canonical import JSONObject
from worldforge.core.errors import WorldForgeError
from worldforge.providers.base import prefixed_options
from worldforge.providers.server_pool import DEFAULT_MAX_CONNECTIONS

OPENAI_API_URL = "https://api.openai.com/v1"
#: What the 2025 package sent to Ollama; servers that check no key accept anything.
PLACEHOLDER_API_KEY = "not-needed"
DEFAULT_TEMPERATURE = 1.0
DEFAULT_REQUEST_TIMEOUT_S = 120.0
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF_S = 1.0
#: Longest wait a ``Retry-After`` header can impose on one retry.
DEFAULT_MAX_RETRY_AFTER_S = 300.0

_SETTING_KEYS = (
    "base_url",
    "max_connections",
    "temperature",
    "request_timeout_s",
    "retries",
    "backoff_s",
    "max_retry_after_s",
)


def resolve_base_url(explicit: str | None = None) -> str:
    """Precedence: explicit option (``--openai-base-url``), ``OPENAI_BASE_URL``, config, OpenAI."""
    if explicit:
        return explicit
    env = os.environ.get("OPENAI_BASE_URL")
    if env:
        return env
    config = project_config()
    if config is not None and config.openai.base_url:
        return str(config.openai.base_url)
    return OPENAI_API_URL


def resolve_api_key(base_url: str) -> str:
    """``OPENAI_API_KEY``, else the config's ``openai.api_key``, else a placeholder.

    OpenAI's own API always needs a real key, so there a missing key is a usage error now rather
    than 520 identical 401 failures later.
    """
    key = os.environ.get("OPENAI_API_KEY")
    if not key:
        config = project_config()
        key = config.openai.api_key if config is not None else None
    if key:
        return str(key)
    if (urlsplit(base_url).hostname or "").endswith("api.openai.com"):
        raise WorldForgeError(f"{base_url} needs an API key: set OPENAI_API_KEY.")
    return PLACEHOLDER_API_KEY


def check_base_urls(value: object) -> None:
    """:func:`check_base_url` for one address or a list of them (``--openai-base-url`` repeated)."""
    for url in value if isinstance(value, (list, tuple)) else [value]:
        check_base_url(str(url))


def check_base_url(url: str) -> None:
    """Reject a base URL that is not an http(s) server address before anything is sent.

    Credentials inside the URL are refused too: the URL is recorded in run manifests and rerun
    commands, and the key belongs in ``OPENAI_API_KEY``.
    """
    text = str(url).strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        parts, port = None, None
    example = "e.g. http://127.0.0.1:11434/v1"
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
            f"--openai-base-url: {url!r} is not a server URL (expected http://HOST:PORT/v1, {example})."
        )
    if parts.username is not None or parts.password is not None:
        raise WorldForgeError(
            "--openai-base-url: the URL carries credentials; pass the key in OPENAI_API_KEY instead."
        )


@dataclass(frozen=True)
class OpenAISettings:
    """Everything that shapes a call except the key (which is never part of any record)."""

    model: str
    base_url: str = OPENAI_API_URL
    temperature: float = DEFAULT_TEMPERATURE
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    backoff_s: float = DEFAULT_BACKOFF_S
    max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S
    #: Further servers of the same model (``--openai-base-url`` given several times): requests are
    #: balanced over ``base_url`` and these, ``max_connections`` at a time per server.
    more_base_urls: tuple[str, ...] = ()
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    @property
    def base_urls(self) -> tuple[str, ...]:
        return (self.base_url, *self.more_base_urls)

    @property
    def servers(self) -> tuple[str, ...]:
        """The pooled base's name for :attr:`base_urls`."""
        return self.base_urls

    def __post_init__(self) -> None:
        if not self.model or not self.model.strip():
            raise WorldForgeError("openai provider: a model name is required, e.g. 'openai:qwen2.5:32b'.")
        if not 0.0 <= float(self.temperature) <= 2.0:
            raise WorldForgeError(f"openai.temperature: {self.temperature} is outside [0, 2].")
        if float(self.request_timeout_s) <= 0:
            raise WorldForgeError("openai.request_timeout_s must be positive seconds.")
        if int(self.retries) < 0 or float(self.backoff_s) < 0 or float(self.max_retry_after_s) < 0:
            raise WorldForgeError(
                "openai.retries, openai.backoff_s and openai.max_retry_after_s must be >= 0."
            )
        for url in self.base_urls:
            check_base_url(url)
        if isinstance(self.max_connections, bool) or int(self.max_connections) < 1:
            raise WorldForgeError(f"--max-connections must be >= 1, got {self.max_connections!r}.")

    @classmethod
    def from_options(cls, model: str, options: Mapping[str, Any] | None = None) -> OpenAISettings:
        """Build settings from suite/CLI options (``openai_base_url``/``base_url``, ``openai_*`` keys)."""
        values = prefixed_options("openai", _SETTING_KEYS, options)
        urls = values.get("base_url")
        if isinstance(urls, (list, tuple)):  # --openai-base-url given several times
            values["more_base_urls"] = tuple(str(u) for u in urls[1:])
            urls = str(urls[0]) if urls else None
        values["base_url"] = resolve_base_url(urls)
        if "max_connections" in values:
            values["max_connections"] = int(values["max_connections"])
        if "request_timeout_s" not in values:
            config = project_config()
            if config is not None:
                values["request_timeout_s"] = float(config.openai.timeout_s)
        return cls(model=model, **values)

    def identity(self) -> JSONObject:
        """Parameters that shape replies (URL, timeouts and retries excluded: they do not)."""
        return {"model": self.model, "temperature": float(self.temperature)}


def retry_after_s(headers: Any) -> float | None:
    """Seconds a ``Retry-After`` / ``retry-after-ms`` header asks for (``None`` when absent)."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(raw).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def guess_server_kind(owned_by: object, headers: Mapping[str, str], settings: OpenAISettings) -> str:
    """Which software serves the API, from ``/models`` ``owned_by`` and response headers."""
    owner = str(owned_by or "").lower()
    lowered = {str(k).lower(): str(v).lower() for k, v in headers.items()}
    software = lowered.get("server", "")
    if "vllm" in owner or "vllm" in software:
        return "vllm"
    if owner in {"llamacpp", "llama.cpp"} or "llama.cpp" in software:
        return "llama.cpp"
    if owner == "me" and "uvicorn" in software:
        return "llama-cpp-python"
    if owner in {"library", "ollama"} or "ollama" in software:
        return "ollama"
    host = urlsplit(settings.base_url).hostname or ""
    if host.endswith("api.openai.com") or "openai-organization" in lowered:
        return "openai"
    return "openai-compatible"


__all__ = [
    "DEFAULT_BACKOFF_S",
    "DEFAULT_MAX_RETRY_AFTER_S",
    "DEFAULT_REQUEST_TIMEOUT_S",
    "DEFAULT_RETRIES",
    "DEFAULT_TEMPERATURE",
    "OPENAI_API_URL",
    "PLACEHOLDER_API_KEY",
    "OpenAISettings",
    "check_base_url",
    "check_base_urls",
    "guess_server_kind",
    "resolve_api_key",
    "resolve_base_url",
    "retry_after_s",
]
