"""Whole Keras 2 models (application-style and non-default configs) loaded by Keras 3:
the held-out set of the per-layer-config rule (worker/compat/keras_layer_configs.py).

    python3 tools/keras/build_applications.py make --writer 2.15.1=PYTHON [...]
    python3 tools/keras/build_applications.py load --keras 3.0.5=SITE [...] [--python PY]
    python3 tools/keras/build_applications.py write

    --round 2 (before the command): the second held-out round, APPLICATIONS_2 and
    CONFIGS_2 (other architectures and settings), built after the attribution of the
    per-layer-config table was fixed: build/keras/applications-2 and
    tests/fixtures/keras-apps-2. `make --standalone --writer 2.3.1=PYTHON:SITE` writes
    with the keras package (2.0 to 2.3 on a TF 1.x backend) unpacked in SITE.
    --round 3 and --round 4: Keras 2 layer and model names Keras 3 may refuse
    (tools/keras/name_models.py): the names the name rule was written from
    (tests/fixtures/keras-names) and its held-out round (tests/fixtures/keras-names-2).

make: in a TensorFlow virtualenv (tf.keras is Keras 2), every model of APPLICATIONS
      (`tf.keras.applications.X(weights=None, input_shape=small, classes=10)`) and of
      CONFIGS (small models with non-default layer settings: dtype policies,
      regularizers, constraints, initializers by config, activation objects, ...) that
      this Keras has, saved whole as H5: build/keras/applications/tf<version>/<name>.h5,
      with made.json (what was made, or why not).
load: in a Keras 3 runtime (the wheel unpacked with pip --target on PYTHON's path,
      KERAS_BACKEND=jax), each file: `keras.models.load_model(path)` as a consumer calls
      it (the files are not compiled), one fresh interpreter per writer folder, the
      session cleared between files. Rows: build/keras/applications/rows/keras-<v>.jsonl.
write: each file without its weights (the root attributes only: model_config,
      keras_version, backend; what the worker reads) into tests/fixtures/keras-apps/
      models/tf<version>/, and the rows into tests/fixtures/keras-apps/matrix.jsonl
      (consumer "keras-<version>", model "tf<version>/<name>", ok, error, cause).

make and load run under any Python 3.7+ with the standard library and the runtime's
Keras; write needs h5py (the Keras 3 runtime's Python has it).
"""

from __future__ import print_function

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import name_models  # noqa: E402 (the models of rounds 3 and 4, beside this file)

REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(REPO, "build", "keras", "applications")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "keras-apps")

# name -> (class in keras.applications, input shape); weights=None, classes=10.
APPLICATIONS = {
    "mobilenet_v2": ("MobileNetV2", (32, 32, 3)),
    "mobilenet": ("MobileNet", (32, 32, 3)),
    "mobilenet_v3_small": ("MobileNetV3Small", (32, 32, 3)),
    "resnet50": ("ResNet50", (32, 32, 3)),
    "resnet50_v2": ("ResNet50V2", (32, 32, 3)),
    "densenet121": ("DenseNet121", (32, 32, 3)),
    "efficientnet_b0": ("EfficientNetB0", (32, 32, 3)),
    "efficientnet_v2_b0": ("EfficientNetV2B0", (32, 32, 3)),
    "nasnet_mobile": ("NASNetMobile", (32, 32, 3)),
    "inception_v3": ("InceptionV3", (75, 75, 3)),
    "xception": ("Xception", (71, 71, 3)),
    "vgg16": ("VGG16", (32, 32, 3)),
    "regnet_x002": ("RegNetX002", (32, 32, 3)),
    "convnext_tiny": ("ConvNeXtTiny", (32, 32, 3)),
}
CONFIGS = [
    "mixed_cnn",  # global policy mixed_float16: Conv2D, BatchNormalization, Dense
    "mixed_mobilenet_v2",  # MobileNetV2 under the global policy mixed_float16
    "bf16_mlp",  # global policy mixed_bfloat16: Dense, LayerNormalization
    "float64_mlp",  # Dense(dtype="float64")
    "reg_mlp",  # regularizers (L2, L1, activity) and a MaxNorm constraint, Dropout
    "init_mlp",  # VarianceScaling and Constant initializers by config, "he_uniform"
    "leaky_cnn",  # Conv2D(activation=LeakyReLU(0.1)), Flatten, Dense
    "causal_tcn",  # Conv1D causal, dilated; SpatialDropout1D, GlobalMaxPooling1D
    "sepconv",  # SeparableConv2D(depth_multiplier=2), DepthwiseConv2D, UpSampling2D bilinear
    "transformer",  # Embedding, MultiHeadAttention, LayerNormalization, Add, Dense
    "gru_bidir",  # Bidirectional(GRU(return_sequences=True)), GlobalAveragePooling1D
    "prelu_bn",  # Dense, BatchNormalization(center=False, scale=False), PReLU
    "conv3d",  # Conv3D, MaxPooling3D, GlobalAveragePooling3D
    "preprocess",  # Rescaling, Normalization(mean, variance), Resizing, Conv2D
    "nonneg_unit",  # NonNeg, UnitNorm constraints; Orthogonal, RandomNormal initializers
    "no_bias_cnn",  # Conv2D(use_bias=False), BatchNormalization, ReLU(max_value=6), Dense
]


