"""Local services for the benches: an S3 server (moto's, or s3rver for runs too large
for moto's memory) and a Redis, each a process on a free loopback port, stopped on
exit. Nothing leaves the machine."""

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
# s3rver (Node.js) keeps objects as files, so 100,000 models fit where moto's server,
# holding every object and report in memory, ran out (21 GB); it also spends about 0.8
# ms of CPU per request against moto's 1.9 (measured side by side: PUT object, GET and
# PUT tagging). Pinned: the version the fleet figures were measured with; it checks
# signatures against its one built-in account, hence these credentials.
S3RVER = "s3rver@3.7.1"
S3RVER_ENV = {
    "AWS_ACCESS_KEY_ID": "S3RVER",
    "AWS_SECRET_ACCESS_KEY": "S3RVER",
    "AWS_DEFAULT_REGION": "us-east-1",
}
S3RVER_HOME = Path(__file__).resolve().parents[1] / ".cache" / "s3rver"


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


def client(endpoint: str, env: dict[str, str] = AWS_ENV) -> Any:
    """The benches' own S3 client: patient (s3rver took over a minute to delete 1,000
    keys at once while it held 100,000 objects)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=env["AWS_DEFAULT_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        config=Config(read_timeout=600, retries={"max_attempts": 5, "mode": "standard"}),
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


def s3rver_binary() -> Path:
    """s3rver's command, installed with npm under the git-ignored .cache/ on first use."""
    binary = S3RVER_HOME / "node_modules" / ".bin" / "s3rver"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(f"--s3 s3rver needs Node.js and npm (to install {S3RVER})")
    print(f"installing {S3RVER} under {S3RVER_HOME} ...", flush=True)
    S3RVER_HOME.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [npm, "install", "--prefix", str(S3RVER_HOME), "--no-audit", "--no-fund", S3RVER],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return binary


@contextlib.contextmanager
def s3rver(data: Path) -> Iterator[str]:
    """s3rver on a free port, its objects (and their tags) as files under `data`."""
    port = free_port()
    args = [str(s3rver_binary()), "-d", str(data), "-a", "127.0.0.1", "-p", str(port)]
    with running([*args, "--silent", "--no-vhost-buckets"]):
        endpoint = f"http://127.0.0.1:{port}"
        wait_for(lambda: client(endpoint, S3RVER_ENV).list_buckets() is not None, 30, "s3rver")
        yield endpoint


@contextlib.contextmanager
def s3_server(kind: str, data: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """`kind` "moto" or "s3rver": its endpoint and the credentials it accepts."""
    if kind == "s3rver":
        with s3rver(data) as endpoint:
            yield endpoint, S3RVER_ENV
    else:
        with moto_s3() as endpoint:
            yield endpoint, AWS_ENV


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
