"""Write deep TFLite models made with Keras, with THIS TensorFlow's converter: held-out
rounds for the whole-model tolerance of tools/tflite/kernel_whole.py.

Runs inside one TensorFlow venv (2.13 and later: Keras 2 or Keras 3 as `tf.keras`):

    <venv>/bin/python tools/tflite/kernel_deep.py OUT_DIR [float32|dynamic|int16x8] [deep|wide]

Small CNNs, MLPs and recurrent stacks (unrolled, so the file holds the cells' own
operators), 7 to 120 operators deep, batch 1 (`deep`, the default); `wide`: other
architectures, wider (64 to 256 channels or units) and of other depths (a wide MLP with
GELU, a wide CNN, a bottleneck ResNet, a wide depthwise stack, a transposed-convolution
decoder, a wide bidirectional LSTM). `float32` (the default) converts them as they
are; `dynamic` with dynamic-range weights (`Optimize.DEFAULT`, no representative
data: int8 weights, float activations); `int16x8` quantised with 16-bit activations and
8-bit weights from representative data (seeded values in [-2.5, 2.5]), float input and
output (a QUANTIZE first, a DEQUANTIZE last; an op without a 16x8 kernel stays float);
each variant and set with its own seeds. Every weight is set from one
seeded numpy generator (Glorot-uniform scale for kernels; positive variances), so the
file does not depend on Keras's initialisers. It writes OUT_DIR/<model>.<variant>.tflite
and OUT_DIR/models.json (converter, Keras, per model the input shape or the
converter's refusal).
"""

import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

K = tf.keras
L = K.layers


def mlp_tanh(x):
    for _ in range(12):
        x = L.Dense(48, activation="tanh")(x)
    return L.Dense(10)(x)


def mlp_bn_relu_softmax(x):
    for _ in range(8):
        x = L.ReLU()(L.BatchNormalization()(L.Dense(64)(x)))
    return L.Softmax()(L.Dense(5)(x))


def cnn_small(x):
    x = L.Conv2D(8, 3, activation="relu")(x)
    x = L.Conv2D(16, 3, strides=2, activation="relu")(x)
    x = L.MaxPooling2D()(x)
    x = L.Conv2D(32, 3, padding="same", activation="relu")(x)
    x = L.Conv2D(32, 3, padding="same", activation="relu")(x)
    return L.Dense(10)(L.GlobalAveragePooling2D()(x))


def cnn_residual(x):
    x = L.Conv2D(16, 3, padding="same")(x)
    for _ in range(4):
        y = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(16, 3, padding="same")(x)))
        y = L.BatchNormalization()(L.Conv2D(16, 3, padding="same")(y))
        x = L.ReLU()(L.Add()([x, y]))
    return L.Dense(6)(L.GlobalAveragePooling2D()(x))


def mobilenet_like(x):
    x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(16, 3, strides=2, padding="same")(x)))
    for filters, stride in ((24, 1), (24, 2), (32, 1), (32, 2), (48, 1), (64, 1)):
        x = L.ReLU(6.0)(L.BatchNormalization()(L.DepthwiseConv2D(3, stride, padding="same")(x)))
        x = L.ReLU(6.0)(L.BatchNormalization()(L.Conv2D(filters, 1)(x)))
    return L.Softmax()(L.Dense(8)(L.GlobalAveragePooling2D()(x)))


def cnn_narrow_deep(x):
    for _ in range(16):
        x = L.Conv2D(8, 3, padding="same", activation="relu")(x)
    return L.Dense(4)(L.GlobalAveragePooling2D()(x))


def rnn_unrolled(x):
    x = L.SimpleRNN(32, unroll=True, return_sequences=True)(x)
    x = L.SimpleRNN(32, unroll=True)(x)
    return L.Dense(4)(x)


def lstm_unrolled(x):
    return L.Dense(3)(L.LSTM(24, unroll=True)(x))


