"""Convert small models with THIS TensorFlow's TFLite converter.

Runs inside one TensorFlow venv (1.15 to 2.21, Python 3.7 or newer):

    <venv>/bin/python tools/tflite/make_models.py OUT_DIR

writes OUT_DIR/<case>.tflite for every case this release can convert and
OUT_DIR/cases.json: per case how it was made, the input fed, what TensorFlow
itself computed and what this release's own tf.lite.Interpreter returned for
the same input (the reference a newer or older runtime is compared with), or
why the case was skipped. Every case takes float32 [1, 8] = linspace(-2, 2).
"""

import json
import os
import sys
import traceback

import numpy as np
import tensorflow as tf

V1 = tf.__version__.startswith("1.")
if V1:
    tf.compat.v1.disable_eager_execution()
X = np.linspace(-2.0, 2.0, 8, dtype=np.float32).reshape(1, 8)
W = (np.arange(32, dtype=np.float32).reshape(8, 4) - 16.0) / 16.0
B = np.array([0.1, -0.2, 0.3, 0.0], dtype=np.float32)


def dense(x):
    return tf.nn.relu(tf.matmul(x, tf.constant(W)) + tf.constant(B))


def representative():
    for i in range(16):
        yield [np.linspace(-2.0 + i * 0.01, 2.0, 8, dtype=np.float32).reshape(1, 8)]


def _ops():
    return tf.lite.OpsSet


# case -> (graph function, converter settings)
CASES = {
    "dense": (dense, {}),
    "cumsum": (lambda x: tf.math.cumsum(x, axis=1), {}),
    "gelu": (lambda x: tf.nn.gelu(x), {}),
    "sign": (lambda x: tf.math.sign(x) * x, {}),
    "dense_int8": (dense, {"quantize": "int8"}),
    "dense_int16x8": (dense, {"quantize": "int16x8"}),
    # a 6-D transpose: TRANSPOSE version 6 from the 2.12 converter (runtimes 2.4-2.11 have 5)
    "transpose_6d": (
        lambda x: tf.reshape(tf.transpose(tf.reshape(x, [1, 1, 2, 1, 2, 2]), [5, 4, 3, 2, 1, 0]), [1, 8]),
        {},
    ),
    # MatrixDeterminant has no TFLite builtin in any release: a Flex op, or a custom op.
    "flex_det": (lambda x: tf.linalg.det(tf.reshape(x, [2, 2, 2])), {"select_tf_ops": True}),
    "custom_det": (lambda x: tf.linalg.det(tf.reshape(x, [2, 2, 2])), {"allow_custom_ops": True}),
}


def converter_for(fn):
    """(converter, TensorFlow's own output for X)."""
    if V1:
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [1, 8], name="x")
            y = tf.identity(fn(x), name="y")
            sess = tf.compat.v1.Session(graph=graph)
            expected = sess.run(y, {x: X})
            return tf.lite.TFLiteConverter.from_session(sess, [x], [y]), expected
    f = tf.function(fn, input_signature=[tf.TensorSpec([1, 8], tf.float32)])
    concrete = f.get_concrete_function()
    expected = f(tf.constant(X)).numpy()
    return tf.lite.TFLiteConverter.from_concrete_functions([concrete]), expected


def convert(fn, settings):
    converter, expected = converter_for(fn)
    quantize = settings.get("quantize")
    if quantize:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative
        if quantize == "int8":
            converter.target_spec.supported_ops = [_ops().TFLITE_BUILTINS_INT8]
        else:
            converter.target_spec.supported_ops = [
                _ops().EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
            ]
    if settings.get("select_tf_ops"):
        converter.target_spec.supported_ops = [_ops().TFLITE_BUILTINS, _ops().SELECT_TF_OPS]
    if settings.get("allow_custom_ops"):
        converter.allow_custom_ops = True
    return converter.convert(), expected


def run_own(data):
    interpreter = tf.lite.Interpreter(model_content=data)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], X)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def write_case(out, name, data, expected, run, entry):
    """Write one case's file to `out` and complete its `entry` (the converter's
    expected output, and this release's own interpreter output or error, via `run`)."""
    with open(os.path.join(out, name + ".tflite"), "wb") as f:
        f.write(data)
    entry["expected"] = np.asarray(expected, dtype=np.float64).round(6).tolist()
    try:
        entry["own_output"] = np.asarray(run(data), dtype=np.float64).round(6).tolist()
    except Exception as exc:
        entry["own_error"] = "%s: %s" % (type(exc).__name__, str(exc)[:300])
    print(name, "ok", file=sys.stderr)
    return entry


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    cases = {}
    existing = os.path.join(out, "cases.json")
    if only and os.path.exists(existing):
        with open(existing) as f:
            cases = json.load(f)
    for name, (fn, settings) in CASES.items():
        if only and name not in only:
            continue
        entry = {"settings": settings, "input": X.tolist(), "tensorflow": tf.__version__}
        try:
            data, expected = convert(fn, settings)
        except Exception as exc:
            entry["skipped"] = "convert failed: %s: %s" % (type(exc).__name__, str(exc)[:300])
            cases[name] = entry
            continue
        cases[name] = write_case(out, name, data, expected, run_own, entry)
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
