"""The long-running processes: worker, receiver, SQS bridge, and their healthcheck."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from worker.cli.errors import UsageError


def cmd_worker(args: argparse.Namespace) -> int:
    from worker.logs import configure_logging
    from worker.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    port = settings.metrics_port if args.metrics_port is None else args.metrics_port
    if port:
        from worker.exporter import use_multiprocess_dir

        # Before anything imports worker.metrics: the pool's processes then write to files.
        start_metrics(settings, port, use_multiprocess_dir(settings.metrics_dir))
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
    return run_celery(app, argv)


def run_celery(app: Any, argv: list[str]) -> int:
    """Run the `celery` command line on `app` and return its exit status.

    `Celery.worker_main` and `Celery.start` drop it: click, run without standalone
    mode, returns the status of `ctx.exit(worker.exitcode)` instead of raising, so a
    worker whose pool could not start (`WorkerLostError('Could not start worker
    processes')`) or that met any other unrecoverable error exited 0, and a supervisor
    that restarts only failures left it dead. This is `Celery.start` keeping it."""
    from celery.bin.celery import celery

    celery.params[0].default = app
    try:
        status = celery.main(args=argv, standalone_mode=False)
    finally:
        celery.params[0].default = None
    if status is None:
        return 0
    return status if isinstance(status, int) and not isinstance(status, bool) else 1


def cmd_healthcheck(
    args: argparse.Namespace, parser_factory: Callable[[], argparse.ArgumentParser]
) -> int:
    """`parser_factory` builds the parser that started the process being probed."""
    from worker.model.health import healthy
    from worker.pipeline.health import Running, find_running, healthcheck
    from worker.settings import load_settings

    parser = parser_factory()
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
    """The event listener (--host/--port: events, webhooks, /healthz), the fleet page on
    a listener of its own (--ui-host/--ui-port, when TFCOMPAT_UI_ENABLED), and the
    metrics exporter (TFCOMPAT_METRICS_PORT), in one process."""
    from starlette.applications import Starlette

    from worker.cli.listeners import listener, serve_all
    from worker.ingest.app import create_http_app
    from worker.ingest.github import github_route
    from worker.ingest.handoff import Handoff
    from worker.ingest.mlflow import mlflow_route
    from worker.logs import configure_logging
    from worker.once import RedisClaims
    from worker.pipeline.app import github_enqueuer, object_enqueuer, registry_enqueuer
    from worker.pipeline.health import dependency_checks
    from worker.settings import load_settings, state_redis_url

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    page = fleet_page(settings)  # ConfigError before anything listens
    claims = RedisClaims.from_url(state_redis_url(settings), timeout=settings.publish_timeout)
    handoff = Handoff(settings.publish_timeout)
    registry_enqueue = registry_enqueuer(settings)
    routes = []
    if "github" in settings.receiver_routes:
        routes.append(github_route(settings, github_enqueuer(settings), claims, handoff))
    if "mlflow" in settings.receiver_routes:
        routes.append(mlflow_route(settings, registry_enqueue, claims, handoff))
    app = create_http_app(
        settings,
        object_enqueuer(settings),
        lambda: dependency_checks(settings),
        extra_routes=routes,
        replays=claims,
        handoff=handoff,
        registry_enqueue=registry_enqueue,
    )
    servers = [listener(app, args.host, args.port)]
    if page:
        host = settings.ui_host if args.ui_host is None else args.ui_host
        port = settings.ui_port if args.ui_port is None else args.ui_port
        servers.append(listener(Starlette(routes=page), host, port, proxy_headers=False))
    start_metrics(settings, args.metrics_port, directory=None)
    serve_all(servers)
    return 0


def start_metrics(settings: Any, given: int | None, directory: str | None) -> None:
    """The process's metrics exporter on --metrics-port or TFCOMPAT_METRICS_PORT (0:
    none), behind TFCOMPAT_METRICS_TOKEN when it is set."""
    port = settings.metrics_port if given is None else given
    if not port:
        return
    from worker.exporter import start_exporter

    token = settings.metrics_token.get_secret_value() if settings.metrics_token else None
    start_exporter(port, directory, token=token or None)


def fleet_page(settings: Any) -> list[Any]:
    """The fleet page's routes (/ui) when TFCOMPAT_UI_ENABLED, for its own listener;
    ConfigError when it is enabled without authentication, or with a trusted header
    that nothing proves came from the proxy."""
    if not settings.ui_enabled:
        return []
    from worker.cli.fleet import ui_sources
    from worker.ui.access import require_access
    from worker.ui.routes import ui_routes

    require_access(settings)  # before anything connects
    return ui_routes(ui_sources(settings))


def cmd_sqs_bridge(args: argparse.Namespace) -> int:
    import threading

    from worker.ingest.access import bucket_allowlist, bucket_gaps, require_closed
    from worker.ingest.app import event_filter
    from worker.ingest.sqs_bridge import install_stop_signals, run_bridge
    from worker.logs import configure_logging
    from worker.pipeline.app import object_enqueuer
    from worker.settings import load_settings
    from worker.sinks.aws import aws_client

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    opened = require_closed(settings, bucket_gaps(settings), "the SQS bridge")
    if opened:
        import structlog

        structlog.get_logger(__name__).warning(
            "sqs_bridge.unauthenticated",
            open=opened,
            note="TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS is set: a message naming any bucket "
            "makes the worker read and tag it",
        )
    queue_url = args.queue_url or settings.sqs_queue_url
    if not queue_url:
        raise UsageError("no queue: pass --queue-url or set TFCOMPAT_SQS_QUEUE_URL")
    start_metrics(settings, args.metrics_port, directory=None)  # one process: its registry
    sqs = aws_client("sqs", settings)
    stop = threading.Event()
    install_stop_signals(stop)
    run_bridge(
        sqs,
        queue_url,
        object_enqueuer(settings),
        event_filter(settings),
        stop=stop,
        wait_seconds=args.wait,
        allowlist=bucket_allowlist(settings),
    )
    return 0
