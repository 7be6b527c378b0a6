"""A loopback server that speaks the subset of the OpenAI HTTP API the official client uses for chat.

Only the standard library: ``ThreadingHTTPServer`` bound to ``127.0.0.1:0`` (a free port), serving
``GET /v1/models`` and ``POST /v1/chat/completions`` (``n`` choices, usage counts) with OpenAI's
error shape (``{"error": {"message", "type", "code"}}``, 404 for unknown models). Tests script it:

* ``reply``: a callable ``(request_json, choice_index) -> str`` producing the assistant text;
* ``fail_next``: a list of ``status``, ``(status, headers)`` or ``(status, headers, body)`` answered
  by the next calls (``body``: the JSON value sent as the error body, as a real server words it);
* ``delay_s``: sleep before answering (to trigger client timeouts);
* ``usage``: ``(prompt_tokens, completion_tokens)`` per call, or ``None`` to omit ``usage``;
* ``malformed``: ``"no-choices"``, ``"no-content"`` or ``"not-json"`` to answer a broken completion;
* ``api_key``: when set, a request without ``Authorization: Bearer <api_key>`` gets a 401;
* ``served_model``: the ``model`` the completions report (default: the requested name);
* ``owned_by`` and ``server_header``: what ``/v1/models`` and the ``Server`` header say;
* ``requests`` / ``paths`` / ``auth_headers``: what was received, in order, for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _QuietServer(ThreadingHTTPServer):
    """Clients that time out close their socket mid-answer; that is expected, not an error."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


def _default_reply(request: dict[str, Any], index: int) -> str:
    messages = request.get("messages") or [{}]
    suffix = f" #{index}" if index else ""
    return f"echo: {messages[-1].get('content', '')}{suffix}"


class OpenAIStub:
    """Start with ``with OpenAIStub(models=["stub-model"]) as stub: stub.base_url``."""

    def __init__(self, models: list[str] | None = None) -> None:
        self.models = list(models or ["stub-model"])
        self.reply: Callable[[dict[str, Any], int], str] = _default_reply
        self.fail_next: list[int | tuple[int, dict[str, str]] | tuple[int, dict[str, str], Any]] = []
        self.delay_s = 0.0
        self.usage: tuple[int, int] | None = (11, 7)
        self.malformed: str | None = None
        self.api_key: str | None = None
        self.served_model: str | None = None
        self.owned_by = "stub"
        self.server_header: str | None = None
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.auth_headers: list[str | None] = []
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> OpenAIStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat completions received (the preflight's one-token probe excluded)."""
        return [r for r in self.requests if "messages" in r and r.get("max_tokens") != 1]

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        n = int(body.get("n") or 1)
        choices = [
            {
                "index": i,
                "message": {"role": "assistant", "content": self.reply(body, i)},
                "finish_reason": "stop",
                "logprobs": None,
            }
            for i in range(n)
        ]
        if self.malformed == "no-choices":
            choices = []
        elif self.malformed == "no-content":
            choices = [{"index": 0, "message": {"role": "assistant"}, "finish_reason": "length"}]
        completion: dict[str, Any] = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 1_767_225_600,
            "model": self.served_model or body.get("model"),
            "system_fingerprint": "fp_stub",
            "choices": choices,
        }
        if self.usage is not None:
            prompt, completion_tokens = self.usage
            completion["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt + completion_tokens,
            }
        return completion

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                return

            def version_string(self) -> str:
                return stub.server_header or "openai-stub"

            def _json(self, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
                body = json.dumps(value).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value_ in (headers or {}).items():
                    self.send_header(name, value_)
                self.end_headers()
                self.wfile.write(body)

            def _error(
                self, status: int, message: str, code: str, headers: dict[str, str] | None = None
            ) -> None:
                error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
                self._json(status, {"error": error}, headers)

            def _gate(self, body: dict[str, Any] | None) -> bool:
                auth = self.headers.get("Authorization")
                with stub._lock:
                    stub.paths.append(self.path)
                    stub.auth_headers.append(auth)
                    if body is not None:
                        stub.requests.append(body)
                    failure = stub.fail_next.pop(0) if stub.fail_next else None
                if stub.delay_s:
                    time.sleep(stub.delay_s)
                if stub.api_key is not None and auth != f"Bearer {stub.api_key}":
                    # Real servers echo part of the key they rejected; the provider must not repeat it.
                    self._error(401, f"Incorrect API key provided: {auth}", "invalid_api_key")
                    return False
                if isinstance(failure, tuple) and len(failure) == 3:
                    self._json(failure[0], failure[2], failure[1])
                    return False
                if failure is not None:
                    status, headers = failure if isinstance(failure, tuple) else (failure, {})
                    self._error(status, f"stub failure {status}", "stub_failure", headers)
                    return False
                return True

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                if not self._gate(None):
                    return
                if self.path == "/v1/models":
                    data = [
                        {"id": name, "object": "model", "created": 1_767_225_600, "owned_by": stub.owned_by}
                        for name in stub.models
                    ]
                    self._json(200, {"object": "list", "data": data})
                else:
                    self._error(404, f"unknown path {self.path}", "not_found")

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                if not self._gate(body):
                    return
                if self.path != "/v1/chat/completions":
                    self._error(404, f"unknown path {self.path}", "not_found")
                    return
                model = str(body.get("model", ""))
                if model not in stub.models:
                    self._error(404, f"The model `{model}` does not exist.", "model_not_found")
                    return
                if stub.malformed == "not-json":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "9")
                    self.end_headers()
                    self.wfile.write(b"{not json")
                    return
                self._json(200, stub._completion(body))

        return Handler


__all__ = ["OpenAIStub"]
