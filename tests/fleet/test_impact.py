"""A consumer is judged by its definition, not its name: a renamed or duplicated
consumer takes the verdict the model already has, except a failure, which is checked
again so the change says why."""

from __future__ import annotations

from dataclasses import replace

from tests.truth import SHARED
from worker.catalog.catalog import load_catalog
from worker.compat.policy import BannedRelease, Policy
from worker.fleet.digests import consumer_digest
from worker.fleet.impact import FAILS, LOADS, assess
from worker.formats.read import read_path
from worker.model.index import IndexedModel


def model(fixture: str, verdicts: dict[str, str], digests: dict[str, str]) -> IndexedModel:
    artifacts = tuple(read_path(str(SHARED / "artifacts" / fixture)))
    return IndexedModel("m", fixture, None, "m", "r", "compatible", artifacts, verdicts, digests)


def test_a_renamed_consumer_takes_the_recorded_verdict_without_a_check() -> None:
    catalog = load_catalog()
    old = catalog.consumer("2.21", name="canary")
    m = model("tf2.21/new_op", {"canary": LOADS}, {"canary": consumer_digest(old)})
    impact = assess([m], [replace(old, name="canary-2")], history=catalog)
    assert impact.checks == 0 and impact.rechecked == ()
    (changed,) = impact.models
    assert {(c.consumer, c.before, c.after) for c in changed.changes} == {
        ("canary-2", None, LOADS),
        ("canary", LOADS, None),
    }
    assert changed.verdicts_after == {"canary-2": LOADS}


def test_a_copy_of_a_failing_consumer_is_checked_again_for_its_reasons() -> None:
    catalog = load_catalog()
    old = catalog.consumer("2.12", name="batch")
    m = model("tf2.21/new_op", {"batch": FAILS}, {"batch": consumer_digest(old)})
    impact = assess([m], [old, replace(old, name="batch-2")], history=catalog)
    assert impact.checks == 1 and impact.rechecked == ("batch-2",)
    (change,) = impact.models[0].newly_broken
    assert change.consumer == "batch-2" and "DecodeWebP" in change.reasons[0]


def test_a_fleet_policy_checks_every_consumer_anew() -> None:
    catalog = load_catalog()
    old = catalog.consumer("2.21", name="canary")
    m = model("tf2.21/new_op", {"canary": LOADS}, {"canary": consumer_digest(old)})
    policy = Policy(bad_consumers=(BannedRelease(0, "GraphDef version 0", "no such binary"),))
    impact = assess([m], [replace(old, name="canary-2")], history=catalog, policy=policy)
    assert impact.checks == 1


def test_changes_and_verdicts_keep_the_fleet_order() -> None:
    catalog = load_catalog()
    old = catalog.consumer("2.21", name="canary")
    m = model("tf2.21/new_op", {"canary": LOADS}, {"canary": consumer_digest(old)})
    fleet = [catalog.consumer("2.12", name="batch"), replace(old, name="canary-2")]
    impact = assess([m], fleet, history=catalog)
    (changed,) = impact.models
    assert [(c.consumer, c.after) for c in changed.changes] == [
        ("batch", FAILS),
        ("canary-2", LOADS),
        ("canary", None),
    ]
    assert list(changed.verdicts_after) == ["batch", "canary-2"]
