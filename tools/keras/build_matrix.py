"""Keras files written by real Keras releases, and what real releases do loading them.

    python3 tools/keras/build_matrix.py make  [--producers 2.10.1,2.17.1] [--models dense,gru]
    python3 tools/keras/build_matrix.py load  [--consumers ...] [--jobs 2]
    python3 tools/keras/build_matrix.py write [--matrix tests/fixtures/keras/matrix.jsonl]
    python3 tools/keras/build_matrix.py reference   (once: see cmd_reference)

A release is a TensorFlow virtualenv ("2.15.1") or a Keras 3 wheel run outside
TensorFlow ("keras-3.5.0": KERAS_PYTHON with KERAS_SITES/keras-3.5.0 on its path, the
jax backend), whose files go to keras<minor>/ and whose rows name it as the consumer,
or tf-keras, the Keras 2 a TF 2.16+ process runs with TF_USE_LEGACY_KERAS=1
("tf-keras-2.16": KERASENVS/tfk-2.16, tensorflow-cpu==2.16.* and tf-keras==2.16.*;
files to tfkeras<minor>/).
The OBJECT_MODELS (objects named by name, compiled models) are loaded the way a
consumer calls load_model, compiling: `ok` is that, and `compile_false_ok` whether
compile=False loaded what compiling did not.

make: in each producer's virtualenv (TFENVS/<version>/bin/python), build each model
      with fixed seeds, run it once on a fixed input (the expected output), and save
      it as `.h5` and, from Keras 2.12 on, as `.keras`, under build/keras/models/
      tf<minor>/<model>.<ext>; build/keras/models.json says how each was made.
load: for each (consumer release, file), one fresh interpreter in the consumer's
      virtualenv runs `tf.keras.models.load_model(path, compile=False)` and the model
      on the same input; where Keras refuses a Lambda under safe_mode, a second one
      tries `safe_mode=False` (`unsafe_load_ok`). Rows go to build/keras/rows/.
write: copies the files and models.json into tests/fixtures/keras/ and merges the
      rows into its matrix.jsonl (a row for the same consumer and file is replaced).

Runs under any Python 3.7+ with the standard library only (the same file is the child
script run inside every TensorFlow virtualenv, 1.15.5's Python 3.7 included).
"""

from __future__ import print_function

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TFENVS = os.environ.get("TFENVS", ".cache/tfenvs")
BUILD = os.path.join(REPO, "build", "keras")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "keras")
RELEASES = ["1.15.5", "2.4.4", "2.8.4", "2.10.1", "2.12.1", "2.15.1", "2.17.1", "2.18.1", "2.21.0"]
MODELS = [
    "dense",
    "lstm",
    "lambda",
    "gru",
    "functional",
    "embedding",
    "conv1d",
    "bidirectional",
    "layernorm",
]
# Objects named by name, made after worker/compat/keras_objects.py was committed (held out):
# built-ins that must resolve, and objects of the producer's own that a consumer lacks.
OBJECT_MODELS = [
    "lambda_act",  # Conv1D(activation=lambda ...): Keras 2 saves '<lambda>'
    "fn_act",  # Dense(activation=a module-level function)
    "custom_layer",  # an unregistered Layer subclass with get_config
    "registered_layer",  # a Layer subclass registered as "Tfc>Scale" (where it exists)
    "custom_init",  # Dense(kernel_initializer=an Initializer subclass)
    "loss_fn",  # compiled with loss=a module-level function
    "metric_fn",  # compiled with loss="mse", metrics=[a module-level function]
    "adam",  # compiled with Adam(learning_rate=0.01), loss "mse", metrics ["mae"]
    "sgd",  # compiled with SGD(momentum=0.9, nesterov=True), loss and metric objects
    "loss_list",  # compiled with loss=[a function] and metrics {"dense": ["mae"]}
    "adam_functional",  # a functional model compiled with Adam (TF 1.13 writes `lr`)
]
# Declared inputs, made after worker/compat/keras_inputs.py was committed (held out): how a
# Keras 2 model declares its input, each run on a request of the declared batch shape.
INPUT_MODELS = [
    "seq_input_shape",  # Sequential, Dense(input_shape=(4,)) first
    "seq_batch_shape",  # Sequential, Dense(batch_input_shape=(2, 4)) first (fixed batch)
    "seq_input_dim",  # Sequential, Dense(input_dim=4) first
    "seq_last1",  # Sequential, Dense(input_shape=(1,)) first: a last axis of 1
    "seq_none_dim",  # Sequential, Dense(input_shape=(None, 4)) first, then pooling
    "seq_rank1",  # Sequential, Embedding(input_shape=()) first: rank-1 input
    "seq_conv1d",  # Sequential, Conv1D(input_shape=(8, 2)) first
    "seq_embed_flat",  # Sequential, Embedding(input_length=6) first, Flatten, Dense
    "seq_embed_pool",  # Sequential, Embedding(input_shape=(6,)) first, pooling
    "seq_dropout",  # Sequential, Dropout(input_shape=(4,)) first, then Dense
    "seq_layer_in",  # Sequential, InputLayer(input_shape=(4,)) first
    "seq_built",  # Sequential with no input declared, built by model.build((None, 4))
    "fn_none_dim",  # functional, Input(shape=(None, 4))
    "fn_rank1",  # functional, Input(shape=(), dtype int32)
    "fn_multi",  # functional, two inputs (a list)
    "fn_dict",  # functional, two inputs by name (a dict)
]
# A second held-out inputs family, made after the first one's tuning was committed: other
# first layers and stacks (INPUT_MODELS_2 rows are the `inputs-2` family).
INPUT_MODELS_2 = [
    "seq_flat_first",  # Flatten(input_shape=(2, 3)) first, Dense
    "seq_bn_first",  # BatchNormalization(input_shape=(4,)) first, Dense
    "seq_ln_first",  # LayerNormalization(input_shape=(4,)) first, Dense
    "seq_act_first",  # Activation(input_shape=(4,)) first, Dense
    "seq_reshape_first",  # Reshape((2, 2), input_shape=(4,)) first, Flatten, Dense
    "seq_dense_pool",  # Dense(input_shape=(5, 4)) first, GlobalMaxPooling1D
    "seq_rank3_last1",  # Dense(input_shape=(5, 1)) first: a last axis of 1, rank 3
    "seq_conv2d",  # Conv2D(input_shape=(4, 4, 1)) first, Flatten, Dense
    "seq_masking",  # Masking(input_shape=(5, 2)) first, Dense
    "seq_timedist",  # TimeDistributed(Dense, input_shape=(5, 4)) first
    "seq_noise",  # GaussianNoise(input_shape=(4,)) first, LeakyReLU, Dense
    "seq_dense_drop",  # Dense(input_shape=(3,)) first, Dropout, Dense
]
INPUT_MODELS = INPUT_MODELS + INPUT_MODELS_2
MODELS = MODELS + OBJECT_MODELS + INPUT_MODELS
# Keras 3 runtimes outside TensorFlow: "keras-3.5.0" runs KERAS_PYTHON with the wheel
# unpacked under KERAS_SITES/keras-3.5.0 (pip install --no-deps --target) on the jax backend.
KERAS_PYTHON = os.environ.get("KERAS_PYTHON", ".cache/build-keras/base311/bin/python")
KERAS_SITES = os.environ.get("KERAS_SITES", ".cache/build-keras")
KERASENVS = os.environ.get("KERASENVS", ".cache/kerasenvs")
TF_KERAS = "tf-keras-"
TIMEOUT = 600
ERROR_CHARS = 400

