"""The shipped catalog loads, is self-consistent, and agrees with real releases."""

from __future__ import annotations

import gzip
import json
from importlib import resources

import pytest

from worker.catalog.catalog import load_catalog
from worker.catalog.opdefs import op_def_from_json, op_def_via_protobuf
from worker.errors import UnknownRelease

# Facts read from real installs (shared/fixtures/tf-real/consumers.json).
KNOWN = {
    "1.15.0": 134,
    "2.4.4": 561,
    "2.11.1": 1286,
    "2.12.1": 1395,
    "2.15.1": 1645,
    "2.18.1": 1994,
    "2.21.0": 2474,
}


def _registries() -> dict:  # type: ignore[type-arg]
    blob = resources.files("worker.catalog").joinpath("data", "registries.json.gz").read_bytes()
    return json.loads(gzip.decompress(blob))  # type: ignore[no-any-return]


def test_known_graph_def_versions() -> None:
    catalog = load_catalog()
    for version, graph_def in KNOWN.items():
        assert catalog.resolve(version).graph_def_version == graph_def


def test_releases_are_sorted_and_cover_1_0_to_2_21() -> None:
    from packaging.version import Version

    versions = [Version(r.version) for r in load_catalog().releases]
    assert versions == sorted(versions)
    assert str(versions[0]) == "1.0.0"
    assert versions[-1] >= Version("2.21.0")
    assert len(versions) >= 100


def test_minimum_registries_are_present() -> None:
    with_registry = {".".join(v.split(".")[:2]) for v in load_catalog().registry_releases()}
    assert {"1.15", "2.4", "2.8", "2.11", "2.12", "2.21"} <= with_registry


def test_minor_resolves_to_newest_patch_and_unknown_is_refused() -> None:
    catalog = load_catalog()
    assert catalog.resolve("2.12").version == "2.12.1"
    with pytest.raises(UnknownRelease, match="not in the catalog"):
        catalog.resolve("2.99")
    with pytest.raises(UnknownRelease, match="not a TensorFlow version"):
        catalog.resolve("latest")


def test_release_without_registry_says_so() -> None:
    catalog = load_catalog()
    release = catalog.resolve("1.0")
    assert release.registry_version is None
    assert catalog.registry(release) is None


def test_registry_deltas_replay_to_plausible_registries() -> None:
    doc = _registries()
    assert doc["format"] == "tfcompat-registries/1"
    current: dict[str, object] = {}
    for delta in doc["releases"]:
        for name in delta["removed"]:
            assert name in current, f"{delta['version']} removes {name} it never had"
            del current[name]
        current.update(delta["set"])
        assert 700 < len(current) < 3000, delta["version"]
        for name in ("Const", "MatMul", "Placeholder", "Identity"):
            assert name in current


def test_fast_opdef_conversion_equals_protobuf_path_for_every_shipped_op() -> None:
    seen = 0
    for delta in _registries()["releases"]:
        for op in delta["set"].values():
            assert op_def_from_json(op) == op_def_via_protobuf(op), op["name"]
            seen += 1
    assert seen > 1000


def test_op_history_names_first_release() -> None:
    catalog = load_catalog()
    assert catalog.op_introduced("MatMul") == catalog.registry_releases()[0]
    assert catalog.op_introduced("DecodeWebP") is not None
    assert catalog.op_introduced("NoSuchOpAnywhere") is None


def test_producer_dates_follow_the_daily_bump() -> None:
    import datetime as dt

    catalog = load_catalog()
    assert catalog.producer_date(2474) == dt.date(2026, 1, 16)
    assert catalog.producer_date(30) == dt.date(2019, 5, 9)
    assert catalog.producer_date(29) is None  # before daily versions began
