"""A loopback server that speaks the subset of Ollama's HTTP API the official client uses.

Only the standard library: ``ThreadingHTTPServer`` bound to ``127.0.0.1:0`` (a free port). It
implements ``POST /api/chat`` and ``POST /api/generate`` (streaming NDJSON and single JSON),
``GET /api/tags``, ``POST /api/show``, ``GET /api/version`` and ``GET /``, with Ollama's error
shape (``{"error": "..."}`` and 404 for unknown models). Tests script its behaviour:

* ``reply``: a callable ``(request_json) -> str`` producing the assistant text;
* ``fail_next``: a list of HTTP status codes, or ``(status, message)``, returned with an error body
  (``{"error": message}``, by default ``stub failure <status>``) by the next calls;
* ``delay_s``: sleep before answering (to trigger client timeouts);
* ``tokens``: ``(prompt_eval_count, eval_count)`` reported per call;
* ``requests``: every request body received, in order, for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_DIGEST = "a" * 64


class _QuietServer(ThreadingHTTPServer):
    """Clients that time out close their socket mid-answer; that is expected, not an error."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        return


def _default_reply(request: dict[str, Any]) -> str:
    messages = request.get("messages") or [{"content": request.get("prompt", "")}]
    return f"echo: {messages[-1].get('content', '')}"


class OllamaStub:
    """Start with ``with OllamaStub(models=["qwen2.5:latest"]) as stub: stub.host``."""

    def __init__(self, models: list[str] | None = None) -> None:
        self.models = list(models or ["qwen2.5:latest"])
        self.reply: Callable[[dict[str, Any]], str] = _default_reply
        self.fail_next: list[int | tuple[int, str]] = []
        self.delay_s = 0.0
        self.tokens: tuple[int, int] = (10, 20)
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OllamaStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _known(self, name: str) -> bool:
        return name in self.models or f"{name}:latest" in self.models

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                return

            def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, value: Any) -> None:
                self._send(status, json.dumps(value).encode("utf-8"))

            def _body(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                data = json.loads(raw or b"{}")
                return data if isinstance(data, dict) else {}

            def _gate(self, body: dict[str, Any] | None) -> bool:
                with stub._lock:
                    stub.paths.append(self.path)
                    if body is not None:
                        stub.requests.append(body)
                    failure = stub.fail_next.pop(0) if stub.fail_next else None
                if stub.delay_s:
                    time.sleep(stub.delay_s)
                if failure is not None:
                    status, message = failure if isinstance(failure, tuple) else (failure, None)
                    self._json(status, {"error": message or f"stub failure {status}"})
                    return False
                return True

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                if not self._gate(None):
                    return
                if self.path == "/":
                    self._send(200, b"Ollama is running", "text/plain")
                elif self.path == "/api/version":
                    self._json(200, {"version": "0.0.0-stub"})
                elif self.path == "/api/tags":
                    models = [
                        {
                            "name": name,
                            "model": name,
                            "modified_at": "2026-01-01T00:00:00Z",
                            "size": 1234,
                            "digest": MODEL_DIGEST if i == 0 else f"{i:064x}",
                            "details": {
                                "format": "gguf",
                                "family": "stub",
                                "families": ["stub"],
                                "parameter_size": "1B",
                                "quantization_level": "Q4_0",
                            },
                        }
                        for i, name in enumerate(stub.models)
                    ]
                    self._json(200, {"models": models})
                else:
                    self._json(404, {"error": f"unknown path {self.path}"})

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                body = self._body()
                if not self._gate(body):
                    return
                model = str(body.get("model", ""))
                if self.path in {"/api/chat", "/api/generate", "/api/show"} and not stub._known(model):
                    self._json(404, {"error": f"model '{model}' not found"})
                    return
                if self.path == "/api/show":
                    self._json(
                        200,
                        {
                            "modelfile": "FROM stub",
                            "parameters": "temperature 0.8",
                            "template": "{{ .Prompt }}",
                            "details": {
                                "format": "gguf",
                                "family": "stub",
                                "parameter_size": "1B",
                                "quantization_level": "Q4_0",
                            },
                            "model_info": {"general.architecture": "stub"},
                            "capabilities": ["completion"],
                            "modified_at": "2026-01-01T00:00:00Z",
                        },
                    )
                    return
                if self.path not in {"/api/chat", "/api/generate"}:
                    self._json(404, {"error": f"unknown path {self.path}"})
                    return
                text = stub.reply(body)
                prompt_tokens, completion_tokens = stub.tokens
                stats = {
                    "done": True,
                    "done_reason": "stop",
                    "total_duration": 1000,
                    "load_duration": 1,
                    "prompt_eval_count": prompt_tokens,
                    "prompt_eval_duration": 1,
                    "eval_count": completion_tokens,
                    "eval_duration": 1,
                }
                key_chat = self.path == "/api/chat"

                def piece(content: str, done: bool) -> dict[str, Any]:
                    base: dict[str, Any] = {"model": model, "created_at": "2026-01-01T00:00:00Z"}
                    if key_chat:
                        base["message"] = {"role": "assistant", "content": content}
                    else:
                        base["response"] = content
                    if done:
                        base.update(stats)
                    else:
                        base["done"] = False
                    return base

                if body.get("stream"):
                    chunks = [text[i : i + 7] for i in range(0, len(text), 7)]
                    lines = [json.dumps(piece(c, False)) for c in chunks] + [json.dumps(piece("", True))]
                    self._send(200, ("\n".join(lines) + "\n").encode("utf-8"), "application/x-ndjson")
                else:
                    self._json(200, piece(text, True))

        return Handler


__all__ = ["MODEL_DIGEST", "OllamaStub"]
