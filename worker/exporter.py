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
"""

from __future__ import annotations

import os
import sys
import tempfile
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


def start_exporter(port: int, directory: str, host: str = "0.0.0.0") -> Any:
    """Serve the merged metrics of every process writing to `directory` on host:port
    (any path answers, /metrics included), from a daemon thread of this process."""
    from prometheus_client import CollectorRegistry, multiprocess, start_http_server

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    try:
        return start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ConfigError(f"worker metrics: cannot listen on {host}:{port} ({exc})") from None
