"""`fleet impact` shared among forked processes says exactly what one process says:
the same models changed, the same verdicts and reasons, the same checks counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis

import worker.pipeline.impact_run as impact_run
from tests.redis_server import REDIS_HOST, REDIS_PORT, redis_url
from tests.truth import FIXTURE_SETS
from worker.catalog.catalog import load_catalog
from worker.fleet.digests import consumer_digest
from worker.fleet.impact import assess
from worker.formats.read import read_path
from worker.model.index import IndexedModel
from worker.sinks.index import ModelIndex

pytestmark = pytest.mark.services

# Every 4th SavedModel of the fixture sets, set by set: an order that does not depend on
# where the checkout lives (sorting absolute paths did, and then picked a model of one
# name from both sets, which shared a key)
SAVED_MODELS = [
    p.parent for s in FIXTURE_SETS for p in sorted((s / "artifacts").glob("*/*/saved_model.pb"))
][::4][:48]
KEYS = {p: f"{n}/{p.parent.name}/{p.name}" for n, p in enumerate(SAVED_MODELS)}


class NoReports:
    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        return []

    def get_json(self, bucket: str, key: str) -> None:
        return None

    def current_version(self, bucket: str, key: str) -> None:
        return None


@pytest.fixture
def index() -> Iterator[ModelIndex]:
    client = redis.Redis.from_url(redis_url(12))
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip(f"no Redis at {REDIS_HOST}:{REDIS_PORT}")
    client.flushdb()
    index = ModelIndex(client, NoReports(), [], "r/")
    index.rebuild()  # an empty index, built
    yield index
    client.flushdb()


def _by_object(impact: Any) -> dict[str, Any]:
    document = impact.to_json()
    document["changed"] = sorted(document["changed"], key=lambda m: m["object"])
    return document


def test_forked_shares_say_what_one_process_says(
    index: ModelIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = load_catalog()
    fleet = [
        catalog.consumer("2.12", name="batch"),
        catalog.consumer("2.16", name="online"),
        catalog.consumer("2.21", name="canary"),
    ]
    models = [
        IndexedModel(
            "m",
            KEYS[p],
            None,
            "m",
            f"r/{p.name}.json",
            "compatible",
            tuple(read_path(str(p))),
            {},
            {},
        )
        for p in SAVED_MODELS
    ]
    recorded = assess(models, fleet, history=catalog)
    digests = {c.name: consumer_digest(c) for c in fleet}
    index.put_many(
        replace(m.model, verdicts=m.verdicts_after, consumer_digests=digests, status=m.status_after)
        for m in recorded.models
    )
    assert index.count() == len(SAVED_MODELS)
    target = [*fleet[1:], catalog.consumer("2.4", name="legacy")]  # one removed, one added

    one = impact_run.assess_index(index, target, history=catalog, with_artifacts=False)
    monkeypatch.setattr(impact_run, "FIRST", 5)  # several shares on a small index
    monkeypatch.setattr(impact_run, "SHARE", 7)
    seen: list[int] = []
    forked = impact_run.assess_index(
        index, target, history=catalog, with_artifacts=False, jobs=3, progress=seen.append
    )
    assert one.checks > 0 and one.removed == ("batch",) and one.rechecked == ("legacy",)
    assert any(m.newly_broken for m in one.models)  # 2.4 cannot load some of them
    assert _by_object(forked) == _by_object(one)
    assert sum(seen) == len(SAVED_MODELS) and len(seen) > 3

    removal = fleet[1:]  # nothing to check: the first models say so, no fork
    one = impact_run.assess_index(index, removal, history=catalog, with_artifacts=False)
    kept = impact_run.assess_index(index, removal, history=catalog, with_artifacts=False, jobs=3)
    assert one.checks == 0 and len(one.models) == len(SAVED_MODELS)
    assert _by_object(kept) == _by_object(one)


def test_an_apply_keeps_one_process_and_the_models_metadata(index: ModelIndex) -> None:
    catalog = load_catalog()
    artifacts = tuple(read_path(str(SAVED_MODELS[0])))
    index.put(IndexedModel("m", "k", None, "m", "r/k.json", "compatible", artifacts, {}, {}))
    impact = impact_run.assess_index(
        index, [catalog.consumer("2.21", name="canary")], history=catalog, jobs=4
    )
    (changed,) = impact.models
    assert changed.model.artifacts == artifacts


def test_a_change_that_keeps_every_recorded_verdict_builds_no_artifacts(
    index: ModelIndex,
) -> None:
    catalog = load_catalog()
    canary = catalog.consumer("2.21", name="canary")
    verdicts, digests = {"canary": "compatible"}, {"canary": consumer_digest(canary)}
    for path in SAVED_MODELS[:5]:
        key = KEYS[path]
        artifacts = tuple(read_path(str(path)))
        index.put(
            IndexedModel("m", key, None, "m", "r.json", "compatible", artifacts, verdicts, digests)
        )
    models = list(index.models())
    impact = assess(models, [replace(canary, name="canary-2")], history=catalog)
    assert impact.checks == 0 and len(impact.models) == 5  # renamed: verdicts move
    assert not any("artifacts" in vars(m) for m in models)


def test_the_cli_shares_a_large_index_among_processes_and_says_the_same(
    index: ModelIndex, tmp_path: Any
) -> None:
    catalog = load_catalog()
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("consumers:\n  - {name: serving, tensorflow: '2.21'}\n")
    digests = {"serving": consumer_digest(catalog.consumer("2.21", name="serving"))}
    bases = [tuple(read_path(str(p))) for p in SAVED_MODELS[:6]]
    count = impact_run.FIRST + 2 * impact_run.SHARE + 3  # the parent's first batch, 3 shares
    index.put_many(
        IndexedModel(
            "m",
            f"k{n}",
            None,
            "m",
            f"r/k{n}.json",
            "compatible",
            bases[n % len(bases)],
            {"serving": "compatible"},
            digests,
        )
        for n in range(count)
    )
    env = {
        **os.environ,
        "TFCOMPAT_BROKER_URL": redis_url(12),
        "TFCOMPAT_FLEET": str(fleet),
        "TFCOMPAT_REPORT_BUCKET": "",
    }
    documents = []
    for jobs in ("1", "2"):
        command = ["fleet", "impact", "--add-consumer", "tf==2.4", "--json", "--jobs", jobs]
        done = subprocess.run(
            [sys.executable, "-m", "worker.cli", *command],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 1, done.stderr  # 2.4 cannot load some of them
        documents.append(json.loads(done.stdout))
    one, shared = documents
    assert one["models_examined"] == count and one["checks_run"] == count
    for document in documents:
        document["changed"].sort(key=lambda m: m["object"])
    assert shared == one
