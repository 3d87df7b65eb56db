"""`tfcompat fleet plan` over a model index in a real Redis: the JSON, CSV and text say
the same plan, the fleet file's `upgrade_to` bounds the candidates, and a range that is
no specifier stops the command with the line at fault."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.fleet.test_plan_advice import indexed, two_consumers
from tests.redis_server import REDIS_HOST, REDIS_PORT, redis_url
from worker.sinks.index import ModelIndex

pytestmark = pytest.mark.services

FLEET = """consumers:
  - name: batch
    tensorflow: "2.12"
    upgrade_to: ">=2.12,<2.16"
  - name: serving
    tensorflow: "2.15"
"""


class NoReports:
    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        return []

    def get_json(self, bucket: str, key: str) -> None:
        return None

    def current_version(self, bucket: str, key: str) -> None:
        return None


@pytest.fixture
def index() -> Iterator[ModelIndex]:
    client = redis.Redis.from_url(redis_url(13))
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip(f"no Redis at {REDIS_HOST}:{REDIS_PORT}")
    client.flushdb()
    index = ModelIndex(client, NoReports(), [], "r/")
    index.rebuild()
    index.put_many(indexed(two_consumers()))
    yield index
    client.flushdb()


def plan(fleet: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "TFCOMPAT_BROKER_URL": redis_url(13),
        "TFCOMPAT_FLEET": str(fleet),
        "TFCOMPAT_REPORT_BUCKET": "",
        "TFCOMPAT_OWNERS": str(fleet.parent / "no-owners.yaml"),
    }
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", "fleet", "plan", *options],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_json_names_each_consumers_move_within_its_upgrade_range(
    index: ModelIndex, tmp_path: Path
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    done = plan(fleet, "--json")
    assert done.returncode == 1, done.stderr  # batch: no release in its range serves all
    document = json.loads(done.stdout)
    batch, serving = document["consumers"]
    assert [c["release"] for c in batch["candidates"]] == ["2.12.1", "2.13.1", "2.14.1", "2.15.1"]
    assert not batch["serves_all"]
    assert [b["code"] for b in batch["blockers"]] == ["op.not-registered"]
    assert batch["blockers"][0]["owners"] == ["ranking"]
    assert serving["serves_all"] and serving["recommended"] not in (None, "2.15.1")
    assert document["models_examined"] == 6


def test_the_csv_and_the_text_say_what_the_json_says(index: ModelIndex, tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    document: dict[str, Any] = json.loads(plan(fleet, "--json").stdout)
    rows = list(csv.DictReader(io.StringIO(plan(fleet, "--csv").stdout)))
    expected = [
        (c["name"], r["release"], str(r["misses"]), "yes" if r["recommended"] else "")
        for c in document["consumers"]
        for r in c["candidates"]
    ]
    assert [(r["consumer"], r["release"], r["misses"], r["recommended"]) for r in rows] == expected
    text = plan(fleet).stdout
    for consumer in document["consumers"]:
        assert f"{consumer['name']} ({consumer['current']}" in text
    assert "op.not-registered: 1 model(s); owners: ranking" in text


def test_an_upgrade_range_that_is_no_specifier_stops_the_plan(
    index: ModelIndex, tmp_path: Path
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET.replace(">=2.12,<2.16", "the newest"))
    done = plan(fleet, "--json")
    assert done.returncode == 2 and done.stdout == ""
    assert "fleet.yaml:2: upgrade_to must be a version range" in done.stderr


def test_the_apply_preview_is_fleet_impact_of_every_recommended_move(
    index: ModelIndex, tmp_path: Path
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(FLEET)
    done = plan(fleet, "--json", "--apply-preview")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    preview = document["apply_preview"]
    assert preview["moves"] == {
        c["name"]: c["recommended"]
        for c in document["consumers"]
        if c["recommended"] != c["current"]
    }
    # the recommended fleet as a file, previewed as `fleet impact` previews it
    moved = tmp_path / "moved.yaml"
    moved.write_text(
        "consumers:\n"
        + "".join(
            f"  - {{name: {c['name']}, tensorflow: '{c['recommended']}'}}\n"
            for c in document["consumers"]
        )
    )
    impact = subprocess.run(
        [sys.executable, "-m", "worker.cli", "fleet", "impact", "--fleet", str(moved), "--json"],
        env={
            **os.environ,
            "TFCOMPAT_BROKER_URL": redis_url(13),
            "TFCOMPAT_REPORT_BUCKET": "",
            "TFCOMPAT_OWNERS": str(tmp_path / "none.yaml"),
            "TFCOMPAT_FLEET": str(fleet),
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    expected = json.loads(impact.stdout)
    assert preview["reports_recorded"] == expected["models_changed"] > 0
    assert preview["notified_owners"] is None  # no owners file, no Slack: nobody is told
    text = plan(fleet, "--apply-preview").stdout
    assert f"fleet apply would record {expected['models_changed']} report(s) anew" in text
