"""The `tfcompat` command: a thin layer over the readers, rules, catalog and fleet.

Exit statuses (DESIGN.md): 0 every consumer loads every artifact, 1 some
consumer cannot, 2 invalid input or usage. Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from worker.errors import TfcompatError

LOADERS = ("saved-model-v1", "saved-model-v2", "graph-import")


class UsageError(TfcompatError):
    """Bad command-line arguments."""


def _fail(message: str) -> int:
    print(f"tfcompat: error: {message}", file=sys.stderr)
    return 2


# --- reading paths ----------------------------------------------------------------------------


def read_any(target: str) -> list[Any]:
    """Artifacts at a local path or s3:// URL."""
    if target.startswith("s3://"):
        from worker.settings import load_settings
        from worker.sinks.s3 import read_s3_artifacts

        return read_s3_artifacts(target, load_settings())
    from worker.formats.read import read_path

    return read_path(target)


# --- consumers --------------------------------------------------------------------------------


def parse_consumer_spec(spec: str, catalog: Any, cache: Any) -> Any:
    """'tf==2.12[@loader]' or 'NAME=MANIFEST.json[@loader]'."""
    from worker.compat.consumer import Loader
    from worker.fleet.manifest import consumer_from_manifest

    loader = Loader.SAVED_MODEL_V1
    body = spec
    if "@" in spec:
        head, _, tail = spec.rpartition("@")
        if tail in LOADERS:
            body, loader = head, Loader(tail)
        elif "==" in spec:
            raise UsageError(
                f"--consumer {spec}: unknown loader '{tail}' (one of: {', '.join(LOADERS)})"
            )
    for prefix in ("tf==", "tensorflow==", "serving=="):
        if body.startswith(prefix):
            return catalog.consumer(body[len(prefix) :], loader)
    name, sep, path = body.partition("=")
    if not sep or not name or not path:
        raise UsageError(f"--consumer {spec}: expected tf==X.Y[.Z][@LOADER] or NAME=MANIFEST.json")
    return consumer_from_manifest(name, path, loader, cache)


# --- commands ---------------------------------------------------------------------------------


def cmd_inspect(args: argparse.Namespace) -> int:
    from worker.formats.summary import inspect_json
    from worker.render import render_inspect

    documents: list[dict[str, Any]] = []
    failed = False
    for target in args.paths:
        try:
            for artifact in read_any(target):
                documents.append(inspect_json(artifact))
        except TfcompatError as exc:
            failed = True
            documents.append({"path": target, "error": str(exc)})
            if not args.json:
                print(f"tfcompat: error: {exc}", file=sys.stderr)
    if args.json:
        json.dump({"artifacts": documents}, sys.stdout, indent=1, sort_keys=True)
        print()
    else:
        print(render_inspect([d for d in documents if "error" not in d]), end="")
    return 2 if failed else 0


