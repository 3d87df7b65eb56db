"""A fleet change's re-check takes the catalog releases' verdicts from the model's record.

`worker.fleet.releases.recorded_outcomes` stands for `release_verdicts` when a report's
record still holds: the re-checked report must be the very report a full check writes
(its bytes, hence its digest-named key and every tag), on every real fixture, for a
fleet of several releases and loaders, and a record that no longer holds (other
releases, an unknown state, another object's length) is never taken.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.truth import FIXTURE_SETS, artifacts_doc, read_artifacts
from worker.catalog.catalog import load_catalog
from worker.compat.policy import Policy
from worker.fleet.checker import Checker
from worker.fleet.releases import recorded_outcomes, release_lookup, releases_of
from worker.model.artifact import Artifact
from worker.model.consumer import Loader
from worker.model.index import ReleaseVerdicts
from worker.pipeline.process import verdict_reports
from worker.sinks.reports import encode


def every_artifact() -> list[Artifact]:
    found: list[Artifact] = []
    for fixture_set in FIXTURE_SETS:
        for artifact_id in sorted(artifacts_doc(fixture_set)):
            found += read_artifacts(fixture_set, artifact_id)
    return found


def fleet() -> Checker:
    catalog = load_catalog()
    consumers = (
        catalog.consumer("2.8", Loader.SAVED_MODEL_V1),
        catalog.consumer("2.15", Loader.SAVED_MODEL_V2),
        catalog.consumer("2.21", Loader.GRAPH_IMPORT),
    )
    return Checker(consumers, Policy(), catalog, "test fleet")


def test_a_recorded_recheck_writes_the_report_a_full_check_writes() -> None:
    checker = fleet()
    artifacts = every_artifact()
    assert len(artifacts) > 150
    taken = with_notes = 0
    differing = []
    for artifact in artifacts:
        fresh = verdict_reports([artifact], checker)
        record = releases_of(fresh[0])
        assert record is not None
        releases = checker.catalog.range_consumers()
        lookup = release_lookup(checker.catalog)
        if recorded_outcomes(artifact, record, releases, checker.catalog, lookup) is None:
            continue
        taken += 1
        with_notes += bool(fresh[0][0]["range_notes"])
        again = verdict_reports([artifact], checker, record)
        if encode({"r": list(again)}) != encode({"r": list(fresh)}):
            differing.append(artifact.path)
    assert not differing, differing[:5]
    assert taken > 0.8 * len(artifacts), (taken, len(artifacts))
    assert with_notes > 0  # a gap's note judges its releases again: covered


@pytest.mark.parametrize(
    "change",
    ["digest", "unknown", "longer", "no causes"],
)
def test_a_record_that_no_longer_holds_is_not_taken(change: str) -> None:
    checker = fleet()
    for artifact in every_artifact():  # the first some release fails: it has causes
        fresh = verdict_reports([artifact], checker)
        record = releases_of(fresh[0])
        if record is not None and record.errors:
            break
    assert record is not None and record.errors
    releases = checker.catalog.range_consumers()
    lookup = release_lookup(checker.catalog)
    assert recorded_outcomes(artifact, record, releases, checker.catalog, lookup) is not None
    changed: ReleaseVerdicts = {
        "digest": replace(record, digest="other"),
        "unknown": replace(record, runs=(("unknown", None, record.runs[0][2]), *record.runs[1:])),
        "longer": replace(record, runs=(*record.runs, ("compatible", None, 1))),
        "no causes": replace(record, causes=()),
    }[change]
    assert recorded_outcomes(artifact, changed, releases, checker.catalog, lookup) is None
    assert verdict_reports([artifact], checker, changed) == fresh  # checked in full
