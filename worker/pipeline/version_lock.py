"""One check per model version at a time: a short Redis lock keyed by the version.

Two checks of one version at once (a start-up re-check overlapping a webhook, a
reconciler batch overlapping a fan-out chunk) would each read the tags, each see
them stale and each write them: the same value written twice, and a consumer tag
one removes and the other writes back. The lock is a `once` claim held as a lease
(renewed every third of `TFCOMPAT_VERSION_LOCK_LEASE` while the check runs), so a
killed check's lock lapses within one lease and the redelivered task takes it.
A check that finds the lock held raises `VersionBusy`, a `TransientError`: the task
retries with backoff and then finds the tags the other check wrote.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from worker.errors import TfcompatError, VersionBusy
from worker.once import Claims, RedisClaims, leased
from worker.settings import Settings, state_redis_url

_CLAIMS: dict[str, RedisClaims] = {}


def version_claims(settings: Settings) -> RedisClaims:
    """The Redis claims that hold per-version locks: one client per process."""
    key = f"{os.getpid()}:{state_redis_url(settings)}"
    if key not in _CLAIMS:
        _CLAIMS[key] = RedisClaims.from_url(state_redis_url(settings))
    return _CLAIMS[key]


def lock_key(registry: str, name: str, version: str) -> str:
    """The lock's key: names and ARNs hashed, so any characters are safe in it."""
    digest = hashlib.sha256(f"{registry}\0{name}\0{version}".encode()).hexdigest()[:32]
    return f"version-lock:{digest}"


@contextmanager
def version_lock(
    claims: Claims, registry: str, name: str, version: str, lease: int
) -> Iterator[None]:
    """Hold the version's lock while the block runs; `VersionBusy` when another holds it."""
    key = lock_key(registry, name, version)
    token = claims.claim(key, lease)
    if token is None:
        raise VersionBusy(f"{registry} {name} v{version}: another check of it is running")
    try:
        with leased(claims, [(key, token)], lease):
            yield
    finally:
        with suppress(TfcompatError):  # Redis away: the lock lapses within one lease
            claims.release(key, token)
