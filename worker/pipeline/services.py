"""The long-lived objects a worker process needs, built once from Settings."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from worker.catalog.catalog import load_catalog
from worker.compat.policy import Policy
from worker.fleet.fleet import load_fleet
from worker.ingest.events import ObjectEvent
from worker.pipeline.process import Checker, Outcome, ReportLocation
from worker.settings import Settings
from worker.sinks.ports import ObjectStore

log = structlog.get_logger(__name__)

AfterHook = Callable[[ObjectEvent, Outcome], None]


@dataclass
class Services:
    store: ObjectStore
    checker: Checker
    location: ReportLocation
    hooks: list[AfterHook] = field(default_factory=list)

    def after(self, event: ObjectEvent, outcome: Outcome) -> None:
        """Side effects after a result is recorded (metrics, notifications); a failing
        hook is logged and never undoes the recorded result."""
        for hook in self.hooks:
            try:
                hook(event, outcome)
            except Exception:
                log.exception("hook.failed", hook=getattr(hook, "__name__", repr(hook)))


def build_checker(settings: Settings) -> Checker:
    catalog = load_catalog()
    path = Path(settings.fleet)
    if not path.exists():
        log.warning(
            "fleet.missing",
            path=str(path),
            note="checking against the catalog only; set TFCOMPAT_FLEET",
        )
        return Checker((), Policy(), catalog, "")
    fleet = load_fleet(path, catalog)
    return Checker(fleet.consumers, fleet.policy, catalog, str(path))


def build_services(settings: Settings) -> Services:
    from worker.sinks.s3 import S3ObjectStore, s3_client

    return Services(
        store=S3ObjectStore(s3_client(settings), settings),
        checker=build_checker(settings),
        location=ReportLocation(settings.report_bucket, settings.report_prefix),
    )


@functools.cache
def _cached(settings_json: str) -> Services:
    return build_services(Settings.model_validate_json(settings_json))


def services_for(settings: Settings) -> Services:
    """One Services per worker process and settings."""
    return _cached(settings.model_dump_json())
