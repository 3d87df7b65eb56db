"""Local services for the benches: moto's S3 server and a Redis, each a process on a
free loopback port, stopped on exit. Nothing leaves the machine."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not come up in {timeout}s")


@contextlib.contextmanager
def running(
    args: list[str], env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        args,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )


@contextlib.contextmanager
def moto_s3(requests: Path | None = None) -> Iterator[str]:
    """moto's standalone server (what the tests and the demo use) on a free port;
    with `requests`, every request it answers is written there (`bench/moto_requests.py`)."""
    port = free_port()
    args = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    if requests is not None:
        args = [sys.executable, str(Path(__file__).with_name("moto_requests.py"))]
        args += [str(port), str(requests)]
    with running(args, AWS_ENV):
        endpoint = f"http://127.0.0.1:{port}"
        wait_for(lambda: client(endpoint).list_buckets() is not None, 30, "moto")
        yield endpoint


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway redis-server, nothing persisted."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed")
    port = free_port()
    with running([binary, "--port", str(port), "--save", "", "--appendonly", "no"]):
        import redis

        wait_for(lambda: redis.Redis(port=port).ping(), 10, "redis-server")
        yield f"redis://127.0.0.1:{port}"


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
