"""A fleet change fanned out over every worker: plan, units of work, applied digest.

`plan_units` (the planning task) cuts what the change may touch into units: every
indexed model, in chunks of `TFCOMPAT_FLEET_CHUNK_SIZE` (`index_fields`: the index's
listing, no entry decoded), and every registered MLflow version and SageMaker model
package (a registry's copy of a verdict is only in its tags). Which models change is
decided in the chunks, on every worker at once: deciding it in the planning task
(as `fleet impact` does, `pipeline.impact_run`) took one process as long as a
quarter of the whole change at 100,000 models, with every other worker idle, and
the chunks judged the changed models again anyway. The plan is stored with the run
(`sinks.fleet_runs`) before any unit is sent, so a planning task redelivered after
a kill sends the same units again. Each unit runs on whichever worker takes it:
`retag_chunk` judges a chunk's models from the metadata in the index (nothing is
downloaded) and records each whose verdicts change (report, tags, index entry). A unit that
fails for good goes to the dead-letter list (`sinks.dead_letters`); the unit that
completes the run with none failing records the fleet's digest as applied.

`stale_objects`, `stale_versions` and `stale_packages` are the reconciler's: what
carries another fleet's digest in its tags, a bounded batch per run, resuming where
the last run stopped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import structlog

from worker.fleet.checker import Checker
from worker.fleet.impact import ModelImpact, assess
from worker.model.index import IndexedModel
from worker.pipeline.process import ReportLocation, fleet_record
from worker.pipeline.reevaluate import BreakageNotifier, Router, owners_of_breakage, rewrite
from worker.sinks.fleet_runs import Unit
from worker.sinks.index import HASH, ModelIndex, gc_paused, redis_errors
from worker.sinks.ports import ObjectStore
from worker.sinks.tags import STATUS, fleet_of

log = structlog.get_logger(__name__)

OBJECTS = "objects"


def digest_of(checker: Checker) -> str:
    """The fleet digest a check under `checker` writes into the tags (cached per checker)."""
    return str(fleet_record(checker)["digest"])


def object_units(fields: Sequence[str], size: int, prefix: str = "objects") -> list[Unit]:
    """Index fields in chunks of `size`; a chunk's id names its contents, so the same
    chunk planned twice is the same unit."""
    units = []
    for start in range(0, len(fields), size):
        items = tuple(fields[start : start + size])
        ident = hashlib.sha256("\0".join(items).encode()).hexdigest()[:16]
        units.append(Unit(f"{prefix}:{ident}", OBJECTS, items))
    return units


def version_unit(registry: str, name: str, version: str) -> Unit:
    ident = hashlib.sha256(f"{name}\0{version}".encode()).hexdigest()[:16]
    return Unit(f"{registry}:{ident}", registry, (name, version))


def index_fields(index: ModelIndex) -> list[str]:
    """Every indexed model's field, sorted (the same index cuts into the same units)."""
    return sorted(f.decode() if isinstance(f, bytes) else f for f in index.fields())


def plan_units(
    fields: Sequence[str],
    versions: Iterable[tuple[str, str, str]],
    chunk_size: int,
) -> list[Unit]:
    """Every unit of a fleet change: chunks of changed models, then one unit per
    registered version (registry, name, version)."""
    return [*object_units(fields, chunk_size), *(version_unit(*v) for v in versions)]


@dataclass(frozen=True)
class ChunkResult:
    examined: int
    rewritten: int
    retagged: int
    breaking: int


def retag_chunk(
    fields: Sequence[str],
    index: ModelIndex,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    *,
    force: bool = False,
    route: Router | None = None,
    notify: BreakageNotifier | None = None,
) -> ChunkResult:
    """Re-check a chunk of indexed models from their stored metadata and record each
    whose verdicts change (or each, with `force`: the reconciler's, for tags that carry
    another digest while the index already holds the new verdicts). Safe to repeat: a
    model already recorded under this fleet shows no change, and tags are written only
    when their values change."""
    with gc_paused():
        models = list(index.models_of(list(fields), index.lazy_decoder()))
    impact = assess(models, checker.consumers, history=checker.catalog, policy=checker.policy)
    todo = list(impact.models)
    if force:
        listed = {ModelIndex.field(m.model.bucket, m.model.key) for m in todo}
        todo += [_unchanged(m) for m in models if ModelIndex.field(m.bucket, m.key) not in listed]
    retagged = 0
    for changed in todo:
        retagged += rewrite(changed, store, checker, location, index)
    grouped = owners_of_breakage(impact, route or (lambda m: m.owners))
    if grouped and notify is not None:
        notify(grouped)
    return ChunkResult(len(models), len(todo), retagged, len(impact.breaking))


def _unchanged(model: IndexedModel) -> ModelImpact:
    return ModelImpact(model, model.status, (), dict(model.verdicts))


def stale_objects(
    index: ModelIndex,
    store: ObjectStore,
    digest: str,
    cursor: int,
    batch: int,
) -> tuple[list[str], int, int]:
    """Up to about `batch` indexed objects from `cursor` on: the fields of those whose tags
    carry another fleet's digest (or none, where ours are written), the next cursor
    (0: the pass is complete) and how many were examined."""
    stale: list[str] = []
    examined = 0
    client = index.redis_client
    while examined < batch:
        with redis_errors("scanning the index"):
            cursor, found = client.hscan(HASH, cursor, count=min(batch, 1000))
        for raw in found:
            field = raw.decode() if isinstance(raw, bytes) else str(raw)
            bucket, _, key = field.partition("/")
            examined += 1
            try:
                tags = store.get_tags(bucket, key, None)
            except Exception as exc:  # gone or unreadable now: the next pass sees it again
                log.info("reconcile.object_unreadable", object=field, error=str(exc))
                continue
            ours = any(t["Key"] == STATUS for t in tags)
            if ours and fleet_of(tags) != digest:
                stale.append(field)
        if cursor == 0:
            break
    return stale, int(cursor), examined


def stale_versions(
    tagged: Sequence[tuple[str, str, dict[str, str]]],
    digest: str,
    start: int,
    batch: int,
    fleet_tag: str,
    status_tag: str,
) -> tuple[list[tuple[str, str]], int]:
    """From `tagged[start:start+batch]` (name, version, tags): the versions we tagged
    under another fleet, and where the next run starts (0: the pass is complete)."""
    window = tagged[start : start + batch]
    stale = [
        (name, version)
        for name, version, tags in window
        if status_tag in tags and tags.get(fleet_tag) != digest
    ]
    after = start + len(window)
    return stale, (after if after < len(tagged) else 0)


def stale_packages(
    arns: Sequence[str],
    tags_of: Callable[[str], dict[str, str]],
    digest: str,
    start: int,
    batch: int,
    fleet_tag: str,
    status_tag: str,
) -> tuple[list[str], int]:
    """SageMaker's `stale_versions`: from `arns[start:start+batch]`, the packages we tagged
    under another fleet, and where the next run starts (0: the pass is complete).
    SageMaker lists packages without their tags, so only the window's tags are read
    (`tags_of`, one request each); a package gone meanwhile is skipped."""
    from worker.errors import NotFound

    window = arns[start : start + batch]
    tagged: list[tuple[str, str, dict[str, str]]] = []
    for arn in window:
        try:
            tagged.append(("", arn, tags_of(arn)))
        except NotFound:
            continue
    stale, _ = stale_versions(tagged, digest, 0, len(tagged), fleet_tag, status_tag)
    after = start + len(window)
    return [arn for _, arn in stale], (after if after < len(arns) else 0)
