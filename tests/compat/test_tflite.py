"""The TFLite rules, one behaviour per test, over small models and runtime tables.

The real files and runtimes are tests/compat/test_tflite_agreement.py; here each rule is
isolated (a table that differs from a measured one in the one fact under test)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from worker.compat.check import check_artifact
from worker.compat.policy import BannedRelease, Policy
from worker.compat.tflite import applies, has_feature, known_feature
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.findings import Code, FixKind, Severity, Stage
from worker.model.tflite import (
    LITERT,
    TENSORFLOW,
    TFLITE_RUNTIME,
    KernelChange,
    RequiredVersion,
    ResultChange,
    TensorSig,
    TfliteInterpreter,
    TfliteModel,
    TfliteOpCode,
    TfliteOperatorKind,
    TfliteRuntime,
)
from worker.model.verdict import Status

FLOAT = TensorSig("FLOAT32", 2)
INT8 = TensorSig("INT8", 2, 1)
INT8_PER_CHANNEL = TensorSig("INT8", 2, 4)
INT16 = TensorSig("INT16", 2, 1)
RANK6 = TensorSig("FLOAT32", 6)
SHAPE = TensorSig("INT32", 1)

NAMES = {9: "FULLY_CONNECTED", 22: "RESHAPE", 39: "TRANSPOSE", 150: "GELU", 128: "CUMSUM"}
PER_CHANNEL = KernelChange("FULLY_CONNECTED", "per-channel-weights", "wrong-values", "2.15.1", "")
INT16_FC = KernelChange("FULLY_CONNECTED", "int16-activations", "prepare-fails", None, "")
RANK_VERSIONS = (
    RequiredVersion("TRANSPOSE", "input-rank-above-5", 6),
    RequiredVersion("TRANSPOSE", "input-rank-above-4", 4),
)


def builtin(code: int, version: int = 1) -> TfliteOpCode:
    return TfliteOpCode(min(code, 127), code, version, None, NAMES.get(code, f"BUILTIN_{code}"))


def custom(name: str) -> TfliteOpCode:
    return TfliteOpCode(32, 0, 1, name, name)


def kind(
    index: int, *inputs: TensorSig | None, position: int = 0, subgraph: int = 0
) -> TfliteOperatorKind:
    return TfliteOperatorKind(index, inputs, (FLOAT,), 1, subgraph, position)


def tflite(
    codes: list[TfliteOpCode], kinds: list[TfliteOperatorKind] | None = None, schema: int = 3
) -> Artifact:
    if kinds is None:
        kinds = [kind(i, FLOAT, position=i) for i in range(len(codes))]
    model = TfliteModel(
        schema_version=schema,
        description="",
        min_runtime_version=None,
        operator_codes=tuple(codes),
        operator_kinds=tuple(kinds),
        subgraphs=1,
        operators=sum(k.count for k in kinds),
        tensors=4,
        buffers=2,
    )
    return Artifact("m.tflite", "tflite", 100, "0" * 64, tflite=model)


def runtime(
    version: str = "2.10.0",
    family: str = TFLITE_RUNTIME,
    *,
    max_code: int = 160,
    ops: dict[int, tuple[int, int]] | None = None,
    flex: bool = False,
    kernels: tuple[tuple[KernelChange, bool | None], ...] = ((PER_CHANNEL, True), (INT16_FC, True)),
    custom_ops: frozenset[str] | None = frozenset(),
    unused_custom_fails_build: bool = False,
    result_changes: dict[tuple[str, str], ResultChange] | None = None,
    results_measured: frozenset[tuple[str, str]] = frozenset(),
) -> TfliteRuntime:
    table = ops if ops is not None else {9: (1, 9), 22: (1, 1), 39: (1, 6), 128: (1, 1)}
    return TfliteRuntime(
        name=f"{family}-{version}",
        family=family,
        version=version,
        tensorflow=version,
        flex=flex,
        max_code=max_code,
        ops=table,
        kernels=kernels,
        required_versions=RANK_VERSIONS,
        custom_ops=custom_ops,
        unused_custom_fails_build=unused_custom_fails_build,
        result_changes=result_changes or {},
        results_measured=results_measured,
    )


def consumer(
    table: TfliteRuntime | None,
    upgrades: tuple[TfliteRuntime, ...] = (),
    family: str = "",
    measured: tuple[TfliteRuntime, ...] = (),
) -> Consumer:
    family = family or (table.family if table else TFLITE_RUNTIME)
    version = table.version if table else "9.9.9"
    interpreter = TfliteInterpreter(family, version, table, upgrades, measured)
    if family == TENSORFLOW:
        return Consumer(f"tf-{version}", version, 1000, tflite=interpreter)
    return Consumer(f"rt-{version}", None, 0, tflite=interpreter)


def first_error(artifact: Artifact, who: Consumer) -> Code | None:
    found = check_artifact(artifact, who)
    return next((f.code for f in found.findings if f.severity == Severity.ERROR), None)


# --- building the interpreter: codes and versions -------------------------------------------


def test_a_model_the_runtime_resolves_serves() -> None:
    found = check_artifact(tflite([builtin(9), builtin(22)]), consumer(runtime()))
    assert (found.loads, found.serves, found.findings, found.status) == (
        True,
        True,
        (),
        Status.COMPATIBLE,
    )


def test_tensorflow_serving_does_not_read_a_bare_tflite_file() -> None:
    """A `serving:` consumer is a TF Serving binary: it loads SavedModels only, however well
    its release's tf.lite.Interpreter would run the file."""
    serving = replace(consumer(runtime(family=TENSORFLOW)), tf_serving=True)
    found = check_artifact(tflite([builtin(9)]), serving)
    assert (found.loads, found.serves) == (False, False)
    assert [f.code for f in found.findings] == [Code.TFLITE_NOT_SERVABLE]
    assert found.findings[0].fix is not None
    assert found.findings[0].fix.kind == FixKind.SERVE_WITH_TFLITE_RUNTIME


