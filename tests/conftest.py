"""Suite-wide test settings."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.kept_demo import KeptDemo, kept_demo_stack

# Property tests judge correctness, not speed (timings belong in bench/): no
# per-example deadline, so a busy 2-core CI machine cannot fail them. In CI the
# examples are derived deterministically, so a red run can be re-run as it was.
settings.register_profile(
    "tfcompat",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("tfcompat")


@pytest.fixture(scope="session")
def kept_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeptDemo]:
    """The stack `make demo KEEP=1` leaves running, shared by the tests that read it
    (tests/kept_demo.py); stopped, and the stop checked, at the end of the session."""
    yield from kept_demo_stack(tmp_path_factory.mktemp("demo") / "state")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile` as the live tests need it (tests/live_scheduling.py); any other
    `--dist` is xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.live_scheduling import LiveScheduling

    return LiveScheduling(config, log)
