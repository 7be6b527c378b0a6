"""One model exchange as evidence: the request a trial sent, the reply it got, and their digests.

Every request that reaches the gateway for a known trial becomes one exchange dict, appended to
the trial's list (which the item record carries) and written to the run's event log. Two rules
make exchanges usable both as evidence and as the source of a replay:

* **Digests are of the raw values, records hold sanitized ones.** ``request_digest`` covers what
  was forwarded (model, messages, ``n``, the policy's seed and temperature) before redaction, so a
  replay matches a request exactly; the stored messages and replies went through the project's one
  sanitizer, so a secret-shaped string a prompt file happened to contain is never written raw.
  A reply stored differently from what the model sent (secret-shaped text redacted, or lone
  surrogates JSON cannot hold, escaped) is marked ``altered``: it can no longer be replayed byte
  for byte, and a replay says so instead of serving the altered text.
* **No timing, no ports, no tokens.** Durations and the source of an answer (model or replay)
  live in the event only, so the same inputs give byte-identical item records and result digests.
  So does the completion cap the gateway derived from the trial's budget (``allowance``): it never
  changes an answer the budget could pay for, so it stays out of the digest and the record.
* **A server's refusal is relayed, not hidden.** When the model server refuses a request with a
  client error (:data:`RELAYED_STATUSES`: an over-long prompt, an unknown model, a rate limit
  after the provider's retries), the program gets that status and an OpenAI-shaped body built from
  the server's (see :func:`relayed_error`), as it would talking to the server itself; the record
  keeps the error's ``type``, ``message``, ``param``, ``code`` and ``upstream_status``, so a replay
  answers the same. Only what is the gateway's own failure (no connection, a timeout, a server
  error after retries, a provider bug) is a ``provider_error`` (502).
* **Bounded.** A choice longer than :data:`RECORDED_CHOICE_CHARS` (far beyond what 25,000 tokens of
  text take) is recorded cut, with a marker naming the digest of the full text; the exchange is
  then ``altered`` (``response_digest`` still covers the full reply). The sanitizer's memo of
  repeated strings is bounded by count and by size, so a hostile run cannot grow it without end.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from worldforge.core.canonical import JSONObject
from worldforge.core.digests import digest_bytes, digest_payload
from worldforge.core.errors import ProviderHTTPError, WorldForgeError
from worldforge.core.redact import sanitize_text, sanitize_value
from worldforge.gateway.records import (
    ChatCompletion,
    ErrorBody,
    ExchangeError,
    ExchangeRecord,
    RawRequest,
    RawResponse,
)
from worldforge.providers.chat import token_count

#: Error types the gateway answers with; each maps to an HTTP status and a client-side exception.
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "model_not_found": 404,
    "not_recorded": 409,
    "trial_limit": 429,
    # the run's token limit (``--max-run-tokens``) is spent: generation stops, the trial is redone
    # when the run is resumed
    "run_limit": 429,
    # recorded for a request still unanswered when its trial ended (killed at its time limit):
    # the trial never saw an answer; a replay answers that request with this error
    "trial_ended": 504,
    "provider_error": 502,
}
#: Client errors of a model server that are relayed to the program with the server's status, and
#: the ``type``/``code`` an error body gets when the server's was not OpenAI-shaped (what the
#: OpenAI API sends for them; the ``openai`` client raises ``BadRequestError`` for 400,
#: ``NotFoundError`` 404, ``UnprocessableEntityError`` 422, ``RateLimitError`` 429, and its
#: ``APIStatusError`` for 413). Any other status (401, 403, 5xx) is the gateway's own failure.
RELAYED_STATUSES: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    404: ("invalid_request_error", None),
    413: ("invalid_request_error", None),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
}
#: Characters of a relayed error message kept (relayed and recorded alike; messages are a line).
RELAYED_MESSAGE_CHARS = 4096
#: Request keys the gateway reads; any other key a program sends is recorded, never forwarded,
#: except the program's own completion cap (:data:`CAP_KEYS`), which is recorded and also honoured.
REQUEST_KEYS = ("model", "messages", "n")
#: A program's own per-choice completion cap, as OpenAI clients spell it (the newer name wins).
CAP_KEYS = ("max_completion_tokens", "max_tokens")
#: Sampling parameters the run's policy owns (a program's own values are ignored).
POLICY_KEYS = ("seed", "temperature")
_MEMO_LIMIT = 20_000
_MEMO_CHARS = 32 * 1024 * 1024
#: Characters of one choice recorded whole (about ten times what a 25,000-token reply holds).
RECORDED_CHOICE_CHARS = 256 * 1024


class GatewayError(Exception):
    """A request the gateway answers with an OpenAI-shaped error.

    The gateway's own errors: ``type`` (one of :data:`ERROR_STATUS`) picks the status and is also
    the ``code``. A model server's relayed refusal (``status`` in :data:`RELAYED_STATUSES`) keeps
    the server's status, ``type``, ``param`` and ``code``, and the ``Retry-After`` of a 429.
    """

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        status: int | None = None,
        param: str | int | None = None,
        code: str | int | None = None,
        retry_after: str | None = None,
    ) -> None:
        super().__init__(message)
        relayed = isinstance(status, int) and not isinstance(status, bool) and status in RELAYED_STATUSES
        self.upstream_status: int | None = status if relayed else None
        self.kind = kind if kind in ERROR_STATUS or relayed else "provider_error"
        self.message = message
        self.param = param if relayed else None
        self.code: str | int | None = code if relayed else self.kind
        self.retry_after = retry_after if relayed and status == 429 else None

    @property
    def status(self) -> int:
        return self.upstream_status if self.upstream_status is not None else ERROR_STATUS[self.kind]

    def body(self) -> ErrorBody:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}

    def headers(self) -> dict[str, str]:
        """Headers of the answer: a relayed 429's ``Retry-After``, as the server sent it."""
        return {"Retry-After": self.retry_after} if self.retry_after else {}

    def recorded(self, clean: Callable[[object], Any] = sanitize_value) -> ExchangeError:
        """The error as an exchange records it (no timing: ``Retry-After`` stays in the event)."""
        record: ExchangeError = {"type": self.kind, "message": clean(self.message)}
        if self.upstream_status is not None:
            record["upstream_status"] = self.upstream_status
            record["param"] = self.param
            record["code"] = self.code
        return record

    @classmethod
    def from_record(cls, error: Mapping[str, object]) -> GatewayError:
        """The error a recorded exchange holds, to answer again on a replay (same status and body)."""
        status = error.get("upstream_status")
        return cls(
            str(error.get("type")),
            str(error.get("message")),
            status=status if isinstance(status, int) else None,
            param=_relayed_scalar(error.get("param")),
            code=_relayed_scalar(error.get("code")),
        )


