"""Tags and reports as an operator sees them, through a real receiver, Redis, Celery
worker and S3 endpoint: the report tag always leads to the report, a user's tags are
theirs, a tag edit made during a check survives, a duplicate delivery writes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.conftest import Stack, _redis_ready
from tests.pipeline.proxy import FaultyProxy
from tests.pipeline.services import (
    cli,
    process,
    report_of,
    s3_event,
    tags_of,
    wait_for_tags,
    wait_until,
    worker_env,
    worker_ready,
)
from tests.redis_server import REDIS_PORT
from tests.truth import SHARED
from worker.ingest.events import parse_records
from worker.pipeline.app import TASK_CHECK_OBJECT, create_app
from worker.settings import Settings

pytestmark = pytest.mark.services
FROZEN = (SHARED / "artifacts/tf2.21/frozen_graph/frozen_graph.pb").read_bytes()
LONG_KEY = "deep/" + "k" * (1024 - len("deep/") - len("/frozen.pb")) + "/frozen.pb"
REPORTS = "tfcompat-reports/"


def done_count(log: Path, key: str) -> int:
    """How many tasks for `key` a worker finished, from its JSON log lines."""
    return sum(
        1
        for line in log.read_text().splitlines()
        if line.startswith("{") and '"task.done"' in line and json.loads(line).get("key") == key
    )


@pytest.mark.parametrize(
    "key",
    [
        "my model (v2)/frozen.pb",  # parentheses: outside the tag alphabet
        "a,b;c/frozen.pb",
        "%2e%2e/frozen.pb",  # '%' is not allowed; decoded twice it would read '..'
        LONG_KEY,  # 1,024 bytes: no report key holding it fits a 256-character tag
    ],
    ids=["parentheses", "comma-semicolon", "percent", "1024-bytes"],
)
def test_the_report_tag_leads_to_the_report_whatever_the_key(stack: Stack, key: str) -> None:
    bucket = stack.bucket()
    stack.s3.put_object(Bucket=bucket, Key=key, Body=FROZEN)
    assert stack.post("/events/s3", s3_event(stack.s3, bucket, key)).status_code == 202
    tags = wait_for_tags(stack.s3, bucket, key)
    report = report_of(stack.s3, bucket, tags)  # the tag's value is the report's key
    assert report["object"]["key"] == key
    assert tags["tfcompat:status"] == report["status"]
    assert tags["tfcompat:report"].startswith(f"{REPORTS}{bucket}/")


def test_a_readable_key_keeps_its_readable_report_name(stack: Stack) -> None:
    bucket = stack.bucket()
    key = "ranking/v 2/frozen.pb"
    stack.s3.put_object(Bucket=bucket, Key=key, Body=FROZEN)
    assert stack.post("/events/s3", s3_event(stack.s3, bucket, key)).status_code == 202
    tags = wait_for_tags(stack.s3, bucket, key)
    assert tags["tfcompat:report"] == f"{REPORTS}{bucket}/{key}/latest.json"


def test_a_users_own_tfcompat_tags_are_kept(stack: Stack) -> None:
    bucket = stack.bucket()
    key = "approved/frozen.pb"
    stack.s3.put_object(
        Bucket=bucket,
        Key=key,
        Body=FROZEN,
        Tagging="tfcompat:approved-by=alice&tfcompat:ticket=ML-42&team=search",
    )
    assert stack.post("/events/s3", s3_event(stack.s3, bucket, key)).status_code == 202
    tags = wait_for_tags(stack.s3, bucket, key)
    assert {k: tags[k] for k in ("tfcompat:approved-by", "tfcompat:ticket", "team")} == {
        "tfcompat:approved-by": "alice",
        "tfcompat:ticket": "ML-42",
        "team": "search",
    }


def report_versions(stack: Stack, bucket: str) -> dict[str, int]:
    versions = stack.s3.list_object_versions(Bucket=bucket, Prefix=REPORTS).get("Versions", [])
    counts: dict[str, int] = {}
    for version in versions:
        counts[version["Key"]] = counts.get(version["Key"], 0) + 1
    return counts


def test_duplicate_deliveries_write_each_report_once(stack: Stack) -> None:
    """Ten deliveries of each of two uploads, as S3 retries and several routes make
    them (new sequencers, an EventBridge copy): one report version per object."""
    bucket = stack.bucket(versioned=True)
    keys = ["dup/a/frozen.pb", "dup/b/frozen.pb"]
    for key in keys:
        stack.s3.put_object(Bucket=bucket, Key=key, Body=FROZEN)
    for key in keys:
        for round_ in range(10):
            if round_ % 5 == 4:
                response = stack.post("/events/eventbridge", eventbridge_event(stack, bucket, key))
            else:
                response = stack.post("/events/s3", s3_event(stack.s3, bucket, key))
            assert response.status_code == 202
    log = stack.logs / "worker.log"
    wait_until(
        lambda: all(done_count(log, key) >= 10 for key in keys), 120, "all twenty deliveries"
    )
    versions = report_versions(stack, bucket)
    assert sorted(versions.values()) == [1, 1], versions
    for key in keys:
        report = report_of(stack.s3, bucket, tags_of(stack.s3, bucket, key))
        assert "event" not in report  # nothing about the delivery: every one makes these bytes


def eventbridge_event(stack: Stack, bucket: str, key: str) -> dict[str, Any]:
    head = stack.s3.head_object(Bucket=bucket, Key=key)
    return {
        "version": "0",
        "id": f"eb-{key}",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "123456789012",
        "time": "2026-12-01T12:00:05Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": {
                "key": key,
                "size": head["ContentLength"],
                "etag": head["ETag"].strip('"'),
                "version-id": head["VersionId"],
                "sequencer": "00FF",
            },
            "request-id": "r",
            "requester": "123456789012",
            "reason": "PutObject",
        },
    }


def enqueue_event(redis_db: int, notification: dict[str, Any]) -> None:
    """Hand an S3 notification's events straight to the broker a worker listens on."""
    app = create_app(Settings(broker_url=f"redis://127.0.0.1:{REDIS_PORT}/{redis_db}"))
    for event in parse_records(notification):
        app.send_task(TASK_CHECK_OBJECT, args=[event.to_json()])


