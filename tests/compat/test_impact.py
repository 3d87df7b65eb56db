"""Impact of a fleet change, from stored verdicts: only changed consumers are checked."""

from __future__ import annotations

import pickle
from dataclasses import replace

from tests.truth import SHARED
from worker.catalog.catalog import load_catalog
from worker.fleet.digests import consumer_digest
from worker.fleet.impact import FAILS, LOADS, VerdictChange, assess, packed, unpacked
from worker.formats.read import read_path
from worker.model.index import IndexedModel


def model(
    fixture: str, verdicts: dict[str, str], digests: dict[str, str], status: str = "compatible"
) -> IndexedModel:
    artifacts = tuple(read_path(str(SHARED / "artifacts" / fixture)))
    return IndexedModel("m", fixture, None, "m", "r", status, artifacts, verdicts, digests)


def test_unchanged_consumers_keep_their_verdicts_and_new_ones_are_checked() -> None:
    catalog = load_catalog()
    old = catalog.consumer("2.21", name="canary")
    digests = {"canary": consumer_digest(old)}
    models = [
        model("tf2.21/new_op", {"canary": LOADS}, digests),
        model("tf2.12/savedmodel_v1_stripped", {"canary": LOADS}, digests),
    ]
    new = catalog.consumer("2.12", name="batch")
    impact = assess(models, [old, new], history=catalog)
    assert impact.checks == 2  # the canary's verdicts were reused
    assert impact.rechecked == ("batch",)
    (changed,) = impact.breaking
    assert changed.model.key == "tf2.21/new_op"
    (change,) = changed.newly_broken
    assert (change.consumer, change.before, change.after) == ("batch", None, FAILS)
    assert "DecodeWebP" in change.reasons[0]
    assert changed.status_after == "incompatible"


def test_a_changed_consumer_is_rechecked_and_a_removed_one_reported() -> None:
    catalog = load_catalog()
    serving = catalog.consumer("2.21", name="serving")
    m = model(
        "tf2.21/new_op",
        {"serving": LOADS, "legacy": FAILS},
        {"serving": consumer_digest(serving), "legacy": "x"},
        "incompatible",
    )
    downgraded = replace(catalog.consumer("2.12"), name="serving")
    impact = assess([m], [downgraded], history=catalog)
    (changed,) = impact.models
    assert {(c.consumer, c.before, c.after) for c in changed.changes} == {
        ("serving", LOADS, FAILS),
        ("legacy", FAILS, None),
    }
    assert impact.removed == ("legacy",)


def test_nothing_changes_when_the_fleet_is_the_same() -> None:
    catalog = load_catalog()
    consumer = catalog.consumer("2.21", name="c")
    m = model("tf2.21/new_op", {"c": LOADS}, {"c": consumer_digest(consumer)})
    impact = assess([m], [consumer], history=catalog)
    assert (impact.models, impact.checks) == ([], 0)


def test_a_preview_lists_the_same_changes_without_the_models_metadata() -> None:
    catalog = load_catalog()
    models = [
        model("tf2.21/new_op", {"old": LOADS}, {"old": "an older definition"}),
        model("tf2.12/savedmodel_v1_stripped", {}, {}),
    ]
    new = catalog.consumer("2.12", name="batch")
    full = assess(models, [new], history=catalog)
    preview = assess(models, [new], history=catalog, with_artifacts=False)
    assert [m.to_json() for m in preview.models] == [m.to_json() for m in full.models]
    assert all(m.model.artifacts for m in full.models)
    assert not any(m.model.artifacts for m in preview.models)
    # nor its recorded verdicts: forked processes send the listing back (impact_run)
    assert full.models[0].model.verdicts and full.models[0].model.consumer_digests
    assert not any(m.model.verdicts or m.model.consumer_digests for m in preview.models)
    shown = [
        (m.model.location, m.model.version_id, m.model.owners, m.model.status) for m in full.models
    ]
    assert [
        (m.model.location, m.model.version_id, m.model.owners, m.model.status)
        for m in preview.models
    ] == shown


def test_a_packed_preview_unpacks_to_the_same_impact() -> None:
    """What a forked process sends back (plain data) is the preview it assessed."""
    catalog = load_catalog()
    models = [
        model("tf2.21/new_op", {"old": LOADS}, {"old": "an older definition"}),
        model("tf2.12/savedmodel_v1_stripped", {}, {}),
    ]
    preview = assess(models, [catalog.consumer("2.12", name="batch")], history=catalog,
                     with_artifacts=False)  # fmt: skip
    back = unpacked(pickle.loads(pickle.dumps(packed(preview))))
    assert back == preview and back.models and back.to_json() == preview.to_json()
    assert all(isinstance(c, VerdictChange) for m in back.models for c in m.changes)
