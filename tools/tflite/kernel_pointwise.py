"""Write small TFLite models of the two kernel paths the sweep's second look added, in
other shapes and seeds, with THIS converter: a held-out check for them
(tools/tflite/kernel_heldout.py --set pointwise).

Runs inside one TensorFlow venv (2.x):

    <venv>/bin/python tools/tflite/kernel_pointwise.py OUT_DIR

- dynamic-range 1x1 convolutions (`pw_*`: alone, strided, after a 3x3, before a
  depthwise) and, as a control the 1x1 key should leave alone, 3x3 ones (`k3_*`);
- FULLY_CONNECTED as int16x8 and int8 (integer inputs and outputs), calibrated on a
  narrower range than the inputs it is fed (`fc_*`: half-width 0.4 and 1.0 against
  kernel_run.py's 2 to 4), alone and after a RELU.
Writes OUT_DIR/<case>.<variant>.tflite and OUT_DIR/models.json; weights from a seed the
sweep does not use (kernel_models.convert does the converting).
"""

import json
import os
import sys
import traceback

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernel_models import convert

RNG = np.random.RandomState(6161)


def const(shape, scale=0.25):
    return tf.constant((RNG.uniform(-1.0, 1.0, size=shape) * scale).astype(np.float32))


PA, PB = const([1, 1, 40, 32]), const([1, 1, 128, 16])
PC3, PC1 = const([3, 3, 16, 32]), const([1, 1, 32, 48])
PD1, PDW = const([1, 1, 24, 48]), const([3, 3, 48, 1])
KA, KB = const([3, 3, 24, 40]), const([5, 5, 8, 32])
FA, FAB = const([48, 24], 0.3), const([24], 0.1)
FB = const([128, 8], 0.2)


def conv(x, w, stride=1):
    return tf.nn.conv2d(x, w, stride, "SAME")


# case -> (graph, input shapes, variants, calibration half-width)
CASES = {
    "pw_alone": (lambda x: conv(x, PA), [[1, 12, 12, 40]], ("dynamic",), 2.0),
    "pw_strided_relu": (
        lambda x: tf.nn.relu(conv(x, PB, 2)),
        [[1, 10, 10, 128]],
        ("dynamic",),
        2.0,
    ),
    "pw_after_3x3": (
        lambda x: conv(tf.nn.relu6(conv(x, PC3)), PC1),
        [[1, 9, 9, 16]],
        ("dynamic",),
        2.0,
    ),
    "pw_then_depthwise": (
        lambda x: tf.nn.depthwise_conv2d(tf.nn.relu(conv(x, PD1)), PDW, [1, 1, 1, 1], "SAME"),
        [[1, 8, 8, 24]],
        ("dynamic",),
        2.0,
    ),
    "k3_alone": (lambda x: conv(x, KA), [[1, 10, 10, 24]], ("dynamic",), 2.0),
    "k5_strided": (lambda x: tf.nn.relu(conv(x, KB, 2)), [[1, 14, 14, 8]], ("dynamic",), 2.0),
    "fc_narrow": (
        lambda x: tf.matmul(x, FA) + FAB,
        [[1, 48]],
        ("int16x8", "int8"),
        0.4,
    ),
    "fc_relu_wide_in": (
        lambda x: tf.matmul(tf.nn.relu(x), FB),
        [[1, 128]],
        ("int16x8", "int8"),
        1.0,
    ),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    written = {}
    for case, (fn, shapes, variants, span) in CASES.items():
        for variant in variants:
            name = f"{case}.{variant}"
            row = {"case": case, "variant": variant, "shapes": shapes, "calibration": span}
            try:
                data = convert(fn, shapes, variant, span=span)
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