def cmd_check(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.catalog.opdefs import OpDefCache
    from worker.compat.policy import Policy
    from worker.compat.report import artifact_report, exit_status, invalid_report
    from worker.fleet.fleet import load_fleet
    from worker.render import render_check

    catalog = load_catalog()
    cache = OpDefCache()
    consumers = [parse_consumer_spec(spec, catalog, cache) for spec in args.consumer]
    policy = Policy()
    if args.fleet:
        fleet = load_fleet(args.fleet, catalog)
        consumers += list(fleet.consumers)
        policy = fleet.policy
    names = [c.name for c in consumers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"consumer named twice: {', '.join(duplicates)}")
    releases = catalog.range_consumers()
    reports: list[dict[str, Any]] = []
    for target in args.paths:
        try:
            artifacts = read_any(target)
        except TfcompatError as exc:
            reports.append(invalid_report(target, str(exc)))
            continue
        for artifact in artifacts:
            reports.append(artifact_report(artifact, consumers, releases, catalog, policy))
    if args.json:
        json.dump({"artifacts": reports}, sys.stdout, indent=1)
        print()
    else:
        print(render_check(reports), end="")
    return exit_status(reports)


def cmd_fleet_list(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.fleet.fleet import load_fleet
    from worker.render import render_fleet

    fleet = load_fleet(args.fleet, load_catalog())
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


def _index_and_store(settings: Any) -> tuple[Any, Any]:
    from worker.pipeline.services import build_index
    from worker.sinks.s3 import S3ObjectStore, s3_client

    store = S3ObjectStore(s3_client(settings), settings)
    return build_index(settings, store), store


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
    from worker.fleet.changes import Progress
    from worker.fleet.impact import assess
    from worker.render import render_impact
    from worker.settings import load_settings

    settings = load_settings()
    catalog = load_catalog()
    _, target = _target_fleet(args, settings, catalog)
    index, _ = _index_and_store(settings)
    progress = Progress(index.count(), "checking", sys.stderr.write, sys.stderr.isatty())
    impact = assess(
        index.models(), target.consumers, history=catalog, policy=target.policy, progress=progress
    )
    if args.json:
        json.dump(impact.to_json(), sys.stdout, indent=1)
        print()
    else:
        print(render_impact(impact), end="")
    return 1 if impact.breaking else 0


def cmd_fleet_apply(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.fleet.changes import Progress
    from worker.pipeline.process import Checker, ReportLocation
    from worker.pipeline.reevaluate import breakage_notifier, reevaluate
    from worker.render import render_impact
    from worker.settings import load_settings

    settings = load_settings()
    if args.enqueue:
        from worker.pipeline.app import TASK_FLEET_CHANGED, create_app

        create_app(settings).send_task(TASK_FLEET_CHANGED, args=[args.fleet or settings.fleet])
        print(f"queued re-evaluation against {args.fleet or settings.fleet}")
        return 0
    catalog = load_catalog()
    _, target = _target_fleet(args, settings, catalog)
    index, store = _index_and_store(settings)
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
    from worker.settings import load_settings

    index, _ = _index_and_store(load_settings())
    print(f"index rebuilt from stored reports: {index.rebuild()} model(s)")
    return 0


def cmd_dump_manifest(args: argparse.Namespace) -> int:
    from worker.fleet.manifest import run_dumper

    forwarded = ["-o", args.output]
    for module in args.imports:
        forwarded += ["--import", module]
    for library in args.op_libraries:
        forwarded += ["--load-op-library", library]
    return run_dumper(args.python, forwarded)


def cmd_catalog(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog

    catalog = load_catalog()
    rows = [
        {
            "version": r.version,
            "graph_def_version": r.graph_def_version,
            "graph_def_min_consumer": r.graph_def_min_consumer,
            "graph_def_min_producer": r.graph_def_min_producer,
            "checkpoint_version": r.checkpoint_version,
            "registry": r.registry_version,
        }
        for r in catalog.releases
    ]
    if args.json:
        json.dump({"releases": rows}, sys.stdout, indent=1)
        print()
        return 0
    print(f"{'release':<10} {'graph-def':>9} {'min-cons':>8} {'min-prod':>8}  registry")
    for row in rows:
        print(
            f"{row['version']:<10} {row['graph_def_version']:>9} "
            f"{row['graph_def_min_consumer']:>8} {row['graph_def_min_producer']:>8}  "
            f"{row['registry'] or '-'}"
        )
    return 0


def cmd_settings(args: argparse.Namespace) -> int:
    from worker.settings import load_settings, masked

    for key, value in masked(load_settings()).items():
        print(f"{key}={json.dumps(value) if not isinstance(value, str) else value}")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    from worker.logs import configure_logging
    from worker.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    port = settings.metrics_port if args.metrics_port is None else args.metrics_port
    if port:
        from worker.exporter import start_exporter, use_multiprocess_dir

        # Before anything imports worker.metrics: the pool's processes then write to files.
        directory = use_multiprocess_dir(settings.metrics_dir)
        start_exporter(port, directory)
    from worker.pipeline.app import QUEUE, create_app

    app = create_app(settings)
    argv = [
        "worker",
        "-Q",
        QUEUE,
        "--loglevel",
        settings.log_level.upper(),
        "--concurrency",
        str(args.concurrency),
    ]
    if args.hostname:
        argv += ["--hostname", args.hostname]
    app.worker_main(argv)
    return 0


def cmd_healthcheck(args: argparse.Namespace) -> int:
    from worker.health import Running, find_running, healthcheck, healthy
    from worker.settings import load_settings

    parser = build_parser()
    if args.role:
        running: Running | None = Running(args.role, parser.parse_args([args.role]))
    else:
        running = find_running(parser)
    if running is None:
        raise UsageError("no tfcompat serve, worker or sqs-bridge runs here; name the ROLE")
    checks = healthcheck(
        load_settings(), running, url=args.url, node=args.node, timeout=args.timeout
    )
    for name, value in checks.items():
        print(f"{running.role} {name}: {value}")
    return 0 if healthy(checks) else 1


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from worker.ingest.app import create_http_app
    from worker.ingest.github import github_route
    from worker.logs import configure_logging
    from worker.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    app = create_http_app(settings, extra_routes=[github_route(settings)])
    uvicorn.run(app, host=args.host, port=args.port, log_config=None, access_log=False)
    return 0


def cmd_sqs_bridge(args: argparse.Namespace) -> int:
    import threading

    import boto3

    from worker.ingest.app import celery_enqueue, event_filter
    from worker.ingest.sqs_bridge import install_stop_signals, run_bridge
    from worker.logs import configure_logging
    from worker.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    queue_url = args.queue_url or settings.sqs_queue_url
    if not queue_url:
        raise UsageError("no queue: pass --queue-url or set TFCOMPAT_SQS_QUEUE_URL")
    port = settings.metrics_port if args.metrics_port is None else args.metrics_port
    if port:
        from prometheus_client import start_http_server

        start_http_server(port)  # one process: its own registry is the whole story
    sqs = boto3.client(
        "sqs", endpoint_url=settings.s3_endpoint_url, region_name=settings.aws_region
    )
    stop = threading.Event()
    install_stop_signals(stop)
    run_bridge(
        sqs,
        queue_url,
        celery_enqueue(settings),
        event_filter(settings),
        stop=stop,
        wait_seconds=args.wait,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfcompat",
        description="Check TensorFlow models against the TensorFlow releases that load them, "
        "without TensorFlow.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("inspect", help="print what a model says about itself")
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="model file, SavedModel dir, checkpoint, archive, or s3://bucket/key",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser(
        "check",
        help="predict which consumers can load a model",
        description="Without --consumer or --fleet, only the catalog ranges are reported "
        "(exit 1 if no known release loads the model).",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument(
        "--consumer",
        action="append",
        default=[],
        metavar="SPEC",
        help="tf==X.Y[.Z][@LOADER] or NAME=MANIFEST.json[@LOADER]; LOADER is "
        "saved-model-v1 (default, TF Serving), saved-model-v2 or graph-import",
    )
    p.add_argument("--fleet", metavar="FLEET.yaml", help="check every consumer of a fleet file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_check)

    fleet = sub.add_parser("fleet", help="the consumer fleet").add_subparsers(
        dest="fleet_command", required=True, metavar="SUBCOMMAND"
    )
    p = fleet.add_parser("list", help="show the fleet's consumers")
    p.add_argument("--fleet", default="config/fleet.yaml", metavar="FLEET.yaml")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_fleet_list)
    p = fleet.add_parser(
        "dump-manifest",
        help="record a TensorFlow environment's versions and op registry",
        description="Runs inside any Python that has TensorFlow (use --python to point at it).",
    )
    p.add_argument("--python", help="interpreter of the environment to record (default: this one)")
    p.add_argument("-o", "--output", default="-", help="manifest file (default: stdout)")
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first so its ops are recorded (repeatable)",
    )
    p.add_argument(
        "--load-op-library",
        dest="op_libraries",
        action="append",
        default=[],
        metavar="SO",
        help="tf.load_op_library(SO) first (repeatable)",
    )
    p.set_defaults(func=cmd_dump_manifest)

    for name, func, text in (
        ("impact", cmd_fleet_impact, "which indexed models a fleet change would change, and why"),
        ("apply", cmd_fleet_apply, "re-check every indexed model against a fleet, re-tag, notify"),
    ):
        p = fleet.add_parser(
            name,
            help=text,
            description=text + ". Exit 1 (impact) when a "
            "model would become unloadable by a consumer.",
        )
        p.add_argument("--fleet", metavar="NEW.yaml", help="the new fleet file")
        p.add_argument(
            "--current", metavar="FLEET.yaml", help="the fleet in force (default: TFCOMPAT_FLEET)"
        )
        p.add_argument(
            "--add-consumer",
            action="append",
            default=[],
            metavar="SPEC",
            help="add a consumer (tf==X.Y[@LOADER] or NAME=MANIFEST.json)",
        )
        p.add_argument(
            "--remove-consumer",
            action="append",
            default=[],
            metavar="NAME",
            help="remove a consumer by name",
        )
        if name == "impact":
            p.add_argument("--json", action="store_true")
        else:
            p.add_argument(
                "--enqueue",
                action="store_true",
                help="hand the re-evaluation to the workers instead",
            )
        p.set_defaults(func=func)

    index = sub.add_parser("index", help="the model index").add_subparsers(
        dest="index_command", required=True, metavar="SUBCOMMAND"
    )
    p = index.add_parser("rebuild", help="rebuild the index from the stored reports")
    p.set_defaults(func=cmd_index_rebuild)

    p = sub.add_parser("catalog", help="list the TensorFlow releases tfcompat knows")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_catalog)

    p = sub.add_parser("settings", help="print the effective settings, secrets masked")
    p.set_defaults(func=cmd_settings)

    p = sub.add_parser("worker", help="run a Celery worker that checks uploaded models")
    p.add_argument("--concurrency", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--hostname", help="Celery node name (default: celery@HOST)")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve the Prometheus metrics of all worker processes on PORT "
        "(default: TFCOMPAT_METRICS_PORT; 0: none)",
    )
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("serve", help="run the HTTP receiver for object-store events and webhooks")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("sqs-bridge", help="long-poll an SQS queue that S3 notifies; enqueue checks")
    p.add_argument("--queue-url", help="queue URL (default: TFCOMPAT_SQS_QUEUE_URL)")
    p.add_argument("--wait", type=int, default=20, help="long-poll seconds (default 20)")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on PORT (default: TFCOMPAT_METRICS_PORT; 0: none)",
    )
    p.set_defaults(func=cmd_sqs_bridge)

    p = sub.add_parser(
        "healthcheck",
        help="exit 0 when this container's tfcompat process is healthy (image HEALTHCHECK)",
        description="Probes the receiver's /healthz, pings the Celery worker node, or checks "
        "the bridge's broker and queue. Without ROLE, probes the tfcompat command this "
        "machine or container runs. Exit 0 healthy, 1 not, 2 nothing to probe.",
    )
    p.add_argument("role", nargs="?", choices=["serve", "worker", "sqs-bridge"], metavar="ROLE")
    p.add_argument("--url", help="receiver health URL (default: from its --host/--port)")
    p.add_argument("--node", help="worker node to ping (default: from its --hostname)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")
    p.set_defaults(func=cmd_healthcheck)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from worker.logs import configure_logging

    configure_logging("WARNING", "console")  # stdout stays the command's own output
    try:
        status: int = args.func(args)
    except TfcompatError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return status


if __name__ == "__main__":
    sys.exit(main())