def relayed_error(exc: ProviderHTTPError) -> GatewayError | None:
    """A model server's client error as the program should see it; ``None`` when it is not relayed.

    A body in the OpenAI shape (``{"error": {"message", "type", "param", "code"}}``, or those keys
    at the top as vLLM sends them) keeps its four fields; extra fields (llama.cpp's ``n_ctx``) are
    left out. Any other body (Ollama's ``{"error": "..."}``, a ``detail``, a proxy's text) becomes
    the message of a body with the ``type``/``code`` :data:`RELAYED_STATUSES` gives. Strings go
    through the project's sanitizer and messages are bounded, so what is relayed is recorded.
    """
    defaults = RELAYED_STATUSES.get(exc.status)
    if defaults is None:
        return None
    kind, default_code = defaults
    param: object = None
    code: object = default_code
    message: str = ""
    body = exc.body
    if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        body = body["error"]
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        message = body["message"]
        kind = body["type"] if isinstance(body.get("type"), str) and body["type"] else kind
        param, code = body.get("param"), body.get("code")
    elif isinstance(body, Mapping):
        said = [body[k] for k in ("error", "detail") if isinstance(body.get(k), str)]
        message = said[0] if said else _compact_json(body)
    elif isinstance(body, str):
        message = body
    elif body is not None:
        message = _compact_json(body)
    message = _relayed_text(message, RELAYED_MESSAGE_CHARS) or f"HTTP {exc.status} from the model server."
    return GatewayError(
        _relayed_text(kind, 200),
        message,
        status=exc.status,
        param=_relayed_scalar(param),
        code=_relayed_scalar(code),
        retry_after=_retry_after(exc.retry_after),
    )


