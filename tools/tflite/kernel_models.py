"""Write one single-op TFLite model per (builtin, type variant) with THIS converter.

Runs inside one TensorFlow venv (2.x, Python 3.7 or newer; tools/tflite/kernel_sweep.py
calls it):

    <venv>/bin/python tools/tflite/kernel_models.py OUT_DIR [--cases a,b]

For every case (a builtin and the small graph that converts to it) and every variant
the converter offers for it:
- `float32`: the graph as it is;
- `int8`: full-integer quantisation with int8 inputs and outputs (a representative
  dataset of 16 seeded draws), `TFLITE_BUILTINS_INT8` only, so an op without an
  int8 kernel fails to convert instead of falling back to float;
- `int16x8`: 16-bit activations and 8-bit weights
  (`EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8`), int16 inputs and
  outputs, where the converter has it;
- `dynamic`: dynamic-range quantisation (`Optimize.DEFAULT`, no dataset) for the ops
  with constant weights of 1,024 elements or more (the converter leaves smaller ones
  float);
- `float16`: float16 weights (DEQUANTIZE to float32 before the op), for the same ops.
A case that names its variants (DEQUANTIZE: float16 only; DENSIFY; `int32`: a float32
conversion whose op computes on int32 shapes) is written in those alone; the `SPARSE`
cases also with `Optimize.EXPERIMENTAL_SPARSITY`.
it writes OUT_DIR/<case>.<variant>.tflite, and OUT_DIR/models.json (cases already there
are kept): per file the case, the builtin, the variant, the input shapes, or why it
could not be written.
"""

import json
import os
import sys
import traceback

import numpy as np
import tensorflow as tf

RNG = np.random.RandomState(20261205)


def const(shape, scale=0.5):
    return tf.constant((RNG.uniform(-1.0, 1.0, size=shape) * scale).astype(np.float32))


IMG = [1, 4, 4, 3]
W_CONV = const([3, 3, 16, 32], 0.2)
B_CONV = const([32], 0.1)
W_DW = const([5, 5, 64, 1], 0.2)
W_FC = const([64, 32], 0.2)
B_FC = const([32], 0.1)
W_TCONV = const([3, 3, 32, 16], 0.2)
W_SMALL = const([3, 4], 0.5)
W_ADD = const([16, 64], 0.5)
# three quarters zeros, so the sparsity pass has something to compress
W_SPARSE = W_CONV * tf.constant(
    (np.arange(3 * 3 * 16 * 32).reshape([3, 3, 16, 32]) % 4 == 0).astype(np.float32)
)
# drawn after the constants above, so that their files stay as they were
W_CONV1 = const([1, 1, 64, 64], 0.2)
B_CONV1 = const([64], 0.1)
W_FC_SAT = const([64, 16], 0.2)
B_FC_SAT = const([16], 0.1)
DYN = [-1, 4, 4, 3]  # a dynamic batch: a static shape folds SHAPE and EXPAND_DIMS away


def unary(fn):
    return (fn, [IMG])


def binary(fn):
    return (fn, [IMG, IMG])


