"""The worker's Prometheus exporter: one scrape endpoint for all of Celery's processes.

Celery's prefork pool runs tasks in child processes, which come and go
(`--max-tasks-per-child`, a crashed child is replaced), and only one process
can own the port. So the children write their counters and histograms to
memory-mapped files in one directory (prometheus_client's multiprocess mode),
and the parent process serves the sum of them. A counter of a child that
exited stays in its file, so totals never go backwards while the worker runs.

prometheus_client decides between in-process and file-backed values when a
metric is created, from `PROMETHEUS_MULTIPROC_DIR`: `use_multiprocess_dir` must
run before `worker.metrics` is imported, which `tfcompat worker` guarantees by
calling it first.

Every process's exporter (`tfcompat worker`, `serve`, `sqs-bridge`) listens on
`TFCOMPAT_METRICS_PORT`, never on the receiver's listeners; with
`TFCOMPAT_METRICS_TOKEN` set it answers only `Authorization: Bearer <token>` (401
otherwise), compared in constant time.
"""

from __future__ import annotations

import hmac
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from worker.errors import ConfigError

ENV = "PROMETHEUS_MULTIPROC_DIR"


def use_multiprocess_dir(directory: str | None) -> str:
    """Point prometheus_client at `directory` (a new temporary one if None), emptied of
    the metric files an earlier run left, and return it."""
    if "worker.metrics" in sys.modules:
        raise ConfigError(
            "worker metrics must be set up before worker.metrics is imported "
            "(prometheus_client fixes the value store when a metric is created)"
        )
    path = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="tfcompat-metrics-"))
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()
    os.environ[ENV] = str(path)
    return str(path)


def start_exporter(
    port: int, directory: str | None, host: str = "0.0.0.0", token: str | None = None
) -> Any:
    """Serve on host:port (any path answers, /metrics included), from a daemon thread of
    this process: the merged metrics of every process writing to `directory`, or this
    process's own (None: one process is the whole story). With `token`, only a request
    bearing it is answered."""
    from prometheus_client import REGISTRY, CollectorRegistry, multiprocess

    registry = REGISTRY
    if directory is not None:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    try:
        return serve_metrics(port, host, registry, token)
    except OSError as exc:
        raise ConfigError(f"metrics: cannot listen on {host}:{port} ({exc})") from None


def bearer_only(app: Any, token: str) -> Any:
    """The WSGI `app` behind `Authorization: Bearer <token>`."""
    expected = f"Bearer {token}".encode()

    def guarded(environ: dict[str, Any], start_response: Any) -> Any:
        given = str(environ.get("HTTP_AUTHORIZATION", "")).encode()
        if hmac.compare_digest(given, expected):
            return app(environ, start_response)
        start_response(
            "401 Unauthorized",
            [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Bearer realm="metrics"')],
        )
        return [b"metrics need Authorization: Bearer <TFCOMPAT_METRICS_TOKEN>\n"]

    return guarded


def serve_metrics(port: int, host: str, registry: Any, token: str | None) -> Any:
    """prometheus_client's own server (threads, gzip), with the bearer check in front."""
    from wsgiref.simple_server import make_server

    from prometheus_client import make_wsgi_app
    from prometheus_client.exposition import ThreadingWSGIServer, _SilentHandler

    app = make_wsgi_app(registry)
    if token:
        app = bearer_only(app, token)
    server = make_server(host, port, app, ThreadingWSGIServer, handler_class=_SilentHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server
