"""Keras 2 models whose layer or model names hold characters Keras 3 may refuse: the
models of rounds 3 and 4 of tools/keras/build_applications.py.

Round 3 (tests/fixtures/keras-names) is what the name rule of worker/compat/keras_checks.py
was written from: one unusual name per file ('/', ':', a space, '.', '-', '>', a
backslash, a non-ASCII letter; on a layer, the input, the model, a nested model or a layer
inside one), loaded by every Keras 3 minor. Round 4 (tests/fixtures/keras-names-2) is its
held-out set, built after the rule was committed: other architectures whose layer names
hold '/' (DenseNet201, MobileNetV3Small) and hand-named models (scoped transformer-style
names, Inception-style towers, a nested backbone, a wrapped recurrent layer).

Runs in a TensorFlow virtualenv's Python (3.7+), imported by build_applications.py.
"""

# name -> what the file's one unusual name is; a writer whose Keras refuses that name
# records the file as skipped (made.json).
CONFIGS_3 = [
    "slash_layer",  # Dense "block1/dense"
    "slash_input",  # Input "in/put"
    "slash_model",  # the model "net/v1"
    "slash_in_nested",  # a nested model "inner" holding Dense "inner/dense"
    "slash_nested_model",  # a nested model "tower/a"
    "slash_sequential",  # Sequential with Dense "seq/dense"
    "colon_layer",  # Dense "dense:1"
    "space_layer",  # Dense "my dense"
    "dot_dash_layer",  # Dense "dense.v1-a"
    "angle_layer",  # Dense "dense>1"
    "backslash_layer",  # Dense "dense\\1"
    "unicode_layer",  # Dense "dénse"
]
APPLICATIONS_4 = {
    "densenet201": ("DenseNet201", (32, 32, 3)),
    "mobilenet_v3_small": ("MobileNetV3Small", (32, 32, 3)),
}
CONFIGS_4 = [
    "scoped_encoder",  # "encoder/layer_0/attention", LayerNormalization "encoder/layer_0/norm"
    "towers",  # Conv2D "tower_1/conv1x1", "tower_2/conv3x3", Concatenate "mixed/concat"
    "backbone",  # a Sequential "backbone" holding Conv2D "backbone/conv", then Dense
    "model_name_only",  # plain layer names, the model "classifier/v2"
    "wrapped_rnn",  # Bidirectional(LSTM "fw/lstm")
    "td_scoped",  # TimeDistributed "td" of Dense "td/dense"
    "punctuated",  # names with '.', '-' and '>' only (no '/')
]


def _dense_model(keras, name, model_name=None):
    inp = keras.Input((4,))
    out = keras.layers.Dense(2, name=name)(inp)
    return keras.Model(inp, out, name=model_name) if model_name else keras.Model(inp, out)


def config_model_3(keras, name):
    L = keras.layers
    plain = {
        "slash_layer": "block1/dense",
        "colon_layer": "dense:1",
        "space_layer": "my dense",
        "dot_dash_layer": "dense.v1-a",
        "angle_layer": "dense>1",
        "backslash_layer": "dense\\1",
        "unicode_layer": "d\u00e9nse",
    }
    if name in plain:
        return _dense_model(keras, plain[name])
    if name == "slash_input":
        inp = keras.Input((4,), name="in/put")
        return keras.Model(inp, L.Dense(2)(inp))
    if name == "slash_model":
        return _dense_model(keras, "dense_out", model_name="net/v1")
    if name in ("slash_in_nested", "slash_nested_model"):
        inner_in = keras.Input((4,))
        layer = "inner/dense" if name == "slash_in_nested" else "inner_dense"
        inner = keras.Model(inner_in, L.Dense(3, name=layer)(inner_in),
                            name="inner" if name == "slash_in_nested" else "tower/a")  # fmt: skip
        inp = keras.Input((4,))
        return keras.Model(inp, L.Dense(2)(inner(inp)))
    if name == "slash_sequential":
        return keras.Sequential([keras.Input((4,)), L.Dense(3, name="seq/dense"), L.Dense(2)])
    raise KeyError(name)


def config_model_4(keras, name):
    L = keras.layers
    if name == "scoped_encoder":
        inp = keras.Input((6, 8))
        attended = L.MultiHeadAttention(2, 4, name="encoder/layer_0/attention")(inp, inp)
        x = L.Add(name="encoder/layer_0/add")([inp, attended])
        x = L.LayerNormalization(name="encoder/layer_0/norm")(x)
        x = L.GlobalAveragePooling1D()(x)
        return keras.Model(inp, L.Dense(2, name="head/logits")(x))
    if name == "towers":
        inp = keras.Input((16, 16, 3))
        a = L.Conv2D(4, 1, name="tower_1/conv1x1")(inp)
        b = L.Conv2D(4, 3, padding="same", name="tower_2/conv3x3")(inp)
        x = L.Concatenate(name="mixed/concat")([a, b])
        x = L.GlobalMaxPooling2D()(x)
        return keras.Model(inp, L.Dense(3)(x))
    if name == "backbone":
        backbone = keras.Sequential(
            [keras.Input((16, 16, 3)), L.Conv2D(4, 3, name="backbone/conv"),
             L.GlobalAveragePooling2D(name="backbone/pool")], name="backbone")  # fmt: skip
        inp = keras.Input((16, 16, 3))
        return keras.Model(inp, L.Dense(2, name="classifier")(backbone(inp)))
    if name == "model_name_only":
        inp = keras.Input((8,))
        x = L.Dense(4, activation="relu", name="hidden")(inp)
        return keras.Model(inp, L.Dense(2, name="logits")(x), name="classifier/v2")
    if name == "wrapped_rnn":
        inp = keras.Input((5, 3))
        x = L.Bidirectional(L.LSTM(4, name="fw/lstm"), name="bidir")(inp)
        return keras.Model(inp, L.Dense(1)(x))
    if name == "td_scoped":
        inp = keras.Input((5, 3))
        x = L.TimeDistributed(L.Dense(4, name="td/dense"), name="td")(inp)
        x = L.Flatten()(x)
        return keras.Model(inp, L.Dense(2)(x))
    if name == "punctuated":
        inp = keras.Input((8,), name="input.features")
        x = L.Dense(4, name="hidden-1.relu")(inp)
        x = L.Dense(4, name="hidden.2")(x)
        return keras.Model(inp, L.Dense(2, name="out>logits")(x), name="mlp-v1.0")
    raise KeyError(name)
