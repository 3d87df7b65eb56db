"""MinIO's webhook under `mc event add --event put` (what infra/compose.yaml sets up)
also sends `s3:ObjectCreated:PutTagging` and `s3:ObjectCreated:DeleteTagging`, for
every tag change, ours included. None of them starts a check: tagging an object we
checked must not check it again, and again."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pipeline.conftest import Stack
from tests.pipeline.services import s3_event, upload_tree, wait_for_tags, wait_until
from tests.truth import SHARED

pytestmark = pytest.mark.services
MODEL = SHARED / "artifacts/tf2.21/new_op"
METADATA_EVENTS = ("PutTagging", "DeleteTagging", "PutRetention", "PutLegalHold")


def minio_record(stack: Stack, bucket: str, key: str, name: str) -> dict[str, Any]:
    """The notification MinIO posts to a webhook target: S3's shape, with MinIO's
    `s3:` event names and its own extra fields."""
    event = s3_event(stack.s3, bucket, key, name=f"s3:ObjectCreated:{name}")
    record = event["Records"][0]
    record["eventSource"] = "minio:s3"
    record["userIdentity"] = {"principalId": "minioadmin"}
    record["source"] = {"host": "127.0.0.1", "port": "", "userAgent": "MinIO (linux; amd64)"}
    return {"EventName": f"s3:ObjectCreated:{name}", "Key": f"{bucket}/{key}", **event}


def checks_of(stack: Stack, bucket: str, key: str) -> int:
    marks = ('"task.done"', f'"bucket": "{bucket}"', f'"key": "{key}"')
    lines = (stack.logs / "worker.log").read_text().splitlines()
    return sum(1 for line in lines if all(mark in line for mark in marks))


def test_minio_tag_events_start_no_check(stack: Stack) -> None:
    bucket = stack.bucket()
    upload_tree(stack.s3, bucket, "m/1", MODEL)
    key = "m/1/saved_model.pb"
    put = stack.post("/events/s3", minio_record(stack, bucket, key, "Put"))
    assert put.status_code == 202 and put.json() == {"accepted": 1, "ignored": 0}
    wait_for_tags(stack.s3, bucket, key)
    wait_until(lambda: checks_of(stack, bucket, key) == 1, 30, "the check's log line")
    # What MinIO sends after our tag write, and after people edit tags:
    for name in METADATA_EVENTS:
        answer = stack.post("/events/s3", minio_record(stack, bucket, key, name))
        assert answer.status_code == 202 and answer.json() == {"accepted": 0, "ignored": 1}
    # A later upload is checked: every earlier task has run by the time it is.
    upload_tree(stack.s3, bucket, "m/2", MODEL)
    later = "m/2/saved_model.pb"
    assert stack.post("/events/s3", minio_record(stack, bucket, later, "Put")).status_code == 202
    wait_for_tags(stack.s3, bucket, later)
    assert checks_of(stack, bucket, key) == 1
