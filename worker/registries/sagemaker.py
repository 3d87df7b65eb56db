"""SageMaker Model Registry events and images; pure.

A model package version created or updated in a model package group emits an
EventBridge event, `source: aws.sagemaker`, `detail-type: SageMaker Model
Package State Change`, whose `detail` carries the package's `ModelPackageArn`,
`ModelPackageGroupName` and `ModelPackageStatus` (SageMaker's API reference,
`DescribeModelPackage` output). The worker does not trust the event for more
than the ARN: it describes the package itself before reading anything.

The consumer is in the image: the SageMaker TensorFlow inference containers
(`tensorflow-inference:<release>-cpu|gpu...`, older `sagemaker-tensorflow-serving:
<release>-cpu`) run the TensorFlow Serving release their tag names, so that
release is checked as a consumer of its own, besides the fleet.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from worker.catalog.catalog import Catalog, consumer_for_release
from worker.errors import MalformedEvent, UnknownRelease
from worker.model.consumer import Consumer, Loader
from worker.model.registry import RegistryJob

SOURCE = "sagemaker"
DETAIL_TYPE = "SageMaker Model Package State Change"
READY_STATUSES = frozenset({"Completed"})
SERVING_REPOSITORIES = frozenset(
    {
        "tensorflow-inference",
        "tensorflow-inference-graviton",
        "tensorflow-inference-eia",
        "sagemaker-tensorflow-serving",
        "sagemaker-tensorflow-serving-eia",
    }
)
_IMAGE = re.compile(
    r"^(?:[^/]+/)*(?P<repo>[a-z0-9._-]+):(?P<release>\d+\.\d+(?:\.\d+)?)(?P<rest>[-\w.]*)$"
)
IMAGE_CONSUMER = "sagemaker-image"


def is_model_package_event(document: Any) -> bool:
    return (
        isinstance(document, dict)
        and document.get("source") == "aws.sagemaker"
        and document.get("detail-type") == DETAIL_TYPE
    )


def job_from_event(document: dict[str, Any]) -> RegistryJob | None:
    """The check a model package event asks for; None while the package is not yet
    `Completed` (SageMaker sends an event per state change; the Completed one follows)."""
    detail = document.get("detail")
    if not isinstance(detail, dict):
        raise MalformedEvent("SageMaker event without detail")
    arn = detail.get("ModelPackageArn")
    if not isinstance(arn, str) or ":model-package/" not in arn:
        raise MalformedEvent("SageMaker event without a ModelPackageArn")
    status = detail.get("ModelPackageStatus")
    if status is not None and status not in READY_STATUSES:
        return None
    group = detail.get("ModelPackageGroupName")
    name = group if isinstance(group, str) and group else arn.split(":model-package/", 1)[1]
    event_id = document.get("id")
    return RegistryJob(SOURCE, name, arn, str(event_id) if event_id else arn)


def serving_release(image: str) -> tuple[str, bool] | None:
    """(TensorFlow Serving release, runs on GPU) of a SageMaker TensorFlow inference
    image, or None for any other image."""
    found = _IMAGE.match(image.split("@", 1)[0])
    if found is None or found["repo"] not in SERVING_REPOSITORIES:
        return None
    return found["release"], "-gpu" in found["rest"]


def image_consumer(image: str, catalog: Catalog) -> Consumer | None:
    """The consumer an image runs (TF Serving, the v1 loader), or None when the image is
    not a TensorFlow inference image or names a release the catalog does not know."""
    found = serving_release(image)
    if found is None:
        return None
    release, gpu = found
    try:
        resolved = catalog.resolve(release)
    except UnknownRelease:
        return None
    consumer = consumer_for_release(catalog, resolved, Loader.SAVED_MODEL_V1, IMAGE_CONSUMER)
    return replace(consumer, tf_serving=True, gpu=gpu, environment=image)
