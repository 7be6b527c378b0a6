"""The gateway's HTTP side: the subset of the OpenAI API chat clients use, on a loopback port.

Standard library only (``ThreadingHTTPServer`` on ``127.0.0.1:0``, so the OS picks a free port and
nothing outside the machine can connect). Routes:

* ``GET /v1/models`` and ``POST /v1/chat/completions``, with the trial named by the bearer key;
* the same under ``/t/<trial-token>/v1/...``, for clients that cannot set a key per trial.

Bodies are ASCII JSON (``\\uXXXX`` escapes carry any text, lone surrogates of a hostile reply
included). Answers are written in one buffered flush with Nagle's algorithm off: a chat exchange is two
small writes, and on loopback a delayed ACK between them would cost tens of milliseconds.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: ``handler(method, path, token, body) -> (status, json_value)``; body is ``None`` for GET.
Dispatch = Callable[[str, str, str | None, Any], tuple[int, Any]]
_MAX_BODY = 64 * 1024 * 1024


class _LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
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


def _handler(dispatch: Dispatch) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "worldforge-gateway"
        sys_version = ""
        wbufsize = 1 << 16
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            return

        def _answer(self, status: int, value: Any) -> None:
            body = json.dumps(value, separators=(",", ":")).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _token(self) -> tuple[str | None, str]:
            token, path = split_route(self.path)
            return token or _bearer(self.headers.get("Authorization")), path

        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            token, path = self._token()
            self._answer(*dispatch("GET", path, token, None))

        def do_POST(self) -> None:  # noqa: N802 - stdlib naming
            token, path = self._token()
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if not 0 <= length <= _MAX_BODY:
                self.close_connection = True
                self._answer(400, _error("invalid_request_error", "a Content-Length is required."))
                return
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                self._answer(400, _error("invalid_request_error", "the request body is not JSON."))
                return
            self._answer(*dispatch("POST", path, token, body))

    return Handler


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


class LoopbackServer:
    """A started HTTP server on ``127.0.0.1`` serving ``dispatch`` until :meth:`close`."""

    def __init__(self, dispatch: Dispatch) -> None:
        self._server = _LoopbackServer(("127.0.0.1", 0), _handler(dispatch))
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


__all__ = ["Dispatch", "LoopbackServer", "split_route"]
