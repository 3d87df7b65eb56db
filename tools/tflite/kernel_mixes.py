"""Write small multi-op TFLite models, in other shapes than the kernel sweep's, with THIS
converter: a held-out round for the kernel-change rule (tools/tflite/kernel_heldout.py).

Runs inside one TensorFlow venv (2.x):

    <venv>/bin/python tools/tflite/kernel_mixes.py OUT_DIR

For every mix and every variant the converter offers (float32; int8 and int16x8
full-integer with integer inputs and outputs, so the answer is read in quantised steps;
dynamic-range weights) it writes OUT_DIR/<mix>.<variant>.tflite and OUT_DIR/models.json.
Weights and representative data come from seeds the sweep does not use.
"""

import json
import os
import sys
import traceback

import numpy as np
import tensorflow as tf

RNG = np.random.RandomState(4242)


def const(shape, scale=0.3):
    return tf.constant((RNG.uniform(-1.0, 1.0, size=shape) * scale).astype(np.float32))


W1, W2 = const([3, 3, 8, 16]), const([256, 10])
DW = const([3, 3, 32, 1])
F1, F2 = const([128, 64], 0.15), const([64, 10])
T1 = const([3, 3, 8, 16])
L1 = const([64, 32], 0.2)
C1, C2 = const([1, 1, 6, 12]), const([3, 3, 6, 12])
SCALE = const([4], 1.0)

MIXES = {
    "conv_relu6_pool_dense": (
        lambda x: tf.matmul(
            tf.reshape(
                tf.nn.avg_pool2d(tf.nn.relu6(tf.nn.conv2d(x, W1, 2, "SAME")), 2, 2, "VALID"),
                [1, 256],
            ),
            W2,
        ),
        [1, 16, 16, 8],
    ),
    "depthwise_hardswish_mean": (
        lambda x: tf.reduce_mean(
            (lambda y: y * tf.nn.relu6(y + 3.0) / 6.0)(
                tf.nn.depthwise_conv2d(x, DW, [1, 1, 1, 1], "SAME")
            ),
            axis=[1, 2],
        ),
        [1, 12, 12, 32],
    ),
    "dense_tanh_dense_softmax": (
        lambda x: tf.nn.softmax(tf.matmul(tf.tanh(tf.matmul(x, F1)), F2)),
        [1, 128],
    ),
    "sum_logistic": (lambda x: tf.sigmoid(tf.reduce_sum(x, axis=1)), [1, 32, 8]),
    "resize_scale_add": (
        lambda x: tf.image.resize(x, [11, 11]) * SCALE + 0.5,
        [1, 6, 6, 4],
    ),
    "transpose_conv_leaky": (
        lambda x: tf.nn.leaky_relu(tf.nn.conv2d_transpose(x, T1, [1, 10, 10, 8], 2, "SAME"), 0.1),
        [1, 5, 5, 16],
    ),
    "dense_log_softmax": (lambda x: tf.nn.log_softmax(tf.matmul(x, L1)), [1, 64]),
    "two_convs_concat_maxpool": (
        lambda x: tf.nn.max_pool2d(
            tf.concat([tf.nn.conv2d(x, C1, 1, "SAME"), tf.nn.conv2d(x, C2, 1, "SAME")], axis=3),
            2,
            2,
            "VALID",
        ),
        [1, 8, 8, 6],
    ),
}
VARIANTS = ("float32", "int8", "int16x8", "dynamic")


def representative(shape):
    rng = np.random.RandomState(99)

    def gen():
        for _ in range(24):
            yield [rng.uniform(-2.5, 2.5, size=shape).astype(np.float32)]

    return gen


def convert(fn, shape, variant):
    concrete = tf.function(fn).get_concrete_function(tf.TensorSpec(shape, tf.float32))
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], fn)
    if variant in ("int8", "int16x8"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative(shape)
        if variant == "int8":
            converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            converter.inference_input_type = converter.inference_output_type = tf.int8
        else:
            converter.target_spec.supported_ops = [
                tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
            ]
            converter.inference_input_type = converter.inference_output_type = tf.int16
    elif variant == "dynamic":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    written = {}
    for mix, (fn, shape) in MIXES.items():
        for variant in VARIANTS:
            name = f"{mix}.{variant}"
            row = {"mix": mix, "variant": variant, "shape": shape}
            try:
                data = convert(fn, shape, variant)
            except Exception as e:  # the converter's refusal is the fact we record
                row["error"] = traceback.format_exception_only(type(e), e)[-1].strip()[-400:]
            else:
                with open(os.path.join(out, name + ".tflite"), "wb") as f:
                    f.write(data)
                row["file"] = name + ".tflite"
            written[name] = row
            print(name, "error" if "error" in row else "ok", file=sys.stderr, flush=True)
    with open(os.path.join(out, "models.json"), "w") as f:
        json.dump({"converter": tf.__version__, "models": written}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
