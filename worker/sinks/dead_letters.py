"""Work that failed for good, kept in Redis with its cause until an operator re-drives it.

A fan-out unit (a chunk of models, one registry version) whose retries ran out, or
that met an error retrying cannot fix, is added here by the task that gave up:
the task's name and arguments (enough to send it again), the cause, when it
failed and how often. The entry's id is a digest of the task and its arguments,
so the same work failing again updates its entry instead of adding one.
`tfcompat dead-letters list` shows them; `retry ID` / `retry --all` sends the
task again and removes the entry only once the broker has it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from worker.errors import NotFound
from worker.sinks.index import redis_errors

DEAD_LETTERS = "tfcompat:dead-letters"  # hash: id -> JSON entry


@dataclass(frozen=True)
class DeadLetter:
    id: str
    task: str
    args: list[Any]
    cause: str
    failed_at: float
    failures: int = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task": self.task,
            "args": self.args,
            "cause": self.cause,
            "failed_at": self.failed_at,
            "failures": self.failures,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DeadLetter:
        return cls(
            str(data["id"]),
            str(data["task"]),
            list(data["args"]),
            str(data["cause"]),
            float(data["failed_at"]),
            int(data.get("failures") or 1),
        )


def letter_id(task: str, args: list[Any]) -> str:
    blob = json.dumps([task, args], sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


class DeadLetters:
    def __init__(self, client: Any) -> None:
        self._redis = client

    def add(self, task: str, args: list[Any], cause: str) -> DeadLetter:
        """Keep the failed work; the same work again counts one more failure."""
        ident = letter_id(task, args)
        with redis_errors("reading a dead letter"):
            before = self._redis.hget(DEAD_LETTERS, ident)
        failures = DeadLetter.from_json(json.loads(before)).failures + 1 if before else 1
        letter = DeadLetter(ident, task, args, cause[:2000], time.time(), failures)
        with redis_errors("writing a dead letter"):
            self._redis.hset(DEAD_LETTERS, ident, json.dumps(letter.to_json()))
        return letter

    def entries(self) -> list[DeadLetter]:
        """Every dead letter, oldest failure first."""
        with redis_errors("listing dead letters"):
            raw = self._redis.hvals(DEAD_LETTERS)
        return sorted((DeadLetter.from_json(json.loads(v)) for v in raw), key=lambda d: d.failed_at)

    def get(self, ident: str) -> DeadLetter:
        with redis_errors("reading a dead letter"):
            raw = self._redis.hget(DEAD_LETTERS, ident)
        if raw is None:
            raise NotFound(f"no dead letter {ident!r} (`tfcompat dead-letters list` shows them)")
        return DeadLetter.from_json(json.loads(raw))

    def retry(self, ident: str, send: Callable[[str, list[Any]], None]) -> DeadLetter:
        """Send the work again (`send` returns once the broker has it), then forget it."""
        letter = self.get(ident)
        send(letter.task, letter.args)
        with redis_errors("removing a dead letter"):
            self._redis.hdel(DEAD_LETTERS, ident)
        return letter

    def count(self) -> int:
        with redis_errors("counting dead letters"):
            return int(self._redis.hlen(DEAD_LETTERS))

    def holds(self, task: str, args: list[Any]) -> bool:
        """Whether this very work is waiting in the list (the reconciler leaves it to the
        operator instead of failing it again every run)."""
        with redis_errors("reading a dead letter"):
            return bool(self._redis.hexists(DEAD_LETTERS, letter_id(task, args)))
