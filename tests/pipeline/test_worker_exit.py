"""A worker that cannot work exits non-zero, so a supervisor that restarts failures
(Kubernetes, systemd `Restart=on-failure`, compose `on-failure`) restarts it."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from tests.pipeline.conftest import _redis_ready
from tests.pipeline.services import cli, process, wait_until, worker_env, worker_ready

pytestmark = pytest.mark.services
DB = 4


def test_a_worker_whose_pool_cannot_start_exits_non_zero(endpoint: str, logs: Path) -> None:
    _redis_ready(DB)
    log = logs / "dying-pool-worker.log"
    args = [sys.executable, "-m", "tests.pipeline.dying_pool", "worker", "--concurrency", "1"]
    with process([*args, "--hostname", "dying@%h"], worker_env(endpoint, DB), log) as worker:
        status = worker.wait(120)
    assert "Could not start worker processes" in log.read_text()
    assert status != 0


def test_a_worker_stopped_with_sigterm_exits_zero(endpoint: str, logs: Path) -> None:
    _redis_ready(DB)
    log = logs / "stopped-worker.log"
    command = cli("worker", "--concurrency", "1", "--hostname", "stopped@%h")
    with process(command, worker_env(endpoint, DB), log) as worker:
        wait_until(lambda: worker_ready(log), 60, "the worker")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
