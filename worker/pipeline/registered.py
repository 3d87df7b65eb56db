"""What one registered MLflow model version's check does, as a plain function over ports.

`check_model_version` asks the tracking server for the version and its
download URI, opens the version's model directory as a Tree (the artifact
proxy for `mlflow-artifacts:`, the object store for `s3://`, the file system
for a local or NFS path), reads `MLmodel` and the TensorFlow artifact it
describes, checks it against the fleet and the catalog as an upload is
checked, stores the report, then writes our tags on the version.

Safe to repeat: the report's bytes depend on the version and the verdict only,
and a tag is written only when its value changes. The version's tags are read
right before ours are written, and only ours are written or removed
(`registries.tags`), `tfcompat.status` last: a reader that sees a new status
sees the other tags of the same check. A version still being registered (`PENDING_REGISTRATION`)
is retried later (`TransientError`); one whose registration failed, or that
holds no TensorFlow model, is left untagged.
"""

from __future__ import annotations

import hashlib
import os
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from worker.compat.report import invalid_report
from worker.errors import (
    InvalidArtifact,
    NotFound,
    TransientError,
    UnsupportedArtifact,
)
from worker.fleet.checker import Checker
from worker.formats.source import DirectoryTree, Tree
from worker.formats.summary import inspect_json
from worker.model.artifact import Artifact
from worker.model.registry import RegistryJob
from worker.model.verdict import Status
from worker.notify.dispatch import Notifier
from worker.once import Claims
from worker.pipeline.process import ReportLocation, consumer_states, fleet_record, verdict_reports
from worker.registries.mlmodel import NoTensorFlowModel, Target, read_registered_model
from worker.registries.tags import TagPlan, plan_tags, version_tags
from worker.settings import Settings
from worker.sinks.mlflow import ModelVersion, ProxiedTree, proxied_path
from worker.sinks.ports import ObjectStore
from worker.sinks.reports import REPORT_FORMAT, encode, tag_safe_key

log = structlog.get_logger(__name__)


class VersionRegistry(Protocol):
    """The calls a check makes on a model registry (`sinks.mlflow.MlflowRegistry`)."""

    base_url: str

    def model_version(self, name: str, version: str) -> ModelVersion: ...

    def download_uri(self, name: str, version: str) -> str: ...

    def set_tag(self, name: str, version: str, key: str, value: str) -> None: ...

    def delete_tag(self, name: str, version: str, key: str) -> None: ...

    def list_artifacts(self, path: str) -> list[tuple[str, bool, int]]: ...

    def read_artifact(self, path: str, offset: int, length: int) -> tuple[bytes, bool]: ...


@dataclass(frozen=True)
class VersionOutcome:
    action: str  # checked, not-tensorflow, failed-registration, unreadable, refused, gone
    status: str | None = None
    tags: dict[str, str] | None = None  # ours as written (all of them, changed or not)
    deleted: tuple[str, ...] = ()
    report: str | None = None  # s3:// URL of the report
    document: dict[str, Any] | None = None
    version_tags: dict[str, str] | None = None  # every tag of the version after ours


def open_model_tree(uri: str, registry: VersionRegistry, store: ObjectStore) -> Tree:
    """The version's model directory as a Tree; UnsupportedArtifact for a URI scheme
    the worker cannot read (gs://, wasbs://, dbfs:/ ...)."""
    proxied = proxied_path(uri)
    if proxied is not None:
        return ProxiedTree(registry, proxied)
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme in ("s3", "s3a"):
        return store.tree(parsed.netloc, parsed.path.strip("/"))
    if parsed.scheme == "file" or (not parsed.scheme and uri.startswith("/")):
        path = urllib.parse.unquote(parsed.path) if parsed.scheme else uri
        if not os.path.isdir(path):
            raise NotFound(f"{uri}: not a directory this worker can read")
        return DirectoryTree(path)
    raise UnsupportedArtifact(f"{uri}: the worker reads s3://, mlflow-artifacts: and local paths")


def report_key(prefix: str, job: RegistryJob) -> str:
    readable = f"{prefix}{job.registry}/{job.name}/{job.version}.json"
    if tag_safe_key(readable):
        return readable
    digest = hashlib.sha256(f"{job.name}\0{job.version}".encode()).hexdigest()
    return f"{prefix}{job.registry}/{digest}.json"


def report_place(location: ReportLocation, job: RegistryJob, uri: str) -> tuple[str, str] | None:
    """(bucket, key) of the version's report: the report bucket, else the bucket of an
    `s3://` model; None when there is neither (no report is stored, none is tagged)."""
    bucket = location.bucket
    if bucket is None and urllib.parse.urlparse(uri).scheme in ("s3", "s3a"):
        bucket = urllib.parse.urlparse(uri).netloc
    return (bucket, report_key(location.prefix, job)) if bucket else None


