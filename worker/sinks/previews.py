"""Fleet-change previews as the page and the worker share them: one Redis key each.

The page writes a preview's request when it enqueues it (state "queued"); the worker
that runs it marks it "running", then "done" with the result or "failed" with the
cause. A kind computed for everyone alike (the fleet's upgrade plan) also keeps the id
of its newest preview, so every reader of the page is shown the same one. Every write
sets the key's TTL (`TFCOMPAT_UI_PREVIEW_TTL`), so previews nobody
looks at again disappear. The id is random: knowing it is what lets a page show it.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from typing import Any

import orjson

from worker.errors import TransientError

PREFIX = "tfcompat:preview:"
LATEST = "tfcompat:preview-latest:"  # + kind: the id of the newest preview of that kind
ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
STATES = ("queued", "running", "done", "failed")


def new_preview_id() -> str:
    return secrets.token_urlsafe(18)


class PreviewStore:
    def __init__(self, client: Any, ttl: int, clock: Callable[[], float] = time.time) -> None:
        self._redis = client
        self.ttl = ttl
        self.clock = clock

    def _put(self, preview_id: str, document: dict[str, Any]) -> None:
        import redis

        document = {**document, "since": self.clock()}
        try:
            self._redis.set(PREFIX + preview_id, orjson.dumps(document), ex=self.ttl)
        except redis.RedisError as exc:
            raise TransientError(f"previews: Redis unavailable ({exc})") from None

    def queued(self, preview_id: str, change: dict[str, Any]) -> None:
        self._put(preview_id, {"state": "queued", "change": change})

    def running(self, preview_id: str, change: dict[str, Any]) -> None:
        self._put(preview_id, {"state": "running", "change": change})

    def done(self, preview_id: str, change: dict[str, Any], result: dict[str, Any]) -> None:
        self._put(preview_id, {"state": "done", "change": change, "result": result})

    def failed(self, preview_id: str, change: dict[str, Any], cause: str) -> None:
        self._put(preview_id, {"state": "failed", "change": change, "error": cause})

    def in_flight(self, within: float) -> int:
        """Previews queued or running whose state changed less than `within` seconds ago
        (older ones were lost with a worker: they no longer count)."""
        import redis

        now, count = self.clock(), 0
        try:
            keys = list(self._redis.scan_iter(match=PREFIX + "*", count=500))
            documents = self._redis.mget(keys) if keys else []
        except redis.RedisError as exc:
            raise TransientError(f"previews: Redis unavailable ({exc})") from None
        for raw in documents:
            document = orjson.loads(raw) if raw else {}
            if document.get("state") in ("queued", "running"):
                count += now - float(document.get("since") or 0) < within
        return count

    def newest(self, kind: str) -> str | None:
        """The id of the newest preview of `kind` (it may have expired since)."""
        import redis

        try:
            raw = self._redis.get(LATEST + kind)
        except redis.RedisError as exc:
            raise TransientError(f"previews: Redis unavailable ({exc})") from None
        return raw.decode() if isinstance(raw, bytes) else None

    def set_newest(self, kind: str, preview_id: str) -> None:
        import redis

        try:
            self._redis.set(LATEST + kind, preview_id, ex=self.ttl)
        except redis.RedisError as exc:
            raise TransientError(f"previews: Redis unavailable ({exc})") from None

    def get(self, preview_id: str) -> dict[str, Any] | None:
        """The preview's document, or None: no such id, or it expired."""
        import redis

        if not ID.fullmatch(preview_id):
            return None
        try:
            raw = self._redis.get(PREFIX + preview_id)
        except redis.RedisError as exc:
            raise TransientError(f"previews: Redis unavailable ({exc})") from None
        if raw is None:
            return None
        document = orjson.loads(raw)
        return document if isinstance(document, dict) else None
