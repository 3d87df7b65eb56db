"""`make demo`: the product's main job end to end on one machine, local defaults.

Starts a local S3-compatible endpoint (moto's server) whose bucket notifies an
SQS queue, the SQS bridge, a Celery worker on Redis (127.0.0.1:6379, database
9, emptied first) and the HTTP receiver; uploads real TensorFlow-written
models; waits until each carries its `tfcompat:*` tags; prints model, status,
releases and each consumer's verdict. Nobody calls a check: S3 notifies, the
bridge enqueues, the worker checks, tags and reports.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is worker/cli/demo.py)
BUCKET = "models"
REDIS_DB = 9
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "demo",
    "AWS_SECRET_ACCESS_KEY": "demo",
    "AWS_DEFAULT_REGION": "us-east-1",
}

# (what, fixture path under artifacts/, key prefix in the bucket, object to watch)
MODELS = [
    ("TF1 graph, defaults kept (2.12)", "tf2.12/savedmodel_v1", "ranking/v1", "saved_model.pb"),
    ("TF2 SavedModel (2.21)", "tf2.21/savedmodel_v2", "search/2", "saved_model.pb"),
    ("new op DecodeWebP (2.21)", "tf2.21/new_op", "vision/7", "saved_model.pb"),
    ("new attr, non-default (2.21)", "tf2.21/new_attr_nondefault", "nlp/3", "saved_model.pb"),
    ("new dtype for Xlogy (2.12)", "tf2.12/new_allowed_value", "ads/5", "saved_model.pb"),
    ("frozen graph (2.21)", "tf2.21/frozen_graph", "edge/frozen", "frozen_graph.pb"),
    ("checkpoint (2.12)", "tf2.12/checkpoint", "training/ckpt", "ckpt-1.index"),
    ("Keras 3, saved_model.save (2.21)", "tf2.21/keras3_module_save", "keras/1", "saved_model.pb"),
]


def say(text: str) -> None:
    print(text, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


FIXTURE_ROOTS = (
    ROOT.parent / "shared" / "fixtures" / "tf-real" / "artifacts",
    ROOT / "tests" / "fixtures" / "tf-real" / "artifacts",
)


def fixture_path(fixture: str) -> Path:
    """A fixture model, from the shared set when it has it, else from ours."""
    for root in FIXTURE_ROOTS:
        if (root / fixture).is_dir():
            return root / fixture
    raise SystemExit(f"demo: fixture model {fixture} not found")


def verdict_word(consumer: dict[str, Any]) -> str:
    """ok: it serves the model; FAILS: it cannot load it; REQUESTS FAIL: it loads it and
    every request fails; unknown: no op registry to tell."""
    if consumer.get("loads") is False:
        return "FAILS"
    if consumer.get("serves", consumer.get("loads")) is False:
        return "REQUESTS FAIL"
    if consumer.get("loads") is None or consumer.get("serves") is None:
        return "unknown"
    return "ok"


@contextlib.contextmanager
def started(name: str, args: list[str], env: dict[str, str], logs: Path) -> Iterator[None]:
    log = (logs / f"{name}.log").open("wb")
    proc = subprocess.Popen(
        args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True
    )
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            result = predicate()
            if result:
                return result
        time.sleep(0.3)
    raise SystemExit(f"demo: timed out waiting for {what}")


def redis_empty_db(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=3)
    try:
        client.ping()
    except redis.ConnectionError:
        raise SystemExit(
            "demo: Redis is not answering on 127.0.0.1:6379 "
            "(`make demo` starts it; or run tools/services.sh redis)"
        ) from None
    client.flushdb()


def set_up_bucket(s3: Any, sqs: Any) -> str:
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    queue = sqs.create_queue(QueueName="model-events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    s3.put_bucket_notification_configuration(
        Bucket=BUCKET,
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]
        },
    )
    return str(queue)


def upload(s3: Any, source: Path, prefix: str) -> None:
    for path in sorted(source.rglob("*")):
        if path.is_file():
            s3.put_object(
                Bucket=BUCKET,
                Key=f"{prefix}/{path.relative_to(source).as_posix()}",
                Body=path.read_bytes(),
                Tagging="team=demo",
            )


def tags(s3: Any, key: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=BUCKET, Key=key)["TagSet"]}


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m worker.cli.demo", description=__doc__)
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for results")
    args = parser.parse_args(argv)

    import boto3

    logs = Path(tempfile.mkdtemp(prefix="tfcompat-demo-"))
    endpoint = f"http://127.0.0.1:{free_port()}"
    broker = f"redis://127.0.0.1:6379/{REDIS_DB}"
    env = {
        **os.environ,
        **CREDENTIALS,
        "TFCOMPAT_BROKER_URL": broker,
        "TFCOMPAT_S3_ENDPOINT_URL": endpoint,
        "TFCOMPAT_FLEET": str(ROOT / "config" / "fleet.yaml"),
        "TFCOMPAT_LOG_FORMAT": "json",
        "PYTHONUNBUFFERED": "1",
    }
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    )
    sqs = boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    )
    tfcompat = [sys.executable, "-m", "worker.cli"]
    port = free_port()

    say(f"1/5 local S3 endpoint (moto) on {endpoint}; Redis {broker} (emptied)")
    redis_empty_db(broker)
    with started(
        "moto",
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", endpoint.rsplit(":", 1)[1]],
        env,
        logs,
    ):
        wait_for(lambda: s3.list_buckets() is not None, 30, "the S3 endpoint")
        queue = set_up_bucket(s3, sqs)
        say(f"2/5 bucket s3://{BUCKET} (versioned) notifies SQS {queue.rsplit('/', 1)[1]}")
        say(
            f"3/5 starting the worker, the SQS bridge and the receiver (port {port}); "
            f"logs in {logs}"
        )
        with (
            started("worker", [*tfcompat, "worker", "--concurrency", "2"], env, logs),
            started(
                "sqs-bridge",
                [*tfcompat, "sqs-bridge", "--queue-url", queue, "--wait", "1"],
                env,
                logs,
            ),
            started("receiver", [*tfcompat, "serve", "--port", str(port)], env, logs),
        ):
            wait_for(
                lambda: re.search(r"@\S+ ready\.", (logs / "worker.log").read_text()),
                60,
                "the worker",
            )
            say(
                f"4/5 uploading {len(MODELS)} models written by real TensorFlow "
                "(shared/ and tests/fixtures/tf-real) plus a broken one"
            )
            for _, fixture, prefix, _ in MODELS:
                upload(s3, fixture_path(fixture), prefix)
            s3.put_object(Bucket=BUCKET, Key="broken/model.pb", Body=os.urandom(2048))
            watched = [(what, f"{prefix}/{obj}") for what, _, prefix, obj in MODELS]
            watched.append(("random bytes", "broken/model.pb"))
            say("5/5 waiting for tags and reports (S3 -> SQS -> bridge -> Celery -> tags)")
            start = time.monotonic()
            results = {}
            for _, key in watched:
                results[key] = wait_for(
                    lambda k=key: (t := tags(s3, k)).get("tfcompat:status") and t,
                    args.timeout,
                    f"tags on {key}",
                )
                say(
                    f"     {key}: {results[key]['tfcompat:status']} "
                    f"({time.monotonic() - start:.1f}s)"
                )
            rows = [["model", "object", "status", "releases", "consumers (serves / FAILS)"]]
            for what, key in watched:
                t = results[key]
                report = json.loads(
                    s3.get_object(Bucket=BUCKET, Key=t["tfcompat:report"])["Body"].read()
                )
                verdicts = (
                    ", ".join(
                        f"{c['name']} {verdict_word(c)}"
                        for a in report["artifacts"]
                        for c in a["consumers"]
                    )
                    or "-"
                )
                rows.append(
                    [what, key, t["tfcompat:status"], t.get("tfcompat:releases", "-"), verdicts]
                )
            say("")
            say(table(rows))
            say("")
            first = results[watched[2][1]]
            say(
                f"Tags of s3://{BUCKET}/{watched[2][1]}: "
                + ", ".join(f"{k}={v}" for k, v in sorted(first.items()))
            )
            say(f"Reports: s3://{BUCKET}/tfcompat-reports/...; logs: {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
