"""What the reconciler (`tfcompat.reconcile`, sent by `tfcompat beat`) does besides
re-tagging objects: registry versions and packages left under another fleet, and a
fleet change whose run stalled.

Plain functions over the registries, the run counters and a `send` callable (the
task passes the Celery app's `send_task`), so each can be tested without a worker.

- MLflow versions are listed a page at a time with their tags; SageMaker lists
  packages without tags, so the reconciler reads the tags of one window of
  `TFCOMPAT_RECONCILE_BATCH` packages per run and resumes at the next window.
- A stalled run (`sinks.fleet_runs`: running, no unit reported for
  `TFCOMPAT_FLEET_STALL_AFTER` seconds) has its pending units sent again from the
  stored plan; the counter counts a unit once however often it reports, so the run
  finishes, and records its digest as applied, when the last of them reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from worker.pipeline.app import TASK_FLEET_CHUNK, TASK_FLEET_VERSION
from worker.pipeline.fanout import OBJECTS, stale_packages, stale_versions
from worker.registries.tags import FLEET, STATUS
from worker.sinks.fleet_runs import FleetRuns
from worker.sinks.index import redis_errors

log = structlog.get_logger(__name__)

RECONCILE_VERSIONS = "tfcompat:reconcile:versions"  # {registry}: offset of the next run

Send = Callable[[str, dict[str, Any]], object]
"""Send a task (its name) with one payload argument."""


class TaggedVersions(Protocol):
    """An MLflow registry as the reconciler reads it (`sinks.mlflow.MlflowRegistry`)."""

    def tagged_versions(self, max_results: int = 1000) -> list[tuple[str, str, dict[str, str]]]: ...


class TaggedPackages(Protocol):
    """A SageMaker registry as the reconciler reads it (`sinks.sagemaker.SageMakerRegistry`)."""

    def package_arns(self) -> list[str]: ...

    def tags(self, arn: str) -> dict[str, str]: ...


def stale_registered(
    client: Any,
    digest: str,
    batch: int,
    mlflow: TaggedVersions | None = None,
    sagemaker: TaggedPackages | None = None,
) -> list[tuple[str, str, str]]:
    """(registry, name, version) of this run's batch of registered versions and
    packages tagged under another fleet than `digest`; each registry's place in its
    pass is kept in Redis (`RECONCILE_VERSIONS`), so successive runs cover them all."""
    found: list[tuple[str, str, str]] = []
    if mlflow is not None:
        start = _cursor(client, "mlflow")
        versions, start = stale_versions(
            mlflow.tagged_versions(), digest, start, batch, FLEET, STATUS
        )
        _advance(client, "mlflow", start)
        found += [("mlflow", name, version) for name, version in versions]
    if sagemaker is not None:
        start = _cursor(client, "sagemaker")
        arns, start = stale_packages(
            sagemaker.package_arns(), sagemaker.tags, digest, start, batch, FLEET, STATUS
        )
        _advance(client, "sagemaker", start)
        found += [("sagemaker", "", arn) for arn in arns]
    return found


def _cursor(client: Any, registry: str) -> int:
    with redis_errors("reading the reconciler's cursor"):
        return int(client.hget(RECONCILE_VERSIONS, registry) or 0)


def _advance(client: Any, registry: str, start: int) -> None:
    with redis_errors("recording the reconciler's cursor"):
        client.hset(RECONCILE_VERSIONS, registry, start)


def resend_stalled(
    runs: FleetRuns,
    digest: str,
    stall_after: float,
    send: Send,
    now: float | None = None,
) -> int:
    """Send again the pending units of the run of `digest` (the current fleet's) when it
    has stalled, at most once per `stall_after` seconds; how many were sent. A run of
    another fleet is left alone: the reconciler plans the current fleet instead."""
    now = time.time() if now is None else now
    progress = runs.progress()
    if progress.digest != digest or not progress.due_for_resend(now, stall_after):
        return 0
    units = runs.outstanding(digest)
    for unit in units:
        task = TASK_FLEET_CHUNK if unit.kind == OBJECTS else TASK_FLEET_VERSION
        send(task, {"digest": digest, "fleet": progress.fleet, "unit": unit.to_json()})
    runs.resent_units(digest, len(units), now)
    log.warning(
        "reconcile.stalled_run",
        digest=digest,
        idle_s=round(progress.idle(now) or 0.0),
        resent=len(units),
    )
    return len(units)