def test_a_code_past_the_runtimes_enum_is_out_of_range() -> None:
    found = check_artifact(tflite([builtin(150)]), consumer(runtime(max_code=146)))
    (finding,) = found.findings
    assert (found.loads, found.serves, finding.code) == (
        False,
        False,
        Code.TFLITE_CODE_OUT_OF_RANGE,
    )
    assert finding.message.startswith("Op builtin_code out of range: 150. Are you using old")


def test_a_runtime_before_the_int32_field_reports_127() -> None:
    found = check_artifact(tflite([builtin(128)]), consumer(runtime("1.15.5", max_code=119)))
    assert "Op builtin_code out of range: 127." in found.findings[0].message


def test_an_op_version_the_resolver_lacks_is_not_found() -> None:
    found = check_artifact(tflite([builtin(39, 7)]), consumer(runtime()))
    (finding,) = found.findings
    assert (found.loads, finding.code, finding.op) == (False, Code.TFLITE_OP_VERSION, "TRANSPOSE")
    assert finding.message.startswith("Didn't find op for builtin opcode 'TRANSPOSE' version '7'")


def test_a_code_in_range_without_a_kernel_is_not_found() -> None:
    found = check_artifact(tflite([builtin(150)]), consumer(runtime(max_code=160)))
    assert found.findings[0].code == Code.TFLITE_OP_VERSION
    assert "has no kernel for GELU" in found.findings[0].message


def test_a_schema_other_than_3_is_refused_everywhere() -> None:
    assert first_error(tflite([builtin(9)], schema=2), consumer(runtime())) == (
        Code.TFLITE_SCHEMA_VERSION
    )


# --- allocating tensors: custom ops, Flex, kernels ------------------------------------------


def test_a_custom_op_the_default_resolver_lacks_fails_to_prepare() -> None:
    found = check_artifact(tflite([custom("MatrixDeterminant")]), consumer(runtime(flex=True)))
    (finding,) = found.findings
    assert (found.loads, finding.code) == (False, Code.TFLITE_CUSTOM_OP)
    assert finding.fix is not None and finding.fix.kind == FixKind.LINK_CUSTOM_OP
    assert "Encountered unresolved custom op: MatrixDeterminant" in finding.message
    assert "no measured TFLite runtime runs it by default" in finding.message


