"""The gateway's HTTP side: the subset of the OpenAI API chat clients use, on a loopback port.

Standard library only (``ThreadingHTTPServer`` on ``127.0.0.1:0``, so the OS picks a free port and
nothing outside the machine can connect). Routes:

* ``GET /v1/models`` and ``POST /v1/chat/completions``, with the trial named by the bearer key;
* the same under ``/t/<trial-token>/v1/...``, for clients that cannot set a key per trial.

Request bodies are capped at :data:`MAX_REQUEST_BYTES` (the competition's prompts are kilobytes; a
hostile program's 50 MB body would otherwise be held and recorded whole): a larger
``Content-Length`` is answered 413 with an OpenAI-shaped error before the body is read, and a body
without one (chunked) 411. The connection is then closed; what the client already sent is read and
dropped in small pieces (up to :data:`_DRAIN_BYTES`) so that it sees the answer instead of a reset.
A client that asks ``Expect: 100-continue`` gets the refusal before it sends anything. Each
refusal is reported to ``on_reject`` (the gateway logs it), never with the body.

Bodies are ASCII JSON (``\\uXXXX`` escapes carry any text, lone surrogates of a hostile reply
included). Answers are written in one buffered flush with Nagle's algorithm off: a chat exchange is two
small writes, and on loopback a delayed ACK between them would cost tens of milliseconds.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from worldforge.gateway.records import ErrorBody

#: ``handler(method, path, token, body) -> (status, json_value, headers)``; body is ``None`` for
#: GET; ``headers`` are extra answer headers (a relayed 429's ``Retry-After``).
Dispatch = Callable[[str, str, str | None, object], tuple[int, object, Mapping[str, str]]]
#: ``on_reject(token, path, status, declared_length)``: a request refused before its body was read.
OnReject = Callable[[str | None, str, int, int | None], None]
#: The largest request body read (1 MiB: a whole multi-turn competition conversation is well under).
MAX_REQUEST_BYTES = 1024 * 1024
#: What is read and dropped after a refusal before the connection closes, and for how long at most.
_DRAIN_BYTES = 64 * 1024 * 1024
_DRAIN_SECONDS = 5.0
_CHUNK = 64 * 1024


class _LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up mid-answer (a killed trial) is expected, not an error."""
        return


def split_route(path: str) -> tuple[str | None, str]:
    """``/t/<token>/v1/models`` → ``("<token>", "/v1/models")``; other paths keep no token."""
    clean = path.split("?", 1)[0]
    if clean.startswith("/t/"):
        token, sep, rest = clean[3:].partition("/")
        if token and sep:
            return token, "/" + rest
        return token or None, "/"
    return None, clean


def _bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def _handler(dispatch: Dispatch, on_reject: OnReject | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "worldforge-gateway"
        sys_version = ""
        wbufsize = 1 << 16
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            return

        def _answer(
            self, status: int, value: object, headers: Mapping[str, str] | None = None, *, close: bool = False
        ) -> None:
            body = json.dumps(value, separators=(",", ":")).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, text in (headers or {}).items():
                self.send_header(name, text)
            if close:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            if close:
                self.wfile.flush()

        def _token(self) -> tuple[str | None, str]:
            token, path = split_route(self.path)
            return token or _bearer(self.headers.get("Authorization")), path

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            token, path = self._token()
            self._answer(*dispatch("GET", path, token, None))

        def _length(self) -> int | None:
            """The declared body length; ``None`` when there is none (or a chunked body), -1 if bad."""
            if self.headers.get("Transfer-Encoding"):
                return None
            value = self.headers.get("Content-Length")
            if value is None:
                return 0
            try:
                length = int(value)
            except ValueError:
                return -1
            return length if length >= 0 else -1

        def _refuse(self, length: int | None, *, drain: bool) -> None:
            """Answer a body that will not be read (413, 411 or 400), then close the connection."""
            token, path = self._token()
            if length is None:
                status, kind, message = 411, "length_required", "a Content-Length is required."
            elif length < 0:
                status, kind, message = 400, "invalid_request_error", "the Content-Length is not valid."
            else:
                status, kind = 413, "request_too_large"
                message = f"the request body is {length} bytes; the limit is {MAX_REQUEST_BYTES} bytes."
            self.close_connection = True
            body = _error("invalid_request_error", message)
            body["error"]["code"] = kind
            self._answer(status, body, close=True)
            if on_reject is not None:
                on_reject(token, path, status, length if length is not None and length >= 0 else None)
            if drain:
                self._drain(length)

        def _drain(self, length: int | None) -> None:
            """Read and drop what the client is still sending (bounded), so it reads the answer."""
            budget = _DRAIN_BYTES if length is None or length < 0 else min(length, _DRAIN_BYTES)
            deadline = time.monotonic() + _DRAIN_SECONDS
            try:
                while budget > 0 and (left := deadline - time.monotonic()) > 0:
                    self.connection.settimeout(left)
                    chunk = self.rfile.read1(min(_CHUNK, budget))
                    if not chunk:
                        break
                    budget -= len(chunk)
            except OSError:
                pass

        def handle_expect_100(self) -> bool:
            """Refuse an oversized body before the client sends it."""
            length = self._length()
            if length is None or not 0 <= length <= MAX_REQUEST_BYTES:
                self._refuse(length, drain=False)
                return False
            return super().handle_expect_100()

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            token, path = self._token()
            length = self._length()
            if length is None or not 0 <= length <= MAX_REQUEST_BYTES:
                self._refuse(length, drain=True)
                return
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                self._answer(400, _error("invalid_request_error", "the request body is not JSON."))
                return
            self._answer(*dispatch("POST", path, token, body))

    return Handler


def _error(kind: str, message: str) -> ErrorBody:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


class LoopbackServer:
    """A started HTTP server on ``127.0.0.1`` serving ``dispatch`` until :meth:`close`."""

    def __init__(self, dispatch: Dispatch, on_reject: OnReject | None = None) -> None:
        self._server = _LoopbackServer(("127.0.0.1", 0), _handler(dispatch, on_reject))
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="worldforge-gateway",
            daemon=True,
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


__all__ = ["MAX_REQUEST_BYTES", "Dispatch", "LoopbackServer", "OnReject", "split_route"]