def _relayed_text(text: str, limit: int) -> str:
    """Sanitized, JSON-safe and bounded: identical in the answer, the record and a replay."""
    shown = _escape_text(sanitize_text(text))
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _relayed_scalar(value: object) -> str | int | None:
    """A ``param``/``code`` as relayed: a string (sanitized) or an integer; anything else is ``None``."""
    if isinstance(value, str):
        return _relayed_text(value, 200)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _retry_after(value: str | None) -> str | None:
    """A ``Retry-After`` value fit to pass through (a short printable header value), else ``None``."""
    text = (value or "").strip()
    return text if 0 < len(text) <= 64 and text.isprintable() and text.isascii() else None


def _compact_json(value: object) -> str:
    """A compact, key-sorted JSON text of ``value`` (unencodable values shown by ``repr``)."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)


@dataclass(frozen=True)
class Completion:
    """What answered one request: the choices' texts, usage counts, served model, finish reason."""

    texts: list[str]
    prompt_tokens: int
    completion_tokens: int
    model: str
    finish_reason: str | None = "stop"
    #: Whether the gateway's completion cap stopped a choice, and how many choices the trial's
    #: budget could not pay for (answered empty). Reported in the event only, never digested.
    capped: bool = False
    not_asked: int = 0

    def raw(self) -> RawResponse:
        """The response as digested (raw texts)."""
        return {
            "choices": list(self.texts),
            "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens},
            "model": self.model,
            "finish_reason": self.finish_reason,
        }


