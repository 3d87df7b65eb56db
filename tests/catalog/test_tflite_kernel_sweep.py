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