# The input each model is run on: a deterministic array, so outputs compare across releases.
INPUTS = {
    "dense": {"shape": [1, 4], "dtype": "float32"},
    "lambda": {"shape": [1, 4], "dtype": "float32", "ones": True},
    "lstm": {"shape": [1, 5, 2], "dtype": "float32"},
    "gru": {"shape": [1, 5, 2], "dtype": "float32"},
    "functional": {"shape": [1, 4], "dtype": "float32"},
    "embedding": {"shape": [1, 6], "dtype": "int32", "modulo": 10},
    "conv1d": {"shape": [1, 8, 2], "dtype": "float32"},
    "bidirectional": {"shape": [1, 5, 2], "dtype": "float32"},
    "layernorm": {"shape": [1, 4], "dtype": "float32"},
    "lambda_act": {"shape": [1, 8, 2], "dtype": "float32"},
    "fn_act": {"shape": [1, 4], "dtype": "float32"},
    "custom_layer": {"shape": [1, 4], "dtype": "float32"},
    "registered_layer": {"shape": [1, 4], "dtype": "float32"},
    "custom_init": {"shape": [1, 4], "dtype": "float32"},
    "loss_fn": {"shape": [1, 4], "dtype": "float32"},
    "metric_fn": {"shape": [1, 4], "dtype": "float32"},
    "adam": {"shape": [1, 4], "dtype": "float32"},
    "sgd": {"shape": [1, 4], "dtype": "float32"},
    "loss_list": {"shape": [1, 4], "dtype": "float32"},
    "adam_functional": {"shape": [1, 4], "dtype": "float32"},
    # INPUT_MODELS: the declared batch shape with its unknown dims at 1
    "seq_input_shape": {"shape": [1, 4], "dtype": "float32"},
    "seq_batch_shape": {"shape": [2, 4], "dtype": "float32"},
    "seq_input_dim": {"shape": [1, 4], "dtype": "float32"},
    "seq_last1": {"shape": [1, 1], "dtype": "float32"},
    "seq_none_dim": {"shape": [1, 1, 4], "dtype": "float32"},
    "seq_rank1": {"shape": [1], "dtype": "int32", "modulo": 10},
    "seq_conv1d": {"shape": [1, 8, 2], "dtype": "float32"},
    "seq_embed_flat": {"shape": [1, 6], "dtype": "int32", "modulo": 10},
    "seq_embed_pool": {"shape": [1, 6], "dtype": "int32", "modulo": 10},
    "seq_dropout": {"shape": [1, 4], "dtype": "float32"},
    "seq_layer_in": {"shape": [1, 4], "dtype": "float32"},
    "seq_built": {"shape": [1, 4], "dtype": "float32"},
    "fn_none_dim": {"shape": [1, 1, 4], "dtype": "float32"},
    "fn_rank1": {"shape": [1], "dtype": "int32", "modulo": 10},
    "fn_multi": {
        "list": [{"shape": [1, 4], "dtype": "float32"}, {"shape": [1, 3], "dtype": "float32"}]
    },
    "fn_dict": {
        "dict": {
            "a": {"shape": [1, 4], "dtype": "float32"},
            "b": {"shape": [1, 3], "dtype": "float32"},
        }
    },
    "seq_flat_first": {"shape": [1, 2, 3], "dtype": "float32"},
    "seq_bn_first": {"shape": [1, 4], "dtype": "float32"},
    "seq_ln_first": {"shape": [1, 4], "dtype": "float32"},
    "seq_act_first": {"shape": [1, 4], "dtype": "float32"},
    "seq_reshape_first": {"shape": [1, 4], "dtype": "float32"},
    "seq_dense_pool": {"shape": [1, 5, 4], "dtype": "float32"},
    "seq_rank3_last1": {"shape": [1, 5, 1], "dtype": "float32"},
    "seq_conv2d": {"shape": [1, 4, 4, 1], "dtype": "float32"},
    "seq_masking": {"shape": [1, 5, 2], "dtype": "float32"},
    "seq_timedist": {"shape": [1, 5, 4], "dtype": "float32"},
    "seq_noise": {"shape": [1, 4], "dtype": "float32"},
    "seq_dense_drop": {"shape": [1, 3], "dtype": "float32"},
}