def version_document(
    job: RegistryJob,
    registry_url: str,
    uri: str,
    artifacts: list[Artifact],
    checker: Checker,
    target: Target | None,
    error: str | None,
) -> dict[str, Any]:
    """The report: the `check --json` document of each artifact plus its metadata, and
    the version it is about; nothing about the delivery, so every delivery makes the
    same bytes."""
    if error is None:
        reports, ranges, min_release = verdict_reports(artifacts, checker)
        metadata = {a.path: inspect_json(a) for a in artifacts}
        for report in reports:
            report["metadata"] = metadata.get(report["path"])
    else:
        reports, ranges, min_release = [invalid_report(uri, error)], [], None
    return {
        "format": REPORT_FORMAT,
        "model_version": {
            "registry": job.registry,
            "server": registry_url,
            "name": job.name,
            "version": job.version,
            "artifact_uri": uri,
            "artifact": target.path if target else None,
            "found_by": target.found_by if target else None,
        },
        "status": str(Status.worst(r["status"] for r in reports)),
        "compatible_releases": ranges,
        "min_release": min_release,
        "artifacts": reports,
        "fleet": {**fleet_record(checker), "verdicts": consumer_states(reports)},
    }


Allows = Callable[[str, str], bool]
"""Whether the worker may read (bucket, key): `TFCOMPAT_BUCKETS` (`ingest.access`)."""


def outside(uri: str, allows: Allows | None) -> bool:
    """An `s3://` model the bucket allowlist does not cover: a registry user must not
    make the worker read a bucket an uploader could not (the worker's credentials)."""
    parsed = urllib.parse.urlparse(uri)
    if allows is None or parsed.scheme not in ("s3", "s3a"):
        return False
    return not allows(parsed.netloc, parsed.path.lstrip("/"))


def check_model_version(
    job: RegistryJob,
    registry: VersionRegistry,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    allows: Allows | None = None,
) -> VersionOutcome:
    """Check one registered version and record the result (report, then tags)."""
    try:
        version = registry.model_version(job.name, job.version)
    except NotFound:
        return VersionOutcome("gone")
    if version.status == "PENDING_REGISTRATION":
        raise TransientError(f"mlflow {job.name} v{job.version}: still being registered")
    if version.status == "FAILED_REGISTRATION":
        return VersionOutcome("failed-registration")
    uri = registry.download_uri(job.name, job.version)
    if outside(uri, allows):
        log.error("mlflow.refused_bucket", name=job.name, version=job.version, uri=uri)
        return VersionOutcome("refused")
    target: Target | None = None
    artifacts: list[Artifact] = []
    error: str | None = None
    try:
        tree = open_model_tree(uri, registry, store)
        artifacts, target = read_registered_model(tree, uri.rstrip("/"))
    except NoTensorFlowModel as exc:
        log.info("mlflow.not_tensorflow", name=job.name, version=job.version, reason=str(exc))
        return VersionOutcome("not-tensorflow")
    except NotFound as exc:
        log.warning("mlflow.unreadable", name=job.name, version=job.version, error=str(exc))
        return VersionOutcome("unreadable")
    except InvalidArtifact as exc:
        error = str(exc)
    document = version_document(job, registry.base_url, uri, artifacts, checker, target, error)

    def write(plan: TagPlan) -> None:
        for key in plan.delete:
            registry.delete_tag(job.name, job.version, key)
        for key, value in plan.put.items():
            registry.set_tag(job.name, job.version, key, value)

    def current() -> dict[str, str]:
        return registry.model_version(job.name, job.version).tags

    return record(job, document, uri, store, checker, location, current, write)


def record(
    job: RegistryJob,
    document: dict[str, Any],
    uri: str,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    current_tags: Callable[[], dict[str, str]],
    write: Callable[[TagPlan], None],
) -> VersionOutcome:
    """The report first, so a tag never points at a missing report, then our tags,
    read (`current_tags`) and written (`write`) back to back."""
    place = report_place(location, job, uri)
    report_url = f"s3://{place[0]}/{place[1]}" if place else None
    ours = version_tags(document, report_url)
    document["tags"] = ours
    if place is not None:
        store.put_report(place[0], place[1], encode(document))
    existing = current_tags()
    plan = plan_tags(existing, ours)
    write(plan)
    after = {k: v for k, v in existing.items() if k not in plan.delete}
    return VersionOutcome(
        "checked", document["status"], ours, plan.delete, report_url, document, {**after, **ours}
    )


def notify_version_owner(
    settings: Settings,
    outcome: VersionOutcome,
    notifier: Notifier | None = None,
    claims: Claims | None = None,
) -> None:
    """Tell the owner of a checked version, as an upload's owner is told: routed by
    `mlflow://name/version` (owners.yaml `locations`) and the version's tags, at most one
    message per (version, verdict). Off without an owners file or a Slack webhook."""
    if outcome.action != "checked" or outcome.document is None:
        return
    from pathlib import Path

    from worker.notify.dispatch import group_by_owner, load_owners_or_default, notify_owners
    from worker.once import RedisClaims
    from worker.settings import state_redis_url
    from worker.sinks.slack import SlackNotifier

    if not Path(settings.owners).exists() and settings.slack_webhook_url is None:
        return
    owners = load_owners_or_default(settings.owners)
    document = {**outcome.document, "report": outcome.report}
    tags = outcome.version_tags or {}
    groups = group_by_owner([document], owners, lambda _: (tags, {}))
    notify_owners(
        groups,
        owners,
        notifier or SlackNotifier(settings),
        claims or RedisClaims.from_url(state_redis_url(settings)),
        ttl=settings.notify_dedupe_ttl,
        lease=settings.notify_lease,
    )
