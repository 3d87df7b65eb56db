"""Commands about the fleet and the model index: list, dump-manifest, impact, apply."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from worker.cli.errors import UsageError
from worker.cli.models import parse_consumer_spec


def chosen_fleet(given: str | None, settings: Any) -> str:
    """--fleet, else TFCOMPAT_FLEET when set, else config/fleet.yaml when it is here, else
    the built-in fleet, saying so on stderr (a listing must not pass for the user's fleet)."""
    from worker.fleet.fleet import BUILTIN, BUILTIN_TEXT, DEFAULT_FLEET

    if given:
        return given
    if "fleet" in settings.model_fields_set or Path(settings.fleet).is_file():
        return str(settings.fleet)
    print(
        f"tfcompat: no {DEFAULT_FLEET} in {Path.cwd()} and TFCOMPAT_FLEET is unset: "
        f"the built-in fleet ({BUILTIN_TEXT}); name yours with --fleet FILE or "
        f"TFCOMPAT_FLEET=FILE",
        file=sys.stderr,
    )
    return BUILTIN


def cmd_fleet_list(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.cli.render import render_fleet
    from worker.fleet.fleet import load_fleet
    from worker.settings import load_settings

    fleet = load_fleet(chosen_fleet(args.fleet, load_settings()), load_catalog())
    if args.json:
        rows = [
            {
                "name": c.name,
                "environment": c.environment,
                "owners": list(c.owners),
                "tensorflow": c.tensorflow,
                "graph_def_version": c.graph_def_version,
                "loader": str(c.loader),
                "registry": c.registry.source if c.registry else None,
                "tflite": {
                    "family": c.tflite.family,
                    "version": c.tflite.version,
                    "table": c.tflite.table.name if c.tflite.table else None,
                    "reads_tflite_only": c.tflite.standalone,
                }
                if c.tflite
                else None,
                "keras": c.keras,
                "python": c.python,
                "tf_serving": c.tf_serving,
                "banned": (
                    ban.reason if (ban := fleet.policy.banned(c.graph_def_version)) else None
                ),
            }
            for c in fleet.consumers
        ]
        json.dump({"consumers": rows}, sys.stdout, indent=1)
        print()
    else:
        print(render_fleet(fleet), end="")
    return 0


SET_A_BUCKET = (
    "set TFCOMPAT_REPORT_BUCKET=BUCKET (the bucket workers write reports to) or "
    "TFCOMPAT_INDEX_BUCKETS='[\"BUCKET\", ...]' (the models' buckets, when reports sit "
    "beside the models), with TFCOMPAT_BROKER_URL the workers' Redis"
)


def _index_and_store(settings: Any) -> tuple[Any, Any]:
    """The model index, or a UsageError when there is none to speak of: no bucket holds
    reports and the broker's Redis has no indexed model either (an empty answer would
    pass for "no model is affected")."""
    from worker.pipeline.services import build_index, index_buckets
    from worker.sinks.s3 import S3ObjectStore, s3_client

    store = S3ObjectStore(s3_client(settings), settings)
    index = build_index(settings, store)  # a lost index is rebuilt here, under the lock
    if not index_buckets(settings) and _redis_count(index) == 0:
        raise UsageError(
            "no model index: the Redis at TFCOMPAT_BROKER_URL holds none and no report bucket "
            f"is configured to rebuild it from; {SET_A_BUCKET}"
        )
    return index, store


def _redis_count(index: Any) -> int:
    """Models the index holds in Redis (a Redis that does not answer: TransientError)."""
    return int(index.stored_count())


def _target_fleet(args: argparse.Namespace, settings: Any, catalog: Any) -> tuple[Any, Any]:
    """(current fleet, the fleet after the change the arguments describe)."""
    from worker.catalog.opdefs import OpDefCache
    from worker.fleet.changes import edited_fleet
    from worker.fleet.fleet import load_fleet

    current = load_fleet(args.current or settings.fleet, catalog)
    new = load_fleet(args.fleet, catalog) if args.fleet else None
    cache = OpDefCache()
    added = [parse_consumer_spec(spec, catalog, cache) for spec in args.add_consumer]
    return current, edited_fleet(current, new, added, args.remove_consumer)


def cmd_fleet_impact(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.cli.render import render_impact
    from worker.fleet.changes import Progress
    from worker.pipeline.impact_run import assess_index, default_jobs
    from worker.settings import load_settings

    settings = load_settings()
    catalog = load_catalog()
    index, _ = _index_and_store(settings)
    _, target = _target_fleet(args, settings, catalog)
    progress = Progress(index.count(), "checking", sys.stderr.write, sys.stderr.isatty())
    impact = assess_index(
        index,
        target.consumers,
        history=catalog,
        policy=target.policy,
        progress=progress,
        with_artifacts=False,  # a preview: what it prints needs no model metadata
        jobs=args.jobs or default_jobs(),
    )
    if args.json:
        json.dump(impact.to_json(), sys.stdout, indent=1)
        print()
    else:
        print(render_impact(impact), end="")
    return 1 if impact.breaking else 0


def cmd_fleet_apply(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.cli.render import render_impact
    from worker.fleet.changes import Progress
    from worker.fleet.checker import Checker
    from worker.pipeline.notifications import breakage_notifier
    from worker.pipeline.process import ReportLocation
    from worker.pipeline.reevaluate import reevaluate
    from worker.settings import load_settings

    settings = load_settings()
    if args.enqueue:
        from worker.pipeline.app import TASK_FLEET_CHANGED, create_app

        create_app(settings).send_task(TASK_FLEET_CHANGED, args=[args.fleet or settings.fleet])
        print(f"queued re-evaluation against {args.fleet or settings.fleet}")
        return 0
    catalog = load_catalog()
    index, store = _index_and_store(settings)
    _, target = _target_fleet(args, settings, catalog)
    checker = Checker(target.consumers, target.policy, catalog, target.source)
    progress = Progress(index.count(), "re-evaluating", sys.stderr.write, sys.stderr.isatty())
    notify = breakage_notifier(settings, store)
    result = reevaluate(
        index,
        store,
        checker,
        ReportLocation(settings.report_bucket, settings.report_prefix),
        route=notify[0],
        notify=notify[1],
        progress=progress,
    )
    print(render_impact(result.impact), end="")
    print(
        f"updated {result.rewritten} report(s), re-tagged {result.retagged} model(s); "
        f"told {len(result.notified_owners)} owner(s)"
        + (f": {', '.join(result.notified_owners)}" if result.notified_owners else "")
    )
    return 0


def cmd_index_rebuild(args: argparse.Namespace) -> int:
    """Ask a worker to rebuild the index (`tfcompat.index_rebuild`: streamed, under the
    rebuild lock) and wait for it to finish."""
    import time

    from worker.pipeline.app import TASK_INDEX_REBUILD, publisher
    from worker.pipeline.services import build_index, index_buckets
    from worker.settings import load_settings
    from worker.sinks.s3 import S3ObjectStore, s3_client

    settings = load_settings()
    if not index_buckets(settings):
        raise UsageError(
            f"no report bucket is configured to rebuild the index from; {SET_A_BUCKET}"
        )
    index = build_index(settings, S3ObjectStore(s3_client(settings), settings), builds=False)
    asked = time.time()
    publisher(settings, TASK_INDEX_REBUILD)({"asked": asked})
    print("index rebuild sent to the workers", flush=True)
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        rebuilt = index.last_rebuild()
        if rebuilt is not None and rebuilt[0] >= asked:
            print(f"index rebuilt from stored reports: {rebuilt[1]} model(s)")
            return 0
        time.sleep(1)
    if args.wait:
        print(f"not finished after {args.wait:g} s; a worker is still rebuilding it")
    return 0 if not args.wait else 1


def cmd_dump_manifest(args: argparse.Namespace) -> int:
    from worker.fleet.manifest import run_dumper

    forwarded = ["-o", args.output]
    for module in args.imports:
        forwarded += ["--import", module]
    for library in args.op_libraries:
        forwarded += ["--load-op-library", library]
    return run_dumper(args.python, forwarded)


def ui_sources(settings: Any) -> Any:
    """What the fleet page reads, from the settings (`tfcompat serve`)."""
    from worker.catalog.catalog import load_catalog
    from worker.fleet.fleet import fleet_file, load_fleet
    from worker.notify.dispatch import load_owners_or_default
    from worker.pipeline.app import preview_enqueuer
    from worker.pipeline.services import build_index
    from worker.sinks.previews import PreviewStore
    from worker.sinks.s3 import S3ObjectStore, s3_client
    from worker.ui.routes import Previews, Sources

    store = S3ObjectStore(s3_client(settings), settings)
    index = build_index(settings, store, builds=False)
    catalog = load_catalog()
    loaded: dict[tuple[str, float], Any] = {}

    def fleet() -> Any:
        """The fleet file, read again when it changes."""
        path = fleet_file(settings.fleet)
        stamp = (str(path), path.stat().st_mtime if path.exists() else 0.0)
        if stamp not in loaded:
            loaded.clear()
            loaded[stamp] = load_fleet(settings.fleet, catalog)
        return loaded[stamp]

    return Sources(
        settings=settings,
        index=index,
        store=store,
        catalog=catalog,
        fleet=fleet,
        owners=load_owners_or_default(settings.owners),
        previews=Previews(
            PreviewStore(index.redis_client, settings.ui_preview_ttl),
            preview_enqueuer(settings),
            in_flight=settings.ui_previews_in_flight,
            lasts=settings.ui_preview_time_limit + 60,
        ),
    )


def cmd_fleet_plan(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.cli.plan_render import render_plan, render_plan_csv
    from worker.fleet.candidates import upgrade_ranges
    from worker.fleet.changes import Progress
    from worker.fleet.fleet import load_fleet
    from worker.fleet.plan import build_plan
    from worker.fleet.plan_advice import plan_json
    from worker.settings import load_settings
    from worker.sinks.index import gc_paused

    settings = load_settings()
    catalog = load_catalog()
    path = args.fleet or settings.fleet
    fleet = load_fleet(path, catalog)
    ranges = upgrade_ranges(path)
    index, store = _index_and_store(settings)
    progress = Progress(index.count(), "planning", sys.stderr.write, sys.stderr.isatty())
    with gc_paused():
        plan = build_plan(index.models(), fleet, catalog, ranges, progress=progress)
    if args.apply_preview and args.csv:
        raise UsageError("--apply-preview adds to the text or the --json output, not --csv")
    preview = (
        _apply_preview(plan, fleet, settings, catalog, index, store) if args.apply_preview else None
    )
    if args.json:
        document = plan_json(plan)
        if preview is not None:
            document["apply_preview"] = preview[0]
        json.dump(document, sys.stdout, indent=1)
        print()
    elif args.csv:
        sys.stdout.write(render_plan_csv(plan))
    else:
        print(render_plan(plan), end="")
        if preview is not None:
            print(preview[1], end="")
    blocked = any(
        cp.recommended is not None and cp.tallies[cp.recommended].misses for cp in plan.consumers
    )
    return 1 if blocked else 0


def _apply_preview(
    plan: Any, fleet: Any, settings: Any, catalog: Any, index: Any, store: Any
) -> tuple[dict[str, Any], str]:
    """What `fleet apply` would do with the recommended fleet, as data and as text: the
    models whose reports it would record anew and whose tags (status) change, and the
    owners it would tell (routed as `fleet apply` routes them; nobody when notifications
    are off). Nothing is written."""
    from worker.cli.render import render_impact
    from worker.fleet.plan_advice import recommended_fleet
    from worker.pipeline.impact_run import assess_index, default_jobs
    from worker.pipeline.notifications import breakage_notifier
    from worker.pipeline.reevaluate import owners_of_breakage
    from worker.sinks.index import gc_paused

    target = recommended_fleet(plan, fleet)
    with gc_paused():
        impact = assess_index(
            index,
            target.consumers,
            history=catalog,
            policy=target.policy,
            with_artifacts=False,
            jobs=default_jobs(),
        )
    retag = [m for m in impact.models if str(m.status_after) != m.model.status]
    route, _ = breakage_notifier(settings, store)
    owners = sorted(owners_of_breakage(impact, route)) if route is not None else None
    moves = {
        c.name: c.tensorflow
        for c, before in zip(target.consumers, fleet.consumers, strict=True)
        if c is not before
    }
    data = {
        "moves": moves,
        "reports_recorded": len(impact.models),
        "retagged": [m.model.location for m in retag],
        "notified_owners": owners,
        "impact": impact.to_json(),
    }
    told = (
        "notifications are off: nobody"
        if owners is None
        else ", ".join(owners) or "nobody (no model newly broken)"
    )
    text = (
        "\napply preview (every consumer at its recommended release; nothing is written):\n"
        + "".join(f"  {name} -> {release}\n" for name, release in moves.items())
        + render_impact(impact)
        + f"fleet apply would record {len(impact.models)} report(s) anew, re-tag "
        f"{len(retag)} model(s) whose status changes, and tell: {told}\n"
    )
    return data, text