# The second round: architectures and settings the first did not have.
APPLICATIONS_2 = {
    "mobilenet_v3_large": ("MobileNetV3Large", (32, 32, 3)),
    "resnet101": ("ResNet101", (32, 32, 3)),
    "efficientnet_b1": ("EfficientNetB1", (32, 32, 3)),
    "vgg19": ("VGG19", (32, 32, 3)),
    "densenet169": ("DenseNet169", (32, 32, 3)),
}
CONFIGS_2 = [
    "lstm_stack",  # LSTM(return_sequences), LSTM, Dense
    "conv_gru",  # Conv1D, MaxPooling1D, GRU, Dense
    "mini_xception",  # SeparableConv2D(padding same, no bias), BatchNormalization, Add
    "td_dense",  # TimeDistributed(Dense), Flatten, Dense
    "embed_conv",  # Embedding, Conv1D, GlobalMaxPooling1D, Dense(sigmoid)
    "deconv",  # Conv2DTranspose, ZeroPadding2D, Cropping2D, Conv2D
    "attention_qv",  # Attention (query, value), Concatenate, Dense
    "he_cnn",  # Conv2D(he_normal), AveragePooling2D, Dropout, Dense(glorot_normal)
    "simple_rnn",  # SimpleRNN(return_sequences), Bidirectional(SimpleRNN), Dense
    "l1l2_conv",  # Conv2D with L1L2 regularizer, MaxNorm, MaxPooling2D, Flatten, Dense
]
ROUND = {
    1: ("applications", "keras-apps"),
    2: ("applications-2", "keras-apps-2"),
    3: ("applications-3", "keras-names"),  # names Keras 3 may refuse (name_models.py)
    4: ("applications-4", "keras-names-2"),  # their held-out round
}


def _layer_class(keras, name):
    found = getattr(keras.layers, name, None)
    if found is None:
        experimental = getattr(getattr(keras.layers, "experimental", None), "preprocessing", None)
        found = getattr(experimental, name, None)
    if found is None:
        raise AttributeError("no layer %s" % name)
    return found


