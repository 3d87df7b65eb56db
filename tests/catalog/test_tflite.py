"""The measured TFLite runtimes: how versions resolve, and what the kernel facts say."""

from __future__ import annotations

import json
from typing import Any

import pytest

from worker.catalog.catalog import load_catalog
from worker.catalog.tflite import (
    DATA,
    KERNELS_FILE,
    RUNTIMES_FILE,
    TfliteCatalog,
    load_tflite_catalog,
)
from worker.compat.tflite import known_feature
from worker.errors import UnknownRelease
from worker.formats.tflite_schema import BUILTIN_OPERATORS
from worker.model.tflite import LITERT, TENSORFLOW, TFLITE_RUNTIME

RUNTIMES: dict[str, Any] = json.loads((DATA / RUNTIMES_FILE).read_text())
KERNELS: dict[str, Any] = json.loads((DATA / KERNELS_FILE).read_text())


def table(family: str, version: str) -> Any:
    return load_tflite_catalog().interpreter(family, version).table


def test_every_measured_runtime_is_catalogued() -> None:
    catalog = load_tflite_catalog()
    assert [len(catalog.family(f)) for f in (TENSORFLOW, TFLITE_RUNTIME, LITERT)] == [25, 8, 19]


def test_every_release_with_an_op_registry_has_a_measured_tflite_table() -> None:
    missing = [
        c.name
        for c in load_catalog().range_consumers()
        if c.tflite is None or c.tflite.table is None
    ]
    assert missing == []


def test_the_readers_op_names_are_the_measured_runtimes_names() -> None:
    measured = {int(code): name for code, name in RUNTIMES["names"].items()}
    ours = {code: name for code, name in BUILTIN_OPERATORS.items() if code != 32}  # CUSTOM
    assert ours == measured


# "X.Y" is the newest measured X.Y.z; "X.Y.Z" that release exactly; anything else unmeasured.
@pytest.mark.parametrize(
    ("family", "spec", "version", "measured"),
    [
        (TFLITE_RUNTIME, "2.14", "2.14.0", True),
        (TFLITE_RUNTIME, "2.9", "2.9.1", True),
        (TFLITE_RUNTIME, "2.9.0", "2.9.0", False),  # 2.9.1 was measured, not 2.9.0
        (TFLITE_RUNTIME, "2.15", "2.15", False),  # no tflite-runtime 2.15 was measured
        (LITERT, "1.4", "1.4.0", True),
        (LITERT, "1.3", "1.3.0", True),
        (LITERT, "1.5", "1.5", False),  # no LiteRT 1.5 on the registry
        (TENSORFLOW, "2.15.1", "2.15.1", True),
        (TENSORFLOW, "2.13.1", "2.13.1", True),
        (TENSORFLOW, "2.15.0", "2.15.0", True),  # a patch release runs its minor's table
    ],
)
def test_versions_resolve_to_measured_tables_or_none(
    family: str, spec: str, version: str, measured: bool
) -> None:
    interpreter = load_tflite_catalog().interpreter(family, spec)
    assert (interpreter.version, interpreter.table is not None) == (version, measured)


def test_a_version_that_is_no_number_is_refused() -> None:
    with pytest.raises(UnknownRelease, match="'latest' is not a version number"):
        load_tflite_catalog().interpreter(TFLITE_RUNTIME, "latest")


def test_upgrades_are_the_newer_measured_runtimes_of_the_family() -> None:
    upgrades = load_tflite_catalog().interpreter(TFLITE_RUNTIME, "2.12").upgrades
    assert [r.version for r in upgrades] == ["2.13.0", "2.14.0"]


def test_a_catalog_release_runs_tflite_with_its_own_wheels_interpreter() -> None:
    catalog = load_catalog()
    measured, borrowing = catalog.consumer("2.15"), catalog.consumer("2.15.0")
    assert measured.tflite is not None and measured.tflite.table is not None
    assert measured.tflite.table.name == "tensorflow-2.15.1" and not measured.tflite.standalone
    assert borrowing.tflite is not None and borrowing.tflite.table is not None
    assert (borrowing.tflite.version, borrowing.tflite.table.name) == (
        "2.15.0",
        "tensorflow-2.15.1",
    )


# The custom ops each runtime's default resolver registers, measured by name.
@pytest.mark.parametrize(
    ("family", "version", "op", "registers"),
    [
        (TENSORFLOW, "1.13.2", "TFLite_Detection_PostProcess", True),
        (TENSORFLOW, "2.15.1", "Mfcc", True),
        (TENSORFLOW, "2.15.1", "MatrixDeterminant", False),
        (TFLITE_RUNTIME, "2.14.0", "AudioSpectrogram", True),
    ],
)
def test_default_resolvers_register_measured_custom_ops(
    family: str, version: str, op: str, registers: bool
) -> None:
    custom_ops = table(family, version).custom_ops
    assert custom_ops is not None and (op in custom_ops) is registers


# 1.13 and 1.14 resolve every OperatorCode when built; later builders only used ones.
@pytest.mark.parametrize(
    ("version", "fails"), [("1.13.2", True), ("1.14.0", True), ("1.15.5", False)]
)
def test_unused_custom_ops_fail_the_build_only_up_to_1_14(version: str, fails: bool) -> None:
    assert table(TENSORFLOW, version).unused_custom_fails_build is fails


def test_a_standalone_runtime_is_a_consumer_without_tensorflow() -> None:
    found = load_tflite_catalog().consumer("litert", "1.4")
    assert (found.name, found.tensorflow) == ("litert-1.4.0", None)
    assert found.tflite is not None and found.tflite.standalone


# Only a runtime that knows codes past the byte field reads the int32 field.
@pytest.mark.parametrize(("version", "reads"), [("1.15.5", False), ("2.4.4", True)])
def test_the_int32_code_field_is_read_from_2_4(version: str, reads: bool) -> None:
    assert table(TENSORFLOW, version).reads_builtin_code is reads


# Kernel facts: the bounds measured on the TensorFlow and tflite-runtime rows.
@pytest.mark.parametrize(
    ("family", "version", "has"),
    [
        (TENSORFLOW, "2.8.4", False),
        (TENSORFLOW, "2.12.1", True),
        (TFLITE_RUNTIME, "2.9.1", False),
        (TFLITE_RUNTIME, "2.10.0", True),
        (LITERT, "1.0.1", True),
    ],
)
def test_per_channel_fully_connected_is_known_where_measured(
    family: str, version: str, has: bool
) -> None:
    kernels = {c.feature: present for c, present in table(family, version).kernels}
    assert kernels["per-channel-weights"] is has


def test_a_release_between_the_measured_bounds_is_unknown() -> None:
    row = next(r for r in RUNTIMES["runtimes"] if r["name"] == "tensorflow-2.8.4")
    between = {**row, "name": "tensorflow-2.10.0", "version": "2.10.0", "tensorflow": "2.10.0"}
    catalog = TfliteCatalog({"runtimes": [between]}, KERNELS)
    (runtime,) = catalog.family(TENSORFLOW)
    assert {c.feature: p for c, p in runtime.kernels}["per-channel-weights"] is None


def test_every_feature_the_kernel_facts_name_is_one_the_rules_read() -> None:
    features = [k["feature"] for k in KERNELS["kernel_changes"]]
    features += [r["feature"] for r in KERNELS["required_versions"]]
    assert all(known_feature(f) for f in features)


def test_a_table_names_its_contents() -> None:
    prints = {r.fingerprint for r in load_tflite_catalog().runtimes}
    assert len(prints) == 52