def test_a_custom_op_the_default_resolver_registers_runs() -> None:
    has_it = runtime(custom_ops=frozenset({"TFLite_Detection_PostProcess"}))
    found = check_artifact(tflite([custom("TFLite_Detection_PostProcess")]), consumer(has_it))
    assert (found.loads, found.serves, found.findings) == (True, True, ())


def test_a_custom_op_names_the_runtimes_that_register_it_and_the_upgrade() -> None:
    def tf(version: str, has: bool) -> TfliteRuntime:
        ops = frozenset({"Convolution2DTransposeBias"}) if has else frozenset()
        return runtime(version, TENSORFLOW, custom_ops=ops)

    old, newer, newest = tf("2.15.1", False), tf("2.18.1", True), tf("2.21.0", True)
    litert = runtime("1.0.1", LITERT, custom_ops=frozenset({"Convolution2DTransposeBias"}))
    measured = (litert, old, newer, newest)
    found = check_artifact(
        tflite([custom("Convolution2DTransposeBias")]),
        consumer(old, (newer, newest), measured=measured),
    )
    (finding,) = found.findings
    assert finding.fix is not None
    assert (finding.fix.kind, finding.fix.release, finding.fix.runtime) == (
        FixKind.LINK_CUSTOM_OP,
        "2.18.1",
        TENSORFLOW,
    )
    assert "runs it in ai-edge-litert 1.0.1, tensorflow 2.18.1 to 2.21.0" in finding.message


# XNNPACK, the default delegate from 2.17, takes some custom ops on float32 tensors only.
@pytest.mark.parametrize(("tensor", "loads"), [(FLOAT, True), (INT8, False)])
def test_a_custom_op_the_default_delegate_runs_needs_float_tensors(
    tensor: TensorSig, loads: bool
) -> None:
    table = replace(runtime(), delegate_custom_ops=frozenset({"Convolution2DTransposeBias"}))
    model = tflite([custom("Convolution2DTransposeBias")], [kind(0, tensor)])
    assert check_artifact(model, consumer(table)).loads is loads


def test_a_custom_op_is_unknown_where_no_table_is_measured() -> None:
    found = check_artifact(tflite([custom("MatrixDeterminant")]), consumer(None))
    assert (found.loads, found.serves, found.status) == (None, None, Status.UNKNOWN)


def test_a_custom_op_is_unknown_where_the_resolvers_custom_ops_were_not_measured() -> None:
    found = check_artifact(tflite([custom("X")]), consumer(runtime(custom_ops=None)))
    assert (found.loads, found.serves) == (None, None)


# 1.13 and 1.14 resolve every OperatorCode when the interpreter is built.
def test_an_unused_unresolved_custom_op_fails_the_build_where_every_code_is_resolved() -> None:
    artifact = tflite([builtin(9), custom("Unused")], [kind(0, FLOAT)])
    found = check_artifact(artifact, consumer(runtime(unused_custom_fails_build=True)))
    assert (found.loads, found.findings[0].code) == (False, Code.TFLITE_CUSTOM_OP)
    assert "Didn't find custom op for name 'Unused' with version 1" in found.findings[0].message


def test_an_operator_code_no_operator_uses_is_never_prepared() -> None:
    artifact = tflite([builtin(9), custom("Unused")], [kind(0, FLOAT)])
    assert check_artifact(artifact, consumer(runtime())).serves is True


# Select TF ops: only where the Flex delegate is linked.
@pytest.mark.parametrize(("flex", "serves"), [(True, True), (False, False)])
def test_select_tf_ops_need_the_flex_delegate(flex: bool, serves: bool) -> None:
    found = check_artifact(tflite([custom("FlexMatrixDeterminant")]), consumer(runtime(flex=flex)))
    assert found.serves is serves
    assert first_error(tflite([custom("FlexX")]), consumer(runtime(flex=flex))) == (
        None if flex else Code.TFLITE_FLEX
    )


