"""The receiver fails closed, with real processes and real requests: it does not start
unauthenticated unless told to, and it never lets an event name a bucket outside
TFCOMPAT_BUCKETS (moto holds the objects; the session's worker checks what passes)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.pipeline.conftest import REDIS_DB, Stack
from tests.pipeline.services import (
    AUTH,
    RECEIVER_ENV,
    Receiver,
    cli,
    free_port,
    receiver_process,
    s3_event,
    tags_of,
    upload_tree,
    wait_for_tags,
    worker_env,
)
from tests.truth import SHARED

pytestmark = pytest.mark.services
MODEL = SHARED / "artifacts/tf2.12/savedmodel_v1_stripped"
KEY = "prod/1/saved_model.pb"


def open_env(endpoint: str, **extra: str) -> dict[str, str]:
    env = worker_env(endpoint, REDIS_DB, **extra)
    for name in RECEIVER_ENV:
        if name not in extra:
            env.pop(name)
    return env


def test_the_receiver_refuses_to_start_unauthenticated(endpoint: str) -> None:
    result = subprocess.run(
        cli("serve", "--port", str(free_port())),
        env=open_env(endpoint),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    error = result.stderr.strip()
    assert "\n" not in error
    assert "the receiver will not start" in error
    for reason in ("/events/s3 has no TFCOMPAT_EVENTS_TOKEN", "TFCOMPAT_BUCKETS is empty"):
        assert reason in error


def test_the_bridge_refuses_to_start_without_a_bucket_list(endpoint: str) -> None:
    result = subprocess.run(
        cli("sqs-bridge", "--queue-url", f"{endpoint}/123456789012/none"),
        env=open_env(endpoint),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "the SQS bridge will not start" in result.stderr


def test_the_opt_out_starts_warns_and_takes_anyone(endpoint: str, logs: Path) -> None:
    env = open_env(endpoint, TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS="1")
    log = logs / "open-receiver.log"
    with receiver_process(env, log) as url:
        answer = httpx.post(f"{url}/events/s3", json={"Records": []}, timeout=10)
        assert answer.status_code == 202
    warning = [
        json.loads(line) for line in log.read_text().splitlines() if "unauthenticated" in line
    ]
    assert warning and warning[0]["level"] == "warning"
    assert "TFCOMPAT_EVENTS_TOKEN" in " ".join(warning[0]["open"])


def test_a_wrong_or_missing_token_is_refused(stack: Stack) -> None:
    for headers in ({}, {"Authorization": "Bearer guess"}):
        answer = httpx.post(
            f"{stack.receiver}/events/s3", json={"Records": []}, headers=headers, timeout=10
        )
        assert answer.status_code == 401


def rejected_for_bucket(url: Receiver) -> float:
    for line in httpx.get(url.metrics, timeout=10).text.splitlines():
        if line.startswith("tfcompat_events_rejected_total") and 'reason="bucket"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_events_outside_the_allowlist_are_refused_counted_and_never_read(
    stack: Stack, logs: Path
) -> None:
    allowed, foreign = stack.bucket(), f"payroll-{free_port()}"
    stack.s3.create_bucket(Bucket=foreign)
    for bucket in (allowed, foreign):
        upload_tree(stack.s3, bucket, "prod/1", MODEL)
    env = {**stack.env, "TFCOMPAT_BUCKETS": json.dumps([f"{allowed}/prod/*"])}
    with receiver_process(env, logs / "allowlist-receiver.log") as url:

        def deliver(bucket: str) -> httpx.Response:
            event = s3_event(stack.s3, bucket, KEY)
            return httpx.post(f"{url}/events/s3", json=event, headers=AUTH, timeout=10)

        refused = deliver(foreign)
        assert refused.status_code == 403
        assert f"s3://{foreign}/{KEY}" in refused.json()["error"]
        assert rejected_for_bucket(url) == 1.0
        accepted = deliver(allowed)
        assert accepted.status_code == 202 and accepted.json()["accepted"] == 1
    assert wait_for_tags(stack.s3, allowed, KEY)["tfcompat:status"]
    assert tags_of(stack.s3, foreign, KEY) == {}
