"""What the pages say, shaped from plain data: the model page's version line and the
preview's count of changes."""

from __future__ import annotations

from worker.cli.preview_run import view
from worker.fleet.impact import Impact, ModelImpact, VerdictChange
from worker.model.index import IndexedModel
from worker.sinks.matrix import Row
from worker.ui.reading import version_line


def row(version_id: str | None) -> Row:
    return Row("models", "m/saved_model.pb", version_id, "models", "r.json", "compatible", {})


def listed(version_id: str, latest: bool) -> dict[str, object]:
    return {"version_id": version_id, "latest": latest, "written": "", "status": None}


# The version line agrees with the versions table.
def test_the_version_the_event_named_is_the_version_line() -> None:
    assert version_line(row("v2"), [listed("v2", True), listed("v1", False)]) == "v2"


def test_without_a_version_from_the_event_the_line_names_the_current_one() -> None:
    line = version_line(row(None), [listed("v1", False), listed("v2", True)])
    assert line.startswith("v2 (the bucket's current version")
    assert "not named by the upload event" not in line


def test_an_unversioned_bucket_says_it_keeps_no_versions() -> None:
    assert version_line(row(None), []) == "none: the bucket keeps no versions of this object"


# A preview counts changes: a new consumer that serves a model is none.
def model(status: str) -> IndexedModel:
    return IndexedModel("models", "m", None, "models", "r", status, (), {}, {})


def test_a_new_consumer_that_serves_a_model_is_no_change() -> None:
    served = ModelImpact(
        model("compatible"), "compatible", (VerdictChange("new", None, "compatible"),), {}
    )
    broken = ModelImpact(
        model("compatible"), "incompatible", (VerdictChange("new", None, "incompatible"),), {}
    )
    risky = ModelImpact(
        model("compatible"), "at-risk", (VerdictChange("new", None, "at-risk"),), {}
    )
    summary = view(Impact([served, broken, risky], examined=3), 0.0)
    assert summary["models_changed"] == 2
    assert summary["models_newly_failing"] == 1
    assert [m["status_after"] for m in summary["changed"]] == ["incompatible", "at-risk"]
    assert not served.changed and broken.changed and risky.changed


def test_a_removed_consumer_and_a_moved_verdict_are_changes() -> None:
    removed = VerdictChange("old", "compatible", None)
    moved = VerdictChange("prod", "incompatible", "compatible")
    assert removed.matters and moved.matters