def test_select_tf_ops_are_unknown_where_no_table_is_measured() -> None:
    found = check_artifact(tflite([custom("FlexMatrixDeterminant")]), consumer(None))
    assert (found.loads, found.serves, found.status) == (None, None, Status.UNKNOWN)


# A rank-6 TRANSPOSE written as version 1 (the 1.15 converter) needs version 6's kernel.
@pytest.mark.parametrize(("highest", "code"), [(5, Code.TFLITE_KERNEL_PREPARE), (6, None)])
def test_a_version_the_tensors_require_must_resolve(highest: int, code: Code | None) -> None:
    artifact = tflite([builtin(39, 1)], [kind(0, RANK6, SHAPE)])
    ops = {39: (1, highest)}
    assert first_error(artifact, consumer(runtime(ops=ops))) == code


def test_a_kernel_change_the_runtime_lacks_fails_to_prepare() -> None:
    artifact = tflite([builtin(9, 4)], [kind(0, INT16, INT8)])
    lacking = runtime(kernels=((INT16_FC, False),))
    found = check_artifact(artifact, consumer(lacking))
    assert (found.loads, found.findings[0].code) == (False, Code.TFLITE_KERNEL_PREPARE)


def test_a_kernel_change_not_measured_for_the_runtime_is_unknown() -> None:
    artifact = tflite([builtin(9, 4)], [kind(0, INT16, INT8)])
    found = check_artifact(artifact, consumer(runtime(kernels=((INT16_FC, None),))))
    assert (found.loads, found.serves) == (None, None)
    assert [f.code for f in found.findings] == [Code.TFLITE_KERNEL_UNKNOWN]


# --- invoking: wrong values are no "serves" ---------------------------------------------------


def test_per_channel_weights_in_an_older_kernel_load_and_do_not_serve() -> None:
    artifact = tflite([builtin(9, 4)], [kind(0, INT8, INT8_PER_CHANNEL)])
    found = check_artifact(artifact, consumer(runtime("2.9.1", kernels=((PER_CHANNEL, False),))))
    (finding,) = found.findings
    assert (found.loads, found.serves, found.status) == (True, False, Status.INCOMPATIBLE)
    assert (finding.code, finding.stage) == (Code.TFLITE_WRONG_VALUES, Stage.REQUEST)
    assert finding.fix is not None
    assert (finding.fix.kind, finding.fix.release) == (FixKind.CONVERT_WITH, "2.15.1")


def test_per_tensor_weights_serve_in_an_older_kernel() -> None:
    artifact = tflite([builtin(9, 4)], [kind(0, INT8, INT8)])
    assert check_artifact(artifact, consumer(runtime(kernels=((PER_CHANNEL, False),)))).serves


def test_wrong_values_whose_kernel_is_not_measured_are_unknown() -> None:
    artifact = tflite([builtin(9, 4)], [kind(0, INT8, INT8_PER_CHANNEL)])
    found = check_artifact(artifact, consumer(runtime(kernels=((PER_CHANNEL, None),))))
    assert (found.loads, found.serves) == (True, None)


# --- the order the runtime meets them, and the fixes ---------------------------------------


def test_build_errors_come_before_prepare_errors_and_those_in_node_order() -> None:
    codes = [custom("Later"), builtin(39, 1), builtin(150)]
    kinds = [kind(0, FLOAT, position=2), kind(1, RANK6, SHAPE, position=1), kind(2, FLOAT)]
    found = check_artifact(tflite(codes, kinds), consumer(runtime(ops={39: (1, 5)})))
    assert [f.code for f in found.findings] == [
        Code.TFLITE_OP_VERSION,  # GELU, when the interpreter is built
        Code.TFLITE_KERNEL_PREPARE,  # node 1
        Code.TFLITE_CUSTOM_OP,  # node 2
    ]


