"""tools/services.sh: the tests' Redis is the one TFCOMPAT_TEST_REDIS_PORT names, never a
stranger's port, and the RabbitMQ virtual host it adds is said and removed again."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.redis_server import REDIS_PORT

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "services.sh"
pytestmark = pytest.mark.services


def services(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
        timeout=180,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def not_a_redis() -> Iterator[int]:
    """A port where something answers, but not as a Redis (an HTTP-ish server)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def answer() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(5)
    server.close()


def test_the_redis_on_the_named_port_is_used_and_named(tmp_path: Path) -> None:
    done = services("redis", cwd=tmp_path, TFCOMPAT_TEST_REDIS_PORT=str(REDIS_PORT))
    assert done.returncode == 0, done.stderr
    assert f"the tests use the Redis answering on 127.0.0.1:{REDIS_PORT}" in done.stderr
    assert not (tmp_path / "var").exists()  # nothing started


def test_a_port_where_something_else_answers_is_refused(tmp_path: Path, not_a_redis: int) -> None:
    done = services("redis", cwd=tmp_path, TFCOMPAT_TEST_REDIS_PORT=str(not_a_redis))
    assert done.returncode == 1
    assert f"127.0.0.1:{not_a_redis} answers, but not as a Redis" in done.stderr
    assert "TFCOMPAT_TEST_REDIS_PORT" in done.stderr


def test_a_free_named_port_gets_a_redis_of_its_own(tmp_path: Path) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    done = services("redis", cwd=tmp_path, TFCOMPAT_TEST_REDIS_PORT=str(port))
    try:
        assert done.returncode == 0, done.stderr
        assert f"started redis-server on 127.0.0.1:{port}" in done.stderr
        assert redis.Redis(port=port).ping()
        assert (tmp_path / "var" / f"redis-{port}.log").exists()
    finally:
        if done.returncode == 0:
            redis.Redis(port=port).shutdown(nosave=True)


def test_the_rabbitmq_virtual_host_added_is_said_and_removed(tmp_path: Path) -> None:
    if shutil.which("rabbitmqctl") is None:
        pytest.skip("rabbitmqctl is not installed: no RabbitMQ on this machine")
    vhost = f"tfcompat-services-test-{secrets.token_hex(4)}"

    def vhosts() -> list[str]:
        listed = subprocess.run(
            ["rabbitmqctl", "list_vhosts", "--quiet"], capture_output=True, text=True, check=True
        )
        return listed.stdout.split()

    added = services("rabbitmq", cwd=tmp_path, TFCOMPAT_TEST_RABBITMQ_VHOST=vhost)
    try:
        assert added.returncode == 0, added.stderr
        assert f"adding virtual host {vhost}" in added.stderr
        assert "rabbitmq-remove" in added.stderr
        assert vhost in vhosts()
    finally:
        removed = services("rabbitmq-remove", cwd=tmp_path, TFCOMPAT_TEST_RABBITMQ_VHOST=vhost)
    assert removed.returncode == 0, removed.stderr
    assert f"deleted the broker tests' virtual host {vhost}" in removed.stderr
    assert vhost not in vhosts()
