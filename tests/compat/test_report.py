"""Every catalog release's outcome, judged once per verdict class, is what checking that
release finds: the same status and errors for the report's ranges and its stored
record, and the release's own verdict, text naming it included, where one is read."""

from __future__ import annotations

from tests.compat.test_memo import fixture_artifacts
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.report import ReleaseOutcome, range_notes, release_verdicts
from worker.fleet.releases import release_lookup, release_record

CATALOG = load_catalog()


def test_outcomes_by_class_are_those_of_checking_every_release() -> None:
    releases = CATALOG.range_consumers()
    lookup = release_lookup(CATALOG)
    shared = 0
    for artifact in fixture_artifacts():
        found = release_verdicts(artifact, releases, CATALOG)
        exact = [
            ReleaseOutcome(
                c.tensorflow or "", c.graph_def_version, check_artifact(artifact, c, CATALOG)
            )
            for c in releases
        ]
        shared += sum(o._own is None for o in found)  # judged by their class, not checked
        assert release_record(found, lookup) == release_record(exact, lookup), artifact.path
        assert range_notes(found) == range_notes(exact), artifact.path
        for mine, theirs in zip(found, exact, strict=True):
            assert (mine.serves, mine.refused, mine.status, mine.errors) == (
                theirs.serves,
                theirs.refused,
                theirs.status,
                theirs.errors,
            ), (artifact.path, mine.release)
            assert mine.verdict.to_json() == theirs.verdict.to_json()
    assert shared > 5_000  # most releases took their class's outcome, unchecked
