"""How far a TFLite file's own output moves when its input moves by one ULP, in THIS
runtime (the reference's): the file's amplification of rounding.

Runs inside a runtime's own Python (3.7+, numpy), called by
tools/tflite/kernel_sensitivity.py:

    <python> tools/tflite/kernel_sens_run.py SPEC.json

SPEC.json lists the models, each with the byte spans of its float32 constant tensors
(weights, biases: kernel_sensitivity.py reads them from the flatbuffer). Per model and
ordinary input class (kernel_run.py's own feed): the output on the class's input; then
(`input`) on that input with every float element moved one ULP up or down (np.nextafter,
the direction drawn per element by a seeded generator; `PATTERNS` draws), and
(`weights`) the file with every float32 constant moved one ULP the same way
(`WEIGHT_PATTERNS` draws): a rounding at every operator that has float weights, not
only at the input. The movement is the largest of each output, in ULPs of that
output's largest finite magnitude (kernel_sweep.distance's unit). An integer input is
not moved (a step of an int8 input is no rounding): its movement is null; so is the
weights' where the file has no float32 constant. Per output also: its type and
quantisation, and, when the operator that writes it is a DEQUANTIZE, the type and
scale of the quantised tensor it reads (a quantised model's float output is one of
that tensor's steps apart, not a float rounding). One JSON line per (model, class).
"""

import json
import sys

import numpy as np
from kernel_run import feed
from probe_ops import load_interpreter_class

ORDINARY = ("ordinary", "halves", "positive")
PATTERNS = 4
WEIGHT_PATTERNS = 2


def nudge(x, rng):
    """Every element one ULP up or down, the direction drawn per element."""
    up = rng.randint(0, 2, x.shape).astype(bool)
    return np.nextafter(x, np.where(up, np.inf, -np.inf).astype(x.dtype)).astype(x.dtype)


def nudged_model(data, spans, rng):
    out = bytearray(data)
    for start, size in spans:
        w = np.frombuffer(bytes(out[start : start + size]), dtype="<f4")
        out[start : start + size] = nudge(w, rng).tobytes()
    return bytes(out)


def build(cls, **kwargs):
    try:
        interpreter = cls(num_threads=1, **kwargs)
    except TypeError:
        interpreter = cls(**kwargs)
    interpreter.allocate_tensors()
    return interpreter


def spacing(y):
    finite = np.abs(y[np.isfinite(y)]) if y.size else np.zeros(0)
    top = float(finite.max()) if finite.size else 0.0
    return float(2.0 ** (np.frexp(top)[1] - 24)) if top else 2.0**-149


def movement(a, b):
    """ULPs of b's largest magnitude between a and b (None: not comparable)."""
    if a.dtype != np.float32:
        return float(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)))) if a.size else 0.0
    both = np.isfinite(a) & np.isfinite(b)
    if not np.array_equal(np.isfinite(a), np.isfinite(b)):
        return None
    if not both.any():
        return 0.0
    return float(np.max(np.abs(a[both].astype(np.float64) - b[both])) / spacing(b))


def writers(interpreter):
    """output tensor index -> (op name, its input tensor indices), where the runtime
    tells (`_get_ops_details`, TensorFlow 2.5 and later)."""
    try:
        ops = interpreter._get_ops_details()
    except Exception:
        return {}
    found = {}
    for op in ops:
        for o in op.get("outputs", []):
            found[int(o)] = (op.get("op_name", ""), [int(i) for i in op.get("inputs", [])])
    return found


def run(interpreter, inputs, outputs, feeds):
    for detail, x in zip(inputs, feeds):
        interpreter.set_tensor(detail["index"], x)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in outputs]


def plain(cls, path):
    """The file's own operators, no delegate replacing them (where the runtime lets)."""
    module = sys.modules.get(cls.__module__)
    kind = getattr(module, "OpResolverType", None)
    if kind is None:
        return None
    try:
        interpreter = cls(
            model_path=path,
            experimental_op_resolver_type=kind.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        interpreter.allocate_tensors()
        return interpreter
    except Exception:
        return None


def described(interpreter, outputs, bare):
    """Per output: its type, quantisation and writer (read from `bare`, the file without
    a delegate, when there is one: a delegate's node hides the operators it took)."""
    source = bare or interpreter
    tensors = {d["index"]: d for d in source.get_tensor_details()}
    wrote = writers(source)
    found = []
    for d in outputs:
        row = {
            "dtype": np.dtype(d["dtype"]).name,
            "quantization": [float(v) for v in d.get("quantization", (0.0, 0))],
        }
        op, ins = wrote.get(d["index"], ("", []))
        row["writer"] = op
        if op == "DEQUANTIZE" and ins and ins[0] in tensors:
            src = tensors[ins[0]]
            row["dequantizes"] = {
                "dtype": np.dtype(src["dtype"]).name,
                "scale": float(src.get("quantization", (0.0, 0))[0]),
            }
        found.append(row)
    return found


def farthest(moved, got, expected):
    for j, (a, b) in enumerate(zip(got, expected)):
        m = movement(a, b)
        moved[j] = None if m is None or moved[j] is None else max(moved[j], m)


def sensitivity(cls, path, spans):
    try:
        interpreter = build(cls, model_path=path)
        with open(path, "rb") as f:
            data = f.read()
        rng = np.random.RandomState(4321)
        variants = [
            build(cls, model_content=nudged_model(data, spans, rng))
            for _ in range(WEIGHT_PATTERNS if spans else 0)
        ]
    except Exception as exc:
        print(json.dumps({"model": path, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}))
        return
    inputs = interpreter.get_input_details()
    outputs = interpreter.get_output_details()
    shapes = described(interpreter, outputs, plain(cls, path))
    for name in ORDINARY:
        row = {"model": path, "class": name, "outputs": shapes}
        try:
            base = [feed(d, name, i) for i, d in enumerate(inputs)]
            movable = any(x.dtype.kind == "f" for x in base)
            expected = run(interpreter, inputs, outputs, base)
            row["spacing"] = [spacing(y) if y.dtype == np.float32 else 1.0 for y in expected]
            moved = [0.0 if movable else None for _ in outputs]
            rng = np.random.RandomState(1234)
            for _ in range(PATTERNS if movable else 0):
                nudged = [nudge(x, rng) if x.dtype.kind == "f" else x for x in base]
                farthest(moved, run(interpreter, inputs, outputs, nudged), expected)
            weights = [0.0 if variants else None for _ in outputs]
            for other in variants:
                theirs = other.get_input_details()
                farthest(weights, run(other, theirs, other.get_output_details(), base), expected)
            row["moved"] = {"input": moved, "weights": weights}
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        print(json.dumps(row), flush=True)


def main():
    cls, _module = load_interpreter_class()
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    for entry in spec:
        sensitivity(cls, entry["path"], entry["spans"])


if __name__ == "__main__":
    main()