def gru_unrolled(x):
    return L.Dense(3, activation="sigmoid")(L.GRU(20, unroll=True)(x))


def conv1d_layernorm(x):
    for rate in (1, 2, 4, 1):
        x = L.LayerNormalization()(L.Conv1D(16, 3, padding="same", dilation_rate=rate)(x))
        x = L.Activation("elu")(x)
    return L.Dense(5)(L.Flatten()(x))


def attention_block(x):
    y = L.MultiHeadAttention(num_heads=2, key_dim=8)(x, x)
    x = L.LayerNormalization()(L.Add()([x, y]))
    y = L.Dense(16)(L.Dense(32, activation="relu")(x))
    x = L.LayerNormalization()(L.Add()([x, y]))
    return L.Dense(4)(L.GlobalAveragePooling1D()(x))


def mlp_wide_gelu(x):
    for units in (256, 256, 192, 128):
        x = L.Dense(units, activation="gelu")(x)
    return L.Dense(16)(x)


def cnn_wide(x):
    x = L.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = L.Conv2D(96, 3, strides=2, padding="same", activation="relu")(x)
    x = L.Conv2D(128, 3, padding="same", activation="relu")(x)
    x = L.AveragePooling2D(2)(x)  # Keras 3 has no default pool size
    return L.Dense(12)(L.Flatten()(x))


def resnet_bottleneck(x):
    x = L.Conv2D(64, 3, padding="same")(x)
    for _ in range(3):
        y = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 1)(x)))
        y = L.ReLU()(L.BatchNormalization()(L.Conv2D(16, 3, padding="same")(y)))
        y = L.BatchNormalization()(L.Conv2D(64, 1)(y))
        x = L.ReLU()(L.Add()([x, y]))
    return L.Dense(10)(L.GlobalAveragePooling2D()(x))


def depthwise_wide(x):
    x = L.Conv2D(96, 3, strides=2, padding="same", activation="relu6")(x)
    for _ in range(5):
        x = L.DepthwiseConv2D(3, padding="same", activation="relu6")(x)
        x = L.Conv2D(96, 1, activation="relu6")(x)
    return L.Dense(8)(L.GlobalMaxPooling2D()(x))


def decoder_transpose(x):
    x = L.Dense(4 * 4 * 32, activation="relu")(x)
    x = L.Reshape((4, 4, 32))(x)
    x = L.Conv2DTranspose(32, 3, strides=2, padding="same", activation="relu")(x)
    x = L.Conv2DTranspose(16, 3, strides=2, padding="same", activation="relu")(x)
    return L.Conv2D(3, 3, padding="same", activation="sigmoid")(x)


def bilstm_wide(x):
    x = L.Bidirectional(L.LSTM(64, unroll=True, return_sequences=True))(x)
    return L.Dense(6)(L.GlobalAveragePooling1D()(x))


WIDE = {
    "mlp_wide_gelu": (mlp_wide_gelu, [1, 96]),
    "cnn_wide": (cnn_wide, [1, 24, 24, 3]),
    "resnet_bottleneck": (resnet_bottleneck, [1, 16, 16, 8]),
    "depthwise_wide": (depthwise_wide, [1, 32, 32, 3]),
    "decoder_transpose": (decoder_transpose, [1, 32]),
    "bilstm_wide": (bilstm_wide, [1, 10, 12]),
}


MODELS = {
    "mlp_tanh": (mlp_tanh, [1, 64]),
    "mlp_bn_relu_softmax": (mlp_bn_relu_softmax, [1, 40]),
    "cnn_small": (cnn_small, [1, 32, 32, 3]),
    "cnn_residual": (cnn_residual, [1, 20, 20, 8]),
    "mobilenet_like": (mobilenet_like, [1, 32, 32, 3]),
    "cnn_narrow_deep": (cnn_narrow_deep, [1, 16, 16, 8]),
    "rnn_unrolled": (rnn_unrolled, [1, 10, 8]),
    "lstm_unrolled": (lstm_unrolled, [1, 12, 6]),
    "gru_unrolled": (gru_unrolled, [1, 8, 5]),
    "conv1d_layernorm": (conv1d_layernorm, [1, 32, 4]),
    "attention_block": (attention_block, [1, 8, 16]),
}


