"""What one SageMaker model package's check does, as a plain function over ports.

The package is described (its status and containers), its first container's
`ModelDataUrl` read from S3 as an upload is (a `model.tar.gz` member by member,
ranged reads), and checked against the fleet plus the TensorFlow Serving release
its inference image runs (the `sagemaker-image` consumer, named in the report).
The report and tags are recorded as for an MLflow version
(`pipeline.registered.record`); the approval status is never touched.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace

import structlog

from worker.errors import InvalidArtifact, NotFound, TransientError
from worker.fleet.checker import Checker
from worker.formats.access import ReadPolicy
from worker.formats.layout import read_object
from worker.formats.source import DeadlineTree, Tree
from worker.ingest.gate import gate
from worker.model.artifact import Artifact
from worker.model.registry import RegistryJob
from worker.pipeline.process import ReportLocation
from worker.pipeline.registered import VersionOutcome, record, stored_report, version_document
from worker.registries.mlmodel import Target
from worker.registries.sagemaker import image_consumer
from worker.registries.tags import TagPlan
from worker.sinks.ports import ObjectStore
from worker.sinks.sagemaker import SageMakerRegistry

log = structlog.get_logger(__name__)


def check_model_package(
    job: RegistryJob,
    registry: SageMakerRegistry,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    policy: ReadPolicy,
    deadline: float | None = None,
    *,
    reuse_report: bool = False,
) -> VersionOutcome:
    """Check one SageMaker model package (`job.version` is its ARN) and record the result:
    its first container's `ModelDataUrl` read from S3 (a `model.tar.gz` is read as an
    archive, member by member), checked against the fleet and against the TensorFlow
    Serving release its image runs (`sagemaker-image`, named in the report); the report,
    then our tags on the package. Approval status is never touched. `reuse_report` (a
    fleet change): the stored report's metadata is judged instead of reading the archive
    again, when it was made from the same `ModelDataUrl` and image
    (`pipeline.registered.stored_report`)."""
    try:
        package = registry.model_package(job.version)
    except NotFound:
        return VersionOutcome("gone")
    if package.status in ("Pending", "InProgress"):
        raise TransientError(f"{job.version}: still {package.status}")
    if package.status != "Completed":
        return VersionOutcome("failed-registration")
    urls = [(image, url) for image, url in package.containers if url]
    if not urls:
        return VersionOutcome("unreadable")
    image, url = urls[0]
    decision = gate(policy, url, "sagemaker")
    if not decision.allowed or decision.kind != "s3":
        # ModelDataUrl is read from S3 only: a local path or another scheme never is.
        return VersionOutcome("refused", error=decision.reason or f"{url}: not an s3:// URL")
    consumer = image_consumer(image, checker.catalog)
    if consumer is not None:
        checker = replace(checker, consumers=(*checker.consumers, consumer))
    key = decision.key
    folder, name = posixpath.split(key)
    error: str | None = None
    artifacts: list[Artifact] = []
    target = Target(key, False, f"image {image}" if consumer else "ModelDataUrl")
    stored = (
        stored_report(store, location, job, registry.base_url, url, policy, {"image": image})
        if reuse_report
        else None
    )
    if stored is not None:
        artifacts = stored[0]
    else:
        try:
            tree: Tree = store.tree(decision.bucket, folder)
            if deadline is not None:
                tree = DeadlineTree(tree, deadline)
            artifacts = read_object(tree, name, f"s3://{decision.bucket}/{folder}".rstrip("/"))
        except NotFound as exc:
            log.warning("sagemaker.unreadable", package=job.version, error=str(exc))
            return VersionOutcome("unreadable")
        except InvalidArtifact as exc:
            error = str(exc)
    document = version_document(job, registry.base_url, url, artifacts, checker, target, error)
    document["model_version"]["image"] = image
    document["model_version"]["image_consumer"] = consumer.tensorflow if consumer else None

    def write(plan: TagPlan) -> None:
        registry.delete_tags(job.version, list(plan.delete))
        registry.add_tags(job.version, plan.put)

    def current() -> dict[str, str]:
        return registry.tags(job.version)

    outcome = record(job, document, url, store, checker, location, current, write, policy)
    return replace(outcome, source="stored") if stored is not None else outcome
