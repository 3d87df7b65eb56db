"""A fleet change's run in Redis: its plan, its progress, and the applied digest.

A fleet change is planned once (`start`: which chunks of indexed models and which
registry versions to re-check, each a *unit*), then every unit reports its outcome
(`complete`) as it finishes, on whichever worker ran it. The counters live in one
hash per run and are updated by one Lua script, so a unit that reports twice (a
task redelivered after a kill, a dead letter re-driven) is counted once, and a
failed unit that later succeeds moves from `failed` to `done`. The unit that makes
the last outcome arrive with no failure left records the fleet's digest as applied
(`tfcompat:fleet:applied`), in the same script: exactly once, and never while any
unit is still failing.

Why a counter and not a Celery chord: a chord on Redis needs a result backend
(this deployment runs without one: `task_ignore_result`), its unlock task polls
the results, and one header task that fails for good fails the chord body with a
ChordError, losing the "record the digest" step for a change that an operator
could still complete by re-driving the dead letter. The counter needs only the
Redis we already keep the index in, survives kills of any worker, and finishes
the run whenever the last failed unit is re-driven.

A unit can also be lost without failing: a pool process killed by the time limit is
recorded as failed by Celery but never redelivered, and its unit stays `pending`.
The run then stays `running` with nothing left to report. Every new outcome stamps
the run (`progressed`); a run with no new outcome for longer than
`TFCOMPAT_FLEET_STALL_AFTER` is *stalled*, and the reconciler sends its pending
units again (`outstanding`, `resent`), at most once per that period. A unit that
was only slow reports twice and is counted once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from worker.sinks.index import FLEET_APPLIED, redis_errors

RUN = "tfcompat:fleet:run"  # hash: the current (or last) run's counters
UNITS = "tfcompat:fleet:run:units"  # hash: unit id -> "pending" | "ok" | "failed"
PLAN = "tfcompat:fleet:run:plan"  # list: the planned units, as JSON (a redelivered plan reuses it)
CHANGED = "tfcompat:fleet:run:changed"  # hash: unit id -> models it found changed (once ok)

_COMPLETE = """
if redis.call('HGET', KEYS[1], 'digest') ~= ARGV[1] then return {-1, -1, 0} end
local size = tonumber(ARGV[4])
local before = redis.call('HGET', KEYS[2], ARGV[2])
if not before then return {-1, -1, 0} end
if before == ARGV[3] then
  return {tonumber(redis.call('HGET', KEYS[1], 'remaining')),
          tonumber(redis.call('HGET', KEYS[1], 'failed_units')), 0}
end
local had = tonumber(redis.call('HGET', KEYS[4], ARGV[2]) or '0')
local has = 0
if ARGV[3] == 'ok' then
  has = tonumber(ARGV[6])
  redis.call('HSET', KEYS[4], ARGV[2], has)
else
  redis.call('HDEL', KEYS[4], ARGV[2])
end
if has ~= had then
  redis.call('HINCRBY', KEYS[1], 'changed', has - had)
end
if before == 'pending' then
  redis.call('HINCRBY', KEYS[1], 'remaining', -1)
elseif before == 'failed' then
  redis.call('HINCRBY', KEYS[1], 'failed', -size)
  redis.call('HINCRBY', KEYS[1], 'failed_units', -1)
else
  redis.call('HINCRBY', KEYS[1], 'done', -size)
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('HSET', KEYS[1], 'progressed', ARGV[5])
if ARGV[3] == 'ok' then
  redis.call('HINCRBY', KEYS[1], 'done', size)
else
  redis.call('HINCRBY', KEYS[1], 'failed', size)
  redis.call('HINCRBY', KEYS[1], 'failed_units', 1)
end
local remaining = tonumber(redis.call('HGET', KEYS[1], 'remaining'))
local failing = tonumber(redis.call('HGET', KEYS[1], 'failed_units'))
local applied = 0
if remaining == 0 and failing == 0 and redis.call('HGET', KEYS[1], 'state') ~= 'applied' then
  redis.call('SET', KEYS[3], ARGV[1])
  redis.call('HSET', KEYS[1], 'state', 'applied', 'finished', ARGV[5])
  applied = 1
elseif remaining == 0 then
  redis.call('HSET', KEYS[1], 'state', 'failed', 'finished', ARGV[5])
