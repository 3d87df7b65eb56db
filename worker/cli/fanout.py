"""`tfcompat fleet status`, `tfcompat dead-letters list|retry` and `tfcompat beat`: the
operator's view of fleet changes fanned out over the workers (`pipeline.fanout`)."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Any

from worker.cli.errors import UsageError


def _state_redis(settings: Any) -> Any:
    import redis

    from worker.settings import state_redis_url

    return redis.Redis.from_url(state_redis_url(settings), socket_timeout=10)


def _when(stamp: float | None) -> str:
    if stamp is None:
        return "-"
    return datetime.datetime.fromtimestamp(stamp, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _age(seconds: float) -> str:
    minutes, _ = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h"
    return f"{hours}h {minutes}m" if hours else f"{minutes}m"


def cmd_fleet_status(args: argparse.Namespace) -> int:
    """The current (or last) fleet change: planned / done / changed / failed, and the
    applied digest.
    A running change with no unit reported for TFCOMPAT_FLEET_STALL_AFTER is shown as
    stalled, with how long it has been idle (the reconciler sends its pending units
    again)."""
    import time

    from worker.settings import load_settings
    from worker.sinks.dead_letters import DeadLetters
    from worker.sinks.fleet_runs import FleetRuns
    from worker.sinks.index import FLEET_APPLIED

    settings = load_settings()
    client = _state_redis(settings)
    progress = FleetRuns(client).progress()
    applied = client.get(FLEET_APPLIED)
    applied_text = applied.decode() if isinstance(applied, bytes) else applied
    letters = DeadLetters(client).count()
    now = time.time()
    idle = progress.idle(now)
    stalled = progress.stalled(now, settings.fleet_stall_after)
    if args.json:
        shown = {
            **progress.to_json(),
            "stalled": stalled,
            "idle_s": round(idle, 1) if idle is not None else None,
        }
        json.dump(
            {**shown, "applied": applied_text, "dead_letters": letters},
            sys.stdout,
            indent=1,
        )
        print()
        return 0
    if progress.digest is None:
        print(f"no fleet change recorded; applied fleet: {applied_text or '-'}")
        return 0
    state = progress.state
    if stalled and idle is not None:
        state = f"stalled: running, no unit reported for {_age(idle)}"
        if progress.resent:
            state += f" ({progress.resent} units sent again, last {_when(progress.resent_at)})"
    print(
        f"fleet change {progress.digest} ({progress.fleet}): {state}\n"
        f"  planned {progress.planned}  done {progress.done} ({progress.changed} changed)"
        f"  failed {progress.failed}"
        f"  (units: {progress.units}, {progress.remaining} outstanding)\n"
        f"  started {_when(progress.started)}  finished {_when(progress.finished)}\n"
        f"  applied fleet: {applied_text or '-'}  dead letters: {letters}"
    )
    return 0


def cmd_dead_letters_list(args: argparse.Namespace) -> int:
    from worker.settings import load_settings
    from worker.sinks.dead_letters import DeadLetters

    letters = DeadLetters(_state_redis(load_settings())).entries()
    if args.json:
        print(json.dumps([d.to_json() for d in letters], indent=1))
        return 0
    if not letters:
        print("no dead letters")
    for letter in letters:
        print(
            f"{letter.id}  {_when(letter.failed_at)}  {letter.task}  failures={letter.failures}\n"
            f"    args: {json.dumps(letter.args)[:300]}\n    cause: {letter.cause}"
        )
    return 0


def cmd_dead_letters_retry(args: argparse.Namespace) -> int:
    """Send dead letters' work again (each removed once the broker has it)."""
    from worker.pipeline.app import create_app
    from worker.settings import load_settings
    from worker.sinks.dead_letters import DeadLetters

    if bool(args.id) == bool(args.all):
        raise UsageError("name one dead letter's ID, or --all")
    settings = load_settings()
    letters = DeadLetters(_state_redis(settings))
    app = create_app(settings, publish_timeout=settings.publish_timeout)
    timeout = settings.publish_timeout

    def send(task: str, task_args: list[Any]) -> None:
        app.send_task(task, args=task_args, timeout=timeout, confirm_timeout=timeout)

    ids = [d.id for d in letters.entries()] if args.all else [args.id]
    for ident in ids:
        letter = letters.retry(ident, send)
        print(f"sent again: {letter.id} {letter.task}")
    if not ids:
        print("no dead letters")
    return 0


def cmd_beat(args: argparse.Namespace) -> int:
    """Celery beat sending the reconciler every TFCOMPAT_RECONCILE_INTERVAL, its schedule
    kept in TFCOMPAT_BEAT_SCHEDULE_FILE. Run exactly one."""
    from worker.cli.processes import run_celery
    from worker.logs import configure_logging
    from worker.pipeline.app import create_app
    from worker.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    app = create_app(settings)
    argv = [
        "beat",
        "--loglevel",
        settings.log_level.upper(),
        "--schedule",
        settings.beat_schedule_file,
    ]
    return run_celery(app, argv)