def _config_model_2(keras, name):
    L = keras.layers
    if name == "lstm_stack":
        inp = keras.Input((10, 4))
        x = L.LSTM(8, return_sequences=True)(inp)
        x = L.LSTM(4)(x)
        return keras.Model(inp, L.Dense(2, activation="softmax")(x))
    if name == "conv_gru":
        inp = keras.Input((20, 3))
        x = L.Conv1D(8, 3, activation="relu")(inp)
        x = L.MaxPooling1D(2)(x)
        x = L.GRU(6)(x)
        return keras.Model(inp, L.Dense(1)(x))
    if name == "mini_xception":
        inp = keras.Input((24, 24, 1))
        x = L.Conv2D(8, 3, use_bias=False)(inp)
        x = L.BatchNormalization()(x)
        x = L.Activation("relu")(x)
        residual = L.Conv2D(16, 1, strides=2, padding="same", use_bias=False)(x)
        residual = L.BatchNormalization()(residual)
        x = L.SeparableConv2D(16, 3, padding="same", use_bias=False)(x)
        x = L.BatchNormalization()(x)
        x = L.Activation("relu")(x)
        x = L.SeparableConv2D(16, 3, padding="same", use_bias=False)(x)
        x = L.BatchNormalization()(x)
        x = L.MaxPooling2D(3, strides=2, padding="same")(x)
        x = L.Add()([x, residual])
        x = L.Conv2D(7, 3, padding="same")(x)
        x = L.GlobalAveragePooling2D()(x)
        return keras.Model(inp, L.Activation("softmax")(x))
    if name == "td_dense":
        inp = keras.Input((5, 3))
        x = L.TimeDistributed(L.Dense(4))(inp)
        x = L.Flatten()(x)
        return keras.Model(inp, L.Dense(2)(x))
    if name == "embed_conv":
        inp = keras.Input((12,), dtype="int32")
        x = L.Embedding(40, 8)(inp)
        x = L.Conv1D(6, 3, activation="relu")(x)
        x = L.GlobalMaxPooling1D()(x)
        return keras.Model(inp, L.Dense(1, activation="sigmoid")(x))
    if name == "deconv":
        inp = keras.Input((8, 8, 2))
        x = L.Conv2DTranspose(4, 3, strides=2, padding="same")(inp)
        x = L.ZeroPadding2D(1)(x)
        x = L.Cropping2D(1)(x)
        return keras.Model(inp, L.Conv2D(1, 3, padding="same")(x))
    if name == "attention_qv":
        query = keras.Input((4, 6))
        value = keras.Input((5, 6))
        attended = L.Attention()([query, value])
        x = L.Concatenate()([query, attended])
        return keras.Model([query, value], L.Dense(2)(x))
    if name == "he_cnn":
        inp = keras.Input((16, 16, 3))
        x = L.Conv2D(8, 3, kernel_initializer="he_normal", activation="relu")(inp)
        x = L.AveragePooling2D()(x)
        x = L.Dropout(0.25)(x)
        x = L.Flatten()(x)
        return keras.Model(inp, L.Dense(3, kernel_initializer="glorot_normal")(x))
    if name == "simple_rnn":
        inp = keras.Input((7, 3))
        x = L.SimpleRNN(5, return_sequences=True)(inp)
        x = L.Bidirectional(L.SimpleRNN(4))(x)
        return keras.Model(inp, L.Dense(1)(x))
    if name == "l1l2_conv":
        R, C = keras.regularizers, keras.constraints
        inp = keras.Input((12, 12, 1))
        x = L.Conv2D(6, 3, kernel_regularizer=R.l1_l2(l1=1e-5, l2=1e-4),
                     kernel_constraint=C.max_norm(2.0))(inp)  # fmt: skip
        x = L.MaxPooling2D()(x)
        x = L.Flatten()(x)
        return keras.Model(inp, L.Dense(2)(x))
    raise KeyError(name)


