"""Celery task for GitHub webhooks: JSON in, build the client, call `check_commit`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from celery import Task, shared_task

from worker.errors import ConfigError, MalformedEvent, SourceRefused
from worker.github.checks import check_commit, describe, fleet_from_head
from worker.ingest.gate import gate, read_policy, require
from worker.model.artifact import Artifact
from worker.model.github import GithubJob
from worker.pipeline.app import RETRY_POLICY, TASK_GITHUB_EVENT, settings_of
from worker.pipeline.impact_run import assess_index
from worker.pipeline.notifications import breakage_notifier
from worker.pipeline.reevaluate import logged_progress, reevaluate
from worker.pipeline.services import services_for
from worker.settings import Settings
from worker.sinks.github import github_clients_for
from worker.sinks.s3 import read_s3_artifacts

log = structlog.get_logger(__name__)


@shared_task(bind=True, name=TASK_GITHUB_EVENT, **RETRY_POLICY)
def github_event(self: Task[Any, Any], job: dict[str, Any]) -> dict[str, Any]:
    try:
        parsed = GithubJob.from_json(job)
    except MalformedEvent as exc:
        log.error("task.malformed", error=str(exc))
        return {"action": "rejected", "error": str(exc)}
    settings = settings_of(self.app)
    structlog.contextvars.bind_contextvars(
        repository=parsed.repository, head_sha=parsed.head_sha, delivery=parsed.delivery
    )
    try:
        client = github_clients_for(settings).for_installation(parsed.installation_id)
        services = services_for(settings)
        if parsed.event == "push":
            return reevaluate_pushed_fleet(parsed, client, settings, services)
        output = check_commit(
            parsed,
            client,
            services.checker,
            fleet_path=settings.github_fleet_path,
            patterns=settings.model_patterns,
            read_pointer=pointer_reader(settings),
            fleet_impact=lambda checker: assess_index(
                services.index,
                checker.consumers,
                history=checker.catalog,
                policy=checker.policy,
                with_artifacts=False,  # the check run lists models, never their metadata
            ),
        )
    except ConfigError as exc:
        log.error("github.not_configured", error=str(exc))
        return {"action": "rejected", "error": str(exc)}
    return {"action": "checked", **describe(output)}


def pointer_reader(settings: Settings) -> Callable[[str], list[Artifact]]:
    """Reads the `s3://` object a `.tfmodel` pointer in a pull request names, only when
    the read rule allows it (anyone who can open a pull request writes pointers):
    SourceRefused otherwise, reported on that file of the check run."""
    policy = read_policy(settings)

    def read(url: str) -> list[Artifact]:
        decision = require(gate(policy, url, "github"))
        if decision.kind != "s3":
            raise SourceRefused(f"{decision.uri}: a pointer names an s3:// object")
        return read_s3_artifacts(url, settings)

    return read


def reevaluate_pushed_fleet(
    job: GithubJob, client: Any, settings: Any, services: Any
) -> dict[str, Any]:
    """The fleet file pushed to the default branch, applied to every indexed model:
    models it changes are re-tagged and their owners told once each."""
    checker, _ = fleet_from_head(job, client, settings.github_fleet_path, services.checker)
    route, notify = breakage_notifier(settings, services.store)
    result = reevaluate(
        services.index,
        services.store,
        checker,
        services.location,
        route=route,
        notify=notify,
        progress=logged_progress(services.index.count()),
    )
    return {
        "action": "reevaluated",
        "examined": result.impact.examined,
        "changed": len(result.impact.models),
        "owners": result.notified_owners,
    }
