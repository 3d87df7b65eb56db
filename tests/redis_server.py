"""Where the tests' Redis answers: 127.0.0.1:6379 unless TFCOMPAT_TEST_REDIS_PORT names
another port, so two checkouts can run their suites at once, each with its own server.

TFCOMPAT_TEST_REDIS_PORTS, when set, names one port per pytest-xdist process (comma-
separated, gw0's first): the live tests run in two processes (`make test`), and a test
file empties the databases it uses and starts workers on a queue of a fixed name, so
each process needs a Redis of its own. Without it every process shares one Redis and
its files keep to databases of their own."""

from __future__ import annotations

import os

REDIS_HOST = "127.0.0.1"


def process_port(ports: str, worker: str | None) -> int:
    """This process's port from TFCOMPAT_TEST_REDIS_PORTS: the n-th for xdist's gw<n>,
    the first outside xdist; an error when the list has no port for this process."""
    listed = [int(port) for port in ports.split(",")]
    index = int(worker.removeprefix("gw")) if worker else 0
    if index >= len(listed):
        raise RuntimeError(
            f"TFCOMPAT_TEST_REDIS_PORTS={ports} names {len(listed)} port(s), none for"
            f" pytest-xdist process {worker}: name one per process (-n)"
        )
    return listed[index]


def _port() -> int:
    ports = os.environ.get("TFCOMPAT_TEST_REDIS_PORTS")
    if ports:
        return process_port(ports, os.environ.get("PYTEST_XDIST_WORKER"))
    return int(os.environ.get("TFCOMPAT_TEST_REDIS_PORT", "6379"))


REDIS_PORT = _port()


def redis_url(db: int) -> str:
    return f"redis://{REDIS_HOST}:{REDIS_PORT}/{db}"
