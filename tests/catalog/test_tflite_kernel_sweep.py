"""The TFLite kernel sweep's comparison (tools/tflite/kernel_sweep.py): how far two outputs
are, in the units its tolerance is stated in."""

from __future__ import annotations

import base64
import importlib.util
import math
import sys
import zlib
from array import array
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "tflite"


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(TOOLS))
    try:
        spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(TOOLS))


sweep = _load("kernel_sweep")


def output(values: list[float], code: str = "f", scale: float = 0.0) -> dict[str, Any]:
    raw = array(code, values).tobytes()
    dtype = {"f": "float32", "b": "int8", "q": "int64"}[code]
    return {
        "dtype": dtype,
        "shape": [len(values)],
        "data": base64.b64encode(zlib.compress(raw)).decode(),
        "quantization": [scale, 0],
    }


# float32: ULPs of the reference output's largest magnitude; NaN both sides is equal
@pytest.mark.parametrize(
    ("got", "expected", "ulps"),
    [
        ([1.0, 2.0], [1.0, 2.0], 0.0),
        ([1.0, 2.0 + 2**-22], [1.0, 2.0], 1.0),  # one float32 step at 2.0
        ([2**-20, 2.0], [0.0, 2.0], 4.0),  # a tiny result is judged at the output's scale
        ([math.nan, 1.0], [math.nan, 1.0], 0.0),
        ([math.inf, 1.0], [3.0e38, 1.0], math.inf),
    ],
)
def test_float_distance_is_counted_at_the_outputs_scale(
    got: list[float], expected: list[float], ulps: float
) -> None:
    assert sweep.distance(output(got), output(expected))[0] == ulps


def test_quantised_outputs_differ_in_steps_and_unscaled_integers_exactly() -> None:
    assert sweep.distance(output([3, -7], "b", 0.1), output([3, -5], "b", 0.1))[0] == 2.0
    assert sweep.kind_of(output([3], "b", 0.1)) == "quantized_steps"
    assert sweep.kind_of(output([3], "q")) == "integers"
    assert sweep.TOLERANCE["integers"] == 0


def test_another_shape_is_not_comparable() -> None:
    assert sweep.distance(output([1.0]), output([1.0, 2.0])) == (math.inf, -1)


# the whole-model tolerance: one operator's for a single operator, growing with the depth
@pytest.mark.parametrize(
    ("depth", "ulps"),
    [(1, 16), (3, 144), (10, 1600), (63, 63504), (64, 2**16), (135, 2**16)],
)
def test_a_whole_models_float_tolerance_grows_with_its_depth_to_a_cap(
    depth: int, ulps: int
) -> None:
    assert sweep.whole_tolerance(depth) == {
        "float_ulps": ulps,
        "quantized_steps": 1,
        "integers": 0,
    }


def test_a_whole_models_answer_keeps_rounding_apart_from_a_difference() -> None:
    ref = [output([1.0, 2.0])]
    near = [output([1.0, 2.0 + 100 * 2**-22])]  # 100 ULPs at 2.0
    assert sweep.answer([output([1.0, 2.0])], ref, 1) == "bitwise"
    assert sweep.answer(near, ref, 1) == "differs"  # beyond 16 ULPs for one operator
    assert sweep.answer(near, ref, 3) == "within rounding"  # within 144 three deep
    assert sweep.answer(near + near, ref, 3) == "differs"  # another number of outputs
    steps = [output([3, -7], "b", 0.1)]
    assert sweep.answer(steps, [output([3, -5], "b", 0.1)], 50) == "differs"  # 2 steps


# depth: the longest operator chain, on files the TensorFlow 2.21 converter wrote
@pytest.mark.parametrize(
    ("name", "depth"),
    [("dense", 1), ("sign", 2), ("dense_int8", 3), ("transpose_6d", 3)],
)
def test_depth_is_the_longest_chain_of_operators(name: str, depth: int) -> None:
    fixtures = TOOLS.parents[1] / "tests" / "fixtures" / "tflite" / "models" / "tf2.21"
    assert sweep.depth_of(fixtures / f"{name}.tflite") == depth


# the whole-model tolerance from the file's own sensitivity (kernel_sensitivity.py)
@pytest.mark.parametrize(
    ("amplification", "hybrid", "ulps"),
    [(None, False, 16), (0.0, False, 16), (0.25, False, 16), (1.0, False, 32),
     (1312.0, False, 41984), (231.0, True, 16), (None, True, 16)],
)  # fmt: skip
def test_a_float_models_tolerance_is_its_own_amplification_times_a_factor(
    amplification: float | None, hybrid: bool, ulps: float
) -> None:
    assert sweep.sensitive_tolerance(amplification, hybrid) == {
        "float_ulps": ulps,
        "quantized_steps": 1,
        "integers": 0,
    }


def test_a_dequantised_output_is_judged_in_the_steps_of_the_tensor_it_dequantises() -> None:
    scale = 0.00019226661243010312  # dense_int16x8's int16 output, as the file states it
    ref = [output([4096 * scale, -10 * scale])]
    one_step = [output([4097 * scale, -10 * scale])]  # 1,613 ULPs of 0.79
    two_steps = [output([4098 * scale, -10 * scale])]
    file = {"amplification": 0.0, "outputs": [{"dequantizes": {"dtype": "int16", "scale": scale}}]}
    assert sweep.distance(one_step[0], ref[0])[0] > 1000
    assert sweep.answer_by_sensitivity(one_step, ref, file) == "within rounding"
    assert sweep.answer_by_sensitivity(two_steps, ref, file) == "differs"
    assert sweep.answer_by_sensitivity(one_step, ref, {"amplification": 0.0}) == "differs"


def test_a_float_answer_is_rounding_within_the_files_amplification() -> None:
    ref = [output([1.0, 2.0])]
    near = [output([1.0, 2.0 + 100 * 2**-22])]  # 100 ULPs at 2.0
    assert sweep.answer_by_sensitivity(ref, ref, {"amplification": 3.0}) == "bitwise"
    assert sweep.answer_by_sensitivity(near, ref, {"amplification": 3.0}) == "differs"
    assert sweep.answer_by_sensitivity(near, ref, {"amplification": 4.0}) == "within rounding"
    hybrid = {"amplification": 4.0, "hybrid": True}
    assert sweep.answer_by_sensitivity(near, ref, hybrid) == "differs"


def test_a_files_float_constants_are_found_in_its_flatbuffer() -> None:
    sensitivity = _load("kernel_sensitivity")
    path = TOOLS.parents[1] / "tests" / "fixtures" / "tflite" / "models" / "tf2.21" / "dense.tflite"
    data = path.read_bytes()
    spans = sensitivity.weight_spans(path)
    assert spans and all(start % 4 == 0 and size % 4 == 0 for start, size in spans)
    weights = array("f", b"".join(data[s : s + n] for s, n in spans))
    assert all(math.isfinite(w) for w in weights) and any(w != 0 for w in weights)
    assert sensitivity.weight_spans(path.with_name("dense_int8.tflite")) != spans
