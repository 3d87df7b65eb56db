"""A plan's verdict for every consumer at every candidate release is the one `fleet
impact` gives for that single change (the consumer replaced by the candidate), on real
TensorFlow-written fixtures indexed as the upload path indexes them; and its advice
follows from those verdicts."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path

from tests.fleet.test_releases import PATHS, recorded
from worker.catalog.catalog import load_catalog
from worker.fleet.digests import consumer_digest
from worker.fleet.fleet import Fleet, load_fleet
from worker.fleet.impact import assess
from worker.fleet.plan import build_plan
from worker.formats.read import read_path
from worker.model.index import IndexedModel

CATALOG = load_catalog()
FLEET_FILE = Path(__file__).resolve().parents[2] / "config" / "fleet.yaml"


@cache
def fixture_fleet() -> Fleet:
    """The demo fleet (TF Serving, saved-model-v2, graph-import: all checked) and a
    consumer of the default loader (its candidates' verdicts recorded at upload)."""
    demo = load_fleet(FLEET_FILE, CATALOG)
    python = CATALOG.consumer("2.12", name="python-2.12")
    return replace(demo, consumers=(*demo.consumers, python))


@cache
def indexed() -> tuple[IndexedModel, ...]:
    """The fixtures as the index keeps them: fleet verdicts and release records."""
    fleet = fixture_fleet()
    models = [recorded(tuple(read_path(str(p))), key=str(p)) for p in PATHS[::2]]
    digests = {c.name: consumer_digest(c) for c in fleet.consumers}
    baseline = assess(models, fleet.consumers, history=CATALOG)
    by_key = {m.model.key: m for m in baseline.models}
    return tuple(
        replace(
            m,
            verdicts=by_key[m.key].verdicts_after,
            consumer_digests=digests,
            status=by_key[m.key].status_after,
        )
        if m.key in by_key
        else m
        for m in models
    )


def test_every_candidate_verdict_is_what_fleet_impact_says_of_that_one_change() -> None:
    fleet, models = fixture_fleet(), indexed()
    plan = build_plan(models, fleet, CATALOG)
    compared = 0
    for c, consumer_plan in enumerate(plan.consumers):
        for n, candidate in enumerate(consumer_plan.candidates):
            changed = [
                candidate.definition if x.name == candidate.consumer else x for x in fleet.consumers
            ]
            impact = assess(models, changed, history=CATALOG, policy=fleet.policy)
            after = {m.model.location: m.verdicts_after for m in impact.models}
            for number, model in enumerate(models):
                verdicts = after.get(model.location, model.verdicts)
                expected = verdicts.get(candidate.consumer)
                assert plan.state(number, c, n) == expected, (candidate, model.key)
                compared += 1
    assert compared > 100 and plan.recorded > 0 and plan.checks > 0
