"""At most once: keys claimed with Redis `SET NX` and a TTL.

Two users: the Slack notifier (one message per artifact version and verdict,
however many times a task is delivered) and the GitHub webhook route (a
delivery id seen before is a replay). A claim is taken before the side effect
and either confirmed after it (kept for the full TTL) or released when the
side effect failed, so a later delivery may try again. A claim that is neither
(the process died in between) expires after `pending_ttl`, for the same reason.

Release and confirm compare the claim's token first, so a process never drops
or extends a claim another process took after its own had expired.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Protocol

from worker.errors import TransientError

PREFIX = "tfcompat:once:"
PENDING_TTL = 600  # seconds: longer than a notification with all its retries takes

# Compare-and-delete / compare-and-extend, atomic in Redis.
_RELEASE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)
_CONFIRM = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('set', KEYS[1], ARGV[1], 'EX', ARGV[2]) end return 0"
)


class Claims(Protocol):
    def claim(self, key: str, ttl: int) -> str | None:
        """A token if the key was free (now ours for `ttl` seconds), None if taken."""
        ...

    def confirm(self, key: str, token: str, ttl: int) -> None:
        """Keep our claim for `ttl` seconds from now: the side effect happened."""
        ...

    def release(self, key: str, token: str) -> None:
        """Give our claim back: the side effect did not happen."""
        ...


class RedisClaims:
    """Claims in Redis (the broker's, by default). Connection trouble is a TransientError."""

    def __init__(self, client: Any, prefix: str = PREFIX) -> None:
        self._client = client
        self._prefix = prefix

    @classmethod
    def from_url(cls, url: str) -> RedisClaims:
        import redis

        return cls(redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5))

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        import redis

        try:
            return getattr(self._client, method)(*args, **kwargs)
        except redis.RedisError as exc:
            raise TransientError(f"redis: {type(exc).__name__}: {exc}") from None

    def claim(self, key: str, ttl: int) -> str | None:
        token = secrets.token_hex(8)
        taken = self._call("set", self._prefix + key, token, nx=True, ex=max(1, ttl))
        return token if taken else None

    def confirm(self, key: str, token: str, ttl: int) -> None:
        self._call("eval", _CONFIRM, 1, self._prefix + key, token, max(1, ttl))

    def release(self, key: str, token: str) -> None:
        self._call("eval", _RELEASE, 1, self._prefix + key, token)


class MemoryClaims:
    """Claims in a dict, for unit tests; `now` is injectable to test expiry."""

    def __init__(self, now: Any = time.monotonic) -> None:
        self._now = now
        self.keys: dict[str, tuple[str, float]] = {}

    def _live(self, key: str) -> tuple[str, float] | None:
        held = self.keys.get(key)
        if held and held[1] <= self._now():
            del self.keys[key]
            return None
        return held

    def claim(self, key: str, ttl: int) -> str | None:
        if self._live(key):
            return None
        token = secrets.token_hex(8)
        self.keys[key] = (token, self._now() + ttl)
        return token

    def confirm(self, key: str, token: str, ttl: int) -> None:
        held = self._live(key)
        if held and held[0] == token:
            self.keys[key] = (token, self._now() + ttl)

    def release(self, key: str, token: str) -> None:
        held = self._live(key)
        if held and held[0] == token:
            del self.keys[key]