@dataclass
class Request:
    """A validated chat request plus the policy values that were forwarded with it."""

    model: str
    messages: list[dict[str, str]]
    n: int
    seed: int | None
    temperature: float | None
    client_params: JSONObject = field(default_factory=dict)
    #: The program's own per-choice completion cap (see :data:`CAP_KEYS`), forwarded as a server
    #: would honour it; ``None`` when the program set none.
    max_tokens: int | None = None
    #: Tokens this request may spend (prompt and completions), set by the gateway from what is left
    #: of the trial's budget just before forwarding; ``None``: no budget applies.
    allowance: int | None = field(default=None, compare=False)

    def raw(self) -> RawRequest:
        """What the request digest covers (client-only parameters excluded: never forwarded).

        The program's own cap is forwarded, so it is covered, but only when set: requests without
        one keep the digests they always had. The allowance is not: it depends on the trial's
        earlier answers, and it never changes an answer the budget could pay for.
        """
        raw: RawRequest = {
            "model": self.model,
            "messages": self.messages,
            "n": self.n,
            "seed": self.seed,
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            raw["max_tokens"] = self.max_tokens
        return raw

    @property
    def digest(self) -> str:
        return safe_digest(self.raw())


def _escape_text(text: str) -> str:
    """``text`` with the bytes UTF-8 cannot encode (lone surrogates) escaped."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "backslashreplace")
    return text


def _escape(value: object) -> object:
    """Strings that UTF-8 cannot encode (lone surrogates) with the offending bytes escaped."""
    if isinstance(value, str):
        return _escape_text(value)
    if isinstance(value, list):
        return [_escape(v) for v in value]
    if isinstance(value, dict):
        return {k: _escape(v) for k, v in value.items()}
    return value


def served_digest(text: str) -> str:
    """The digest that names a reply text byte for byte (lone surrogates of a hostile reply kept):
    a program's returned text is *served* when its digest is one of its trial's answers'."""
    return digest_bytes(text.encode("utf-8", "surrogatepass"))


def safe_digest(value: RawRequest | RawResponse | str) -> str:
    """``digest_payload``, with unencodable characters escaped first (a hostile reply may hold them)."""
    try:
        return digest_payload(value)
    except WorldForgeError:
        return digest_payload(_escape(value))


def parse_request(
    body: object,
    model: str,
    seed: int | None,
    temperature: float | None,
    aliases: Sequence[str] = (),
) -> Request:
    """Validate an OpenAI chat-completions body for the trial's ``model``; raise :class:`GatewayError`.

    ``aliases`` are other model names the trial's program may ask for and still be served the
    trial's model (a submission package that hard-codes ``gpt-3.5-turbo-0125``); the name asked
    for is recorded with the client parameters."""
    if not isinstance(body, Mapping):
        raise GatewayError("invalid_request_error", "the request body must be a JSON object.")
    if body.get("stream"):
        raise GatewayError("invalid_request_error", "stream: streaming is not supported by the gateway.")
    asked = body.get("model")
    if asked != model and not (isinstance(asked, str) and asked in aliases):
        raise GatewayError(
            "model_not_found", f"The model `{asked}` is not the model of this trial (`{model}`)."
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise GatewayError("invalid_request_error", "messages: must be a non-empty list of chat turns.")
    clean: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        if (
            not isinstance(message, Mapping)
            or message.get("role") not in ("system", "user", "assistant")
            or not isinstance(message.get("content"), str)
        ):
            raise GatewayError(
                "invalid_request_error",
                f"messages[{i}]: needs role system|user|assistant and string content.",
            )
        clean.append({"role": str(message["role"]), "content": str(message["content"])})
    n = body.get("n", 1)
    if n is None:
        n = 1
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 128:
        raise GatewayError("invalid_request_error", f"n: expected an integer in 1..128, got {n!r}.")
    extra = {str(k): v for k, v in sorted(body.items()) if k not in REQUEST_KEYS}
    if asked != model:
        extra["model"] = asked
    return Request(model, clean, n, seed, temperature, extra, program_cap(body))


def program_cap(body: Mapping[str, object]) -> int | None:
    """The program's own per-choice completion cap, validated as a server would (``None``: unset)."""
    caps: list[int] = []
    for key in CAP_KEYS:
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise GatewayError("invalid_request_error", f"{key}: expected a positive integer, got {value!r}.")
        caps.append(value)
    return caps[0] if caps else None


class Recorder:
    """Builds exchange dicts; shares the sanitized form of strings that repeat across exchanges
    (the same prompt goes out for every trial of a letter, and each turn resends the earlier ones)."""

    def __init__(self) -> None:
        self._memo: dict[str, str] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def clean(self, value: object) -> Any:
        """Sanitized and JSON-safe: what may be written to a record or an event.

        The value keeps its shape (strings stay strings, lists lists, objects objects) except that
        what sits under a secret-named key may become ``"[redacted]"``, which no narrower type than
        the sanitizer's own says; the record types state the shapes the gateway's values keep."""
        with self._lock:  # the server's threads share the memo
            if len(self._memo) > _MEMO_LIMIT or self._chars > _MEMO_CHARS:
                self._memo.clear()
                self._chars = 0
            before = len(self._memo)
            shown = _escape(sanitize_value(value, memo=self._memo))
            # The memo is a dict in insertion order: what this call added is at its end.
            added = itertools.islice(reversed(self._memo.items()), len(self._memo) - before)
            self._chars += sum(len(k) + len(v) for k, v in added)
            return shown

    def exchange(
        self, request: Request, completion: Completion | None, error: GatewayError | None
    ) -> ExchangeRecord:
        """The recorded form of one exchange (JSON-native, sanitized, no timing)."""
        record: ExchangeRecord = {
            "request": {
                "model": request.model,
                "messages": self.clean(request.messages),
                "n": request.n,
                "seed": request.seed,
                "temperature": request.temperature,
            },
            "request_digest": request.digest,
        }
        if request.client_params:
            record["request"]["client_params"] = self.clean(request.client_params)
        if completion is not None:
            raw = completion.raw()
            shown: RawResponse = self.clean(raw)
            shown["choices"] = [
                _bounded(text, full) for text, full in zip(shown["choices"], raw["choices"], strict=True)
            ]
            record["response"] = shown
            record["response_digest"] = safe_digest(raw)
            if shown["choices"] != raw["choices"]:
                record["altered"] = True
        if error is not None:
            record["error"] = error.recorded(self.clean)
        return record


def _bounded(shown: str, full: str) -> str:
    """A recorded choice, cut after :data:`RECORDED_CHOICE_CHARS` with the digest of the full text."""
    if len(shown) <= RECORDED_CHOICE_CHARS:
        return shown
    dropped = len(shown) - RECORDED_CHOICE_CHARS
    marker = f"[... {dropped} characters not recorded; full text {safe_digest(full)}]"
    return f"{shown[:RECORDED_CHOICE_CHARS]}\n{marker}"


def completion_body(completion: Completion, request_digest: str) -> ChatCompletion:
    """The OpenAI ``chat.completion`` object for a completion (deterministic: no clock, no ids)."""
    return {
        "id": "chatcmpl-" + request_digest.removeprefix("sha256:")[:24],
        "object": "chat.completion",
        "created": 0,
        "model": completion.model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "finish_reason": completion.finish_reason,
                "logprobs": None,
            }
            for i, text in enumerate(completion.texts)
        ],
        "usage": {
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "total_tokens": completion.prompt_tokens + completion.completion_tokens,
        },
    }


