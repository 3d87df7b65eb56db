"""The tag policy on registered versions: ours written, status last, theirs never touched."""

from __future__ import annotations

from worker.registries.tags import consumer_key, plan_tags, version_tags

DOCUMENT = {
    "status": "incompatible",
    "compatible_releases": ["2.16.1-2.21.x"],
    "fleet": {
        "digest": "f1eetd1ge5t0",
        "verdicts": {"serving-prod": "incompatible", "canary": "compatible", "edge": "at-risk"},
    },
}


def test_version_tags_name_the_verdict_and_each_failing_consumer() -> None:
    assert version_tags(DOCUMENT, "s3://reports/r.json") == {
        "tfcompat.status": "incompatible",
        "tfcompat.releases": "2.16.1-2.21.x",
        "tfcompat.report": "s3://reports/r.json",
        "tfcompat.fleet": "f1eetd1ge5t0",
        "tfcompat.consumer.edge": "at-risk",
        "tfcompat.consumer.serving-prod": "incompatible",
    }


def test_no_release_serves_it_reads_none_and_no_report_means_no_report_tag() -> None:
    tags = version_tags({**DOCUMENT, "compatible_releases": []}, None)
    assert tags["tfcompat.releases"] == "none" and "tfcompat.report" not in tags


def test_consumer_names_become_tag_safe_keys() -> None:
    assert consumer_key("team a/serving (prod)") == "tfcompat.consumer.team a/serving _prod_"


# Planning writes against the version's current tags.
def test_only_changed_values_are_written_and_status_comes_last() -> None:
    ours = version_tags(DOCUMENT, None)
    plan = plan_tags({"tfcompat.releases": "2.16.1-2.21.x"}, ours)
    assert "tfcompat.releases" not in plan.put
    assert list(plan.put)[-1] == "tfcompat.status"


def test_a_consumer_that_serves_now_loses_its_tag() -> None:
    existing = {"tfcompat.consumer.canary": "incompatible", "tfcompat.status": "incompatible"}
    plan = plan_tags(existing, version_tags(DOCUMENT, None))
    assert plan.delete == ("tfcompat.consumer.canary",)


def test_tags_outside_our_consumer_namespace_are_never_removed() -> None:
    existing = {"owner": "ml-platform", "tfcompat.approved-by": "alice"}
    plan = plan_tags(existing, version_tags(DOCUMENT, None))
    assert plan.delete == ()
    assert not set(plan.put) & set(existing)


def test_nothing_to_do_when_the_tags_are_current() -> None:
    ours = version_tags(DOCUMENT, None)
    assert plan_tags(ours, ours).empty


def test_a_consumer_tag_the_version_carries_goes_when_the_fleet_dropped_that_consumer() -> None:
    # decided from the version's own tags: a report written by a killed check of the
    # same fleet would list only this check's tags and keep the stale one for good
    existing = {"tfcompat.consumer.batch-scoring": "incompatible", "tfcompat.status": "x"}
    plan = plan_tags(existing, version_tags(DOCUMENT, None))
    assert plan.delete == ("tfcompat.consumer.batch-scoring",)


def test_the_tags_name_the_fleet_they_were_computed_against() -> None:
    assert version_tags(DOCUMENT, None)["tfcompat.fleet"] == "f1eetd1ge5t0"
