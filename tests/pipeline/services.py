"""Real services for pipeline tests: moto's S3/SQS server, Redis, Celery worker and
receiver processes, each a real process on a loopback port."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import boto3

from tests.redis_server import REDIS_PORT

ROOT = Path(__file__).resolve().parents[2]
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def worker_ready(log: Path) -> bool:
    """Celery's own "celery@host ready." line, not any text containing "ready"."""
    return re.search(r"@\S+ ready\.", log.read_text()) is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(predicate: Any, timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except Exception as exc:
            last = exc
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@contextlib.contextmanager
def process(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)


class Receiver(str):
    """The event listener's base URL; `metrics`: the URL of its metrics exporter, which
    the event listener no longer serves."""

    metrics: str


@contextlib.contextmanager
def receiver_process(env: dict[str, str], log: Path) -> Iterator[Receiver]:
    """`tfcompat serve` on a free port with its metrics exporter on another, once both
    answer: the event listener's base URL."""
    import httpx

    port, metrics_port = free_port(), free_port()
    args = cli("serve", "--port", str(port), "--metrics-port", str(metrics_port))
    with process(args, env, log):
        url = Receiver(f"http://127.0.0.1:{port}")
        url.metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=5), 60, "the receiver")
        wait_until(lambda: httpx.get(url.metrics, timeout=5), 30, "the receiver's metrics")
        yield url


@contextlib.contextmanager
def moto_server(log: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, **AWS_ENV}
    with process(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], env, log
    ):
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: s3(url).list_buckets() is not None, 30, "moto server")
        yield url


def s3(endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, **_creds())


def sqs(endpoint: str) -> Any:
    return boto3.client("sqs", endpoint_url=endpoint, **_creds())


def _creds() -> dict[str, str]:
    return {
        "region_name": "us-east-1",
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
    }


EVENTS_TOKEN = "tests-events-token"
AUTH = {"Authorization": f"Bearer {EVENTS_TOKEN}"}
"""What every test receiver asks of /events/s3 and /events/eventbridge."""
TOPIC = "arn:aws:sns:us-east-1:123456789012:tfcompat-tests"
GITHUB_SECRET = "tests-github-secret"

RECEIVER_ENV = {
    "TFCOMPAT_EVENTS_TOKEN": EVENTS_TOKEN,
    "TFCOMPAT_SNS_TOPIC_ARNS": json.dumps([TOPIC]),
    "TFCOMPAT_GITHUB_WEBHOOK_SECRET": GITHUB_SECRET,
    # Every bucket, said explicitly: tests/ingest/test_access.py covers narrow lists.
    "TFCOMPAT_BUCKETS": json.dumps(["*"]),
}
"""A receiver that starts: every route authenticates and the bucket list is set."""


def worker_env(endpoint: str, redis_db: int, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        **AWS_ENV,
        **RECEIVER_ENV,
        "TFCOMPAT_BROKER_URL": f"redis://127.0.0.1:{REDIS_PORT}/{redis_db}",
        "TFCOMPAT_S3_ENDPOINT_URL": endpoint,
        "TFCOMPAT_SQS_ENDPOINT_URL": endpoint,  # moto speaks both
        "TFCOMPAT_FLEET": str(ROOT / "config" / "fleet.yaml"),
        "TFCOMPAT_VISIBILITY_TIMEOUT": "20",
        "TFCOMPAT_LOG_FORMAT": "json",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "worker.cli", *args]


def upload_tree(
    client: Any, bucket: str, prefix: str, root: Path, tags: str | None = None
) -> list[str]:
    keys = []
    for path in sorted(root.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(root).as_posix()}"
            extra = {"Tagging": tags} if tags else {}
            client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes(), **extra)
            keys.append(key)
    return keys


def s3_event(client: Any, bucket: str, key: str, name: str = "ObjectCreated:Put") -> dict[str, Any]:
    """An S3 notification for an object as it is now, in S3's own format."""
    head = client.head_object(Bucket=bucket, Key=key)
    obj = {
        "key": quote_plus(key),
        "size": head["ContentLength"],
        "eTag": head["ETag"].strip('"'),
        "sequencer": f"{time.time_ns():X}",
    }
    if head.get("VersionId") and head["VersionId"] != "null":
        obj["versionId"] = head["VersionId"]
    return {
        "Records": [
            {
                "eventVersion": "2.1",
                "eventSource": "aws:s3",
                "awsRegion": "us-east-1",
                "eventTime": "2026-12-01T12:00:00.000Z",
                "eventName": name,
                "s3": {
                    "s3SchemaVersion": "1.0",
                    "configurationId": "tfcompat",
                    "bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
                    "object": obj,
                },
            }
        ]
    }


def tags_of(client: Any, bucket: str, key: str) -> dict[str, str]:
    return {
        t["Key"]: t["Value"] for t in client.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
    }


def wait_for_tags(client: Any, bucket: str, key: str, timeout: float = 90) -> dict[str, str]:
    return wait_until(
        lambda: (t := tags_of(client, bucket, key)).get("tfcompat:status") and t,
        timeout,
        f"tfcompat tags on s3://{bucket}/{key}",
    )  # type: ignore[no-any-return]


def report_of(client: Any, bucket: str, tags: dict[str, str]) -> dict[str, Any]:
    body = client.get_object(Bucket=bucket, Key=tags["tfcompat:report"])["Body"].read()
    return json.loads(body)  # type: ignore[no-any-return]
