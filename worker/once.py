"""Once: keys claimed with Redis `SET NX` and a TTL.

Users: the Slack notifier (one message per artifact version and verdict,
however many times a task is delivered), the GitHub webhook route and the SNS
route (a delivery or MessageId seen before is a replay).

A claim is taken before the side effect and then either confirmed ("done",
kept for the full TTL) or released when the side effect failed, so a later
delivery may try again. The notifier holds its claim as a short lease while it
sends (`take` and `Lease`): renewed every third of the lease while the process
lives, so when the process is killed mid-send the claim lapses within one lease,
and the redelivered task, which `take` makes wait for exactly that, sends the
message itself. A claim confirmed as done is never taken again.

Release, renew and confirm compare the claim's token first, so a process never
drops or extends a claim another process took after its own had lapsed.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Protocol

from worker.errors import TfcompatError, TransientError

PREFIX = "tfcompat:once:"
DONE = "done:"  # a confirmed claim's value is DONE + its token

# Compare-and-delete / compare-and-mark / compare-and-extend, atomic in Redis.
_RELEASE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)
_CONFIRM = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('set', KEYS[1], 'done:' .. ARGV[1], 'EX', ARGV[2]) end return 0"
)
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('expire', KEYS[1], ARGV[2]) end return 0"
)


@dataclass(frozen=True)
class Hold:
    """Someone's claim on a key: confirmed (`done`) or still pending, and its seconds left."""

    done: bool
    ttl: float


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

    def renew(self, key: str, token: str, ttl: int) -> bool:
        """Extend our pending claim to `ttl` seconds from now; False if it is not ours."""
        ...

    def hold(self, key: str) -> Hold | None:
        """The claim on `key`, if any."""
        ...


class RedisClaims:
    """Claims in Redis (the broker's, by default). Connection trouble is a TransientError."""

    def __init__(self, client: Any, prefix: str = PREFIX) -> None:
        self._client = client
        self._prefix = prefix

    @classmethod
    def from_url(cls, url: str, timeout: float = 5) -> RedisClaims:
        import redis

        return cls(
            redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        )

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

    def renew(self, key: str, token: str, ttl: int) -> bool:
        return bool(self._call("eval", _RENEW, 1, self._prefix + key, token, max(1, ttl)))

    def hold(self, key: str) -> Hold | None:
        pipe = self._client.pipeline(transaction=True)
        pipe.get(self._prefix + key).pttl(self._prefix + key)
        value, pttl = self._call_pipe(pipe)
        if value is None:
            return None
        text = value.decode() if isinstance(value, bytes) else str(value)
        return Hold(text.startswith(DONE), max(0.0, pttl / 1000) if pttl >= 0 else float("inf"))

    def _call_pipe(self, pipe: Any) -> Any:
        import redis

        try:
            return pipe.execute()
        except redis.RedisError as exc:
            raise TransientError(f"redis: {type(exc).__name__}: {exc}") from None


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
            self.keys[key] = (DONE + token, self._now() + ttl)

    def release(self, key: str, token: str) -> None:
        held = self._live(key)
        if held and held[0] == token:
            del self.keys[key]

    def renew(self, key: str, token: str, ttl: int) -> bool:
        held = self._live(key)
        if held and held[0] == token:
            self.keys[key] = (token, self._now() + ttl)
            return True
        return False

    def hold(self, key: str) -> Hold | None:
        held = self._live(key)
        if held is None:
            return None
        return Hold(held[0].startswith(DONE), held[1] - self._now())


def take(
    claims: Claims,
    key: str,
    lease: int,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """Our token on `key` for `lease` seconds, or None when the side effect is done.

    While another process holds a pending claim, waits for it to be confirmed (None)
    or to lapse (we take it): a killed sender's claim lapses within one lease. A
    pending claim with more than a lease left is not a lease (a process of an older
    release claimed for the full TTL) and counts as done. TransientError when a live
    holder keeps renewing for longer than two leases (a send stuck in retries)."""
    deadline = clock() + 2 * lease + 1
    while True:
        token = claims.claim(key, lease)
        if token is not None:
            return token
        held = claims.hold(key)
        if held is None:
            continue  # released or lapsed between the two calls
        if held.done or held.ttl > lease + 1:
            return None
        if clock() >= deadline:
            raise TransientError(f"{key}: another worker has been sending it for {2 * lease}s")
        sleep(min(1.0, max(0.05, held.ttl)))


@contextmanager
def leased(claims: Claims, held: Sequence[tuple[str, str]], lease: int) -> Iterator[None]:
    """Keep pending claims (key, token) alive while the block runs, renewing every third
    of `lease`; a renewal that fails (Redis away) lets them lapse, as a dead process's do."""
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(max(0.2, lease / 3)):
            for key, token in held:
                with suppress(TfcompatError):
                    claims.renew(key, token, lease)

    thread = threading.Thread(target=renew, name="tfcompat-lease", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
