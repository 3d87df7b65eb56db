"""SageMaker Model Registry: a model package event on /events/eventbridge becomes a job;
the package is described and its model.tar.gz read through moto (S3 and SageMaker in
process), checked against the fleet and the TF Serving release of its image.

moto (5.2) describes model packages but cannot tag them (its tag lookup splits the ARN
`model-package/GROUP/VERSION` and fails), so the package's tags are kept in memory here
and the tag calls' shapes are checked against botocore's own API model (Stubber)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from worker.compat.ranges import tag_value
from worker.formats.access import ReadPolicy
from worker.ingest.app import create_http_app
from worker.model.registry import RegistryJob
from worker.pipeline.packages import check_model_package
from worker.pipeline.process import ReportLocation
from worker.pipeline.services import build_checker
from worker.registries.sagemaker import image_consumer, job_from_event, serving_release
from worker.settings import Settings
from worker.sinks.s3 import S3ObjectStore
from worker.sinks.sagemaker import SageMakerRegistry

ROOT = Path(__file__).resolve().parents[2]
ARCHIVE = ROOT / "tests/fixtures/tf-real/artifacts/tf2.21/archive/sagemaker_model.tar.gz"
SETTINGS = Settings(fleet=str(ROOT / "config" / "fleet.yaml"))
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/tensorflow-inference:{}-cpu-py39-ubuntu20.04"


def event(arn: str, status: str = "Completed") -> dict[str, Any]:
    """The shape SageMaker's EventBridge documentation gives a model package event."""
    return {
        "version": "0",
        "id": "c6b2b2a8-8c4e-4b0e-9d55-1e0a3b7f0f11",
        "detail-type": "SageMaker Model Package State Change",
        "source": "aws.sagemaker",
        "account": "123456789012",
        "time": "2026-12-03T12:00:00Z",
        "region": "us-east-1",
        "resources": [arn],
        "detail": {
            "ModelPackageGroupName": "ranking",
            "ModelPackageVersion": 1,
            "ModelPackageArn": arn,
            "CreationTime": 1796300000000,
            "InferenceSpecification": {
                "Containers": [{"Image": IMAGE.format("2.4.1"), "ModelDataUrl": "s3://m/x"}],
                "SupportedContentTypes": ["application/json"],
                "SupportedResponseMIMETypes": ["application/json"],
            },
            "ModelPackageStatus": status,
            "ModelApprovalStatus": "PendingManualApproval",
        },
    }


# Events and images, pure.
def test_a_completed_package_event_is_a_job_and_others_wait() -> None:
    arn = "arn:aws:sagemaker:us-east-1:123456789012:model-package/ranking/1"
    assert job_from_event(event(arn)) == RegistryJob(
        "sagemaker", "ranking", arn, "c6b2b2a8-8c4e-4b0e-9d55-1e0a3b7f0f11"
    )
    assert job_from_event(event(arn, status="InProgress")) is None


@pytest.mark.parametrize(
    ("image", "found"),
    [
        (IMAGE.format("2.13.0"), ("2.13.0", False)),
        (
            "763104351884.dkr.ecr.eu-west-1.amazonaws.com/tensorflow-inference:2.16-gpu",
            ("2.16", True),
        ),
        (
            "520713654638.dkr.ecr.us-east-1.amazonaws.com/sagemaker-tensorflow-serving:1.15.0-cpu",
            ("1.15.0", False),
        ),
        ("763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.1.0-cpu-py310", None),
        ("123456789012.dkr.ecr.us-east-1.amazonaws.com/my-tf-server:latest", None),
    ],
)
def test_the_serving_release_an_image_runs(image: str, found: tuple[str, bool] | None) -> None:
    assert serving_release(image) == found


# The receiver: the EventBridge route hands package events to the registry enqueue.
def test_the_eventbridge_route_enqueues_package_events() -> None:
    jobs: list[RegistryJob] = []
    settings = Settings(
        events_token="eventbridge-token", buckets=["*"], receiver_routes=["eventbridge"]
    )
    app = create_http_app(settings, lambda e: None, lambda: {}, registry_enqueue=jobs.append)
    auth = {"Authorization": "Bearer eventbridge-token"}
    arn = "arn:aws:sagemaker:us-east-1:123456789012:model-package/ranking/1"

    async def deliver() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
            return [
                await client.post("/events/eventbridge", json=event(arn), headers=auth),
                await client.post("/events/eventbridge", json=event(arn, "Pending"), headers=auth),
            ]

    accepted, waiting = asyncio.run(deliver())
    assert accepted.status_code == 202
    assert waiting.json() == {"accepted": 0, "ignored": 1}
    assert [job.version for job in jobs] == [arn]


