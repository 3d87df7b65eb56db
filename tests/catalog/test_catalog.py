"""The shipped catalog loads, is self-consistent, and agrees with real releases."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from worker.catalog.catalog import DATA, Catalog, load_catalog
from worker.catalog.opdefs import op_def_from_json, op_def_via_protobuf
from worker.catalog.registries import RegistryOps, ShippedRegistries
from worker.errors import UnknownRelease

ROOT = Path(__file__).resolve().parents[2]

# Facts read from real installs (tests/fixtures/tf-base/consumers.json).
KNOWN = {
    "1.15.0": 134,
    "2.4.4": 561,
    "2.11.1": 1286,
    "2.12.1": 1395,
    "2.15.1": 1645,
    "2.18.1": 1994,
    "2.21.0": 2474,
}


def _build_registries() -> ModuleType:
    """tools/build_registries.py, the only writer of the shipped file."""
    spec = importlib.util.spec_from_file_location(
        "build_registries", ROOT / "tools" / "build_registries.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_registries"] = module  # TypedDicts resolve their module
    spec.loader.exec_module(module)
    return module


def _shipped() -> bytes:
    return (DATA / "registries.jsonl").read_bytes()


def _replayed() -> dict[str, dict[str, dict[str, Any]]]:
    """Every release's registry as OpDef JSON, replayed by the tool's own reader."""
    return _build_registries().unpack_registries(_shipped())  # type: ignore[no-any-return]


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


def test_every_release_registry_is_plausible() -> None:
    catalog = load_catalog()
    for version in catalog.registry_releases():
        registry = catalog.registry(catalog.resolve(version))
        assert registry is not None
        assert 700 < len(registry.ops) < 3000, version
        for name in ("Const", "MatMul", "Placeholder", "Identity"):
            assert name in registry.ops


def test_lazy_registries_hold_exactly_the_shipped_opdefs() -> None:
    catalog = load_catalog()
    converted: dict[int, Any] = {}  # the replay shares one dict per distinct OpDef
    for version, ops in _replayed().items():
        registry = catalog.registry(catalog.resolve(version))
        assert registry is not None
        assert sorted(registry.ops) == sorted(ops), version
        for name, op in ops.items():
            if id(op) not in converted:
                converted[id(op)] = op_def_from_json(op)
            assert registry.ops[name] == converted[id(op)], (version, name)


def test_fast_opdef_conversion_equals_protobuf_path_for_every_shipped_op() -> None:
    lines = _shipped().split(b"\n")[1:]
    for line in lines:
        op = json.loads(line)
        assert op_def_from_json(op) == op_def_via_protobuf(op), op["name"]
    assert len(lines) > 1000


def test_the_shipped_file_is_what_the_tool_writes_byte_for_byte() -> None:
    tool = _build_registries()
    shipped_date = json.loads(_shipped().split(b"\n", 1)[0])["source"]["date"]
    header, pool = tool.pack_registries(tool.records_from_packed(_shipped()), shipped_date)
    assert tool.encode(header, pool) == _shipped()


def test_a_registry_converts_only_the_opdefs_a_check_looks_up() -> None:
    registries = ShippedRegistries(_shipped())
    ops = registries.ops(registries.versions()[-1])
    assert "MatMul" in ops and "NoSuchOp" not in ops and len(ops) > 1000
    assert sorted(ops)  # iterating names converts nothing
    assert registries.pool.converted() == 0
    matmul = ops["MatMul"]
    assert ops.get("MatMul") is matmul and ops.get("NoSuchOp") is None
    assert registries.pool.converted() == 1


def test_releases_sharing_an_opdef_share_one_object() -> None:
    registries = ShippedRegistries(_shipped())
    first, last = registries.versions()[-2:]
    assert registries.ops(first)["Const"] is registries.ops(last)["Const"]


def test_registries_compare_equal_by_contents() -> None:
    registries = ShippedRegistries(_shipped())
    version = registries.versions()[-1]
    ops = registries.ops(version)
    assert ops == registries.ops(version)
    assert ops != registries.ops(registries.versions()[0])
    assert ops == dict(ops)
    assert isinstance(ops, RegistryOps)


def test_catalog_without_registries_checks_on_numbers_only() -> None:
    catalog = Catalog(json.loads((DATA / "releases.json").read_bytes()), None)
    release = catalog.resolve("2.12")
    assert release.registry_version is None and catalog.registry(release) is None
    assert catalog.op_introduced("MatMul") is None
    assert catalog.range_consumers() == []


def test_op_history_names_first_release() -> None:
    catalog = load_catalog()
    assert catalog.op_introduced("MatMul") == catalog.registry_releases()[0]
    assert catalog.op_introduced("DecodeWebP") is not None
    assert catalog.op_introduced("NoSuchOpAnywhere") is None


def test_op_and_attr_history_agree_with_a_replay_of_every_registry() -> None:
    # The catalog's history from deltas against a brute-force walk of every release.
    catalog = load_catalog()
    replayed = _replayed()
    versions = list(replayed)
    for op in sorted({name for ops in replayed.values() for name in ops}):
        having = [v for v in versions if op in replayed[v]]
        assert catalog.op_introduced(op) == having[0], op
        assert catalog.op_last_release(op) == having[-1], op
    removed = [op for op in replayed[versions[0]] if op not in replayed[versions[-1]]]
    assert removed, "some op was removed between the first and the last release"
    for op, attr in [("MatMul", "grad_a"), ("MatMul", "T"), ("TopKV2", "index_type")]:
        having = [v for v in versions if any(a["name"] == attr for a in replayed[v][op]["attr"])]
        assert catalog.attr_introduced(op, attr) == having[0]
    assert catalog.attr_introduced("MatMul", "no_such_attr") is None


def test_producer_dates_follow_the_daily_bump() -> None:
    import datetime as dt

    catalog = load_catalog()
    assert catalog.producer_date(2474) == dt.date(2026, 1, 16)
    assert catalog.producer_date(30) == dt.date(2019, 5, 9)
    assert catalog.producer_date(29) is None  # before daily versions began