def _config_model(keras, name):
    if name in CONFIGS_2:
        return _config_model_2(keras, name)
    if name in name_models.CONFIGS_3:
        return name_models.config_model_3(keras, name)
    if name in name_models.CONFIGS_4:
        return name_models.config_model_4(keras, name)
    L = keras.layers
    mp = keras.mixed_precision

    if name == "mixed_cnn":
        mp.set_global_policy("mixed_float16")
        x = inp = keras.Input((16, 16, 3))
        x = L.Conv2D(4, 3)(x)
        x = L.BatchNormalization()(x)
        x = L.Activation("relu")(x)
        x = L.GlobalAveragePooling2D()(x)
        x = L.Dense(10)(x)
        out = L.Activation("softmax", dtype="float32")(x)
        return keras.Model(inp, out)
    if name == "mixed_mobilenet_v2":
        mp.set_global_policy("mixed_float16")
        return keras.applications.MobileNetV2(weights=None, input_shape=(32, 32, 3), classes=10)
    if name == "bf16_mlp":
        mp.set_global_policy("mixed_bfloat16")
        inp = keras.Input((8,))
        x = L.Dense(8, activation="relu")(inp)
        x = L.LayerNormalization()(x)
        out = L.Dense(2, dtype="float32")(x)
        return keras.Model(inp, out)
    if name == "float64_mlp":
        inp = keras.Input((8,))
        x = L.Dense(8, activation="tanh", dtype="float64")(inp)
        out = L.Dense(2, dtype="float64")(x)
        return keras.Model(inp, out)
    R = keras.regularizers
    C = keras.constraints
    Init = keras.initializers
    if name == "reg_mlp":
        inp = keras.Input((8,))
        x = L.Dense(16, kernel_regularizer=R.l2(1e-4), bias_regularizer=R.l1(1e-5),
                    activity_regularizer=R.l2(1e-5), kernel_constraint=C.MaxNorm(3.0))(inp)  # fmt: skip
        x = L.Dropout(0.3)(x)
        out = L.Dense(2, kernel_regularizer=R.L1L2(l1=1e-5, l2=1e-4))(x)
        return keras.Model(inp, out)
    if name == "init_mlp":
        inp = keras.Input((8,))
        x = L.Dense(16, kernel_initializer=Init.VarianceScaling(2.0, "fan_out", "truncated_normal"),
                    bias_initializer=Init.Constant(0.1))(inp)  # fmt: skip
        out = L.Dense(2, kernel_initializer="he_uniform")(x)
        return keras.Model(inp, out)
    if name == "leaky_cnn":
        inp = keras.Input((16, 16, 1))
        x = L.Conv2D(4, 3, activation=L.LeakyReLU(0.1))(inp)
        x = L.Flatten()(x)
        out = L.Dense(3)(x)
        return keras.Model(inp, out)
    if name == "causal_tcn":
        inp = keras.Input((20, 3))
        x = L.Conv1D(8, 3, padding="causal", dilation_rate=2, activation="relu")(inp)
        x = L.SpatialDropout1D(0.1)(x)
        x = L.Conv1D(8, 3, padding="causal", dilation_rate=4)(x)
        x = L.GlobalMaxPooling1D()(x)
        out = L.Dense(1)(x)
        return keras.Model(inp, out)
    if name == "sepconv":
        inp = keras.Input((16, 16, 3))
        x = L.SeparableConv2D(8, 3, depth_multiplier=2, padding="same")(inp)
        x = L.DepthwiseConv2D(3, strides=2, padding="same")(x)
        x = L.UpSampling2D(interpolation="bilinear")(x)
        x = L.GlobalAveragePooling2D()(x)
        out = L.Dense(2)(x)
        return keras.Model(inp, out)
    if name == "transformer":
        inp = keras.Input((10,), dtype="int32")
        x = L.Embedding(50, 8)(inp)
        attended = L.MultiHeadAttention(num_heads=2, key_dim=4)(x, x)
        x = L.LayerNormalization(epsilon=1e-6)(L.Add()([x, attended]))
        x = L.Dense(8, activation="relu")(x)
        x = L.GlobalAveragePooling1D()(x)
        out = L.Dense(2)(x)
        return keras.Model(inp, out)
    if name == "gru_bidir":
        inp = keras.Input((12, 4))
        x = L.Bidirectional(L.GRU(6, return_sequences=True))(inp)
        x = L.GlobalAveragePooling1D()(x)
        out = L.Dense(1)(x)
        return keras.Model(inp, out)
    if name == "prelu_bn":
        inp = keras.Input((8,))
        x = L.Dense(16, use_bias=False)(inp)
        x = L.BatchNormalization(center=False, scale=False)(x)
        x = L.PReLU()(x)
        out = L.Dense(2)(x)
        return keras.Model(inp, out)
    if name == "conv3d":
        inp = keras.Input((8, 8, 8, 1))
        x = L.Conv3D(4, 3, activation="relu")(inp)
        x = L.MaxPooling3D()(x)
        x = L.GlobalAveragePooling3D()(x)
        out = L.Dense(2)(x)
        return keras.Model(inp, out)
    if name == "preprocess":
        inp = keras.Input((16, 16, 3))
        x = _layer_class(keras, "Rescaling")(1.0 / 255)(inp)
        x = _layer_class(keras, "Normalization")(mean=0.5, variance=0.25)(x)
        x = _layer_class(keras, "Resizing")(8, 8)(x)
        x = L.Conv2D(4, 3)(x)
        x = L.GlobalAveragePooling2D()(x)
        out = L.Dense(2)(x)
        return keras.Model(inp, out)
    if name == "nonneg_unit":
        inp = keras.Input((8,))
        x = L.Dense(8, kernel_constraint=C.NonNeg(), kernel_initializer=Init.Orthogonal())(inp)
        out = L.Dense(2, kernel_constraint=C.UnitNorm(),
                      kernel_initializer=Init.RandomNormal(stddev=0.05))(x)  # fmt: skip
        return keras.Model(inp, out)
    if name == "no_bias_cnn":
        inp = keras.Input((16, 16, 3))
        x = L.Conv2D(8, 3, use_bias=False)(inp)
        x = L.BatchNormalization()(x)
        x = L.ReLU(max_value=6.0)(x)
        x = L.GlobalAveragePooling2D()(x)
        out = L.Dense(2)(x)
        return keras.Model(inp, out)
    raise KeyError(name)


