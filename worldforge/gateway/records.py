"""The typed shapes of what the gateway records and answers.

An exchange record (:class:`ExchangeRecord`) is what :meth:`~worldforge.gateway.exchange.Recorder.exchange`
builds: it lands in the trial's list (which the item record carries), in the ``gateway.exchange``
event and, through a recorded run, in a replay. Its strings went through the project's sanitizer,
so the parts a program chose freely (``client_params``, an error's ``message``) are open JSON; the
rest keeps the shape the gateway gave it. A record read back from a file is open JSON again and is
narrowed where it is read (:mod:`worldforge.gateway.replay`).

The answers (:class:`ChatCompletion`, :class:`ErrorBody`) are the OpenAI objects a program gets.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from worldforge.core.canonical import JSONObject


class TokenUsage(TypedDict):
    """What one answer cost, as a server reports it."""

    prompt_tokens: int
    completion_tokens: int


class RawRequest(TypedDict):
    """:meth:`Request.raw`: what the request digest covers (the program's cap only when it set one)."""

    model: str
    messages: list[dict[str, str]]
    n: int
    seed: int | None
    temperature: float | None
    max_tokens: NotRequired[int]


class RawResponse(TypedDict):
    """:meth:`Completion.raw`: the answer as digested (raw texts); recorded sanitized and bounded."""

    choices: list[str]
    usage: TokenUsage
    model: str
    finish_reason: str | None


class ExchangeRequest(TypedDict):
    """The request of an exchange record: the forwarded fields, plus what the program sent that
    the gateway did not forward (``client_params``, only when there was any)."""

    model: str
    messages: list[dict[str, str]]
    n: int
    seed: int | None
    temperature: float | None
    client_params: NotRequired[JSONObject]


class ExchangeError(TypedDict):
    """An exchange's error: the gateway's own (``type`` and ``message``) or a model server's
    relayed refusal, which also keeps its status, ``param`` and ``code``."""

    type: str
    message: str
    upstream_status: NotRequired[int]
    param: NotRequired[str | int | None]
    code: NotRequired[str | int | None]


class ExchangeRecord(TypedDict):
    """One exchange as recorded: the request and its digest, then the response and its digest (an
    answer), ``altered`` (a recorded answer that differs from what the model sent), ``error``."""

    request: ExchangeRequest
    request_digest: str
    response: NotRequired[RawResponse]
    response_digest: NotRequired[str]
    altered: NotRequired[bool]
    error: NotRequired[ExchangeError]


class ErrorDetail(TypedDict):
    """The ``error`` member of an OpenAI-shaped error body."""

    message: str
    type: str
    param: str | int | None
    code: str | int | None


class ErrorBody(TypedDict):
    """An OpenAI-shaped error answer."""

    error: ErrorDetail


class ChatMessage(TypedDict):
    """The message of one answered choice."""

    role: str
    content: str


class ChatChoice(TypedDict):
    """One choice of a :class:`ChatCompletion`."""

    index: int
    message: ChatMessage
    finish_reason: str | None
    logprobs: None


class CompletionUsage(TokenUsage):
    """A :class:`ChatCompletion`'s usage: the two counts and their sum."""

    total_tokens: int


class ChatCompletion(TypedDict):
    """The OpenAI ``chat.completion`` object the gateway answers with (no clock, no random ids)."""

    id: str
    object: str
    created: int
    model: str
    system_fingerprint: None
    choices: list[ChatChoice]
    usage: CompletionUsage


class ModelEntry(TypedDict):
    """One model of a :class:`ModelList` (``GET /v1/models``)."""

    id: str
    object: str
    created: int
    owned_by: str


class ModelList(TypedDict):
    """The answer to ``GET /v1/models``: the trial's model (every model without a trial)."""

    object: str
    data: list[ModelEntry]


#: Every body the gateway answers with.
GatewayAnswer = ChatCompletion | ErrorBody | ModelList


__all__ = [
    "ChatChoice",
    "ChatCompletion",
    "ChatMessage",
    "CompletionUsage",
    "ErrorBody",
    "ErrorDetail",
    "GatewayAnswer",
    "ExchangeError",
    "ExchangeRecord",
    "ExchangeRequest",
    "ModelEntry",
    "ModelList",
    "RawRequest",
    "RawResponse",
    "TokenUsage",
]
