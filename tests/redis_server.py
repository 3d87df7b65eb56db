"""Where the tests' Redis answers: 127.0.0.1:6379 unless TFCOMPAT_TEST_REDIS_PORT names
another port, so two checkouts can run their suites at once, each with its own server."""

from __future__ import annotations

import os

REDIS_HOST = "127.0.0.1"
REDIS_PORT = int(os.environ.get("TFCOMPAT_TEST_REDIS_PORT", "6379"))


def redis_url(db: int) -> str:
    return f"redis://{REDIS_HOST}:{REDIS_PORT}/{db}"