@pytest.fixture
def held_proxy(endpoint: str) -> Iterator[FaultyProxy]:
    with FaultyProxy(endpoint) as p:
        yield p
        p.release.set()


def test_a_tag_written_while_the_check_records_its_report_survives(
    stack: Stack, held_proxy: FaultyProxy, logs: Path
) -> None:
    """The worker's report PUT is held at a proxy while the user tags the object: the
    worker reads the object's tags after its report is stored, so the user's tag stays."""
    _redis_ready(14)
    bucket = stack.bucket()
    key = "race/frozen.pb"
    stack.s3.put_object(Bucket=bucket, Key=key, Body=FROZEN, Tagging="team=search")
    held_proxy.hold = lambda method, path: method == "PUT" and f"/{REPORTS}" in path
    log = logs / "race-worker.log"
    env = worker_env(held_proxy.url, 14)
    with process(cli("worker", "--concurrency", "1", "--hostname", "race@%h"), env, log):
        wait_until(lambda: worker_ready(log), 60, "the worker")
        enqueue_event(14, s3_event(stack.s3, bucket, key))
        assert held_proxy.held.wait(60), "the worker never wrote its report"
        stack.s3.put_object_tagging(  # the user's edit, while the check is recording
            Bucket=bucket,
            Key=key,
            Tagging={"TagSet": [{"Key": "team", "Value": "search"}, {"Key": "ok", "Value": "yes"}]},
        )
        held_proxy.release.set()
        tags = wait_for_tags(stack.s3, bucket, key)
    assert tags["ok"] == "yes" and tags["team"] == "search"
