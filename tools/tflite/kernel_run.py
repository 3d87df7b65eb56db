"""Run single-op TFLite models on fixed inputs in THIS runtime, and print every output.

Runs inside a runtime's own Python (3.7+; `tensorflow`, `tflite_runtime` or
`ai_edge_litert`, with numpy), called by tools/tflite/kernel_sweep.py:

    <python> tools/tflite/kernel_run.py MODEL.tflite [...]

One JSON line per (model, input class), and a progress line before each model so
the driver can tell which model killed the process. Inputs are made by plain
arithmetic (a linear congruential generator, fixed lists), not numpy's random
module, so every runtime, whatever its numpy, is fed the same bits. A float input
takes the class's values as they are; an int8 or int16 input takes them quantised
with the file's own scale and zero point (NaN as 0, clipped to the type's range).
Outputs are the raw bytes (zlib, base64) with dtype, shape and quantisation.
The interpreter runs with one thread, where it takes num_threads.
"""

import base64
import json
import sys
import zlib

import numpy as np
from probe_ops import load_interpreter_class

# input classes: the first three are values a served model meets; the rest are extremes
CLASSES = ("ordinary", "halves", "positive", "special", "large", "tiny")


def lcg(seed, n, lo, hi):
    state = (seed * 2654435761 + 12345) % 2**32
    out = []
    for _ in range(n):
        state = (1103515245 * state + 12345) % 2**31
        out.append(lo + (hi - lo) * (state / 2**31))
    return out


def cycle(values, n):
    return [values[i % len(values)] for i in range(n)]


def class_values(name, index, n):
    """The class's float values for input `index`; operands of a binary op differ."""
    if name == "ordinary":
        return lcg(index + 1, n, -2.0, 2.0)
    if name == "halves":
        return cycle([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5][index:] + [-2.5, -1.5, -0.5][:index], n)
    if name == "positive":
        return lcg(index + 101, n, 0.125, 4.0)
    if name == "special":
        vals = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e-45, 1.0, -1.0]
        return cycle(vals[index:] + vals[:index], n)
    if name == "large":
        return cycle([*[3.0e38, -3.0e38, 1.0e38, -1.0e38, 65504.0, -65504.0][index:], 3.0e38], n)
    if name == "tiny":
        return cycle([*[1.2e-38, -1.2e-38, 2.4e-38, -2.4e-38, 0.0][index:], 1.2e-38], n)
    raise ValueError(name)


def feed(detail, name, index):
    shape = [int(d) for d in detail["shape"]]
    n = int(np.prod(shape)) if shape else 1
    x = np.array(class_values(name, index, n), dtype=np.float64).reshape(shape)
    dtype = np.dtype(detail["dtype"])
    if dtype.kind == "f":
        return x.astype(dtype)
    scale, zero = detail.get("quantization", (0.0, 0))
    info = np.iinfo(dtype)
    x = np.nan_to_num(x, nan=0.0, posinf=1e30, neginf=-1e30)
    if scale:
        x = np.round(x / scale) + zero
    return np.clip(x, info.min, info.max).astype(dtype)


def packed(array):
    a = np.ascontiguousarray(array)
    return {
        "dtype": str(a.dtype),
        "shape": list(a.shape),
        "data": base64.b64encode(zlib.compress(a.tobytes())).decode(),
    }


def emit(row):
    sys.stdout.write(json.dumps(row) + "\n")
    sys.stdout.flush()


def build(cls, path):
    try:
        return cls(model_path=path, num_threads=1)
    except TypeError:  # before num_threads
        return cls(model_path=path)


def run_model(cls, path):
    emit({"model": path, "progress": "start"})
    try:
        interpreter = build(cls, path)
        interpreter.allocate_tensors()
    except Exception as exc:  # the runtime's refusal is the fact we record
        emit({"model": path, "error": f"{type(exc).__name__}: {str(exc)[:400]}"})
        return
    inputs = interpreter.get_input_details()
    outputs = interpreter.get_output_details()
    for name in CLASSES:
        row = {"model": path, "class": name}
        try:
            for i, detail in enumerate(inputs):
                interpreter.set_tensor(detail["index"], feed(detail, name, i))
            interpreter.invoke()
            row["outputs"] = []
            for detail in outputs:
                out = packed(interpreter.get_tensor(detail["index"]))
                out["quantization"] = list(detail.get("quantization", (0.0, 0)))
                row["outputs"].append(out)
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        emit(row)


def main():
    cls, module = load_interpreter_class()
    emit({"interpreter": module, "numpy": np.__version__})
    for path in sys.argv[1:]:
        run_model(cls, path)


if __name__ == "__main__":
    main()
