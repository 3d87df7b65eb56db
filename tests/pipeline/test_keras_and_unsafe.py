"""Keras files and models with unsafe ops through the real pipeline: a receiver, Redis,
a Celery worker and an S3 endpoint. A Keras upload is read, checked, reported and
tagged; `tfcompat:unsafe` appears only where such ops are, in place of the graph-def
tag, and the object's own tags stay."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pipeline.conftest import Stack
from tests.pipeline.services import report_of, s3_event, wait_for_tags

pytestmark = pytest.mark.services
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_keras_upload_is_checked_tagged_and_reported(stack: Stack) -> None:
    bucket = stack.bucket()
    key = "keras/3/model.keras"
    body = (FIXTURES / "keras/models/tf2.21/lambda.keras").read_bytes()
    stack.s3.put_object(Bucket=bucket, Key=key, Body=body, Tagging="team=vision")
    assert stack.post("/events/s3", s3_event(stack.s3, bucket, key)).status_code == 202
    tags = wait_for_tags(stack.s3, bucket, key)
    report = report_of(stack.s3, bucket, tags)
    (artifact,) = report["artifacts"]
    assert artifact["format"] == "keras"
    assert artifact["metadata"]["keras"]["keras_version"] == "3.15.1"
    assert tags["tfcompat:unsafe"].startswith("python=Lambda fleet=")  # + the fleet digest
    assert tags["team"] == "vision" and "tfcompat:graph-def" not in tags
    assert tags["tfcompat:status"] == report["status"]
    codes = {f["code"] for c in artifact["consumers"] for f in c["findings"]}
    # the test fleet's consumers: Keras 2 releases and TF Serving, none reads a Keras 3 file
    assert "keras.newer-major" in codes and "unsafe.python" in codes


def test_a_savedmodel_that_reads_files_gets_the_unsafe_tag(stack: Stack) -> None:
    bucket = stack.bucket()
    model = FIXTURES / "unsafe/tf2.21/read_file"
    for path in sorted(model.rglob("*")):
        if path.is_file():
            stack.s3.put_object(
                Bucket=bucket, Key=f"risky/1/{path.relative_to(model).as_posix()}",
                Body=path.read_bytes(), Tagging="owner=ml",
            )  # fmt: skip
    key = "risky/1/saved_model.pb"
    assert stack.post("/events/s3", s3_event(stack.s3, bucket, key)).status_code == 202
    tags = wait_for_tags(stack.s3, bucket, key)
    assert tags["tfcompat:unsafe"].startswith("file-io=ReadFile fleet=")
    assert "tfcompat:graph-def" not in tags and tags["owner"] == "ml"
    assert len([k for k in tags if k.startswith("tfcompat:")]) <= 4
    report = report_of(stack.s3, bucket, tags)
    assert report["status"] in ("at-risk", "incompatible")


def test_a_clean_savedmodel_gets_no_unsafe_tag(stack: Stack) -> None:
    bucket = stack.bucket()
    model = FIXTURES / "unsafe/tf2.21/clean"
    for path in sorted(model.rglob("*")):
        if path.is_file():
            key = f"clean/1/{path.relative_to(model).as_posix()}"
            stack.s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
    key = "clean/1/saved_model.pb"
    assert stack.post("/events/s3", s3_event(stack.s3, bucket, key)).status_code == 202
    tags = wait_for_tags(stack.s3, bucket, key)
    assert "tfcompat:unsafe" not in tags and "tfcompat:graph-def" in tags