# case -> (builtin it should convert to, (graph, input shapes), weighted)
CASES = {
    "conv_2d": (
        "CONV_2D",
        (lambda x: tf.nn.conv2d(x, W_CONV, 1, "SAME") + B_CONV, [[1, 8, 8, 16]]),
        True,
    ),
    # a 1x1 kernel: the XNNPACK delegate runs it otherwise than a wider one (issue 36)
    "conv_2d_1x1": (
        "CONV_2D",
        (lambda x: tf.nn.conv2d(x, W_CONV1, 1, "SAME") + B_CONV1, [[1, 8, 8, 64]]),
        True,
    ),
    "depthwise_conv_2d": (
        "DEPTHWISE_CONV_2D",
        (lambda x: tf.nn.depthwise_conv2d(x, W_DW, [1, 1, 1, 1], "SAME"), [[1, 8, 8, 64]]),
        True,
    ),
    "fully_connected": (
        "FULLY_CONNECTED",
        (lambda x: tf.matmul(x, W_FC) + B_FC, [[1, 64]]),
        True,
    ),
    # calibrated on inputs a quarter as wide as those it is fed (CALIBRATION): the
    # ordinary inputs drive its output past the quantised range, as a served model's may
    "fully_connected_saturating": (
        "FULLY_CONNECTED",
        (lambda x: tf.matmul(x, W_FC_SAT) + B_FC_SAT, [[1, 64]]),
        ("int8", "int16x8"),
    ),
    "transpose_conv": (
        "TRANSPOSE_CONV",
        (
            lambda x: tf.nn.conv2d_transpose(x, W_TCONV, [1, 8, 8, 32], 2, "SAME"),
            [[1, 4, 4, 16]],
        ),
        True,
    ),
    "batch_matmul": (
        "BATCH_MATMUL",
        (lambda x, y: tf.matmul(x, y), [[1, 4, 8], [1, 8, 4]]),
        False,
    ),
    "add": ("ADD", binary(lambda x, y: x + y), False),
    "mul": ("MUL", binary(lambda x, y: x * y), False),
    "sub": ("SUB", binary(lambda x, y: x - y), False),
    "div": ("DIV", binary(lambda x, y: x / y), False),
    "maximum": ("MAXIMUM", binary(tf.maximum), False),
    "minimum": ("MINIMUM", binary(tf.minimum), False),
    "squared_difference": ("SQUARED_DIFFERENCE", binary(tf.math.squared_difference), False),
    "pow": ("POW", binary(tf.pow), False),
    "concatenation": (
        "CONCATENATION",
        binary(lambda x, y: tf.concat([x, y], axis=3)),
        False,
    ),
    "relu": ("RELU", unary(tf.nn.relu), False),
    "relu6": ("RELU6", unary(tf.nn.relu6), False),
    "leaky_relu": ("LEAKY_RELU", unary(lambda x: tf.nn.leaky_relu(x, 0.2)), False),
    "elu": ("ELU", unary(tf.nn.elu), False),
    "logistic": ("LOGISTIC", unary(tf.sigmoid), False),
    "tanh": ("TANH", unary(tf.tanh), False),
    "hard_swish": ("HARD_SWISH", unary(lambda x: x * tf.nn.relu6(x + 3.0) / 6.0), False),
    "gelu": ("GELU", unary(tf.nn.gelu), False),
    "softmax": ("SOFTMAX", unary(tf.nn.softmax), False),
    "log_softmax": ("LOG_SOFTMAX", unary(tf.nn.log_softmax), False),
    "exp": ("EXP", unary(tf.exp), False),
    "log": ("LOG", unary(tf.math.log), False),
    "sqrt": ("SQRT", unary(tf.sqrt), False),
    "rsqrt": ("RSQRT", unary(tf.math.rsqrt), False),
    "abs": ("ABS", unary(tf.abs), False),
    "neg": ("NEG", unary(tf.negative), False),
    "square": ("SQUARE", unary(tf.square), False),
    "sin": ("SIN", unary(tf.sin), False),
    "cos": ("COS", unary(tf.cos), False),
    "floor": ("FLOOR", unary(tf.floor), False),
    "ceil": ("CEIL", unary(tf.math.ceil), False),
    "round": ("ROUND", unary(tf.round), False),
    "mean": ("MEAN", unary(lambda x: tf.reduce_mean(x, axis=[1, 2])), False),
    "sum": ("SUM", unary(lambda x: tf.reduce_sum(x, axis=[1, 2])), False),
    "reduce_max": ("REDUCE_MAX", unary(lambda x: tf.reduce_max(x, axis=[1, 2])), False),
    "average_pool_2d": (
        "AVERAGE_POOL_2D",
        unary(lambda x: tf.nn.avg_pool2d(x, 2, 2, "VALID")),
        False,
    ),
    "max_pool_2d": ("MAX_POOL_2D", unary(lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID")), False),
    "l2_normalization": (
        "L2_NORMALIZATION",
        unary(lambda x: tf.math.l2_normalize(x, axis=-1)),
        False,
    ),
    "resize_bilinear": (
        "RESIZE_BILINEAR",
        unary(lambda x: tf.image.resize(x, [7, 7], method="bilinear")),
        False,
    ),
    "resize_nearest_neighbor": (
        "RESIZE_NEAREST_NEIGHBOR",
        unary(lambda x: tf.image.resize(x, [7, 7], method="nearest")),
        False,
    ),
    "pad": ("PAD", unary(lambda x: tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]])), False),
    "reshape": ("RESHAPE", unary(lambda x: tf.reshape(x, [1, 48])), False),
    "transpose": ("TRANSPOSE", unary(lambda x: tf.transpose(x, [0, 3, 1, 2])), False),
    "strided_slice": ("STRIDED_SLICE", unary(lambda x: x[:, 1:3, ::2, :]), False),
    "cumsum": ("CUMSUM", unary(lambda x: tf.math.cumsum(x, axis=3)), False),
    "arg_max": ("ARG_MAX", unary(lambda x: tf.argmax(x, axis=3)), False),
    # what the real models of tests/fixtures/tflite-real use that the cases above lack
    "prelu": (
        "PRELU",
        # relu(x) + (-alpha) * relu(-x) is the pattern the converter fuses into PRELU
        unary(lambda x: tf.nn.relu(x) + tf.constant([[[-0.25, -0.1, -0.5]]]) * tf.nn.relu(-x)),
        False,
    ),
    "depth_to_space": (
        "DEPTH_TO_SPACE",
        (lambda x: tf.nn.depth_to_space(x, 2), [[1, 2, 2, 12]]),
        False,
    ),
    "mirror_pad": (
        "MIRROR_PAD",
        unary(lambda x: tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")),
        False,
    ),
    "reduce_min": ("REDUCE_MIN", unary(lambda x: tf.reduce_min(x, axis=[1, 2])), False),
    # the builtins of the real files that are not arithmetic (issue 37, second round)
    "expand_dims": ("EXPAND_DIMS", (lambda x: tf.expand_dims(x, 1), [DYN]), False),
    "pack": ("PACK", binary(lambda x, y: tf.stack([x, y], axis=1)), False),
    "shape": ("SHAPE", (tf.shape, [DYN]), False),
    # shape arithmetic of a dynamic batch: PACK and STRIDED_SLICE over int32, as real
    # files build a RESHAPE's new shape
    "pack_int32": (
        "PACK",
        (lambda x: tf.stack([tf.shape(x)[0], 8, 6]), [DYN]),
        ("int32",),
    ),
    "strided_slice_int32": (
        "STRIDED_SLICE",
        (lambda x: tf.shape(x)[0], [DYN]),
        ("int32",),
    ),
    "equal": ("EQUAL", binary(tf.equal), False),
    # operands of one shape convert to SELECT; a broadcast one makes SELECT_V2
    "select_v2": (
        "SELECT_V2",
        (lambda x, y: tf.where(x > 0.0, x, y), [IMG, [1, 1, 1, 3]]),
        False,
    ),
    # float16 weights (1,024 elements) dequantised before an ADD: DEQUANTIZE on its own
    "dequantize": ("DEQUANTIZE", (lambda x: x + W_ADD, [[1, 64]]), ("float16",)),
    # sparse conv weights the kernel cannot read sparse: DENSIFY before CONV_2D
    "densify": (
        "DENSIFY",
        (lambda x: tf.nn.conv2d(x, W_SPARSE, 1, "SAME"), [[1, 8, 8, 16]]),
        ("float32", "int8", "float16"),
    ),
}
CALIBRATION = {"fully_connected_saturating": 0.5}
"""The representative dataset's half-width per case (others: 2.0, the inputs' own)."""
SPARSE = ("densify",)
"""Cases converted with `Optimize.EXPERIMENTAL_SPARSITY` as well."""
VARIANTS = ("float32", "int8", "int16x8", "dynamic", "float16")


