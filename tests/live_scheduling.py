"""How pytest-xdist's `--dist loadfile` hands test files to processes, for the live tests
(`make test` runs them in two processes, each on a Redis of its own).

Three changes to xdist's own loadfile order, each for a reason of these tests:
- The files that use the machine's RabbitMQ are one unit, run by one process one after
  the other: one of them stops RabbitMQ (`rabbitmqctl stop_app`), which would break
  another process's test using it at that moment.
- The longest files go first (longest processing time first): a long file started last
  would leave the other process idle while it runs. A file missing from `LONGEST` is
  only scheduled later, never skipped. The figures: `--durations` of one run in one
  process on a loaded 2-core machine (load average 6-9), files' tests summed.
- A process takes its next file only once it is on its current file's last test (xdist
  waits until two tests remain): a file queued behind a long one in one process is a
  file the other process could have been running.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadFileScheduling

SHARED_BROKER = "rabbitmq"
"""The unit name of the files below."""
RABBITMQ_FILES = frozenset(
    {
        "tests/pipeline/test_broker_restart.py",  # stops and starts RabbitMQ
        "tests/pipeline/test_worker_crash.py",  # a worker on RabbitMQ
        "tests/test_services_script.py",  # adds and deletes a virtual host
    }
)
LONGEST = (
    "tests/pipeline/test_fleet_fanout.py",  # 528 s of a 1587 s run in one process
    SHARED_BROKER,  # 229 s
    "tests/pipeline/test_mlflow_registry.py",  # 149 s
    "tests/pipeline/test_mlflow_credentials.py",  # 144 s
    "tests/pipeline/test_resilience.py",  # 73 s
    "tests/pipeline/test_notify_kills.py",  # 66 s
    "tests/pipeline/test_fleet_stall.py",  # 60 s
    "tests/pipeline/test_mlflow_sources.py",  # 60 s
)
"""Started first, in this order; every other file follows in xdist's own order."""


def unit_of(nodeid: str) -> str:
    """The unit a test belongs to: its file, or SHARED_BROKER for the RabbitMQ files."""
    path = nodeid.split("::", 1)[0]
    return SHARED_BROKER if path in RABBITMQ_FILES else path


class LiveScheduling(LoadFileScheduling):
    """`--dist loadfile` with the RabbitMQ files as one unit, the longest units first,
    and a new unit only for a process on its last pending test."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def _assign_work_unit(self, node: Any) -> None:
        for unit in reversed(LONGEST):
            if unit in self.workqueue:
                self.workqueue.move_to_end(unit, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 1:
            return
        self._assign_work_unit(node)