VARIANTS = {"float32": 7301, "dynamic": 7401, "int16x8": 7701}  # the first model's seed
SETS = {"deep": (MODELS, 0), "wide": (WIDE, 150)}  # the set's models, its seeds' offset


def representative(shape, seed):
    rng = np.random.RandomState(seed + 100000)

    def data():
        for _ in range(16):
            yield [rng.uniform(-2.5, 2.5, shape).astype(np.float32)]

    return data


def set_weights(model, rng):
    for v in model.weights:
        name = v.name.lower()
        shape = tuple(int(d) for d in v.shape)
        if "variance" in name:
            value = rng.uniform(0.5, 1.5, shape)
        elif "gamma" in name:
            value = rng.uniform(0.8, 1.2, shape)
        elif len(shape) <= 1:  # biases, betas, moving means
            value = rng.uniform(-0.1, 0.1, shape)
        else:
            fan_out = shape[-1]
            fan_in = int(np.prod(shape[:-1]))
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            value = rng.uniform(-limit, limit, shape)
        v.assign(value.astype(np.float32))


def convert(build, shape, seed, variant):
    """Variables frozen into constants first: Keras 3's variables in a concrete function
    crash the 2.16 converter ("missing attribute 'value'", LLVM ERROR)."""
    inputs = K.Input(batch_size=shape[0], shape=shape[1:])
    model = K.Model(inputs, build(inputs))
    set_weights(model, np.random.RandomState(seed))
    fn = tf.function(lambda x: model(x, training=False))
    concrete = fn.get_concrete_function(tf.TensorSpec(shape, tf.float32))
    frozen = convert_variables_to_constants_v2(concrete)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([frozen])
    if variant in ("dynamic", "int16x8"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "int16x8":
        converter.representative_dataset = representative(shape, seed)
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
            tf.lite.OpsSet.TFLITE_BUILTINS,
        ]
    return converter.convert()


def one(out, name, seed, variant):
    """One model, in its own process: a converter that aborts ends only this one."""
    build, shape = {**MODELS, **WIDE}[name]
    data = convert(build, shape, seed, variant)
    with open(os.path.join(out, f"{name}.{variant}.tflite"), "wb") as f:
        f.write(data)


def main():
    out = sys.argv[1]
    if len(sys.argv) == 5:
        one(out, sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    variant = sys.argv[2] if len(sys.argv) > 2 else "float32"
    models, offset = SETS[sys.argv[3] if len(sys.argv) > 3 else "deep"]
    if variant not in VARIANTS:
        raise SystemExit(f"variant {variant!r}: one of {', '.join(VARIANTS)}")
    os.makedirs(out, exist_ok=True)
    written = {}
    for seed, name in enumerate(sorted(models), start=VARIANTS[variant] + offset):
        row = {"model": name, "variant": variant, "shape": models[name][1], "seed": seed}
        done = subprocess.run(
            [sys.executable, __file__, out, name, str(seed), variant],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            row["file"] = f"{name}.{variant}.tflite"
        else:  # the converter's refusal is the fact we record
            lines = [x for x in done.stderr.splitlines() if x.strip()]
            row["error"] = f"exit {done.returncode}: " + (lines[-1][-400:] if lines else "")
        written[name] = row
        print(name, "error" if "error" in row else "ok", file=sys.stderr, flush=True)
    keras = getattr(K, "__version__", "") or getattr(sys.modules.get("keras"), "__version__", "")
    doc = {"converter": tf.__version__, "keras": keras, "models": written}
    with open(os.path.join(out, "models.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