def completion_from_record(exchange: Mapping[str, object]) -> Completion:
    """The completion a recorded exchange (read from a file) holds, its texts as recorded; a part
    of the wrong type is read as missing."""
    response = _mapping(exchange.get("response"))
    usage = _mapping(response.get("usage"))
    choices = response.get("choices")
    finish = response.get("finish_reason")
    return Completion(
        texts=[str(t) for t in choices] if isinstance(choices, list) else [],
        prompt_tokens=token_count(usage.get("prompt_tokens")),
        completion_tokens=token_count(usage.get("completion_tokens")),
        model=str(response.get("model") or _mapping(exchange.get("request")).get("model")),
        finish_reason=finish if isinstance(finish, str) else None,
    )


def _mapping(value: object) -> Mapping[str, object]:
    """``value`` if it is a JSON object, else an empty one (a recorded part that is missing)."""
    return value if isinstance(value, dict) else {}


def describe_difference(recorded: Mapping[str, object] | None, request: Request, recorder: Recorder) -> str:
    """Name the first field in which ``request`` differs from the exchange recorded at its position."""
    if recorded is None:
        return "no exchange was recorded at this position"
    was = _mapping(recorded.get("request"))
    for key in ("model", "n", "seed", "temperature"):
        now = getattr(request, key)
        if was.get(key) != now:
            return f"{key} differs (recorded {was.get(key)!r}, now {now!r})"
    params = was.get("client_params")
    for key in CAP_KEYS:
        then = params.get(key) if isinstance(params, Mapping) else None
        if then != request.client_params.get(key):
            return f"{key} differs (recorded {then!r}, now {request.client_params.get(key)!r})"
    messages = was.get("messages")
    old: Sequence[object] = messages if isinstance(messages, list) else []
    new: list[dict[str, str]] = recorder.clean(request.messages)
    if len(old) != len(new):
        return f"the number of messages differs (recorded {len(old)}, now {len(new)})"
    for i, (a, b) in enumerate(zip(old, new, strict=True)):
        if not isinstance(a, Mapping):
            return f"messages[{i}] is malformed in the recording"
        for part in ("role", "content"):
            if a.get(part) != b[part]:
                return (
                    f"messages[{i}].{part} differs (recorded {digest_payload(a.get(part))}, "
                    f"now {digest_payload(b[part])})"
                )
    return "the messages differ only inside redacted text"


__all__ = [
    "CAP_KEYS",
    "ERROR_STATUS",
    "RECORDED_CHOICE_CHARS",
    "RELAYED_MESSAGE_CHARS",
    "RELAYED_STATUSES",
    "POLICY_KEYS",
    "Completion",
    "GatewayError",
    "Recorder",
    "Request",
    "completion_body",
    "completion_from_record",
    "describe_difference",
    "parse_request",
    "program_cap",
    "relayed_error",
    "safe_digest",
    "served_digest",
]
