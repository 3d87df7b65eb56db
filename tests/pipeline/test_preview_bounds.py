"""A preview's assessment runs in a child process under the memory limit: over it, the
preview fails with that cause and the process that asked carries on. A job of kind
"plan" computes the fleet's upgrade plan there."""

from __future__ import annotations

import pytest
import redis

from tests.redis_server import redis_url
from tests.truth import ROOT
from worker.catalog.catalog import load_catalog
from worker.fleet.fleet import load_fleet
from worker.pipeline.preview_tasks import run_bounded
from worker.settings import Settings
from worker.sinks.index import BUILT

pytestmark = pytest.mark.services


def test_a_preview_over_its_memory_limit_fails_saying_so() -> None:
    settings = Settings(broker_url=redis_url(1), ui_preview_memory_mb=64)
    with pytest.raises(RuntimeError, match=r"ran out of memory \(64 MiB"):
        run_bounded(settings, {"add": [[None, "tf==2.10"]], "remove": []})


def test_a_change_naming_a_manifest_fails_in_the_child_too() -> None:
    settings = Settings(broker_url=redis_url(1))
    with pytest.raises(RuntimeError, match="not a manifest"):
        run_bounded(settings, {"add": [[None, "mine=/etc/passwd"]], "remove": []})


def test_a_plan_job_computes_fleet_plan_in_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = str(ROOT / "config" / "fleet.yaml")
    # An index not built yet: the child rebuilds it and logs so while it computes.
    redis.Redis.from_url(redis_url(1)).delete(BUILT)
    monkeypatch.setenv("TFCOMPAT_BROKER_URL", redis_url(1))
    monkeypatch.setenv("TFCOMPAT_FLEET", fleet)
    result = run_bounded(Settings(broker_url=redis_url(1)), {"kind": "plan", "fleet": "x"})
    names = [c["name"] for c in result["plan"]["consumers"]]
    assert names == [c.name for c in load_fleet(fleet, load_catalog()).consumers]
    assert result["csv"].startswith("consumer,release,current,recommended,")