def minor(version):
    return ".".join(version.split(".")[:2])


def version_key(version):
    """(2, 2, 4) for "2.2.4-tf": the leading digits of each part."""
    key = []
    for part in version.split(".")[:3]:
        digits = ""
        for c in part:
            if not c.isdigit():
                break
            digits += c
        key.append(int(digits or 0))
    return tuple(key)


def python_of(release):
    if release.startswith("keras-"):
        return KERAS_PYTHON
    if release.startswith(TF_KERAS):
        return os.path.join(KERASENVS, "tfk-" + release[len(TF_KERAS) :], "bin", "python")
    return os.path.join(TFENVS, release, "bin", "python")


def env_of(release):
    """A Keras 3 runtime outside TensorFlow: its wheel on PYTHONPATH, the jax backend;
    tf-keras: TF_USE_LEGACY_KERAS=1, so that tf.keras is tf_keras."""
    if release.startswith(TF_KERAS):
        return dict(os.environ, TF_USE_LEGACY_KERAS="1")
    if not release.startswith("keras-"):
        return None
    return dict(os.environ, PYTHONPATH=os.path.join(KERAS_SITES, release), KERAS_BACKEND="jax")


def folder_of(release):
    """build/keras/models/<folder>: tf<minor>, keras<minor> for a Keras 3 runtime,
    tfkeras<minor> for tf-keras."""
    if release.startswith("keras-"):
        return "keras" + minor(release[len("keras-") :])
    if release.startswith(TF_KERAS):
        return "tfkeras" + minor(release[len(TF_KERAS) :])
    return "tf" + minor(release)


def runtime_keras():
    """(keras module, TF version or None) of this runtime: tf.keras inside TensorFlow."""
    try:
        import tensorflow as tf
    except ImportError:
        import keras

        return keras, None
    return tf.keras, tf.__version__


def model_input(spec):
    """The request: one array, or a list ("list") or dict ("dict") of them."""
    import numpy as np

    if "list" in spec:
        return [model_input(part) for part in spec["list"]]
    if "dict" in spec:
        return {name: model_input(part) for name, part in sorted(spec["dict"].items())}

    count = 1
    for n in spec["shape"]:
        count *= n
    if spec.get("ones"):
        values = np.ones(count)
    elif "modulo" in spec:
        values = np.arange(count) % spec["modulo"]
    else:
        values = np.linspace(-1.0, 1.0, count)
    return values.reshape(spec["shape"]).astype(spec["dtype"])


# --- inside a TensorFlow virtualenv --------------------------------------------------------


def my_act(t):
    import numpy as np  # noqa: F401  (module-level, so Keras saves it by its name)

    keras, _ = runtime_keras()
    return keras.activations.relu(t) * 2.0


def my_loss(y_true, y_pred):
    keras, _ = runtime_keras()
    return (
        keras.backend.mean(keras.backend.square(y_true - y_pred))
        if hasattr(keras, "backend") and hasattr(keras.backend, "mean")
        else keras.ops.mean(keras.ops.square(y_true - y_pred))
    )


def my_metric(y_true, y_pred):
    return my_loss(y_true, y_pred)


