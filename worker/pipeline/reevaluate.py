"""Fleet-change re-evaluation: re-check every indexed model, re-tag what changed,
tell owners about new breakage once each.

Plain functions over ports; the Celery task and `tfcompat fleet apply` call
`reevaluate`. Nothing is downloaded: models are re-checked from the metadata
the index holds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog

from worker.fleet.checker import Checker
from worker.fleet.impact import Impact, ModelImpact
from worker.model.events import ObjectEvent
from worker.model.index import IndexedModel
from worker.pipeline.impact_run import assess_index
from worker.pipeline.process import ReportLocation, check_and_record
from worker.settings import Settings
from worker.sinks.index import ModelIndex, model_from_report
from worker.sinks.ports import ObjectStore

log = structlog.get_logger(__name__)

Router = Callable[[IndexedModel], Sequence[str]]
"""The owners of a model (owners.yaml routing)."""
BreakageNotifier = Callable[[dict[str, list[ModelImpact]]], None]
"""Tells each owner, in one message, which of their models a fleet change broke."""


@dataclass
class Reevaluation:
    impact: Impact
    rewritten: int = 0  # reports recorded anew
    retagged: int = 0  # objects whose tags changed
    notified_owners: list[str] = field(default_factory=list)


def owners_of_breakage(impact: Impact, route: Router) -> dict[str, list[ModelImpact]]:
    """Newly broken models grouped by owner (a model may have several)."""
    grouped: dict[str, list[ModelImpact]] = defaultdict(list)
    for changed in impact.breaking:
        for owner in route(changed.model) or ("default",):
            grouped[owner].append(changed)
    return dict(grouped)


def rewrite(
    changed: ModelImpact,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    index: ModelIndex,
) -> bool:
    """Record a model's new result (report, tags, index) from its stored metadata;
    True when the object's tags changed."""
    model = changed.model
    event = ObjectEvent(
        model.bucket,
        model.key,
        "ObjectCreated:Reevaluated",
        version_id=model.version_id,
        source="fleet-change",
    )
    outcome = check_and_record(
        event, model.artifacts, store, checker, location, recorded=model.releases
    )
    if outcome.document is not None:
        bucket, key = location.of(event)
        updated = model_from_report(outcome.document, bucket, key, tuple(model.artifacts))
        if updated is not None:
            index.put(updated)
    return outcome.tags_changed


def reevaluate(
    index: ModelIndex,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    *,
    route: Router | None = None,
    notify: BreakageNotifier | None = None,
    progress: Callable[[int], None] | None = None,
) -> Reevaluation:
    """Apply a fleet: every changed model re-tagged, each owner told once."""
    impact = assess_index(
        index,
        checker.consumers,
        history=checker.catalog,
        policy=checker.policy,
        progress=progress,
    )
    result = Reevaluation(impact)
    for changed in impact.models:
        result.retagged += rewrite(changed, store, checker, location, index)
        result.rewritten += 1
    grouped = owners_of_breakage(impact, route or (lambda m: m.owners))
    if grouped and notify is not None:
        notify(grouped)
        result.notified_owners = sorted(grouped)
    log.info(
        "fleet.reevaluated",
        examined=impact.examined,
        changed=len(impact.models),
        breaking=len(impact.breaking),
        checks=impact.checks,
        owners=result.notified_owners,
    )
    return result


def claim_fleet_change(settings: Settings, enqueue: Callable[[str], object]) -> bool:
    """Enqueue a re-evaluation if the fleet file differs from the one last applied."""
    from worker.fleet.fleet import fleet_file
    from worker.pipeline.services import build_checker, services_for

    if not fleet_file(settings.fleet).exists():
        return False
    digest = build_checker(settings).fleet_digest
    index = services_for(settings).index
    if index.applied_fleet() == digest:
        return False
    if not index.claim_fleet_change(digest):
        return False  # another worker already enqueued it
    log.info("fleet.changed", fleet=settings.fleet, digest=digest)
    enqueue(settings.fleet)
    return True


def claim_index_build(settings: Settings, enqueue: Callable[[], object]) -> bool:
    """The start-up rebuild: an index Redis lost (or one without its page rows) is rebuilt
    by a worker task, enqueued once by the first worker to notice."""
    from worker.pipeline.services import services_for

    index = services_for(settings).index
    if index.is_built() and index.rows_built():
        return False
    if not index.claim_rebuild():
        return False
    log.info("index.rebuild_enqueued")
    enqueue()
    return True


def logged_progress(total: int, every: int = 1000) -> Callable[[int], None]:
    """Progress of a long re-evaluation, as log lines."""
    done = 0

    def step(count: int) -> None:
        nonlocal done
        before, done = done, done + count
        if done // every != before // every or done == total:
            log.info("fleet.progress", done=done, total=total)

    return step
