"""How often the sign-in form may be tried: per client address and for everyone together.

A sliding window of one minute, held in the page's process: a guessed token costs an
attacker one request each, and the windows bound that to `per_address` a minute from
one address and `overall` a minute from all of them. Each replica of the page keeps
its own windows (a fleet of N replicas admits N times as many); the token itself is
long and random, so the bound only has to make guessing hopeless, not exact.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

WINDOW = 60.0  # seconds
ADDRESSES_KEPT = 10_000  # windows of distinct addresses kept; the oldest are dropped


class SignInThrottle:
    def __init__(
        self, per_address: int, overall: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.per_address = per_address
        self.overall = overall
        self._clock = clock
        self._lock = threading.Lock()
        self._all: deque[float] = deque()
        self._by_address: OrderedDict[str, deque[float]] = OrderedDict()

    def admit(self, address: str) -> float | None:
        """None when one more attempt from `address` is allowed now (and counts it);
        otherwise the seconds until one would be."""
        now = self._clock()
        with self._lock:
            mine = self._by_address.pop(address, None) or deque()
            self._by_address[address] = mine  # most recent last
            while len(self._by_address) > ADDRESSES_KEPT:
                self._by_address.popitem(last=False)
            for window in (mine, self._all):
                while window and window[0] <= now - WINDOW:
                    window.popleft()
            waits = [
                window[0] + WINDOW - now
                for window, limit in ((mine, self.per_address), (self._all, self.overall))
                if len(window) >= limit
            ]
            if waits:
                return max(max(waits), 1.0)
            mine.append(now)
            self._all.append(now)
            return None