def object_classes(keras):
    """A Layer subclass (unregistered), one registered as "Tfc>Scale" where Keras has the
    decorator, and an Initializer subclass, each with its get_config."""

    class Scale(keras.layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super(Scale, self).__init__(**kwargs)
            self.factor = factor

        def call(self, inputs):
            return inputs * self.factor

        def get_config(self):
            config = super(Scale, self).get_config()
            config["factor"] = self.factor
            return config

    class Ones(keras.initializers.Initializer):
        def __call__(self, shape, dtype=None, **kwargs):
            keras_, _ = runtime_keras()
            if hasattr(keras_, "ops"):
                return keras_.ops.ones(shape, dtype=dtype) * 0.5
            return keras_.backend.ones(shape, dtype=dtype) * 0.5

        def get_config(self):
            return {}

    register = None
    for owner in ("saving", "utils"):
        register = getattr(getattr(keras, owner, None), "register_keras_serializable", None)
        if register is not None:
            break
    registered = None
    if register is not None:

        class RegisteredScale(Scale):
            pass

        RegisteredScale.__name__ = "Scale2"
        registered = register(package="Tfc", name="Scale2")(RegisteredScale)
    return Scale, registered or Scale, Ones


def optimizer(cls, rate, **kwargs):
    """The optimizer at that rate: `learning_rate`, or `lr` where Keras knows only that
    (TF 1.13's tf.keras optimizers)."""
    try:
        return cls(learning_rate=rate, **kwargs)
    except TypeError:
        return cls(lr=rate, **kwargs)


def build_object_model(name, keras):
    layers = keras.layers
    Scale, Registered, Ones = object_classes(keras)
    if name == "lambda_act":
        return keras.Sequential(
            [
                layers.InputLayer(input_shape=(8, 2)),
                layers.Conv1D(3, 3, activation=lambda t: keras.activations.relu(t)),
                layers.GlobalMaxPooling1D(),
                layers.Dense(2),
            ]
        )
    if name == "adam_functional":
        inputs = keras.Input(shape=(4,))
        model = keras.Model(inputs, layers.Dense(2, name="dense")(inputs))
        model.compile(optimizer=optimizer(keras.optimizers.Adam, 0.01), loss="mse")
        return model
    dense_input = layers.InputLayer(input_shape=(4,))
    if name == "fn_act":
        return keras.Sequential([dense_input, layers.Dense(3, activation=my_act)])
    if name == "custom_layer":
        return keras.Sequential([dense_input, Scale(3.0), layers.Dense(2)])
    if name == "registered_layer":
        return keras.Sequential([dense_input, Registered(3.0), layers.Dense(2)])
    if name == "custom_init":
        return keras.Sequential([dense_input, layers.Dense(2, kernel_initializer=Ones())])
    model = keras.Sequential([dense_input, layers.Dense(2, name="dense")])
    if name == "loss_fn":
        model.compile(optimizer="adam", loss=my_loss)
    elif name == "metric_fn":
        model.compile(optimizer="adam", loss="mse", metrics=[my_metric])
    elif name == "adam":
        model.compile(optimizer=optimizer(keras.optimizers.Adam, 0.01), loss="mse",
                      metrics=["mae"])  # fmt: skip
    elif name == "sgd":
        model.compile(
            optimizer=optimizer(keras.optimizers.SGD, 0.05, momentum=0.9, nesterov=True),
            loss=keras.losses.MeanSquaredError(),
            metrics=[keras.metrics.MeanAbsoluteError()],
        )
    elif name == "loss_list":
        model.compile(optimizer="sgd", loss=[my_loss], metrics={"dense": ["mae"]})
    else:
        raise SystemExit("unknown model " + name)
    return model


def build_input_model(name, keras):
    """A model declaring its input one way (INPUT_MODELS), in the running Keras 2."""
    layers = keras.layers
    if name == "seq_input_shape":
        return keras.Sequential([layers.Dense(3, input_shape=(4,)), layers.Dense(2)])
    if name == "seq_batch_shape":
        return keras.Sequential([layers.Dense(3, batch_input_shape=(2, 4)), layers.Dense(2)])
    if name == "seq_input_dim":
        return keras.Sequential([layers.Dense(3, input_dim=4), layers.Dense(2)])
    if name == "seq_last1":
        return keras.Sequential([layers.Dense(3, input_shape=(1,)), layers.Dense(2)])
    if name == "seq_none_dim":
        return keras.Sequential(
            [layers.Dense(3, input_shape=(None, 4)), layers.GlobalAveragePooling1D()]
        )
    if name == "seq_rank1":
        return keras.Sequential([layers.Embedding(10, 4, input_shape=()), layers.Dense(2)])
    if name == "seq_conv1d":
        return keras.Sequential(
            [layers.Conv1D(3, 3, input_shape=(8, 2)), layers.GlobalMaxPooling1D(), layers.Dense(2)]
        )
    if name == "seq_embed_flat":
        return keras.Sequential(
            [layers.Embedding(10, 4, input_length=6), layers.Flatten(), layers.Dense(2)]
        )
    if name == "seq_embed_pool":
        return keras.Sequential(
            [layers.Embedding(10, 4, input_shape=(6,)), layers.GlobalAveragePooling1D(),
             layers.Dense(2)]
        )  # fmt: skip
    if name == "seq_dropout":
        return keras.Sequential([layers.Dropout(0.5, input_shape=(4,)), layers.Dense(2)])
    if name == "seq_layer_in":
        return keras.Sequential([layers.InputLayer(input_shape=(4,)), layers.Dense(2)])
    if name == "seq_built":
        model = keras.Sequential([layers.Dense(3), layers.Dense(2)])
        model.build((None, 4))
        return model
    model = build_input_model_2(name, keras)
    if model is not None:
        return model
    if name == "fn_none_dim":
        inputs = keras.Input(shape=(None, 4))
        hidden = layers.Dense(3)(inputs)
        return keras.Model(inputs, layers.GlobalAveragePooling1D()(hidden))
    if name == "fn_rank1":
        inputs = keras.Input(shape=(), dtype="int32")
        return keras.Model(inputs, layers.Dense(2)(layers.Embedding(10, 4)(inputs)))
    a = keras.Input(shape=(4,), name="a")
    b = keras.Input(shape=(3,), name="b")
    joined = layers.Dense(2)(layers.Concatenate()([a, b]))
    if name == "fn_multi":
        return keras.Model([a, b], joined)
    if name == "fn_dict":
        return keras.Model({"a": a, "b": b}, joined)
    raise SystemExit("unknown model " + name)


def build_input_model_2(name, keras):
    """INPUT_MODELS_2; None for another name."""
    layers = keras.layers
    dense = layers.Dense(2)
    if name == "seq_flat_first":
        return keras.Sequential([layers.Flatten(input_shape=(2, 3)), dense])
    if name == "seq_bn_first":
        return keras.Sequential([layers.BatchNormalization(input_shape=(4,)), dense])
    if name == "seq_ln_first":
        return keras.Sequential([layers.LayerNormalization(input_shape=(4,)), dense])
    if name == "seq_act_first":
        return keras.Sequential([layers.Activation("tanh", input_shape=(4,)), dense])
    if name == "seq_reshape_first":
        return keras.Sequential([layers.Reshape((2, 2), input_shape=(4,)), layers.Flatten(), dense])
    if name == "seq_dense_pool":
        return keras.Sequential([layers.Dense(3, input_shape=(5, 4)), layers.GlobalMaxPooling1D()])
    if name == "seq_rank3_last1":
        return keras.Sequential([layers.Dense(3, input_shape=(5, 1))])
    if name == "seq_conv2d":
        return keras.Sequential(
            [layers.Conv2D(2, 2, input_shape=(4, 4, 1)), layers.Flatten(), dense]
        )
    if name == "seq_masking":
        return keras.Sequential([layers.Masking(input_shape=(5, 2)), dense])
    if name == "seq_timedist":
        return keras.Sequential([layers.TimeDistributed(layers.Dense(2), input_shape=(5, 4))])
    if name == "seq_noise":
        return keras.Sequential(
            [layers.GaussianNoise(0.1, input_shape=(4,)), layers.LeakyReLU(), dense]
        )
    if name == "seq_dense_drop":
        return keras.Sequential([layers.Dense(4, input_shape=(3,)), layers.Dropout(0.5), dense])
    return None


def declared_input(model):
    """The model's declared input shape(s) as its own Keras reports them."""
    try:
        return json.loads(json.dumps(model.input_shape, default=list))
    except Exception as exc:  # a model without one says why
        return one_line(exc)


def build_model(name):
    """The model `name`, built with the running release's tf.keras (Keras 3 from 2.16)."""
    import numpy as np

    if name in INPUT_MODELS:
        import tensorflow as tf

        np.random.seed(0)
        if hasattr(tf.random, "set_seed"):
            tf.random.set_seed(0)
        else:
            tf.compat.v1.set_random_seed(0)
        return build_input_model(name, tf.keras)
    if name in OBJECT_MODELS:
        keras, release = runtime_keras()
        np.random.seed(0)
        if release is None:
            keras.utils.set_random_seed(0)
        else:
            import tensorflow as tf

            if hasattr(tf.random, "set_seed"):
                tf.random.set_seed(0)
            else:
                tf.compat.v1.set_random_seed(0)
        return build_object_model(name, keras)
    import tensorflow as tf

    keras = tf.keras
    np.random.seed(0)
    if hasattr(tf.random, "set_seed"):
        tf.random.set_seed(0)
    else:  # TF 1.x
        tf.compat.v1.set_random_seed(0)
    layers = keras.layers
    if name == "dense":
        return keras.Sequential([layers.InputLayer(input_shape=(4,)), layers.Dense(3)])
    if name == "lstm":
        return keras.Sequential([layers.InputLayer(input_shape=(5, 2)), layers.LSTM(3)])
    if name == "gru":
        return keras.Sequential([layers.InputLayer(input_shape=(5, 2)), layers.GRU(3)])
    if name == "lambda":
        return keras.Sequential(
            [layers.InputLayer(input_shape=(4,)), layers.Lambda(lambda t: t * 2)]
        )
    if name == "functional":
        inputs = keras.Input(shape=(4,))
        hidden = layers.Dense(5, activation="relu")(inputs)
        return keras.Model(inputs, layers.Dense(2)(hidden))
    if name == "embedding":
        return keras.Sequential(
            [
                layers.InputLayer(input_shape=(6,), dtype="int32"),
                layers.Embedding(10, 4),
                layers.BatchNormalization(),
                layers.GlobalAveragePooling1D(),
                layers.Dense(2),
            ]
        )
    if name == "conv1d":
        return keras.Sequential(
            [
                layers.InputLayer(input_shape=(8, 2)),
                layers.Conv1D(3, 3, activation="relu"),
                layers.GlobalMaxPooling1D(),
                layers.Dense(2),
            ]
        )
    if name == "bidirectional":
        return keras.Sequential(
            [
                layers.InputLayer(input_shape=(5, 2)),
                layers.Bidirectional(layers.LSTM(3)),
                layers.Dense(2),
            ]
        )
    if name == "layernorm":
        return keras.Sequential(
            [
                layers.InputLayer(input_shape=(4,)),
                layers.Dense(6),
                layers.LayerNormalization(),
                layers.Dropout(0.5),
                layers.Dense(2),
            ]
        )
    raise SystemExit("unknown model " + name)


def keras_version():
    keras, release = runtime_keras()
    if release is None:
        return keras.__version__
    import tensorflow as tf

    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        import tf_keras

        return tf_keras.__version__
    try:
        import keras

        if version_key(tf.__version__) >= (2, 6):
            return keras.__version__
    except ImportError:
        pass
    return tf.keras.__version__


def child_make(args):
    """Build, run and save one model; print what was written as one JSON line."""
    import numpy as np

    _, release = runtime_keras()
    model = build_model(args.model)
    x = model_input(INPUTS[args.model])
    expected = np.asarray(model.predict(x)).round(5).tolist()
    record = {"tensorflow": release, "keras": keras_version(), "expected": expected}
    if args.model in INPUT_MODELS:
        record["declared"] = declared_input(model)
    results = {}
    for ext in ("h5", "keras"):
        path = os.path.join(args.out, args.model + "." + ext)
        entry = dict(record)
        try:
            if ext == "keras" and version_key(keras_version()) < (2, 12):
                raise RuntimeError("no .keras zip format before Keras 2.12")
            model.save(path)
            if ext == "keras" and os.path.isdir(path):
                shutil.rmtree(path)
                model.save(path, save_format="keras_v3")
            entry["written"] = os.path.isfile(path)
        except Exception as exc:  # what this release cannot write is recorded, not fatal
            entry["written"] = False
            entry["error"] = one_line(exc)
        results[ext] = entry
    print(json.dumps(results))


def one_line(exc):
    return (type(exc).__name__ + ": " + str(exc))[:ERROR_CHARS]


def cause_of(exc):
    """What Keras 3's wrappers ("could not be deserialized properly", "Error when
    deserializing class") say underneath, past the config they quote; None elsewhere."""
    text = str(exc)
    marker = "Exception encountered: "
    if marker not in text:
        return None
    return text[text.rindex(marker) + len(marker) :][:ERROR_CHARS]


def child_load(args):
    """Load one file with this release's Keras and run it; print the row as JSON.

    With --compiled, `ok` is load_model's default (compile=True), and where that fails,
    `compile_false_ok` says whether compile=False loaded it (its output, its error). With
    --declared, `loaded` says whether load_model returned (the error may be the request's)
    and `declared` is the input shape this Keras rebuilt the model on."""
    import numpy as np

    keras, _ = runtime_keras()
    spec = json.loads(args.input)
    row = {}
    kwargs = {} if args.compiled else {"compile": False}
    if args.unsafe:
        kwargs["safe_mode"] = False
    if args.declared:
        row["loaded"] = False
    try:
        model = keras.models.load_model(args.path, **kwargs)
        if args.declared:
            row["loaded"] = True
            row["declared"] = declared_input(model)
        output = model.predict(model_input(spec))
        row["ok"] = True
        row["output"] = np.asarray(output).round(5).tolist()
    except Exception as exc:
        row["ok"] = False
        row["error"] = one_line(exc)
        if cause_of(exc):
            row["cause"] = cause_of(exc)
    if args.compiled and not row["ok"]:
        kwargs["compile"] = False
        try:
            model = keras.models.load_model(args.path, **kwargs)
            model.predict(model_input(spec))
            row["compile_false_ok"] = True
        except Exception as exc:
            row["compile_false_ok"] = False
            row["compile_false_error"] = one_line(exc)
    print(json.dumps(row))


def child_load_batch(args):
    """Several `_load` jobs (a JSON list of argv lists) in this one interpreter, one JSON row
    per line, with the Keras session cleared between files: a fresh interpreter per file
    costs seconds of imports each, which the INPUT_MODELS rows do not need."""
    keras, _ = runtime_keras()
    with open(args.jobs) as f:
        jobs = json.load(f)
    parser = argparse.ArgumentParser()
    for flag in ("--path", "--input"):
        parser.add_argument(flag, required=True)
    for flag in ("--unsafe", "--compiled", "--declared"):
        parser.add_argument(flag, action="store_true")
    for argv in jobs:
        child_load(parser.parse_args(argv[1:]))
        sys.stdout.flush()
        keras.backend.clear_session()


# --- driver (any Python 3) ------------------------------------------------------------------


def run_child(release, argv):
    command = [python_of(release), os.path.abspath(__file__)] + argv
    try:
        done = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT, check=False,
            env=env_of(release),
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "timeout after %d s" % TIMEOUT}
    lines = [l for l in done.stdout.decode("utf-8", "replace").splitlines() if l.startswith("{")]
    if not lines:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return {"ok": False, "error": "child failed: " + tail[0][:ERROR_CHARS]}
    return json.loads(lines[-1])


