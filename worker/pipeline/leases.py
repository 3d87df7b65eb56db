"""Redis broker: a worker renews the visibility of every task it holds, so only a lost
worker's tasks are handed out again.

Kombu's Redis transport emulates acknowledgements: a task a worker takes is kept in
the `unacked` hash with its delivery time in the `unacked_index` sorted set, and any
worker's periodic sweep puts it back on the queue once that time is older than the
visibility timeout. A fixed timeout forces a bad choice: short, and a long check or
a retry waiting out its backoff is handed to a second worker while the first still
holds it; long (Celery's example is an hour), and the tasks of a worker that died
with its machine wait that long. Renewing the time of held tasks every third of the
timeout removes the choice: a live worker's tasks never lapse, a lost worker's
lapse after one timeout and the next sweep (`RESTORE_INTERVAL`).

Held tasks are tracked from Celery's `task_received` signal, in the worker's main
process (where acknowledgements happen), and dropped once acknowledged or rejected.
Only entries still present are renewed (`ZADD XX`): an acknowledged or restored task
is never brought back to life. Every held task is forgotten when the consumer
connects again after losing the broker (`forget_all`, from a consumer bootstep):
a delivery tag belongs to the connection it came on, so Celery can no longer
acknowledge those tasks (it stops them, `worker_cancel_long_running_tasks_on_
connection_loss`), and renewing them would keep them invisible for good. They
lapse and are handed out again, as a lost worker's are (test_broker_restart.py
found a task in flight at a Redis restart that was never done otherwise).

The same thread also sweeps for lapsed tasks, with kombu's own `restore_visible` on a
connection of its own, every `RESTORE_INTERVAL` seconds. Kombu's sweep runs in the
consumer's event loop, and after the broker connection was lost and re-established
it was seen to stop: a task taken before a Redis restart then stayed in the
`unacked` hash for good (tests/pipeline/test_broker_restart.py found it).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger(__name__)

UNACKED_INDEX = "unacked_index"  # kombu's default `unacked_index_key`


class Leases:
    """The delivery tags this worker holds, renewed in Redis by a daemon thread."""

    def __init__(
        self,
        client: Any,
        index_key: str,
        period: float,
        clock: Callable[[], float] = time.time,
        sweep: Callable[[], None] | None = None,
        sweep_every: float = 10,
    ) -> None:
        self._client = client
        self._index_key = index_key
        self._period = period
        self._clock = clock
        self._sweep = sweep
        self._sweep_every = sweep_every
        self._held: dict[str, Any] = {}  # delivery tag -> kombu Message
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def hold(self, tag: str, message: Any) -> None:
        with self._lock:
            self._held[tag] = message
        self.start()

    def forget_all(self) -> int:
        """Stop renewing every task held so far; returns how many were forgotten."""
        with self._lock:
            count = len(self._held)
            self._held.clear()
        if count:
            log.warning("leases.forgotten_after_reconnect", tasks=count)
        return count

    def held(self) -> list[str]:
        """Tags still held: messages not acknowledged or rejected yet, on a channel that
        is still open. A connection lost mid-task leaves its messages unacknowledged for
        good (their ack fails); they must lapse and be handed out again, not be renewed
        for ever."""
        with self._lock:
            for tag in [t for t, m in self._held.items() if not _live(m)]:
                del self._held[tag]
            return list(self._held)

    def renew(self) -> int:
        """Move every held task's delivery time to now; returns how many were renewed."""
        tags = self.held()
        if not tags:
            return 0
        now = self._clock()
        pipe = self._client.pipeline(transaction=False)
        for tag in tags:
            pipe.zadd(self._index_key, {tag: now}, xx=True, ch=True)
        return sum(int(n) for n in pipe.execute())

    def start(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, name="tfcompat-leases", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        step = min(self._period, self._sweep_every)
        last_renewal = last_sweep = time.monotonic()
        while not self._stop.wait(step):
            now = time.monotonic()
            if now - last_renewal >= self._period:
                last_renewal = now
                try:
                    self.renew()
                except Exception as exc:  # Redis away: held tasks lapse, as a lost worker's do
                    log.warning("leases.renew_failed", error=f"{type(exc).__name__}: {exc}")
            if self._sweep is not None and now - last_sweep >= self._sweep_every:
                last_sweep = now
                try:
                    self._sweep()
                except Exception as exc:
                    log.warning("leases.sweep_failed", error=f"{type(exc).__name__}: {exc}")

    def stop(self) -> None:
        self._stop.set()


def _live(message: Any) -> bool:
    channel = getattr(message, "channel", None)
    if channel is None or getattr(channel, "closed", False):
        return False
    return not getattr(message, "acknowledged", False)


class Sweeper:
    """Kombu's `restore_visible` on a broker connection of this thread's own."""

    def __init__(self, broker_url: str, transport_options: dict[str, Any]) -> None:
        self._url = broker_url
        self._options = transport_options
        self._connection: Any = None

    def __call__(self) -> None:
        from kombu import Connection

        if self._connection is None:
            self._connection = Connection(self._url, transport_options=self._options)
        try:
            self._connection.default_channel.qos.restore_visible(num=None, interval=1)
        except Exception:
            connection, self._connection = self._connection, None
            with contextlib.suppress(Exception):
                connection.release()
            raise


def leases_for(broker_url: str, transport_options: dict[str, Any], sweep_every: float) -> Leases:
    """Leases for a Redis broker, with kombu's key names and one third of its timeout."""
    import redis

    prefix = str(transport_options.get("global_keyprefix") or "")
    key = prefix + str(transport_options.get("unacked_index_key") or UNACKED_INDEX)
    timeout = float(transport_options.get("visibility_timeout") or 3600)
    client = redis.Redis.from_url(broker_url, socket_timeout=5, socket_connect_timeout=5)
    sweep = Sweeper(broker_url, transport_options)
    return Leases(client, key, max(0.5, timeout / 3), sweep=sweep, sweep_every=sweep_every)
