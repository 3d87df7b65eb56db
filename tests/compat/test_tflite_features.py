"""The file-feature rule: what a runtime does with a file feature it may not read.

Each rule is isolated over a small model and a table that differs in the one measured
fact; the real runtimes and files are tests/compat/test_tflite_agreement.py (the
tests/fixtures/tflite-features set) and the last tests here, over the shipped table."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.compat.test_tflite import builtin, consumer, runtime, tflite
from worker.catalog.tflite import load_tflite_catalog
from worker.compat.check import check_artifact
from worker.compat.tflite_features import FEATURE_STATUSES
from worker.model.artifact import Artifact
from worker.model.findings import Code, FixKind, Severity, Stage
from worker.model.tflite import TENSORFLOW, TfliteRuntime
from worker.model.verdict import Status

FLOAT = "tensor-type-FLOAT32"


def with_features(*features: str) -> Artifact:
    artifact = tflite([builtin(9)])
    assert artifact.tflite is not None
    return replace(artifact, tflite=replace(artifact.tflite, features=(FLOAT, *features)))


def measured(version: str = "2.10.0", **features: str) -> TfliteRuntime:
    return replace(runtime(version), features={FLOAT: "reads", **features})


# --- what each measured status means ------------------------------------------------------


def test_a_feature_the_runtime_reads_changes_nothing() -> None:
    found = check_artifact(
        with_features("buffer-offset"), consumer(measured(**{"buffer-offset": "reads"}))
    )
    assert (found.loads, found.serves, found.findings) == (True, True, ())


def test_an_unread_feature_that_fails_requests_loads_and_does_not_serve() -> None:
    table = measured(**{"buffer-offset": "requests-fail"})
    found = check_artifact(with_features("buffer-offset"), consumer(table))
    (finding,) = found.findings
    assert (found.loads, found.serves, found.status) == (True, False, Status.INCOMPATIBLE)
    assert (finding.code, finding.stage) == (Code.TFLITE_FILE_FEATURE, Stage.REQUEST)


def test_an_unread_feature_that_fails_the_load_loads_not() -> None:
    table = measured(**{"tensor-type-BFLOAT16": "load-fails"})
    found = check_artifact(with_features("tensor-type-BFLOAT16"), consumer(table))
    (finding,) = found.findings
    assert (found.loads, found.serves) == (False, False)
    assert (finding.code, finding.stage) == (Code.TFLITE_FILE_FEATURE, Stage.LOAD)


def test_an_ignored_feature_serves_with_a_note() -> None:
    table = measured(**{"signature-defs": "ignored"})
    found = check_artifact(with_features("signature-defs"), consumer(table))
    (note,) = found.findings
    assert (found.loads, found.serves) == (True, True)
    assert (note.code, note.severity) == (Code.TFLITE_FEATURE_IGNORED, Severity.INFO)


# --- what nobody measured is unknown, never fine ------------------------------------------


def test_a_feature_not_measured_on_the_runtime_is_unknown() -> None:
    found = check_artifact(with_features("variant-subtypes"), consumer(measured()))
    assert (found.loads, found.serves) == (None, None)
    (note,) = found.findings
    assert note.code == Code.TFLITE_FEATURE_UNMEASURED
    assert note.fix is not None and note.fix.kind == FixKind.MEASURE_TFLITE_RUNTIME


def test_a_failure_elsewhere_still_decides_loads() -> None:
    table = replace(measured(), ops={})
    found = check_artifact(with_features("variant-subtypes"), consumer(table))
    assert (found.loads, found.serves) == (False, False)


# --- the fixes ------------------------------------------------------------------------------


def test_buffer_offsets_are_fixed_by_converting_without_them_or_upgrading() -> None:
    old = measured("2.10.0", **{"buffer-offset": "requests-fail"})
    newer = (
        measured("2.11.0", **{"buffer-offset": "requests-fail"}),
        measured("2.12.0", **{"buffer-offset": "reads"}),
    )
    found = check_artifact(with_features("buffer-offset"), consumer(old, newer))
    fix = found.findings[0].fix
    assert fix is not None
    assert (fix.kind, fix.value, fix.release) == (
        FixKind.CONVERT_WITHOUT,
        "_experimental_use_buffer_offset",
        "2.12.0",
    )


def test_a_tensor_type_is_fixed_by_the_oldest_upgrade_that_reads_it() -> None:
    old = replace(measured("2.4.4", **{"tensor-type-UINT16": "load-fails"}), family=TENSORFLOW)
    newer = replace(measured("2.5.3", **{"tensor-type-UINT16": "reads"}), family=TENSORFLOW)
    found = check_artifact(with_features("tensor-type-UINT16"), consumer(old, (newer,), TENSORFLOW))
    fix = found.findings[0].fix
    assert fix is not None and (fix.kind, fix.release) == (FixKind.UPGRADE_TO, "2.5.3")


# --- the shipped table ----------------------------------------------------------------------

CATALOG = load_tflite_catalog()


def test_every_measured_runtime_has_a_feature_row() -> None:
    assert [r.name for r in CATALOG.runtimes if not r.features] == []


def test_every_status_in_the_table_is_one_the_rule_knows() -> None:
    statuses = {s for r in CATALOG.runtimes for s in r.features.values()}
    assert statuses <= set(FEATURE_STATUSES)


def test_every_runtime_reads_float32_tensors() -> None:
    assert {r.features.get(FLOAT) for r in CATALOG.runtimes} == {"reads"}


@pytest.mark.parametrize(
    ("runtime_name", "feature", "status"),
    [
        # 1.13's builder knows no FLOAT16 tensor ("Unimplemented data type FLOAT16")
        ("tensorflow-1.13.2", "tensor-type-FLOAT16", "load-fails"),
        # a constant after the flatbuffer is a tensor without data there: invoking crashes
        ("tensorflow-1.13.2", "buffer-offset", "requests-fail"),
        ("tensorflow-2.21.0", "buffer-offset", "reads"),
        ("tensorflow-1.13.2", "signature-defs", "ignored"),
        ("tensorflow-2.21.0", "signature-defs", "reads"),
    ],
)
def test_measured_rows(runtime_name: str, feature: str, status: str) -> None:
    (table,) = [r for r in CATALOG.runtimes if r.name == runtime_name]
    assert table.features.get(feature) == status