def load_json(path, default):
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return json.load(f)


def cmd_make(args):
    models_json = os.path.join(BUILD, "models.json")
    made = load_json(models_json, {})
    for release in args.producers:
        out = os.path.join(BUILD, "models", folder_of(release))
        if not os.path.isdir(out):
            os.makedirs(out)
        for model in args.models:
            started = time.time()
            results = run_child(release, ["_make", "--model", model, "--out", out])
            if "ok" in results:  # the child itself failed
                print(release, model, results["error"], file=sys.stderr)
                continue
            for ext, entry in results.items():
                key = "%s/%s.%s" % (folder_of(release), model, ext)
                if entry.get("written"):
                    entry["path"] = "models/" + key
                entry["input"] = INPUTS[model]
                made[key] = entry
                print(key, "written" if entry.get("written") else entry.get("error"))
            print("  %.0f s" % (time.time() - started))
    with open(models_json, "w") as f:
        json.dump(made, f, indent=1, sort_keys=True)


def close(a, b, tolerance=1e-4):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y, tolerance) for x, y in zip(a, b))
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= tolerance


def is_safe_mode_refusal(error):
    return "Lambda" in error and "safe_mode" in error


def known_rows(matrix):
    rows = set()
    if os.path.exists(matrix):
        with open(matrix) as f:
            rows = {(r["consumer"], r["model"]) for r in map(json.loads, f) if r}
    return rows


