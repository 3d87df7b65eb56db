"""The long-lived objects a worker process needs, built once from Settings."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from worker.catalog.catalog import load_catalog
from worker.compat.policy import Policy
from worker.fleet.checker import Checker
from worker.fleet.fleet import fleet_file, load_fleet
from worker.model.events import ObjectEvent
from worker.model.outcome import Outcome
from worker.pipeline.process import ReportLocation, is_current
from worker.settings import Settings, settings_key, state_redis_url
from worker.sinks.index import ModelIndex, model_from_report
from worker.sinks.ports import ObjectStore

log = structlog.get_logger(__name__)

AfterHook = Callable[[ObjectEvent, Outcome], None]


@dataclass
class Services:
    store: ObjectStore
    checker: Checker
    location: ReportLocation
    index: ModelIndex
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
    path = fleet_file(settings.fleet)
    if not path.exists():
        log.warning(
            "fleet.missing",
            path=str(path),
            note="checking against the catalog only; set TFCOMPAT_FLEET",
        )
        return Checker((), Policy(), catalog, "")
    fleet = load_fleet(path, catalog)
    return Checker(fleet.consumers, fleet.policy, catalog, fleet.source)


def build_services(settings: Settings) -> Services:
    from worker.ingest.gate import read_policy
    from worker.pipeline.fixes import fix_hook
    from worker.pipeline.notifications import notification_hook
    from worker.pipeline.observe import metrics_hook
    from worker.sinks.s3 import S3ObjectStore, shared_client

    store = S3ObjectStore(shared_client(settings), settings)
    notify = notification_hook(settings, store)
    index = build_index(settings, store)
    location = ReportLocation(settings.report_bucket, settings.report_prefix)
    checker = build_checker(settings)
    fixes = fix_hook(settings.fix_prefix, store, checker, location, read_policy(settings))
    return Services(
        store=store,
        checker=checker,
        location=location,
        index=index,
        hooks=[
            index_hook(index, store, location),
            metrics_hook(store),
            *([fixes] if fixes else []),  # before notifications: they can link the copies
            *([notify] if notify else []),
        ],
    )


def index_buckets(settings: Settings) -> list[str]:
    return [settings.report_bucket] if settings.report_bucket else list(settings.index_buckets)


def build_index(settings: Settings, store: Any, *, builds: bool = True) -> ModelIndex:
    """The model index; `builds=False` outside workers (the receiver, the CLI): a lost
    index is rebuilt only by a worker (`tfcompat.index_rebuild`), never by a reader."""
    import redis

    client = redis.Redis.from_url(state_redis_url(settings), socket_timeout=10)
    return ModelIndex(client, store, index_buckets(settings), settings.report_prefix, builds=builds)


def index_hook(index: ModelIndex, store: ObjectStore, location: ReportLocation) -> AfterHook:
    """Keep the index current: each checked current version in, deleted objects out."""

    def record(event: ObjectEvent, outcome: Outcome) -> None:
        if outcome.action == "removed":
            # An unversioned delete or a delete marker ends the object's current version;
            # deleting one old version of a versioned object leaves the current one.
            if event.version_id is None or "DeleteMarker" in event.event_name:
                index.remove(event.bucket, event.key)
        elif outcome.action == "checked" and outcome.document is not None:
            current = outcome.current
            if current is None:
                current = is_current(event, store)
            if not current:
                return  # an older version finishing late: the index keeps the current one
            report_bucket, report_key = location.of(event)
            # the artifacts just checked, when the outcome holds them: the same entry as
            # decoding them again from the report's metadata, without the decoding
            model = model_from_report(
                outcome.document, report_bucket, report_key, outcome.artifacts
            )
            if model is not None:
                index.put(model)

    return record


_SERVICES: dict[tuple[int, str], Services] = {}
# id(settings) -> (those settings, their fields when keyed, their key): the settings a
# task is given are its app's, the same object every time
_KEYS: dict[int, tuple[Settings, dict[str, Any], str]] = {}


def services_for(settings: Settings) -> Services:
    """One Services per worker process and settings (built from these very settings:
    a copy rebuilt from `model_dump_json` would have its secrets masked). Keyed by
    process id too: a pool child forked after its parent built Services (the startup
    fleet check does) builds its own clients rather than share the parent's sockets."""
    key = (os.getpid(), _key_of(settings))
    if key not in _SERVICES:
        _SERVICES[key] = build_services(settings)
    return _SERVICES[key]


def _key_of(settings: Settings) -> str:
    """`settings_key`, computed again only for another settings object or when a field
    of this one was set since: every task asks, and the key costs a dump and a hash."""
    known = _KEYS.get(id(settings))
    if known is not None and known[0] is settings and known[1] == settings.__dict__:
        return known[2]
    key = settings_key(settings)
    if len(_KEYS) >= 64:
        _KEYS.clear()
    _KEYS[id(settings)] = (settings, dict(settings.__dict__), key)
    return key
