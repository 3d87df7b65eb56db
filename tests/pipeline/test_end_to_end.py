"""An upload ends as tags and a report, through a real receiver, Redis, Celery worker
and S3 endpoint; for each event source, duplicates, bad models and crowded tags."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from tests.pipeline.conftest import Stack
from tests.pipeline.services import (
    AUTH,
    cli,
    process,
    report_of,
    s3_event,
    sqs,
    tags_of,
    upload_tree,
    wait_for_tags,
    wait_until,
)
from tests.truth import SHARED

pytestmark = pytest.mark.services
NEW_OP = SHARED / "artifacts/tf2.21/new_op"
STRIPPED = SHARED / "artifacts/tf2.12/savedmodel_v1_stripped"


def test_s3_notification_over_http_tags_the_object_and_writes_a_report(stack: Stack) -> None:
    bucket = stack.bucket()
    upload_tree(stack.s3, bucket, "ranking/new op/1", NEW_OP)
    key = "ranking/new op/1/saved_model.pb"  # a space: S3 sends it URL-encoded with '+'
    response = stack.post("/events/s3", s3_event(stack.s3, bucket, key))
    assert response.status_code == 202 and response.json() == {"accepted": 1, "ignored": 0}
    tags = wait_for_tags(stack.s3, bucket, key)
    assert tags["tfcompat:status"] == "incompatible"
    assert tags["tfcompat:releases"] == "2.20.0-2.21.x"
    assert tags["tfcompat:graph-def"].startswith("producer 2474 min-consumer 0 fleet=")
    report = report_of(stack.s3, bucket, tags)
    assert report["object"]["key"] == key
    (artifact,) = report["artifacts"]
    verdicts = {c["name"]: c["loads"] for c in artifact["consumers"]}
    assert verdicts == {
        "serving-prod": False,
        "serving-canary": True,
        "batch-scoring": False,
        "legacy-edge": False,
    }
    assert artifact["metadata"]["meta_graphs"][0]["tensorflow_version"] == "2.21.0"


def test_variables_index_arrival_checks_the_model_again(stack: Stack) -> None:
    bucket = stack.bucket()
    upload_tree(stack.s3, bucket, "m/1", STRIPPED)
    key = "m/1/variables/variables.index"
    assert stack.post("/events/s3", s3_event(stack.s3, bucket, key)).status_code == 202
    tags = wait_for_tags(stack.s3, bucket, key)
    report = report_of(stack.s3, bucket, tags)
    assert report["artifacts"][0]["metadata"]["checkpoint"]["tensors"] == 2


def test_eventbridge_event(stack: Stack) -> None:
    bucket = stack.bucket()
    upload_tree(stack.s3, bucket, "eb/1", STRIPPED)
    key = "eb/1/saved_model.pb"
    head = stack.s3.head_object(Bucket=bucket, Key=key)
    event = {
        "version": "0",
        "id": "e1",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "123456789012",
        "time": "2026-12-01T12:00:00Z",
        "region": "us-east-1",
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": {
            "version": "0",
            "bucket": {"name": bucket},
            "object": {
                "key": key,
                "size": head["ContentLength"],
                "etag": head["ETag"].strip('"'),
                "sequencer": "00AB",
            },
            "request-id": "r",
            "requester": "123456789012",
            "reason": "PutObject",
        },
    }
    assert stack.post("/events/eventbridge", event).status_code == 202
    assert wait_for_tags(stack.s3, bucket, key)["tfcompat:status"] in ("compatible", "at-risk")


def test_sqs_bridge_takes_real_s3_notifications(stack: Stack) -> None:
    bucket = stack.bucket()
    queue = sqs(stack.endpoint).create_queue(QueueName=f"{bucket}-events")["QueueUrl"]
    arn = sqs(stack.endpoint).get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    stack.s3.put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]
        },
    )
    with process(
        cli("sqs-bridge", "--queue-url", queue, "--wait", "1"), stack.env, stack.logs / "bridge.log"
    ):
        upload_tree(stack.s3, bucket, "sqs/1", NEW_OP)  # nobody posts anything: S3 notifies
        tags = wait_for_tags(stack.s3, bucket, "sqs/1/saved_model.pb")
        # Every message (the test event and one per uploaded file) is handled and deleted.
        wait_until(lambda: queue_depth(stack, queue) == 0, 60, "the queue to drain")
    assert tags["tfcompat:status"] == "incompatible"


def queue_depth(stack: Stack, queue: str) -> int:
    attributes = sqs(stack.endpoint).get_queue_attributes(
        QueueUrl=queue,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


def test_duplicate_deliveries_give_the_same_tags_and_report(stack: Stack) -> None:
    bucket = stack.bucket()
    upload_tree(stack.s3, bucket, "dup/1", NEW_OP)
    key = "dup/1/saved_model.pb"
    event = s3_event(stack.s3, bucket, key)
    assert stack.post("/events/s3", event).status_code == 202
    first = wait_for_tags(stack.s3, bucket, key)
    report_etag = stack.s3.head_object(Bucket=bucket, Key=first["tfcompat:report"])["ETag"]
    for _ in range(3):
        assert stack.post("/events/s3", event).status_code == 202
    wait_until(lambda: done_count(stack, key) >= 4, 60, "all four deliveries to be processed")
    assert tags_of(stack.s3, bucket, key) == first
    assert stack.s3.head_object(Bucket=bucket, Key=first["tfcompat:report"])["ETag"] == report_etag


def done_count(stack: Stack, key: str) -> int:
    """How many tasks for `key` the worker finished, from its JSON log lines."""
    count = 0
    for line in (stack.logs / "worker.log").read_text().splitlines():
        if line.startswith("{") and '"task.done"' in line and json.loads(line).get("key") == key:
            count += 1
    return count


def test_malformed_model_is_invalid_and_the_worker_keeps_going(stack: Stack) -> None:
    bucket = stack.bucket()
    stack.s3.put_object(Bucket=bucket, Key="bad/model.pb", Body=os.urandom(3000))
    stack.s3.put_object(
        Bucket=bucket,
        Key="bad/trunc.pb",
        Body=(SHARED / "artifacts/tf2.21/frozen_graph/frozen_graph.pb").read_bytes()[:200],
    )
    for key in ("bad/model.pb", "bad/trunc.pb"):
        assert stack.post("/events/s3", s3_event(stack.s3, bucket, key)).status_code == 202
    for key in ("bad/model.pb", "bad/trunc.pb"):
        tags = wait_for_tags(stack.s3, bucket, key)
        assert tags["tfcompat:status"] == "invalid"
        (artifact,) = report_of(stack.s3, bucket, tags)["artifacts"]
        assert artifact["status"] == "invalid" and artifact["error"]
    upload_tree(stack.s3, bucket, "good/1", STRIPPED)
    assert (
        stack.post("/events/s3", s3_event(stack.s3, bucket, "good/1/saved_model.pb")).status_code
        == 202
    )
    assert wait_for_tags(stack.s3, bucket, "good/1/saved_model.pb")


def test_eight_user_tags_survive(stack: Stack) -> None:
    bucket = stack.bucket(versioned=True)
    user = "&".join(f"team{i}=value{i}" for i in range(8))
    upload_tree(stack.s3, bucket, "crowded/1", NEW_OP, tags=user)
    key = "crowded/1/saved_model.pb"
    assert stack.post("/events/s3", s3_event(stack.s3, bucket, key)).status_code == 202
    tags = wait_for_tags(stack.s3, bucket, key)
    assert {k: v for k, v in tags.items() if k.startswith("team")} == {
        f"team{i}": f"value{i}" for i in range(8)
    }
    assert set(tags) - {f"team{i}" for i in range(8)} == {"tfcompat:status", "tfcompat:releases"}
    versions = stack.s3.list_object_versions(Bucket=bucket, Prefix="tfcompat-reports/")
    (version,) = [v for v in versions["Versions"] if v["Key"].startswith("tfcompat-reports/")]
    body = stack.s3.get_object(Bucket=bucket, Key=version["Key"])["Body"].read()
    report = json.loads(body)
    assert set(report["tags"]) == {  # ours, all four; those that did not fit are left out
        "tfcompat:status",
        "tfcompat:releases",
        "tfcompat:graph-def",
        "tfcompat:report",
    }
    assert "/crowded/1/saved_model.pb/" in version["Key"]  # one report per object version


def test_not_a_model_and_our_own_writes_start_nothing(stack: Stack) -> None:
    bucket = stack.bucket()
    stack.s3.put_object(Bucket=bucket, Key="docs/readme.txt", Body=b"hi")
    stack.s3.put_object(Bucket=bucket, Key="tfcompat-reports/x/model.pb", Body=b"{}")
    for key in ("docs/readme.txt", "tfcompat-reports/x/model.pb"):
        response = stack.post("/events/s3", s3_event(stack.s3, bucket, key))
        assert response.json() == {"accepted": 0, "ignored": 1}
    assert stack.post("/events/s3", {"Service": "Amazon S3", "Event": "s3:TestEvent"}).json() == {
        "accepted": 0,
        "ignored": 0,
    }


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/events/s3", "not json", 400),
        ("/events/s3", {"Records": [{"eventName": "ObjectCreated:Put"}]}, 400),
        ("/events/s3", {"nothing": 1}, 400),
        ("/events/eventbridge", {"source": "aws.ec2"}, 400),
    ],
)
def test_malformed_events_are_rejected(stack: Stack, path: str, body: object, status: int) -> None:
    content = body if isinstance(body, str) else json.dumps(body)
    response = httpx.post(f"{stack.receiver}{path}", content=content, headers=AUTH, timeout=10)
    assert response.status_code == status
    assert "error" in response.json()


def test_oversized_body_is_rejected(stack: Stack) -> None:
    response = httpx.post(
        f"{stack.receiver}/events/s3", content=b"x" * (2 << 20), headers=AUTH, timeout=10
    )
    assert response.status_code == 413


def test_metrics_count_what_happened(stack: Stack) -> None:
    text = httpx.get(stack.receiver_metrics, timeout=10).text
    assert "tfcompat_events_received_total" in text


def test_each_version_is_read_and_tagged_as_it_was_uploaded(stack: Stack) -> None:
    bucket = stack.bucket(versioned=True)
    upload_tree(stack.s3, bucket, "v/1", NEW_OP)
    key = "v/1/saved_model.pb"
    first = s3_event(stack.s3, bucket, key)  # names the first version
    stack.s3.put_object(Bucket=bucket, Key=key, Body=(STRIPPED / "saved_model.pb").read_bytes())
    second = s3_event(stack.s3, bucket, key)
    old, new = (e["Records"][0]["s3"]["object"]["versionId"] for e in (first, second))
    assert old != new
    assert stack.post("/events/s3", second).status_code == 202
    assert stack.post("/events/s3", first).status_code == 202  # the older event arrives late

    def version_tags(version: str) -> dict[str, str]:
        tags = stack.s3.get_object_tagging(Bucket=bucket, Key=key, VersionId=version)
        return {t["Key"]: t["Value"] for t in tags["TagSet"]}

    wait_until(lambda: version_tags(old).get("tfcompat:status"), 90, "the old version's tags")
    wait_until(lambda: version_tags(new).get("tfcompat:status"), 90, "the new version's tags")
    old_graph_def = version_tags(old)["tfcompat:graph-def"]
    assert old_graph_def.startswith("producer 2474 min-consumer 0 fleet=")  # new_op
    assert version_tags(new)["tfcompat:graph-def"].startswith("producer 1395 min-consumer 0 ")
    assert version_tags(old)["tfcompat:report"] != version_tags(new)["tfcompat:report"]