def cmd_load(args):
    made = load_json(os.path.join(BUILD, "models.json"), {})
    for entry in made.values():
        entry["base"] = BUILD
    if args.fixtures:  # the committed files too, for consumers that have no row for them yet
        for key, entry in load_json(os.path.join(FIXTURES, "models.json"), {}).items():
            if key not in made:
                entry = dict(entry, base=FIXTURES)
                entry.setdefault("input", INPUTS[key.split("/")[1].split(".")[0]])
                made[key] = entry
    recorded = known_rows(os.path.join(FIXTURES, "matrix.jsonl"))
    rows_dir = os.path.join(BUILD, "rows")
    if not os.path.isdir(rows_dir):
        os.makedirs(rows_dir)
    wanted = [k for k, v in sorted(made.items()) if v.get("written")]
    if args.files:
        wanted = [k for k in wanted if k in args.files or k.split("/")[0] in args.files]
    for consumer in args.consumers:
        path = os.path.join(rows_dir, consumer + ".jsonl")
        done = set()
        if os.path.exists(path):
            with open(path) as f:
                done = {json.loads(l)["model"] for l in f if l.strip()}
        if args.batch:
            load_batch(consumer, [k for k in wanted if k not in done and (consumer, k)
                                  not in recorded], made, path)  # fmt: skip
            continue
        for key in wanted:
            if key in done or (consumer, key) in recorded:
                continue
            entry = made[key]
            argv = ["_load", "--path", os.path.join(entry["base"], entry["path"]),
                    "--input", json.dumps(entry["input"])]  # fmt: skip
            if key.split("/")[1].split(".")[0] in OBJECT_MODELS:
                argv.append("--compiled")  # load_model's default, as a consumer calls it
            if key.split("/")[1].split(".")[0] in INPUT_MODELS:
                argv.append("--declared")
            row = {"consumer": consumer, "model": key}
            row.update(run_child(consumer, argv))
            if row["ok"]:
                row["matches_producer"] = close(row["output"], entry["expected"])
            elif is_safe_mode_refusal(row.get("error", "")):
                unsafe = run_child(consumer, argv + ["--unsafe"])
                row["unsafe_load_ok"] = unsafe["ok"]
                if unsafe["ok"]:
                    row["unsafe_output"] = unsafe["output"]
                else:
                    row["unsafe_error"] = unsafe.get("error")
            with open(path, "a") as f:
                f.write(json.dumps(row, sort_keys=True) + "\n")
            print(consumer, key, "ok" if row["ok"] else "FAILS")


