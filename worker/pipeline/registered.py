"""What one registered MLflow model version's check does, as a plain function over ports.

`check_model_version` asks the tracking server for the version and its
download URI, asks the read rule (`worker.formats.access`) whether it may read
it, opens the version's model directory as a Tree (the artifact proxy for
`mlflow-artifacts:`, the object store for `s3://` inside `TFCOMPAT_BUCKETS`, the
file system for a local or NFS path under `TFCOMPAT_LOCAL_ROOTS`), reads `MLmodel`
and the TensorFlow artifact it describes, checks it against the fleet and the
catalog as an upload is checked, stores the report, then writes our tags on the
version.

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
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import structlog

from worker.compat.report import invalid_report
from worker.errors import (
    InvalidArtifact,
    NotFound,
    SourceRefused,
    TransientError,
)
from worker.fleet.checker import Checker
from worker.formats.access import Decision, ReadPolicy, decide
from worker.formats.source import DeadlineTree, DirectoryTree, Tree
from worker.formats.summary import inspect_json
from worker.ingest.gate import gate
from worker.model.artifact import Artifact
from worker.model.registry import RegistryJob
from worker.model.verdict import Status
from worker.notify.dispatch import Notifier
from worker.once import Claims
from worker.pipeline.process import ReportLocation, consumer_states, fleet_record, verdict_reports
from worker.pipeline.stored_versions import stored_model
from worker.redact import strip_userinfo
from worker.registries.mlmodel import NoTensorFlowModel, Target, read_registered_model
from worker.registries.tags import TagPlan, plan_tags, version_tags
from worker.settings import Settings
from worker.sinks.mlflow import ModelVersion, ProxiedTree
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
    error: str | None = None  # why it was refused (the read rule's reason)
    source: str = "read"  # "read": the model was read; "stored": judged from its report


def open_model_tree(decision: Decision, registry: VersionRegistry, store: ObjectStore) -> Tree:
    """The version's model directory as a Tree, opened from what the read rule allowed
    (`decision`): the artifact proxy, the object store, or the resolved local path.
    SourceRefused for a refused decision, whatever the caller did with it."""
    if not decision.allowed:
        raise SourceRefused(decision.reason)
    if decision.kind == "mlflow-artifacts":
        return ProxiedTree(registry, decision.proxied)
    if decision.kind == "s3":
        return store.tree(decision.bucket, decision.key.strip("/"))
    if decision.kind == "local":
        if not os.path.isdir(decision.path):
            raise NotFound(f"{decision.uri}: not a directory this worker can read")
        return DirectoryTree(decision.path)
    raise SourceRefused(f"{decision.uri}: no reader for {decision.kind}")


def report_key(prefix: str, job: RegistryJob) -> str:
    readable = f"{prefix}{job.registry}/{job.name}/{job.version}.json"
    if tag_safe_key(readable):
        return readable
    digest = hashlib.sha256(f"{job.name}\0{job.version}".encode()).hexdigest()
    return f"{prefix}{job.registry}/{digest}.json"


def report_place(
    location: ReportLocation, job: RegistryJob, uri: str, policy: ReadPolicy
) -> tuple[str, str] | None:
    """(bucket, key) of the version's report: the report bucket, else the bucket of an
    `s3://` model when the read rule allows that model (a registry user never makes the
    worker write into a bucket it may not read); None when there is neither (no report
    is stored, none is tagged)."""
    bucket = location.bucket
    if bucket is None:
        decided = decide(policy, uri)
        if decided.allowed and decided.kind == "s3":
            bucket = decided.bucket
    return (bucket, report_key(location.prefix, job)) if bucket else None


def stored_report(
    store: ObjectStore,
    location: ReportLocation,
    job: RegistryJob,
    server: str,
    uri: str,
    policy: ReadPolicy,
    extra: dict[str, Any] | None = None,
) -> tuple[list[Artifact], Target] | None:
    """The artifacts of the version's stored report when it can stand for reading the
    model at `uri` again (`pipeline.stored_versions`); None when the model must be read.
    Asked only after the read rule allowed `uri`: a refused source is never judged, not
    even from what an earlier check stored."""
    place = report_place(location, job, uri, policy)
    document = store.get_json(*place) if place is not None else None
    return stored_model(document, job, server, uri, extra)


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
        reports, ranges, min_release = [invalid_report(strip_userinfo(uri), error)], [], None
    return {
        "format": REPORT_FORMAT,
        "model_version": {
            "registry": job.registry,
            "server": registry_url,
            "name": job.name,
            "version": job.version,
            "artifact_uri": strip_userinfo(uri),
            "artifact": target.path if target else None,
            "found_by": target.found_by if target else None,
        },
        "status": str(Status.worst(r["status"] for r in reports)),
        "compatible_releases": ranges,
        "min_release": min_release,
        "artifacts": reports,
        "fleet": {**fleet_record(checker), "verdicts": consumer_states(reports)},
    }


def check_model_version(
    job: RegistryJob,
    registry: VersionRegistry,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    policy: ReadPolicy,
    deadline: float | None = None,
    *,
    reuse_report: bool = False,
) -> VersionOutcome:
    """Check one registered version and record the result (report, then tags). Its
    source is read only when the read rule (`policy`: buckets, local roots, the tracking
    server's proxy) allows it; a refused version is recorded as `refused`, never
    retried and never tagged. `deadline`: seconds the model may take to read
    (`TFCOMPAT_CHECK_DEADLINE`; DeadlineExceeded past it). `reuse_report` (a fleet
    change): the metadata of the version's stored report is judged instead of reading
    the model again, when that report can stand for a re-read (`stored_report`)."""
    try:
        version = registry.model_version(job.name, job.version)
    except NotFound:
        return VersionOutcome("gone")
    if version.status == "PENDING_REGISTRATION":
        raise TransientError(f"mlflow {job.name} v{job.version}: still being registered")
    if version.status == "FAILED_REGISTRATION":
        return VersionOutcome("failed-registration")
    uri = registry.download_uri(job.name, job.version)
    decision = gate(policy, uri, "mlflow")
    if not decision.allowed:
        return VersionOutcome("refused", error=decision.reason)
    target: Target | None = None
    artifacts: list[Artifact] = []
    error: str | None = None
    stored = (
        stored_report(store, location, job, registry.base_url, uri, policy)
        if reuse_report
        else None
    )
    if stored is not None:
        artifacts, target = stored
    else:
        try:
            tree = open_model_tree(decision, registry, store)
            if deadline is not None:
                tree = DeadlineTree(tree, deadline)
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

    outcome = record(job, document, uri, store, checker, location, current, write, policy)
    return replace(outcome, source="stored") if stored is not None else outcome


def record(
    job: RegistryJob,
    document: dict[str, Any],
    uri: str,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    current_tags: Callable[[], dict[str, str]],
    write: Callable[[TagPlan], None],
    policy: ReadPolicy,
) -> VersionOutcome:
    """The report first, so a tag never points at a missing report, then our tags,
    read (`current_tags`) and written (`write`) back to back."""
    place = report_place(location, job, uri, policy)
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