def _said(e):
    text = "%s: %s" % (type(e).__name__, e)
    return text.strip().splitlines()[0][:400] if text.strip() else type(e).__name__


def _cause(e):
    inner = e
    while inner.__cause__ is not None or inner.__context__ is not None:
        inner = inner.__cause__ or inner.__context__
    return _said(inner)


def child_make(out_dir, round_=1, standalone=False):
    import tensorflow as tf

    keras = tf.keras
    if standalone:  # the keras package (Keras 2.0 to 2.3) on its TensorFlow backend
        import keras
    os.makedirs(out_dir, exist_ok=True)
    made = []
    apps, configs = {
        1: (APPLICATIONS, CONFIGS),
        2: (APPLICATIONS_2, CONFIGS_2),
        3: ({}, name_models.CONFIGS_3),
        4: (name_models.APPLICATIONS_4, name_models.CONFIGS_4),
    }[round_]
    names = [(n, "application") for n in sorted(apps)] + [(n, "config") for n in configs]
    only = os.environ.get("ONLY_MODELS")  # a comma-separated subset (a quicker writer run)
    if only:
        names = [(n, k) for n, k in names if n in only.split(",")]
    for name, kind in names:
        keras.backend.clear_session()
        entry = {"name": name, "kind": kind}
        try:
            if kind == "application":
                cls, shape = apps[name]
                model = getattr(keras.applications, cls)(
                    weights=None, input_shape=shape, classes=10
                )
            else:
                model = _config_model(keras, name)
            path = os.path.join(out_dir, name + ".h5")
            model.save(path)
            entry["file"] = name + ".h5"
            entry["layers"] = len(model.layers)
        except Exception as e:
            entry["skipped"] = _said(e)
        finally:
            if hasattr(keras, "mixed_precision") and hasattr(
                keras.mixed_precision, "set_global_policy"
            ):
                keras.mixed_precision.set_global_policy("float32")
        made.append(entry)
    keras_version = keras.__version__ if standalone else getattr(tf.keras, "__version__", None)
    if keras_version is None:
        import keras as keras_package

        keras_version = keras_package.__version__
    record = {"tensorflow": tf.__version__, "keras": keras_version,
              "python": sys.version.split()[0], "models": made}  # fmt: skip
    if standalone:  # the writer is that Keras ("keras-2.3.1"), not TensorFlow's
        record.update(writer="keras-" + keras_version, standalone=True)
    with open(os.path.join(out_dir, "made.json"), "w") as f:
        json.dump(record, f, indent=1)


def child_load(folder, out):
    import warnings

    warnings.filterwarnings("ignore")
    import keras

    with open(os.path.join(folder, "made.json")) as f:
        made = json.load(f)
    with open(out, "a") as rows:
        for entry in made["models"]:
            if "file" not in entry:
                continue
            keras.backend.clear_session()
            row = {"consumer": "keras-" + keras.__version__,
                   "model": "%s/%s" % (_writer(made), entry["name"]), "ok": True}  # fmt: skip
            try:
                keras.models.load_model(os.path.join(folder, entry["file"]))
            except Exception as e:
                row.update(ok=False, error=_said(e), cause=_cause(e))
            rows.write(json.dumps(row, sort_keys=True) + "\n")
            rows.flush()


def _writer(made):
    """A writer folder's name: tf<release>, or keras-<version> for the keras package."""
    return made.get("writer") or "tf" + made["tensorflow"]


def _writer_folders(build):
    return sorted(d for d in os.listdir(build) if d.startswith(("tf", "keras-")) and d != "rows")