class MemoryTaggedRegistry(SageMakerRegistry):
    """moto for DescribeModelPackage, a dict for the package's tags."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.package_tags: dict[str, str] = {"team": "ranking"}

    def tags(self, arn: str) -> dict[str, str]:
        return dict(self.package_tags)

    def add_tags(self, arn: str, tags: dict[str, str]) -> None:
        self.package_tags.update(tags)

    def delete_tags(self, arn: str, keys: list[str]) -> None:
        for key in keys:
            del self.package_tags[key]


@pytest.fixture
def aws() -> Iterator[tuple[Any, Any]]:
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="models")
        s3.create_bucket(Bucket="reports")
        s3.put_object(Bucket="models", Key="ranking/1/model.tar.gz", Body=ARCHIVE.read_bytes())
        sm = boto3.client("sagemaker", region_name="us-east-1")
        sm.create_model_package_group(ModelPackageGroupName="ranking")
        yield s3, sm


def package(sm: Any, release: str) -> str:
    spec = {
        "Containers": [
            {"Image": IMAGE.format(release), "ModelDataUrl": "s3://models/ranking/1/model.tar.gz"}
        ],
        "SupportedContentTypes": ["application/json"],
        "SupportedResponseMIMETypes": ["application/json"],
    }
    found = sm.create_model_package(ModelPackageGroupName="ranking", InferenceSpecification=spec)
    return str(found["ModelPackageArn"])


@pytest.mark.parametrize(("release", "image_status"), [("2.13.0", None), ("2.4.1", "incompatible")])
def test_a_package_is_checked_against_the_fleet_and_its_image(
    aws: tuple[Any, Any], release: str, image_status: str | None
) -> None:
    s3, sm = aws
    arn = package(sm, release)
    registry = MemoryTaggedRegistry(sm)
    store = S3ObjectStore(s3, SETTINGS)
    outcome = check_model_package(
        RegistryJob("sagemaker", "ranking", arn, "e-1"),
        registry,
        store,
        build_checker(SETTINGS),
        ReportLocation("reports", "tfcompat-reports/"),
        ReadPolicy(),
    )
    tags = registry.package_tags
    assert outcome.action == "checked" and tags["team"] == "ranking"
    assert tags["tfcompat.status"] == "incompatible"  # legacy-edge (TF 1.15) of the fleet
    assert tags["tfcompat.releases"] == tag_value(["2.5.0-2.21.x"])
    assert tags.get("tfcompat.consumer.sagemaker-image") == image_status
    assert outcome.document is not None
    consumers = {c["name"] for c in outcome.document["artifacts"][0]["consumers"]}
    assert "sagemaker-image" in consumers
    assert outcome.document["model_version"]["image_consumer"] == release


def test_the_image_consumer_is_none_for_a_release_the_catalog_lacks() -> None:
    assert image_consumer(IMAGE.format("9.99.0"), build_checker(SETTINGS).catalog) is None


def test_tag_calls_match_the_sagemaker_api() -> None:
    client = boto3.client("sagemaker", region_name="us-east-1")
    arn = "arn:aws:sagemaker:us-east-1:123456789012:model-package/ranking/1"
    registry = SageMakerRegistry(client)
    with Stubber(client) as stub:
        stub.add_response(
            "list_tags", {"Tags": [{"Key": "team", "Value": "r"}]}, {"ResourceArn": arn}
        )
        stub.add_response(
            "add_tags",
            {"Tags": []},
            {"ResourceArn": arn, "Tags": [{"Key": "tfcompat.status", "Value": "compatible"}]},
        )
        stub.add_response(
            "delete_tags", {}, {"ResourceArn": arn, "TagKeys": ["tfcompat.consumer.edge"]}
        )
        assert registry.tags(arn) == {"team": "r"}
        registry.add_tags(arn, {"tfcompat.status": "compatible"})
        registry.delete_tags(arn, ["tfcompat.consumer.edge"])
        stub.assert_no_pending_responses()
    assert json.dumps(registry.base_url) == '"sagemaker:us-east-1"'


def test_a_package_outside_the_bucket_allowlist_is_never_read(aws: tuple[Any, Any]) -> None:
    s3, sm = aws
    registry = MemoryTaggedRegistry(sm)
    outcome = check_model_package(
        RegistryJob("sagemaker", "ranking", package(sm, "2.13.0"), "e-1"),
        registry,
        S3ObjectStore(s3, SETTINGS),
        build_checker(SETTINGS),
        ReportLocation("reports", "tfcompat-reports/"),
        ReadPolicy(("other-models",)),
    )
    assert outcome.action == "refused" and registry.package_tags == {"team": "ranking"}