def load_argv(key, entry):
    argv = ["_load", "--path", os.path.join(entry["base"], entry["path"]),
            "--input", json.dumps(entry["input"])]  # fmt: skip
    if key.split("/")[1].split(".")[0] in OBJECT_MODELS:
        argv.append("--compiled")  # load_model's default, as a consumer calls it
    if key.split("/")[1].split(".")[0] in INPUT_MODELS:
        argv.append("--declared")
    return argv


def load_batch(consumer, keys, made, path):
    """`load` with --batch: the files in one interpreter of the consumer (child_load_batch);
    a file whose row did not come back (the interpreter died) is loaded alone after."""
    if not keys:
        return
    jobs = os.path.join(BUILD, "jobs-%s.json" % consumer)
    with open(jobs, "w") as f:
        json.dump([load_argv(k, made[k]) for k in keys], f)
    command = [python_of(consumer), os.path.abspath(__file__), "_load_batch", "--jobs", jobs]
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=TIMEOUT * 4, check=False, env=env_of(consumer))  # fmt: skip
        lines = done.stdout.decode("utf-8", "replace").splitlines()
    except subprocess.TimeoutExpired:
        lines = []
    results = [json.loads(l) for l in lines if l.startswith("{")]
    for key, result in zip(keys, results):
        write_row(consumer, key, made[key], result, path)
    for key in keys[len(results) :]:
        write_row(consumer, key, made[key], run_child(consumer, load_argv(key, made[key])), path)