end
return {remaining, failing, applied}
"""


@dataclass(frozen=True)
class Unit:
    """A piece of planned work: a chunk of indexed models (`kind` "objects", `items`
    their index fields) or one registry version (`kind` "mlflow"/"sagemaker", `items`
    [name, version])."""

    id: str
    kind: str
    items: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.items) if self.kind == "objects" else 1

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "items": list(self.items)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Unit:
        return cls(str(data["id"]), str(data["kind"]), tuple(str(i) for i in data["items"]))


@dataclass(frozen=True)
class Progress:
    digest: str | None
    fleet: str | None
    state: str  # none, running, applied, failed (finished with failed units)
    planned: int  # models the run examines (every indexed model, every registry version)
    done: int
    failed: int
    units: int
    remaining: int
    started: float | None
    finished: float | None
    progressed: float | None = None  # the last new outcome (or the start)
    resent: int = 0  # units the reconciler sent again
    resent_at: float | None = None
    changed: int = 0  # of the models done, those whose verdicts changed (re-tagged)

    def idle(self, now: float) -> float | None:
        """Seconds since the run last made progress; None when it is not running."""
        if self.state != "running":
            return None
        last = self.progressed or self.started
        return max(0.0, now - last) if last is not None else None

    def stalled(self, now: float, after: float) -> bool:
        """Running with no new outcome for longer than `after` seconds."""
        idle = self.idle(now)
        return idle is not None and idle > after

    def due_for_resend(self, now: float, after: float) -> bool:
        """Stalled, and not sent again within the last `after` seconds."""
        return self.stalled(now, after) and (self.resent_at is None or now - self.resent_at > after)

    def to_json(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "fleet": self.fleet,
            "state": self.state,
            "planned": self.planned,
            "done": self.done,
            "changed": self.changed,
            "failed": self.failed,
            "units": self.units,
            "remaining_units": self.remaining,
            "started": self.started,
            "finished": self.finished,
            "progressed": self.progressed,
            "resent": self.resent,
            "resent_at": self.resent_at,
        }


@dataclass(frozen=True)
class Completion:
    remaining: int  # units not yet reported; -1: the unit is no part of the current run
    failing: int  # units whose last outcome is a failure
    applied: bool  # this completion recorded the digest as applied


class FleetRuns:
    """The run counters over a Redis client (the index's: `state_redis_url`)."""

    def __init__(self, client: Any) -> None:
        self._redis = client

    def planned(self, digest: str) -> list[Unit] | None:
        """The plan already stored for `digest` (a redelivered planning task reuses it:
        re-planning after some units ran would find fewer models changed)."""
        with redis_errors("reading the fleet run"):
            current = self._redis.hget(RUN, "digest")
            if _text(current) != digest:
                return None
            rows = self._redis.lrange(PLAN, 0, -1)
        return [Unit.from_json(json.loads(row)) for row in rows]

    def start(self, digest: str, fleet: str, units: Sequence[Unit]) -> None:
        """A new run for `digest` replaces the previous one (its plan and outcomes)."""
        planned = sum(u.size for u in units)
        now = time.time()
        with redis_errors("starting the fleet run"):
            pipe = self._redis.pipeline(transaction=True)
            pipe.delete(RUN, UNITS, PLAN, CHANGED)
            if units:
                pipe.rpush(PLAN, *[json.dumps(u.to_json()) for u in units])
                pipe.hset(UNITS, mapping={u.id: "pending" for u in units})
            pipe.hset(
                RUN,
                mapping={
                    "digest": digest,
                    "fleet": fleet,
                    "state": "running" if units else "applied",
                    "planned": planned,
                    "done": 0,
                    "changed": 0,
                    "failed": 0,
                    "failed_units": 0,
                    "units": len(units),
                    "remaining": len(units),
                    "started": now,
                    "progressed": now,
                    "resent": 0,
                },
            )
            if not units:
                pipe.hset(RUN, "finished", now)
                pipe.set(FLEET_APPLIED, digest)
            pipe.execute()

    def complete(self, digest: str, unit: Unit, ok: bool, changed: int = 0) -> Completion:
        """Report a unit's outcome (and, when ok, how many of its models it found changed);
        records the digest as applied when this was the last outstanding unit and none is
        failing."""
        with redis_errors("recording a unit of the fleet run"):
            remaining, failing, applied = self._redis.eval(
                _COMPLETE,
                4,
                RUN,
                UNITS,
                FLEET_APPLIED,
                CHANGED,
                digest,
                unit.id,
                "ok" if ok else "failed",
                unit.size,
                time.time(),
                changed if ok else 0,
            )
        return Completion(int(remaining), int(failing), bool(applied))

    def progress(self) -> Progress:
        with redis_errors("reading the fleet run"):
            raw = self._redis.hgetall(RUN)
        run = {_text(k): _text(v) for k, v in raw.items()}

        def number(name: str) -> int:
            return int(run.get(name) or 0)

        def moment(name: str) -> float | None:
            value = run.get(name)
            return float(value) if value else None

        return Progress(
            digest=run.get("digest"),
            fleet=run.get("fleet"),
            state=run.get("state") or "none",
            planned=number("planned"),
            done=number("done"),
            changed=number("changed"),
            failed=number("failed"),
            units=number("units"),
            remaining=number("remaining"),
            started=moment("started"),
            finished=moment("finished"),
            progressed=moment("progressed"),
            resent=number("resent"),
            resent_at=moment("resent_at"),
        )

    def outstanding(self, digest: str) -> list[Unit]:
        """The planned units of `digest`'s run that have reported nothing yet (a failed
        unit is not among them: it waits in the dead-letter list for an operator)."""
        with redis_errors("reading the fleet run"):
            if _text(self._redis.hget(RUN, "digest")) != digest:
                return []
            rows = self._redis.lrange(PLAN, 0, -1)
            states = {_text(k): _text(v) for k, v in self._redis.hgetall(UNITS).items()}
        units = [Unit.from_json(json.loads(row)) for row in rows]
        return [u for u in units if states.get(u.id) == "pending"]

    def resent_units(self, digest: str, count: int, now: float) -> None:
        """Record that the reconciler sent `count` units of `digest`'s run again."""
        with redis_errors("recording the fleet run"):
            if _text(self._redis.hget(RUN, "digest")) != digest:
                return
            pipe = self._redis.pipeline(transaction=True)
            pipe.hincrby(RUN, "resent", count)
            pipe.hset(RUN, "resent_at", now)
            pipe.execute()


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value
