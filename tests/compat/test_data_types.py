"""Data types a consumer's DataType enum lacks (worker.compat.data_types) and what the
catalog knows of each release's enum (worker.catalog.data_types)."""

from __future__ import annotations

import json
from dataclasses import replace

from worker.catalog.catalog import load_catalog
from worker.catalog.data_types import DATA_TYPES_FORMAT, ShippedDataTypes
from worker.compat.check import check_artifact
from worker.model.artifact import Artifact, Edge, Graph, NodeKind, VersionDef
from worker.model.consumer import DataTypes, Loader
from worker.model.findings import Code, FixKind, Severity, Stage

BASE = ["DT_FLOAT", "DT_INT32"]
TABLE = ShippedDataTypes(
    json.dumps(
        {
            "format": DATA_TYPES_FORMAT,
            "releases": {
                "2.8.4": BASE,
                "2.12.1": [*BASE, "DT_FLOAT8_E5M2"],
                "2.15.1": [*BASE, "DT_FLOAT8_E5M2", "DT_INT4"],
            },
        }
    ).encode()
)


# What a release's enum holds, from the measured releases around it (append-only enum).
def test_a_measured_release_holds_exactly_its_enum() -> None:
    types = TABLE.data_types("2.12.1")
    assert types is not None
    assert not types.lacks("DT_FLOAT8_E5M2") and types.lacks("DT_INT4")


def test_a_release_between_two_measured_ones_is_unmeasured_where_they_differ() -> None:
    types = TABLE.data_types("2.10.0")
    assert types is not None
    assert types.unmeasured("DT_FLOAT8_E5M2") and not types.lacks("DT_FLOAT")
    assert types.lacks("DT_INT4")  # 2.12.1, newer, lacks it


def test_a_release_older_than_every_measured_one_lacks_what_the_oldest_lacks() -> None:
    types = TABLE.data_types("1.15.0")
    assert types is not None and types.lacks("DT_FLOAT8_E5M2")


def test_a_release_newer_than_every_measured_one_keeps_what_it_knows_and_no_more() -> None:
    types = TABLE.data_types("2.21.0")
    assert types is not None and types.unmeasured("DT_UINT2") and not types.lacks("DT_INT4")


def test_the_fix_names_the_oldest_measured_release_that_knows_the_type() -> None:
    types = TABLE.data_types("2.8.4")
    assert types is not None and types.first["DT_FLOAT8_E5M2"] == "2.12.1"


# The rule, on a graph whose placeholder and identity hold float8 (top level).
def _graph(function: str | None) -> Graph:
    kinds = (
        NodeKind("Placeholder", {"dtype": {"type": "DT_FLOAT8_E5M2"}}, 0, 1, "x", function),
        NodeKind("Identity", {"T": {"type": "DT_FLOAT8_E5M2"}}, 1, 1, "out", function),
    )
    return Graph(VersionDef(producer=1500), 2, kinds, (Edge(0, 0, 1, 0),))


def _consumer(release: str, loader: Loader = Loader.GRAPH_IMPORT):  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    consumer = catalog.consumer(release, loader)
    assert consumer.registry is not None
    types = TABLE.data_types(consumer.tensorflow or release)
    return replace(consumer, registry=replace(consumer.registry, data_types=types))


def test_a_top_level_type_the_consumer_lacks_fails_the_import() -> None:
    artifact = Artifact("m.pb", "graphdef", 1, "0" * 64, graph=_graph(None))
    verdict = check_artifact(artifact, _consumer("2.8"), load_catalog())
    assert verdict.loads is False
    (finding,) = [f for f in verdict.findings if f.code == Code.DTYPE_UNKNOWN]
    assert finding.stage == Stage.LOAD and finding.attr == "dtype"
    assert finding.fix is not None and finding.fix.kind == FixKind.UPGRADE_TO
    assert finding.fix.release == "2.12.1"


def test_a_consumer_that_knows_the_type_is_not_told_about_it() -> None:
    artifact = Artifact("m.pb", "graphdef", 1, "0" * 64, graph=_graph(None))
    verdict = check_artifact(artifact, _consumer("2.15"), load_catalog())
    assert not [f for f in verdict.findings if f.code.startswith("dtype.")]


def test_an_unmeasured_release_makes_loading_unknown_not_yes() -> None:
    artifact = Artifact("m.pb", "graphdef", 1, "0" * 64, graph=_graph(None))
    verdict = check_artifact(artifact, _consumer("2.10"), load_catalog())
    assert verdict.loads is None
    (finding,) = [f for f in verdict.findings if f.code == Code.DTYPE_UNMEASURED]
    assert finding.severity == Severity.INFO


def test_a_release_without_a_measured_enum_is_not_judged() -> None:
    artifact = Artifact("m.pb", "graphdef", 1, "0" * 64, graph=_graph(None))
    consumer = _consumer("2.8")
    assert consumer.registry is not None
    consumer = replace(consumer, registry=replace(consumer.registry, data_types=None))
    verdict = check_artifact(artifact, consumer, load_catalog())
    assert not [f for f in verdict.findings if f.code.startswith("dtype.")]


def test_a_manifest_enum_is_exact() -> None:
    types = DataTypes(frozenset(BASE), frozenset(BASE), "manifest m.json", {})
    assert types.lacks("DT_FLOAT8_E5M2") and not types.unmeasured("DT_INT4")


# Facts of the shipped table (tools/build_data_types.py from each release's types_pb2).
def test_the_shipped_table_says_when_each_measured_release_learned_the_new_types() -> None:
    catalog = load_catalog()

    def types(release: str) -> DataTypes:
        registry = catalog.registry(catalog.resolve(release))
        assert registry is not None and registry.data_types is not None
        return registry.data_types

    assert types("2.8").lacks("DT_FLOAT8_E5M2") and types("1.15").lacks("DT_INT4")
    assert not types("2.12").lacks("DT_FLOAT8_E5M2") and types("2.12").lacks("DT_INT4")
    assert types("2.10").unmeasured("DT_FLOAT8_E5M2")  # between 2.8.4 and 2.12.1
    assert not types("2.21").lacks("DT_FLOAT4_E2M1FN")