def test_the_upgrade_is_the_oldest_newer_runtime_that_serves_it() -> None:
    older = runtime("2.7.0", max_code=146)
    newer = (runtime("2.8.0", max_code=149), runtime("2.9.1"), runtime("2.10.0"))
    ops = {150: (1, 1)}
    newer = tuple(replace(r, ops=ops) for r in newer)
    found = check_artifact(tflite([builtin(150)]), consumer(older, newer))
    fix = found.findings[0].fix
    assert fix is not None
    assert (fix.kind, fix.release, fix.runtime) == (
        FixKind.UPGRADE_RUNTIME,
        "2.9.1",
        TFLITE_RUNTIME,
    )


def test_a_tensorflow_consumer_is_told_to_upgrade_tensorflow() -> None:
    old = runtime("2.4.4", TENSORFLOW, max_code=128)
    found = check_artifact(tflite([builtin(150)]), consumer(old, (), TENSORFLOW))
    fix = found.findings[0].fix
    assert fix is not None and fix.kind == FixKind.UPGRADE_TO


# --- what is unknown ------------------------------------------------------------------------


def test_a_runtime_without_a_measured_table_is_unknown_and_says_how_to_know() -> None:
    found = check_artifact(tflite([builtin(9)]), consumer(None))
    assert (found.loads, found.serves, found.status) == (None, None, Status.UNKNOWN)
    (finding,) = found.findings
    assert (finding.code, finding.severity) == (Code.TFLITE_RUNTIME_UNMEASURED, Severity.INFO)
    assert finding.fix is not None and finding.fix.kind == FixKind.MEASURE_TFLITE_RUNTIME


def test_a_build_without_a_known_interpreter_is_unknown() -> None:
    found = check_artifact(tflite([builtin(9)]), Consumer("custom", None, 1000))
    assert (found.loads, found.serves) == (None, None)


# --- who reads what -------------------------------------------------------------------------


def test_a_tflite_runtime_reads_tflite_files_only() -> None:
    saved_model = Artifact("m", "savedmodel", 1, "0" * 64)
    standalone = consumer(runtime(family=LITERT))
    assert not applies(saved_model, standalone)
    assert applies(tflite([builtin(9)]), standalone)
    assert first_error(saved_model, standalone) == Code.TFLITE_ONLY


def test_a_tensorflow_release_reads_both() -> None:
    tf = consumer(runtime("2.15.1", TENSORFLOW), (), TENSORFLOW)
    assert applies(Artifact("m", "savedmodel", 1, "0" * 64), tf)
    assert applies(tflite([builtin(9)]), tf)


def test_a_fleet_ban_applies_to_the_interpreter_of_a_banned_release() -> None:
    tf = consumer(runtime("2.15.1", TENSORFLOW), (), TENSORFLOW)
    policy = Policy((BannedRelease(1000, "TensorFlow 2.15.1", "CVE"),))
    found = check_artifact(tflite([builtin(9)]), tf, None, policy)
    assert found.status == Status.AT_RISK
    assert [f.code for f in found.findings] == [Code.POLICY_BAD_CONSUMER]


# --- features the kernel facts name ---------------------------------------------------------


@pytest.mark.parametrize(
    ("feature", "inputs", "shown"),
    [
        ("per-channel-weights", (INT8, INT8_PER_CHANNEL), True),
        ("per-channel-weights", (INT8, INT8), False),
        ("int16-activations", (INT16, INT8), True),
        ("int16-activations", (INT8, INT8), False),
        ("input-rank-above-5", (RANK6,), True),
        ("input-rank-above-5", (FLOAT,), False),
        ("per-channel-weights", (INT8, None), False),  # an optional input left out
    ],
)
def test_features_are_read_from_the_tensors(
    feature: str, inputs: tuple[TensorSig | None, ...], shown: bool
) -> None:
    assert has_feature(kind(0, *inputs), feature) is shown


def test_an_unknown_feature_name_is_not_known() -> None:
    assert not known_feature("per-tensor-magic") and known_feature("input-rank-above-4")
