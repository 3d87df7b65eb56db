"""The TFLite kernel-change table: measured by the sweep, its tolerance stated, read per
runtime as the rule needs it."""

from __future__ import annotations

import gzip
import json
from typing import Any

from worker.catalog.tflite import (
    DATA,
    RESULTS_FILE,
    RUNTIMES_FILE,
    load_tflite_catalog,
    result_changes,
)
from worker.model.tflite import LITERT, TFLITE_RUNTIME

TABLE: dict[str, Any] = json.loads(gzip.decompress((DATA / RESULTS_FILE).read_bytes()))
MEASURED = {r["name"] for r in json.loads((DATA / RUNTIMES_FILE).read_text())["runtimes"]}


def test_the_table_states_its_tolerance_for_each_kind_of_output() -> None:
    assert TABLE["format"] == "tfcompat-tflite-kernel-changes/1"
    assert set(TABLE["tolerance"]) == {"float_ulps", "quantized_steps", "integers"}
    assert TABLE["tolerance"]["integers"] == 0


def test_every_change_names_a_measured_runtime_and_the_reference() -> None:
    assert TABLE["reference"] in MEASURED
    for change in TABLE["changes"]:
        assert change["runtime"] in MEASURED and change["runtime"] != change["reference"]
        assert change["met_on"] in ("ordinary", "extremes")
        ordinary = set(change["classes"]) & set(TABLE["classes"]["ordinary"])
        assert (change["met_on"] == "ordinary") == bool(ordinary)


def test_a_measured_change_reaches_the_runtimes_table() -> None:
    # dynamic-range FULLY_CONNECTED in tflite-runtime 2.14.0: weights dequantised otherwise
    runtime = load_tflite_catalog().interpreter(TFLITE_RUNTIME, "2.14.0").table
    assert runtime is not None
    change = runtime.result_changes[("FULLY_CONNECTED", "dynamic")]
    assert change.met_on == "ordinary" and change.reference == TABLE["reference"]
    assert "ULPs of the output's largest magnitude" in change.tolerance
    assert change.runtimes > 1 and "kernel_sweep.py run --only tflite-runtime-2.14.0" in (
        change.remeasure
    )


def test_the_reference_runtime_has_no_changes() -> None:
    newest = load_tflite_catalog().family(LITERT)[-1]
    assert newest.name == TABLE["reference"] and not newest.result_changes


# Reading a document: evidence rendered with its unit, the count of runtimes measured
def test_a_document_row_becomes_a_change_with_its_evidence() -> None:
    doc = {
        "tolerance": {"float_ulps": 16, "quantized_steps": 1, "integers": 0},
        "remeasure": "measure {runtime}",
        "measured": {"ADD": {"int8": ["a", "b", "c"]}},
        "changes": [
            {
                "op": "ADD",
                "variant": "int8",
                "runtime": "b",
                "reference": "c",
                "classes": ["large"],
                "met_on": "extremes",
                "evidence": {
                    "class": "large",
                    "producer": "2.21.0",
                    "got": "[1] at 0",
                    "expected": "[3] at 0",
                    "distance": 2.0,
                    "kind": "quantized_steps",
                },
            }
        ],
    }
    change = result_changes(doc)["b"][("ADD", "int8")]
    assert change.extremes_only and change.runtimes == 3
    assert (change.distance, change.tolerance) == ("2 quantised steps", "1 quantised step")
    assert change.remeasure == "measure b"
