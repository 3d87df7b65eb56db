"""Calls to the broker and Redis from the receiver, off its event loop and bounded.

A publish waits for the broker (a Redis reply, a RabbitMQ confirm); when the
broker is down or hangs, that wait must cost the one request that needs it, a
bounded time, and nothing else: `/healthz`, `/metrics` and every other delivery
keep being answered. So each call runs on a small pool of threads of its own,
the request awaits it for at most `timeout` seconds, and when every thread is
already stuck on the broker a new call is refused at once instead of queueing
behind them. A refused or timed-out call raises `BrokerUnavailable`, which the
routes answer with 503 so the sender retries; a call that times out may still
complete in its thread, which costs a duplicate task later, never a lost one
(checks are idempotent).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from worker.errors import BrokerUnavailable, TfcompatError, TransientError

T = TypeVar("T")


class Handoff:
    def __init__(self, timeout: float, threads: int = 8) -> None:
        self.timeout = timeout
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="tfcompat-handoff")
        self._free = threading.BoundedSemaphore(threads)

    def _run(self, call: Callable[[], T]) -> T:
        try:
            return call()
        finally:
            self._free.release()

    async def call(self, call: Callable[[], T], what: str = "broker") -> T:
        """`call()`'s result; BrokerUnavailable when it failed, took longer than
        `timeout`, or no thread was free. Our own errors other than transient ones
        (a malformed event, a refused delivery) pass through unchanged."""
        if not self._free.acquire(blocking=False):
            raise BrokerUnavailable(f"{what}: every publishing thread is waiting on it")
        try:
            future = self._executor.submit(self._run, call)
        except RuntimeError as exc:  # shutting down
            self._free.release()
            raise BrokerUnavailable(f"{what}: {exc}") from None
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.timeout)
        except TimeoutError:
            raise BrokerUnavailable(f"{what}: no answer within {self.timeout:g}s") from None
        except BrokerUnavailable:
            raise
        except TransientError as exc:
            raise BrokerUnavailable(f"{what}: {exc}") from None
        except TfcompatError:
            raise
        except Exception as exc:
            raise BrokerUnavailable(f"{what}: {type(exc).__name__}: {exc}") from None
