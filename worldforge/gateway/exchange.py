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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from worldforge.core.digests import digest_payload
from worldforge.core.errors import WorldForgeError
from worldforge.core.redact import sanitize_value

#: Error types the gateway answers with; each maps to an HTTP status and a client-side exception.
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "model_not_found": 404,
    "not_recorded": 409,
    "trial_limit": 429,
    # recorded for a request still unanswered when its trial ended (killed at its time limit):
    # the trial never saw an answer; a replay answers that request with this error
    "trial_ended": 504,
    "provider_error": 502,
}
#: Request keys the gateway reads; any other key a program sends is recorded, never forwarded.
REQUEST_KEYS = ("model", "messages", "n")
#: Sampling parameters the run's policy owns (a program's own values are ignored).
POLICY_KEYS = ("seed", "temperature")
_MEMO_LIMIT = 20_000


class GatewayError(Exception):
    """A request the gateway answers with an OpenAI-shaped error (``type`` picks the status)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind if kind in ERROR_STATUS else "provider_error"
        self.message = message

    @property
    def status(self) -> int:
        return ERROR_STATUS[self.kind]

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": None, "code": self.kind}}


@dataclass(frozen=True)
class Completion:
    """What answered one request: the choices' texts, usage counts, served model, finish reason."""

    texts: list[str]
    prompt_tokens: int
    completion_tokens: int
    model: str
    finish_reason: str | None = "stop"

    def raw(self) -> dict[str, Any]:
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
    client_params: dict[str, Any] = field(default_factory=dict)

    def raw(self) -> dict[str, Any]:
        """What the request digest covers (client-only parameters excluded: never forwarded)."""
        return {
            "model": self.model,
            "messages": self.messages,
            "n": self.n,
            "seed": self.seed,
            "temperature": self.temperature,
        }

    @property
    def digest(self) -> str:
        return safe_digest(self.raw())


def _escape(value: Any) -> Any:
    """Strings that UTF-8 cannot encode (lone surrogates) with the offending bytes escaped."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "backslashreplace")
        return value
    if isinstance(value, list):
        return [_escape(v) for v in value]
    if isinstance(value, dict):
        return {k: _escape(v) for k, v in value.items()}
    return value


def safe_digest(value: Any) -> str:
    """``digest_payload``, with unencodable characters escaped first (a hostile reply may hold them)."""
    try:
        return digest_payload(value)
    except WorldForgeError:
        return digest_payload(_escape(value))


def parse_request(
    body: Any,
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
    return Request(model, clean, n, seed, temperature, extra)


class Recorder:
    """Builds exchange dicts; shares the sanitized form of strings that repeat across exchanges
    (the same prompt goes out for every trial of a letter, and each turn resends the earlier ones)."""

    def __init__(self) -> None:
        self._memo: dict[str, str] = {}

    def clean(self, value: Any) -> Any:
        """Sanitized and JSON-safe: what may be written to a record or an event."""
        if len(self._memo) > _MEMO_LIMIT:
            self._memo.clear()
        return _escape(sanitize_value(value, memo=self._memo))

    def exchange(
        self, request: Request, completion: Completion | None, error: GatewayError | None
    ) -> dict[str, Any]:
        """The recorded form of one exchange (JSON-native, sanitized, no timing)."""
        record: dict[str, Any] = {
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
            shown = self.clean(raw)
            record["response"] = shown
            record["response_digest"] = safe_digest(raw)
            if shown["choices"] != raw["choices"]:
                record["altered"] = True
        if error is not None:
            record["error"] = {"type": error.kind, "message": self.clean(error.message)}
        return record


def completion_body(completion: Completion, request_digest: str) -> dict[str, Any]:
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


def completion_from_record(exchange: Mapping[str, Any]) -> Completion:
    """The completion a recorded exchange holds (its texts as recorded)."""
    response = exchange["response"]
    usage = response.get("usage") or {}
    return Completion(
        texts=[str(t) for t in response.get("choices") or []],
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        model=str(response.get("model") or exchange["request"]["model"]),
        finish_reason=response.get("finish_reason"),
    )


def describe_difference(recorded: Mapping[str, Any] | None, request: Request, recorder: Recorder) -> str:
    """Name the first field in which ``request`` differs from the exchange recorded at its position."""
    if recorded is None:
        return "no exchange was recorded at this position"
    was = recorded.get("request") or {}
    for key in ("model", "n", "seed", "temperature"):
        now = getattr(request, key)
        if was.get(key) != now:
            return f"{key} differs (recorded {was.get(key)!r}, now {now!r})"
    old: Sequence[Any] = was.get("messages") or []
    new = recorder.clean(request.messages)
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
    "ERROR_STATUS",
    "POLICY_KEYS",
    "Completion",
    "GatewayError",
    "Recorder",
    "Request",
    "completion_body",
    "completion_from_record",
    "describe_difference",
    "parse_request",
    "safe_digest",
]