def write_row(consumer, key, entry, result, path):
    row = {"consumer": consumer, "model": key}
    row.update(result)
    if row["ok"]:
        row["matches_producer"] = close(row["output"], entry["expected"])
    elif is_safe_mode_refusal(row.get("error", "")):  # as `load` without --batch does
        unsafe = run_child(consumer, load_argv(key, entry) + ["--unsafe"])
        row["unsafe_load_ok"] = unsafe["ok"]
        if unsafe["ok"]:
            row["unsafe_output"] = unsafe["output"]
        else:
            row["unsafe_error"] = unsafe.get("error")
    with open(path, "a") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")
    print(consumer, key, "ok" if row["ok"] else "FAILS")


def cmd_reference(args):
    """Give committed files whose `expected` was computed on an input nobody recorded (the
    first, lost script) an output on INPUTS, from their own producer release; rows in
    build/keras/rows for them are compared against it again."""
    fixtures_json = os.path.join(FIXTURES, "models.json")
    described = load_json(fixtures_json, {})
    changed = set()
    for key, entry in sorted(described.items()):
        if not entry.get("written") or "input" in entry:
            continue
        spec = INPUTS[key.split("/")[1].split(".")[0]]
        argv = [
            "_load",
            "--path",
            os.path.join(FIXTURES, entry["path"]),
            "--input",
            json.dumps(spec),
        ]
        result = run_child(entry["tensorflow"], argv + (["--unsafe"] if "lambda" in key else []))
        if not result["ok"]:
            print(key, "producer cannot load it:", result["error"], file=sys.stderr)
            continue
        entry["expected_on_unrecorded_input"] = entry["expected"]
        entry["expected"], entry["input"] = result["output"], spec
        changed.add(key)
        print(key, "reference output on", json.dumps(spec))
    with open(fixtures_json, "w") as f:
        json.dump(described, f, indent=1, sort_keys=True)
    rows_dir = os.path.join(BUILD, "rows")
    for name in sorted(os.listdir(rows_dir)) if os.path.isdir(rows_dir) else []:
        path = os.path.join(rows_dir, name)
        with open(path) as f:
            rows = [json.loads(l) for l in f if l.strip()]
        for row in rows:
            if row["model"] in changed and row.get("ok"):
                row["matches_producer"] = close(row["output"], described[row["model"]]["expected"])
        with open(path, "w") as f:
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in rows)


def cmd_write(args):
    made = load_json(os.path.join(BUILD, "models.json"), {})
    fixtures_json = os.path.join(FIXTURES, "models.json")
    described = load_json(fixtures_json, {})
    for key, entry in made.items():
        described[key] = entry
        if entry.get("written"):
            target = os.path.join(FIXTURES, entry["path"])
            if not os.path.isdir(os.path.dirname(target)):
                os.makedirs(os.path.dirname(target))
            shutil.copyfile(os.path.join(BUILD, entry["path"]), target)
    with open(fixtures_json, "w") as f:
        json.dump(described, f, indent=1, sort_keys=True)
    rows = {}
    if os.path.exists(args.matrix):
        with open(args.matrix) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    rows[(row["consumer"], row["model"])] = row
    rows_dir = os.path.join(BUILD, "rows")
    for name in sorted(os.listdir(rows_dir)) if os.path.isdir(rows_dir) else []:
        with open(os.path.join(rows_dir, name)) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    rows[(row["consumer"], row["model"])] = row
    with open(args.matrix, "w") as f:
        for key in sorted(rows, key=lambda k: (version_key(k[0]), k[1])):
            f.write(json.dumps(rows[key], sort_keys=True) + "\n")
    sys.path.insert(0, os.path.dirname(HERE))
    from fixture_sources import record  # the files' source records (sources.json)

    record(fixtures_json)
    record(args.matrix)
    print("%d rows in %s" % (len(rows), args.matrix))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("make")
    p.add_argument("--producers", type=lambda s: s.split(","), default=RELEASES)
    p.add_argument("--models", type=lambda s: s.split(","), default=MODELS)
    p = sub.add_parser("load")
    p.add_argument("--consumers", type=lambda s: s.split(","), default=RELEASES)
    p.add_argument("--files", type=lambda s: s.split(","), default=None,
                   help="only these files (tf2.17/dense.keras) or producer folders (tf2.17)")  # fmt: skip
    p.add_argument("--batch", action="store_true",
                   help="one interpreter per consumer for all its files (the INPUT_MODELS rows)")  # fmt: skip
    p.add_argument("--fixtures", action="store_true",
                   help="also load the files already in tests/fixtures/keras (rows not yet there)")  # fmt: skip
    sub.add_parser("reference")
    p = sub.add_parser("write")
    p.add_argument("--matrix", default=os.path.join(FIXTURES, "matrix.jsonl"))
    p = sub.add_parser("_make")
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("_load")
    p.add_argument("--path", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--unsafe", action="store_true")
    p.add_argument("--compiled", action="store_true")
    p.add_argument("--declared", action="store_true")
    p = sub.add_parser("_load_batch")
    p.add_argument("--jobs", required=True)
    args = parser.parse_args()
    handlers = {"make": cmd_make, "load": cmd_load, "write": cmd_write, "reference": cmd_reference,
                "_make": child_make, "_load": child_load, "_load_batch": child_load_batch}  # fmt: skip
    if args.command not in handlers:
        parser.error("a command is needed: make, load or write")
    handlers[args.command](args)


if __name__ == "__main__":
    main()
