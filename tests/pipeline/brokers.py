"""Brokers the fault tests may restart: a Redis of their own (AOF, as we ship it) on a
free port, and a RabbitMQ virtual host of their own on the machine's RabbitMQ
(`TFCOMPAT_TEST_RABBITMQ_VHOST`, default tfcompat-delivery; one these tests add is
deleted when the test process ends, as `tools/services.sh rabbitmq-remove` does after
`make test`)."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.pipeline.services import free_port, wait_until

RABBITMQ_VHOST = os.environ.get("TFCOMPAT_TEST_RABBITMQ_VHOST", "tfcompat-delivery")
RABBITMQ_URL = f"amqp://guest:guest@127.0.0.1:5672/{RABBITMQ_VHOST}"


class RedisServer:
    """redis-server with AOF and `appendfsync always` (infra/compose.yaml's settings) in
    a directory of its own; `kill()` is SIGKILL, `start()` starts it again on its data."""

    def __init__(self, directory: Path) -> None:
        if shutil.which("redis-server") is None:
            pytest.fail("redis-server is not installed (tools/services.sh installs it)")
        self.directory = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def start(self) -> None:
        args = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port)]
        args += ["--dir", str(self.directory), "--save", "", "--appendonly", "yes"]
        args += ["--appendfsync", "always", "--logfile", str(self.directory / "redis.log")]
        self.proc = subprocess.Popen(args, start_new_session=True)
        wait_until(lambda: self.client().ping(), 30, f"redis-server on {self.port}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def pause(self) -> None:
        """The process stops answering but its port still accepts: a hung broker."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@contextlib.contextmanager
def redis_server(directory: Path) -> Iterator[RedisServer]:
    server = RedisServer(directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def rabbitmqctl(*args: str, timeout: float = 120) -> str:
    return subprocess.run(
        ["rabbitmqctl", *args], check=True, capture_output=True, text=True, timeout=timeout
    ).stdout


def _empty_queue() -> bool:
    """Connect to our virtual host and delete our queue; False if the host refuses us."""
    from kombu import Connection

    try:
        with Connection(RABBITMQ_URL, connect_timeout=5) as connection:
            connection.ensure_connection(max_retries=1)
            connection.default_channel.queue_delete("tfcompat")
    except Exception:
        return False
    return True


def rabbitmq_vhost() -> str:
    """Our own, empty virtual host on the machine's RabbitMQ (127.0.0.1:5672): created
    when missing (tools/services.sh rabbitmq does it too), its queue deleted. Skips only
    where rabbitmqctl is not installed."""
    if shutil.which("rabbitmqctl") is None:
        pytest.skip("rabbitmqctl is not installed: no RabbitMQ on this machine")
    if _empty_queue():
        return RABBITMQ_URL
    rabbitmq_started()
    if RABBITMQ_VHOST not in rabbitmqctl("list_vhosts", "--quiet").split():
        rabbitmqctl("add_vhost", RABBITMQ_VHOST)
        atexit.register(_delete_vhost)  # added here: the machine's broker keeps nothing
    rabbitmqctl("set_permissions", "-p", RABBITMQ_VHOST, "guest", ".*", ".*", ".*")
    assert _empty_queue(), f"cannot use {RABBITMQ_URL}"
    return RABBITMQ_URL


def _delete_vhost() -> None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        rabbitmqctl("delete_vhost", RABBITMQ_VHOST, timeout=60)


def rabbitmq_started() -> None:
    """Wait until RabbitMQ's application runs (after `start_app`, or a machine start)."""
    rabbitmqctl("await_startup", timeout=180)


@contextlib.contextmanager
def rabbitmq_stopped() -> Iterator[None]:
    """RabbitMQ's application stopped (the node stays up) for the block, restarted after."""
    rabbitmqctl("stop_app")
    try:
        yield
    finally:
        rabbitmqctl("start_app")
        rabbitmq_started()
