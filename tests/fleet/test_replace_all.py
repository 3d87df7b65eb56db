"""Replacing a whole fleet, as `fleet impact` assesses it (recorded release verdicts for
the default loader, one check per verdict class for the others, shared lookups across
releases that define a model's ops alike), gives every consumer of every loader the
state and the errors a check of that consumer alone finds, on real TensorFlow-written
models judged together in one pass."""

from __future__ import annotations

from itertools import islice

from tests.fleet.test_releases import recorded
from tests.truth import FIXTURE_SETS
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.memo import forget_all
from worker.compat.tflite import applies
from worker.fleet.impact import assess, verdict_state
from worker.formats.read import read_path
from worker.model.consumer import Consumer, Loader
from worker.model.findings import Severity
from worker.model.index import IndexedModel

CATALOG = load_catalog()
# Every third TensorFlow-written SavedModel and frozen graph of the fixture sets.
PATHS = sorted(
    p.parent if p.name == "saved_model.pb" else p
    for s in FIXTURE_SETS
    for p in (s / "artifacts").glob("*/*/*.pb")
    if p.name not in ("fingerprint.pb", "keras_metadata.pb")
)[::3]
# Releases whose registries differ a lot (1.15 to 2.21) and patch releases of one minor,
# each with every loader: the default loader's verdicts come from the records, the
# others' from checks shared by verdict class.
RELEASES = ["1.15", "2.4", "2.9", "2.12", "2.16.2", "2.18.0", "2.18.1", "2.19.0", "2.19.1", "2.21"]


def replacing_fleet() -> list[Consumer]:
    return [
        CATALOG.consumer(release, loader, name=f"{release}-{loader}")
        for release in RELEASES
        for loader in Loader
    ]


def checked_alone(model: IndexedModel, consumer: Consumer) -> tuple[str, tuple[str, ...]] | None:
    """The consumer's state and first errors on the model, from its own checks."""
    applicable = [a for a in model.artifacts if applies(a, consumer)]
    if not applicable:
        return None
    verdicts = [check_artifact(a, consumer, CATALOG) for a in applicable]
    errors = (f.message for v in verdicts for f in v.findings if f.severity == Severity.ERROR)
    return str(verdict_state(verdicts)), tuple(islice(errors, 5))


def test_replacing_every_consumer_finds_what_checking_each_alone_finds() -> None:
    models = [recorded(tuple(read_path(str(p))), key=str(p)) for p in PATHS]
    assert len(models) > 30
    fleet = replacing_fleet()
    forget_all()  # the pass starts cold, as a new process does
    impact = assess(models, fleet, history=CATALOG)
    assert impact.examined == len(models)
    assert impact.recorded == len(models) * len(RELEASES)  # the default loader's, unchecked
    # a check per verdict class: fewer than one per model and checked consumer
    assert 0 < impact.checks < len(models) * len(RELEASES) * (len(Loader) - 1)
    found = {
        (m.model.key, c.consumer): (c.after, c.reasons) for m in impact.models for c in m.changes
    }
    forget_all()
    mismatches = []
    for model in models:
        for consumer in fleet:
            expected = checked_alone(model, consumer)
            got = found.get((model.key, consumer.name))
            if expected != got:
                mismatches.append((model.key, consumer.name, got, expected))
    assert not mismatches, mismatches[:5]
