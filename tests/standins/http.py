"""A loopback HTTP server that records every request and answers through a function:
the base of the Slack and GitHub stand-ins."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float = field(default_factory=time.monotonic)
    client_port: int = 0  # the sender's own port: which process sent it

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


DROP = 0
"""A Reply status: close the connection without answering."""


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # bytes/str as is, anything else as JSON
    headers: dict[str, str] = field(default_factory=dict)


Answer = Callable[[Request], Reply]


class RecordingServer:
    """`with RecordingServer(answer) as server:` serves on server.url until the block ends."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = urlsplit(self.path)
                request = Request(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    client_port=int(self.client_address[1]),
                )
                with server.lock:
                    server.requests.append(request)
                try:
                    reply = server.answer(request)
                except Exception as exc:  # the stand-in's own failure: make it loud
                    reply = Reply(500, {"stand_in_error": repr(exc)})
                if reply.status == DROP:
                    self.close_connection = True
                    return
                payload = (
                    reply.body
                    if isinstance(reply.body, bytes)
                    else reply.body.encode()
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json; charset=utf-8", **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def seen(self, method: str | None = None, path: str | None = None) -> list[Request]:
        with self.lock:
            return [
                r
                for r in self.requests
                if (method is None or r.method == method) and (path is None or r.path == path)
            ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
