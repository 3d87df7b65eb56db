"""tests/live_scheduling.py and tests/redis_server.py: how `make test` runs the live tests
in two processes without either breaking the other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.live_scheduling import LONGEST, RABBITMQ_FILES, SHARED_BROKER, unit_of
from tests.redis_server import process_port

ROOT = Path(__file__).resolve().parents[1]
# What a test file does to use the machine's RabbitMQ: its helpers, rabbitmqctl, or the
# services script's rabbitmq commands.
USES_RABBITMQ = re.compile(r"rabbitmqctl|rabbitmq_vhost|rabbitmq_stopped|\"rabbitmq(-remove)?\"")


def test_every_test_file_that_uses_rabbitmq_is_in_the_one_unit() -> None:
    users = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if path.name != Path(__file__).name and USES_RABBITMQ.search(path.read_text())
    }
    assert users == RABBITMQ_FILES


# a RabbitMQ file's tests are one unit; any other file's are its own
@pytest.mark.parametrize(
    ("nodeid", "unit"),
    [
        ("tests/pipeline/test_broker_restart.py::test_x", SHARED_BROKER),
        ("tests/test_services_script.py::test_y[a::b]", SHARED_BROKER),
        ("tests/pipeline/test_leases.py::test_z", "tests/pipeline/test_leases.py"),
        ("tests/pipeline/test_fleet_fanout.py::test_w", "tests/pipeline/test_fleet_fanout.py"),
    ],
)
def test_a_test_belongs_to_its_file_or_to_the_rabbitmq_unit(nodeid: str, unit: str) -> None:
    assert unit_of(nodeid) == unit


def test_the_longest_units_named_exist() -> None:
    missing = [u for u in LONGEST if u != SHARED_BROKER and not (ROOT / u).is_file()]
    assert missing == []


# one port for each xdist process, gw0 the first; outside xdist the first
@pytest.mark.parametrize(
    ("ports", "worker", "port"),
    [
        ("6379", None, 6379),
        ("6379,16380", None, 6379),
        ("6379,16380", "gw0", 6379),
        ("6379,16380", "gw1", 16380),
        ("16400", "gw0", 16400),
    ],
)
def test_each_xdist_process_has_its_own_redis_port(
    ports: str, worker: str | None, port: int
) -> None:
    assert process_port(ports, worker) == port


def test_a_process_with_no_port_of_its_own_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="none for pytest-xdist process gw2"):
        process_port("6379,16380", "gw2")
