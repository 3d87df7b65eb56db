"""A loopback HTTP proxy in front of the S3 endpoint that can slow down or fail
requests: an object store having a bad minute, for the resilience tests."""

from __future__ import annotations

import http.client
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse


class FaultyProxy:
    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        self.upstream = (target.hostname or "127.0.0.1", target.port or 80)
        self.fail_next = 0  # answer 503 to this many object reads
        self.delay = 0.0  # seconds before answering each object read
        self.failed = 0
        self.lock = threading.Lock()
        # Requests for which hold(method, path) is true wait (held is set) until release is.
        self.hold: Any = None
        self.held = threading.Event()
        self.release = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.hold is not None and proxy.hold(self.command, self.path):
                    proxy.held.set()
                    proxy.release.wait(60)
                is_object_read = (
                    self.command in ("GET", "HEAD")
                    and "/tfcompat-reports/" not in self.path
                    and self.path.count("/") >= 2
                    and "tagging" not in self.path
                )
                if is_object_read:
                    with proxy.lock:
                        fail = proxy.fail_next > 0
                        if fail:
                            proxy.fail_next -= 1
                            proxy.failed += 1
                    if fail:
                        payload = b"<Error><Code>ServiceUnavailable</Code></Error>"
                        self.send_response(503)
                        self.send_header("Content-Length", str(len(payload)))
                        self.end_headers()
                        self.wfile.write(payload)
                        return
                    time.sleep(proxy.delay)
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = f"{proxy.upstream[0]}:{proxy.upstream[1]}"
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultyProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
