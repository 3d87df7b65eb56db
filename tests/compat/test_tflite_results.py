"""The TFLite kernel-change rule: a (builtin, variant) measured to answer otherwise in the
consumer's runtime is at-risk (ordinary inputs) or information (extremes only)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from worker.compat.check import check_artifact
from worker.compat.policy import Policy
from worker.formats.source import FileSource
from worker.formats.tflite import read_tflite
from worker.model.findings import Code, FixKind, Severity, Stage
from worker.model.tflite import ResultChange, TensorSig, TfliteOperatorKind, variant_of
from worker.model.verdict import Status

from .test_tflite import FLOAT, INT8, INT16, builtin, consumer, kind, runtime, tflite

INT8_WEIGHTS = TensorSig("INT8", 2, 1)
FLOAT16 = TensorSig("FLOAT16", 1)

CHANGE = ResultChange(
    op="FULLY_CONNECTED",
    variant="int8",
    reference="ai-edge-litert-2.3.0",
    classes=("ordinary", "special"),
    met_on="ordinary",
    evidence_class="ordinary",
    got="[3, -7, 12] at 4",
    expected="[3, -6, 12] at 4",
    distance="2 quantised steps",
    tolerance="1 quantised step",
    producer="2.21.0",
    runtimes=40,
    remeasure="python3 tools/tflite/kernel_sweep.py run --only tflite-runtime-2.10.0 && write",
)
EXTREMES = replace(CHANGE, variant="float32", classes=("large",), met_on="extremes")


def fc_model(*inputs: TensorSig | None) -> object:
    return tflite([builtin(9)], [kind(0, *inputs)])


def measured(*changes: ResultChange) -> object:
    return runtime(result_changes={(c.op, c.variant): c for c in changes})


# variant_of: what the data input holds, and int8 weights under a float input
@pytest.mark.parametrize(
    ("inputs", "variant"),
    [
        ((FLOAT, FLOAT), "float32"),
        ((FLOAT, INT8_WEIGHTS), "dynamic"),
        ((INT8, INT8), "int8"),
        ((INT16, INT8), "int16x8"),
        ((INT8, TensorSig("INT8", 2, 4)), "int8-per-channel"),
        ((FLOAT, TensorSig("INT8", 2, 4)), "dynamic-per-channel"),
        ((FLOAT16,), "float16"),
        ((), "none"),
    ],
)
def test_the_variant_is_read_from_the_operators_tensors(
    inputs: tuple[TensorSig, ...], variant: str
) -> None:
    assert variant_of(TfliteOperatorKind(0, inputs, (), 1, 0, 0)) == variant


def test_a_transposed_convolutions_variant_is_its_third_inputs() -> None:
    shape, weights = TensorSig("INT32", 1), TensorSig("INT8", 4, 1)
    conv = TfliteOperatorKind(0, (shape, weights, FLOAT), (), 1, 0, 0)
    assert variant_of(conv, "TRANSPOSE_CONV") == "dynamic"


def test_a_dynamic_range_1x1_convolution_keys_apart() -> None:
    pointwise = TensorSig("INT8", 4, 64, pointwise=True)
    conv = TfliteOperatorKind(0, (FLOAT, pointwise), (), 1, 0, 0)
    assert variant_of(conv, "CONV_2D") == "dynamic-per-channel-1x1"
    assert variant_of(conv, "DEPTHWISE_CONV_2D") == "dynamic-per-channel"
    quantised = TfliteOperatorKind(0, (INT8, pointwise), (), 1, 0, 0)
    assert variant_of(quantised, "CONV_2D") == "int8-per-channel"


WIDE = Path(__file__).parents[1] / "fixtures" / "tflite-kernels-heldout" / "wide" / "tf2.19.1"


@pytest.mark.parametrize(
    ("name", "variants"),
    [
        # Conv2D 8->64 3x3, then per block 1x1, 3x3, 1x1 (Keras 3, the 2.19.1 converter)
        ("resnet_bottleneck", {"dynamic-per-channel", "dynamic-per-channel-1x1"}),
        ("cnn_wide", {"dynamic-per-channel"}),  # 3x3 kernels only
    ],
)
def test_a_real_files_1x1_convolutions_are_read_from_their_weights_shape(
    name: str, variants: set[str]
) -> None:
    model = read_tflite(FileSource(WIDE / "dynamic" / f"{name}.dynamic.tflite"))
    found = {
        variant_of(k, "CONV_2D")
        for k in model.operator_kinds
        if model.operator_codes[k.opcode_index].name == "CONV_2D"
    }
    assert found == variants


def test_a_selects_variant_is_its_values_not_its_bool_condition() -> None:
    select = TfliteOperatorKind(0, (TensorSig("BOOL", 1), INT8, INT8), (), 1, 0, 0)
    assert variant_of(select, "SELECT_V2") == "int8"
    assert variant_of(select) == "bool"


def test_a_per_channel_change_says_nothing_of_per_tensor_weights() -> None:
    per_channel = replace(CHANGE, variant="int8-per-channel")
    found = check_artifact(fc_model(INT8, INT8), consumer(measured(per_channel)))
    assert Code.KERNEL_CHANGED not in {f.code for f in found.findings}


def test_a_change_met_on_ordinary_inputs_is_at_risk_with_its_evidence() -> None:
    found = check_artifact(fc_model(INT8, INT8), consumer(measured(CHANGE)))
    (finding,) = [f for f in found.findings if f.code == Code.KERNEL_CHANGED]
    assert (found.loads, found.serves, found.status) == (True, True, Status.AT_RISK)
    assert finding.severity == Severity.WARNING and finding.op == "FULLY_CONNECTED"
    for said in (
        "ordinary inputs",
        "[3, -7, 12] at 4",
        "[3, -6, 12] at 4",
        "ai-edge-litert-2.3.0",
        "tolerance is 1 quantised step",
        "run by 40 runtimes",
        "kernel_sweep.py run --only tflite-runtime-2.10.0",
    ):
        assert said in finding.message


def test_a_change_met_on_extremes_only_is_information() -> None:
    found = check_artifact(fc_model(FLOAT, FLOAT), consumer(measured(EXTREMES)))
    (finding,) = [f for f in found.findings if f.code == Code.KERNEL_RESULTS_EXTREMES]
    assert finding.severity == Severity.INFO and "(large)" in finding.message
    assert found.status == Status.COMPATIBLE


def test_a_change_of_another_variant_says_nothing() -> None:
    found = check_artifact(fc_model(FLOAT, INT8_WEIGHTS), consumer(measured(CHANGE, EXTREMES)))
    assert found.findings == () and found.status == Status.COMPATIBLE


def test_a_model_that_does_not_load_gets_no_result_finding() -> None:
    table = replace(measured(CHANGE), ops={})  # FULLY_CONNECTED not resolved
    found = check_artifact(fc_model(INT8, INT8), consumer(table))
    assert found.loads is False
    assert Code.KERNEL_CHANGED not in {f.code for f in found.findings}


# same_answer: strict, from the fleet's policy or the consumer's own entry
@pytest.mark.parametrize("by", ["policy", "consumer"])
def test_strict_makes_an_ordinary_change_an_error_and_the_model_unserved(by: str) -> None:
    who = consumer(measured(CHANGE))
    policy = Policy(same_answer_strict=by == "policy")
    if by == "consumer":
        who = replace(who, same_answer_strict=True)
    found = check_artifact(fc_model(INT8, INT8), who, policy=policy)
    (finding,) = [f for f in found.findings if f.code == Code.KERNEL_CHANGED]
    assert (finding.severity, finding.stage) == (Severity.ERROR, Stage.POLICY)
    assert (found.loads, found.serves, found.status) == (True, False, Status.INCOMPATIBLE)


def test_strict_leaves_an_extremes_only_change_information() -> None:
    found = check_artifact(
        fc_model(FLOAT, FLOAT), consumer(measured(EXTREMES)), policy=Policy(same_answer_strict=True)
    )
    assert found.serves is True
    assert [f.severity for f in found.findings] == [Severity.INFO]


def test_a_pair_the_sweep_never_ran_in_a_swept_runtime_is_not_verified() -> None:
    table = replace(measured(CHANGE), results_measured=frozenset({("RESHAPE", "float32")}))
    found = check_artifact(fc_model(FLOAT, FLOAT), consumer(table))
    (finding,) = found.findings
    assert (finding.code, finding.severity) == (Code.KERNEL_RESULTS_UNMEASURED, Severity.INFO)
    assert "FULLY_CONNECTED (float32)" in finding.message and found.status == Status.COMPATIBLE


def test_a_runtime_the_sweep_never_ran_gets_no_unmeasured_finding() -> None:
    found = check_artifact(fc_model(FLOAT, FLOAT), consumer(measured(CHANGE)))
    assert found.findings == ()


def test_the_fix_is_the_oldest_newer_runtime_that_answers_as_the_newest() -> None:
    key = ("FULLY_CONNECTED", "int8")
    older = runtime("2.10.0", result_changes={key: CHANGE}, results_measured=frozenset({key}))
    still = runtime("2.11.0", result_changes={key: CHANGE}, results_measured=frozenset({key}))
    fixed = runtime("2.12.0", results_measured=frozenset({key}))
    found = check_artifact(fc_model(INT8, INT8), consumer(older, upgrades=(still, fixed)))
    (finding,) = [f for f in found.findings if f.code == Code.KERNEL_CHANGED]
    assert finding.fix is not None
    assert (finding.fix.kind, finding.fix.release) == (FixKind.UPGRADE_RUNTIME, "2.12.0")