def cmd_make(args):
    for spec in args.writer:
        version, python = spec.split("=", 1)
        env, folder = None, "tf" + version
        if args.standalone:  # VERSION=PYTHON:SITE
            python, site = python.split(":", 1)
            env, folder = dict(os.environ, PYTHONPATH=site), "keras-" + version
        start = time.time()
        command = [python, os.path.abspath(__file__), "--round", str(args.round), "_make",
                   os.path.join(args.build, folder)]  # fmt: skip
        subprocess.check_call(command + (["--standalone"] if args.standalone else []), env=env)
        print("made %s in %.0fs" % (folder, time.time() - start))


def cmd_load(args):
    folders = [os.path.join(args.build, d) for d in _writer_folders(args.build)]
    if args.writers:
        folders = [f for f in folders if os.path.basename(f) in args.writers.split(",")]
    os.makedirs(os.path.join(args.build, "rows"), exist_ok=True)
    for spec in args.keras:
        version, site = spec.split("=", 1)
        out = os.path.join(args.build, "rows", "keras-%s.jsonl" % version)
        env = dict(os.environ, PYTHONPATH=site, KERAS_BACKEND="jax")
        for folder in folders:
            start = time.time()
            subprocess.call([args.python, os.path.abspath(__file__), "_load", folder, out], env=env)
            print("keras %s, %s: %.0fs" % (version, os.path.basename(folder), time.time() - start))


def cmd_write(args):
    import h5py

    build, fixtures = args.build, args.fixtures
    models = os.path.join(fixtures, "models")
    for folder in _writer_folders(build):
        if not os.path.exists(os.path.join(build, folder, "made.json")):
            continue  # a writer still being made
        with open(os.path.join(build, folder, "made.json")) as f:
            made = json.load(f)
        os.makedirs(os.path.join(models, folder), exist_ok=True)
        for entry in made["models"]:
            if "file" not in entry:
                continue
            src_path = os.path.join(build, folder, entry["file"])
            # nested, not one parenthesized `with`: the file also runs in Python 3.7
            with h5py.File(src_path, "r") as src:
                with h5py.File(os.path.join(models, folder, entry["file"]), "w") as dst:
                    for key in ("model_config", "keras_version", "backend"):
                        if key in src.attrs:
                            dst.attrs[key] = src.attrs[key]
    rows = []
    for name in sorted(os.listdir(os.path.join(build, "rows"))):
        with open(os.path.join(build, "rows", name)) as f:
            rows.extend(json.loads(line) for line in f if line.strip())
    rows.sort(key=lambda r: (r["consumer"], r["model"]))
    matrix = os.path.join(fixtures, "matrix.jsonl")
    with open(matrix, "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    from pathlib import Path

    sys.path.insert(0, os.path.join(REPO, "tools"))
    from fixture_sources import record

    record(Path(matrix))
    print("wrote %d rows" % len(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--round", type=int, default=1, choices=sorted(ROUND))
    sub = parser.add_subparsers(dest="command")
    make = sub.add_parser("make")
    make.add_argument("--writer", action="append", default=[], help="VERSION=PYTHON[:SITE]")
    make.add_argument("--standalone", action="store_true", help="the keras package (2.0-2.3)")
    load = sub.add_parser("load")
    load.add_argument("--keras", action="append", default=[], help="VERSION=SITE")
    load.add_argument("--python", default=sys.executable)
    load.add_argument("--writers", default="",
                      help="tf2.15.1,keras-2.3.1: writer folders (default: every one)")  # fmt: skip
    sub.add_parser("write")
    child = sub.add_parser("_make")
    child.add_argument("out")
    child.add_argument("--standalone", action="store_true")
    child2 = sub.add_parser("_load")
    child2.add_argument("folder")
    child2.add_argument("out")
    args = parser.parse_args()
    build, fixtures = ROUND[args.round]
    args.build = os.path.join(REPO, "build", "keras", build)
    args.fixtures = os.path.join(REPO, "tests", "fixtures", fixtures)
    if args.command == "_make":
        child_make(args.out, args.round, args.standalone)
    elif args.command == "_load":
        child_load(args.folder, args.out)
    elif args.command == "make":
        cmd_make(args)
    elif args.command == "load":
        cmd_load(args)
    elif args.command == "write":
        cmd_write(args)
    else:
        parser.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
