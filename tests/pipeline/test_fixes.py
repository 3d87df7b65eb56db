"""Fixed copies in the pipeline: written beside the model, checked, tagged and linked."""

from __future__ import annotations

from tests.pipeline.test_process import store_with
from tests.truth import OWN
from worker.catalog.catalog import load_catalog
from worker.compat.policy import Policy
from worker.fleet.checker import Checker
from worker.formats.access import ReadPolicy
from worker.model.events import ObjectEvent
from worker.pipeline.fixes import fix_hook, write_fixed_copies
from worker.pipeline.process import ReportLocation, process_event

MODEL = OWN / "artifacts/tf2.21/savedmodel_v1"
LOCATION = ReportLocation(None, "reports/")
CATALOG = load_catalog()
CHECKER = Checker(
    (CATALOG.consumer("2.4", name="legacy-edge"), CATALOG.consumer("2.21", name="serving-prod")),
    Policy(),
    CATALOG,
)
EVENT = ObjectEvent("b", "m/1/saved_model.pb", "ObjectCreated:Put")


def test_a_fixable_consumer_gets_a_checked_and_linked_copy() -> None:
    store = store_with(MODEL, "m/1")
    original = dict(store.objects)
    outcome = process_event(EVENT, store, CHECKER, LOCATION, ReadPolicy())
    assert outcome.status == "incompatible"
    links = write_fixed_copies(EVENT, outcome, store, CHECKER, LOCATION, "fixed/", ReadPolicy())
    (link,) = links
    base = "fixed/m/1/saved_model.pb/for-legacy-edge"
    assert link["consumer"] == "legacy-edge"
    assert link["url"] == f"s3://b/{base}/saved_model.pb"
    assert "VarHandleOp.debug_name" in link["rewrites"]
    # the copy keeps the variables byte for byte, and was checked like an upload
    assert (
        store.objects[("b", f"{base}/variables/variables.index")]
        == original[("b", "m/1/variables/variables.index")]
    )
    tags = {t["Key"]: t["Value"] for t in store.tags[("b", f"{base}/saved_model.pb")]}
    assert tags["tfcompat:status"] in ("compatible", "at-risk")
    copy_report = store.get_json("b", link["report"])
    assert copy_report is not None
    assert {c["name"]: c["loads"] for c in copy_report["artifacts"][0]["consumers"]} == {
        "legacy-edge": True,
        "serving-prod": True,
    }
    # the original is untouched, and its report links the copy
    for key, data in original.items():
        assert store.objects[key] == data
    report = store.get_json("b", outcome.report or "")
    assert report is not None and report["fixed_copies"] == links


def test_copies_are_never_fixed_again_and_the_hook_is_off_by_default() -> None:
    store = store_with(MODEL, "fixed/m/1")
    event = ObjectEvent("b", "fixed/m/1/saved_model.pb", "ObjectCreated:Put")
    outcome = process_event(event, store, CHECKER, LOCATION, ReadPolicy())
    assert (
        write_fixed_copies(event, outcome, store, CHECKER, LOCATION, "fixed/", ReadPolicy()) == []
    )
    assert fix_hook(None, store, CHECKER, LOCATION, ReadPolicy()) is None
