"""What a plan advises, on real TensorFlow-written models indexed as uploads index them:
the lowest release that serves everything, what blocks a consumer when none does (by
cause, with the fix and the owners), upgrade against re-export, at-risk never counted
as a clean win, the fleet file's `upgrade_to` range, and the producers' bound."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.fleet.test_releases import recorded
from worker.catalog.catalog import load_catalog
from worker.errors import ConfigError
from worker.fleet.candidates import candidates, upgrade_ranges
from worker.fleet.digests import consumer_digest
from worker.fleet.fleet import Fleet
from worker.fleet.impact import assess
from worker.fleet.plan import Cause, build_plan
from worker.fleet.plan_advice import decisions, export_advice, plan_json, reexport_fix
from worker.fleet.releases import releases_of
from worker.formats.read import read_path
from worker.model.index import IndexedModel
from worker.sinks.index_codec import Decoder, Encoder

CATALOG = load_catalog()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# (fixture, owner): two models the 2.12 and 2.15 binaries cannot load (an op, a raised
# min_consumer), three they serve, one served at risk (it reads files: an unsafe op)
MODELS = [
    ("tf-real/artifacts/tf2.21/new_op", "ranking"),
    ("tf-real/artifacts/tf2.21/min_consumer_raised", "ranking"),
    ("tf-real/artifacts/tf2.12/savedmodel_v1_stripped", "search"),
    ("tf-real/artifacts/tf2.12/new_op", "search"),
    ("tf-real/artifacts/tf2.21/new_attr_default_unstripped", "ranking"),
    ("unsafe/tf2.21/read_file", "ads"),
]


def indexed(fleet: Fleet) -> list[IndexedModel]:
    models = [
        replace(recorded(tuple(read_path(str(FIXTURES / path))), key=path), owners=(owner,))
        for path, owner in MODELS
    ]
    digests = {c.name: consumer_digest(c) for c in fleet.consumers}
    after = {m.model.key: m for m in assess(models, fleet.consumers, history=CATALOG).models}
    return [
        replace(m, verdicts=after[m.key].verdicts_after, consumer_digests=digests) for m in models
    ]


def two_consumers() -> Fleet:
    return Fleet((CATALOG.consumer("2.12", name="batch"), CATALOG.consumer("2.15", name="serving")))


def test_the_lowest_release_serving_every_model_is_recommended() -> None:
    fleet = two_consumers()
    plan = build_plan(indexed(fleet), fleet, CATALOG)
    batch = plan.consumers[0]
    best = batch.recommended
    assert best is not None and best > 0 and batch.tallies[best].misses == 0
    assert all(t.misses > 0 for t in batch.tallies[:best])
    (decision, _) = decisions(plan)
    assert decision.serves_all and decision.recommended == batch.candidates[best].release


def test_a_model_served_at_risk_is_counted_at_risk_never_as_served() -> None:
    fleet = two_consumers()
    plan = build_plan(indexed(fleet), fleet, CATALOG)
    for tally in plan.consumers[0].tallies:
        assert tally.at_risk == 1 and plan.count(tally.at_risk_groups) == 1
        assert plan.owners(tally.at_risk_groups, "-") == {"ads"}
    document = plan_json(plan)
    recommended = next(c for c in document["consumers"][0]["candidates"] if c["recommended"])
    assert recommended["at_risk"] == 1 and recommended["serves"] == len(MODELS) - 1


def test_an_upgrade_range_limits_the_candidates_and_names_what_blocks_the_best() -> None:
    fleet = two_consumers()
    allowed = {"batch": SpecifierSet(">=2.12,<2.16")}
    plan = build_plan(indexed(fleet), fleet, CATALOG, allowed)
    batch = plan.consumers[0]
    assert [c.release for c in batch.candidates] == ["2.12.1", "2.13.1", "2.14.1", "2.15.1"]
    decision = decisions(plan)[0]
    assert not decision.serves_all
    (blocker,) = decision.blockers
    assert blocker.cause is not None and blocker.cause.code == "op.not-registered"
    assert blocker.owners == ["ranking"] and blocker.models == 1
    assert blocker.reexport == {"kind": "reexport_without_op", "op": "DecodeWebP"}


def test_upgrading_and_re_exporting_are_compared_by_what_they_touch() -> None:
    fleet = two_consumers()
    batch, serving = decisions(build_plan(indexed(fleet), fleet, CATALOG))
    # batch misses two models today; one consumer upgraded serves both
    assert (batch.reexport_touches, batch.upgrade_touches, batch.choice) == (2, 1, "upgrade")
    # serving misses one: re-exporting it touches no more than moving the consumer
    assert (serving.reexport_touches, serving.upgrade_touches) == (1, 1)
    assert serving.choice == "re-export"


def test_a_consumer_fix_with_an_op_offers_the_re_export_the_findings_know() -> None:
    upgrade = Cause(
        "op.not-registered", "m", (("kind", "upgrade_to"), ("op", "X"), ("release", "2.20"))
    )
    attr = Cause("attr.unknown", "m", (("attr", "a"), ("kind", "upgrade_to"), ("op", "X")))
    strip = Cause("attr.unknown", "m", (("kind", "strip_default_attrs"),))
    banned = Cause("policy.bad-consumer", "m", (("kind", "leave_banned_release"),))
    assert reexport_fix(upgrade) == {"kind": "reexport_without_op", "op": "X"}
    assert reexport_fix(attr) == {"kind": "set_attr_default", "op": "X", "attr": "a"}
    assert reexport_fix(strip) == {"kind": "strip_default_attrs"}
    assert reexport_fix(banned) is None
    # a GraphDef minimum above the consumer's: export with the consumer's own release
    minimum = Cause("version.min-consumer", "m", (("kind", "upgrade_to"), ("release", "2.14.0")))
    assert reexport_fix(minimum, "2.12.1") == {"kind": "reexport_with", "release": "2.12.1"}


def test_producers_export_no_newer_than_the_oldest_consumer_until_it_moves() -> None:
    fleet = two_consumers()
    plan = build_plan(indexed(fleet), fleet, CATALOG)
    advice = {a.owner: a for a in export_advice(plan, decisions(plan))}
    ranking = advice["ranking"]
    assert (ranking.newest_now, ranking.held_by) == ("2.12", "batch")
    assert ranking.models == 3 and ranking.served_everywhere == 1
    oldest = min(Version(d.recommended) for d in decisions(plan) if d.recommended)
    assert ranking.newest_after == f"{oldest.major}.{oldest.minor}"


def test_a_consumer_stays_a_candidate_of_its_own_and_never_moves_back_by_default() -> None:
    consumer = CATALOG.consumer("2.15", name="serving")
    found = candidates(consumer, CATALOG)
    assert found[0].current and found[0].definition is consumer
    assert all(c.release.startswith("2.") and int(c.release.split(".")[1]) >= 15 for c in found)


def test_an_upgrade_range_that_is_no_specifier_names_its_line(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "consumers:\n"
        "  - name: ok\n    tensorflow: '2.12'\n    upgrade_to: '>=2.12,<2.19'\n"
        "  - name: bad\n    tensorflow: '2.12'\n    upgrade_to: 'newest please'\n"
    )
    with pytest.raises(ConfigError, match=r"fleet.yaml:5: upgrade_to must be a version range"):
        upgrade_ranges(fleet)
    fleet.write_text("consumers:\n  - name: ok\n    tensorflow: '2.12'\n    upgrade_to: '>=2.12'\n")
    assert upgrade_ranges(fleet) == {"ok": SpecifierSet(">=2.12")}


def test_a_failures_cause_is_read_from_the_release_record_without_a_check() -> None:
    fleet = two_consumers()
    models = indexed(fleet)
    plan = build_plan(models, fleet, CATALOG)
    assert plan.checks == 0 and plan.recorded > 0
    # a record written before causes were kept: one check per release and errors
    older = [replace(m, releases=replace(m.releases, causes=())) for m in models if m.releases]
    again = build_plan(older, fleet, CATALOG)
    assert again.checks > 0
    assert {(c.code, c.fix) for c in again.causes} == {(c.code, c.fix) for c in plan.causes}


def test_the_recorded_causes_survive_the_index_and_malformed_ones_are_dropped() -> None:
    (model,) = indexed(Fleet((CATALOG.consumer("2.12", name="batch"),)))[:1]
    assert model.releases is not None and model.releases.causes
    encoder = Encoder()
    blob = encoder.entry(model)
    decoded = Decoder(dict(encoder.parts), lambda ref: None).entry(blob).releases
    assert decoded == model.releases
    record = {
        "digest": "d",
        "runs": [["incompatible", 0, 1]],
        "errors": [["x"]],
        "causes": [["op.not-registered", {"kind": 3}]],
    }
    kept = releases_of([{"release_verdicts": record}])
    assert kept is not None and kept.errors == (("x",),) and kept.causes == ()