def representative(shapes, span=2.0):
    rng = np.random.RandomState(7)

    def gen():
        for _ in range(16):
            yield [
                rng.uniform(-span, span, size=[max(d, 1) for d in s]).astype(np.float32)
                for s in shapes
            ]

    return gen


def convert(fn, shapes, variant, sparse=False, span=2.0):
    specs = [tf.TensorSpec([d if d >= 0 else None for d in s], tf.float32) for s in shapes]
    concrete = tf.function(fn).get_concrete_function(*specs)
    try:
        converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], fn)
    except TypeError:  # before 2.7 there is no trackable argument
        converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete])
    if variant == "int8":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative(shapes, span)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    elif variant == "int16x8":
        ops = tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative(shapes, span)
        converter.target_spec.supported_ops = [ops]
        converter.inference_input_type = tf.int16
        converter.inference_output_type = tf.int16
    elif variant == "dynamic":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    elif variant == "float16":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    if sparse:
        converter.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY] + (
            [tf.lite.Optimize.DEFAULT] if variant != "float32" else []
        )
    return converter.convert()


def main():
    out = sys.argv[1]
    only = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[2] == "--cases" else None
    os.makedirs(out, exist_ok=True)
    index = os.path.join(out, "models.json")
    written = {}
    if os.path.exists(index):  # a later run adds cases to the same directory
        with open(index) as f:
            written = json.load(f)["models"]
    for case, (builtin, (fn, shapes), weighted) in CASES.items():
        if only and case not in only:
            continue
        for variant in weighted if isinstance(weighted, tuple) else VARIANTS:
            if variant in ("dynamic", "float16") and weighted is False:
                continue
            name = f"{case}.{variant}"
            row = {"case": case, "builtin": builtin, "variant": variant, "shapes": shapes}
            try:
                data = convert(fn, shapes, variant, case in SPARSE, CALIBRATION.get(case, 2.0))
            except Exception as e:  # the converter's refusal is the fact we record
                last = traceback.format_exception_only(type(e), e)[-1].strip()
                row["error"] = last[-400:]
            else:
                with open(os.path.join(out, name + ".tflite"), "wb") as f:
                    f.write(data)
                row["file"] = name + ".tflite"
            written[name] = row
            print(name, "error" if "error" in row else "ok", file=sys.stderr, flush=True)
    with open(index, "w") as f:
        json.dump({"converter": tf.__version__, "models": written}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
