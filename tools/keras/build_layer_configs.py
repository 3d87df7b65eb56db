"""What each Keras 3's legacy H5 loader does with each built-in layer's config as Keras 2
writes it, measured per layer class and config feature.

    python3 tools/keras/build_layer_configs.py make --writer 2.15.1=PYTHON [...]
    python3 tools/keras/build_layer_configs.py load --keras 3.0.5=SITE [...] [--python PY]
    .venv/bin/python tools/keras/build_layer_configs.py pack

make: in a TensorFlow virtualenv (its PYTHON; tf.keras is Keras 2 there), for every layer
      class of SPECS and every setting of VARIANTS the class takes, one model, an Input
      and that one layer, saved as H5 (`model.save(path.h5)`, weights built):
      build/keras/layer-configs/tf<version>/<Class>@<variant>.h5, and cases.json (class,
      variant, the layer's config as written, or why Keras 2 could not build it).
      ONLY_VARIANTS=label,... makes the defaults and those settings only (a setting
      measured after the table was packed; then load and add that writer folder).
load: in a Keras 3 runtime (PYTHON with the wheel unpacked by `pip install --no-deps
      --target SITE keras==3.X` on its path, KERAS_BACKEND=jax, the way
      tools/keras/build_objects.py measures Keras 3), each file once:
      `keras.models.load_model(path, compile=False)`, the path every Keras 3 takes for a
      Keras 2 H5 file (legacy_h5_format.load_model_from_hdf5: model_from_config, then
      load_weights_from_hdf5_group). A failure is placed: "rebuild" when
      `legacy.saving.saving_utils.model_from_config` alone fails on the file's config (in
      the legacy-config scope load_model opens), "weights" otherwise. Files are tried in
      groups first (child_load). Rows:
      build/keras/layer-configs/rows/keras-<version>@tf<writer>.jsonl.
pack: (the repository's Python) splits every written layer config into its features
      (`worker.formats.keras_features.config_features`, what the worker reads from a
      file) and writes worker/catalog/data/keras_layer_configs.json.gz: per Keras 3
      minor, class and feature, "loads" (a file whose layer has the feature loaded) or
      the error and stage of a file that failed where every other feature of its layer
      loaded elsewhere (the feature is the one the failure is charged to).
add: (the repository's Python) adds writer folders' rows (--writers keras-2.3.1) to the
      packed table, charged the same way (layer_config_table.add_writers): for a writer
      measured after the table was packed, whose other writers' rows are not at hand.
reattribute: (the repository's Python) charges the failures of the packed table by what
      each error names (layer_config_table.charged), in place: for a table packed before
      that attribution, whose rows are no longer at hand; pack does the same from rows.

make and load run under any Python 3.7+ with the standard library (and the runtime's
Keras) only; pack imports the worker.
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
REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(REPO, "build", "keras", "layer-configs")
DATA = os.path.join(REPO, "worker", "catalog", "data", "keras_layer_configs.json.gz")

# class -> (input, constructor arguments). Inputs: shapes without the batch axis; "two"
# is two inputs of (6,) (merge layers), "qv" a query (4, 3) and a value (5, 3).
SPECS = {
    "Dense": ("v6", {"units": 3}),
    "Activation": ("v6", {"activation": "relu"}),
    "Dropout": ("v6", {"rate": 0.5}),
    "AlphaDropout": ("v6", {"rate": 0.5}),
    "GaussianNoise": ("v6", {"stddev": 0.1}),
    "GaussianDropout": ("v6", {"rate": 0.5}),
    "ActivityRegularization": ("v6", {"l1": 0.01}),
    "BatchNormalization": ("v6", {}),
    "LayerNormalization": ("v6", {}),
    "UnitNormalization": ("v6", {}),
    "ReLU": ("v6", {}),
    "LeakyReLU": ("v6", {}),
    "PReLU": ("v6", {}),
    "ELU": ("v6", {}),
    "ThresholdedReLU": ("v6", {}),
    "Softmax": ("v6", {}),
    "RepeatVector": ("v6", {"n": 2}),
    "Reshape": ("v6", {"target_shape": (2, 3)}),
    "Masking": ("s53", {}),
    "Rescaling": ("v6", {"scale": 0.5, "offset": 0.1}),
    "Normalization": ("v6", {"mean": 0.5, "variance": 2.0}),
    "Discretization": ("v6", {"bin_boundaries": [0.0, 1.0]}),
    "Flatten": ("s53", {}),
    "Permute": ("s53", {"dims": (2, 1)}),
    "Embedding": ("i5", {"input_dim": 10, "output_dim": 3}),
    "Conv1D": ("s53", {"filters": 2, "kernel_size": 2}),
    "Conv1DTranspose": ("s53", {"filters": 2, "kernel_size": 2}),
    "SeparableConv1D": ("s53", {"filters": 2, "kernel_size": 2}),
    "DepthwiseConv1D": ("s53", {"kernel_size": 2}),
    "LocallyConnected1D": ("s53", {"filters": 2, "kernel_size": 2}),
    "MaxPooling1D": ("s53", {}),
    "AveragePooling1D": ("s53", {}),
    "GlobalMaxPooling1D": ("s53", {}),
    "GlobalAveragePooling1D": ("s53", {}),
    "UpSampling1D": ("s53", {}),
    "ZeroPadding1D": ("s53", {}),
    "Cropping1D": ("s53", {}),
    "SpatialDropout1D": ("s53", {"rate": 0.5}),
    "SimpleRNN": ("s53", {"units": 2}),
    "GRU": ("s53", {"units": 2}),
    "LSTM": ("s53", {"units": 2}),
    "Conv2D": ("i883", {"filters": 2, "kernel_size": 3}),
    "Conv2DTranspose": ("i883", {"filters": 2, "kernel_size": 3}),
    "SeparableConv2D": ("i883", {"filters": 2, "kernel_size": 3}),
    "DepthwiseConv2D": ("i883", {"kernel_size": 3}),
    "LocallyConnected2D": ("i883", {"filters": 2, "kernel_size": 3}),
    "MaxPooling2D": ("i883", {}),
    "AveragePooling2D": ("i883", {}),
    "GlobalMaxPooling2D": ("i883", {}),
    "GlobalAveragePooling2D": ("i883", {}),
    "UpSampling2D": ("i883", {}),
    "ZeroPadding2D": ("i883", {}),
    "Cropping2D": ("i883", {"cropping": 1}),
    "SpatialDropout2D": ("i883", {"rate": 0.5}),
    "Resizing": ("i883", {"height": 4, "width": 4}),
    "CenterCrop": ("i883", {"height": 4, "width": 4}),
    "Conv3D": ("w4442", {"filters": 2, "kernel_size": 2}),
    "Conv3DTranspose": ("w4442", {"filters": 2, "kernel_size": 2}),
    "MaxPooling3D": ("w4442", {}),
    "AveragePooling3D": ("w4442", {}),
    "GlobalMaxPooling3D": ("w4442", {}),
    "GlobalAveragePooling3D": ("w4442", {}),
    "UpSampling3D": ("w4442", {}),
    "ZeroPadding3D": ("w4442", {}),
    "Cropping3D": ("w4442", {}),
    "SpatialDropout3D": ("w4442", {"rate": 0.5}),
    "ConvLSTM1D": ("t4", {"filters": 2, "kernel_size": 2}),
    "ConvLSTM2D": ("t443", {"filters": 2, "kernel_size": 2}),
    "Add": ("two", {}),
    "Subtract": ("two", {}),
    "Multiply": ("two", {}),
    "Average": ("two", {}),
    "Maximum": ("two", {}),
    "Minimum": ("two", {}),
    "Concatenate": ("two", {}),
    "Dot": ("two", {"axes": 1}),
    "Attention": ("qv", {}),
    "AdditiveAttention": ("qv", {}),
    "MultiHeadAttention": ("qv", {"num_heads": 2, "key_dim": 2}),
    "Bidirectional": ("s53", {"layer": ("LSTM", {"units": 2})}),
    "TimeDistributed": ("s53", {"layer": ("Dense", {"units": 2})}),
    "RNN": ("s53", {"cell": ("LSTMCell", {"units": 2})}),
}
SHAPES = {
    "v6": (6,),
    "s53": (5, 3),
    "i5": (5,),
    "i883": (8, 8, 3),
    "w4442": (4, 4, 4, 2),
    "t4": (3, 4, 2),
    "t443": (3, 4, 4, 2),
}
# Settings that change what Keras 2 writes, each applied to every class that takes the
# arguments it sets. Objects: (module, class, arguments); "flip:<key>" flips a boolean the
# default config holds; "value:<key>=<v>" sets an enumerated value.
OBJECT_VARIANTS = [
    ("dtype=mixed_float16", "dtype", "mixed_float16"),
    ("dtype=mixed_bfloat16", "dtype", "mixed_bfloat16"),
    ("dtype=float64", "dtype", "float64"),
    ("dtype=float16", "dtype", "float16"),
    ("regularizer=L2", "_regularizer", ("regularizers", "l2", [0.01])),
    ("regularizer=L1", "_regularizer", ("regularizers", "l1", [0.01])),
    ("regularizer=L1L2", "_regularizer", ("regularizers", "L1L2", {"l1": 0.01, "l2": 0.01})),
    ("constraint=MaxNorm", "_constraint", ("constraints", "MaxNorm", {"max_value": 2.0})),
    ("constraint=NonNeg", "_constraint", ("constraints", "NonNeg", {})),
    ("constraint=UnitNorm", "_constraint", ("constraints", "UnitNorm", {})),
    ("constraint=MinMaxNorm", "_constraint", ("constraints", "MinMaxNorm", {})),
    ("constraint=RadialConstraint", "_constraint", ("constraints", "RadialConstraint", {})),
    ("initializer=he_normal", "_initializer", "he_normal"),
    ("initializer=he_uniform", "_initializer", "he_uniform"),
    ("initializer=lecun_uniform", "_initializer", "lecun_uniform"),
    ("initializer=glorot_normal", "_initializer", "glorot_normal"),
    ("initializer=zeros", "_initializer", "zeros"),
    ("initializer=ones", "_initializer", "ones"),
    ("initializer=VarianceScaling", "_initializer",
     ("initializers", "VarianceScaling",
      {"scale": 2.0, "mode": "fan_out", "distribution": "uniform", "seed": 1})),
    ("initializer=Orthogonal", "_initializer", ("initializers", "Orthogonal", {"gain": 0.5})),
    ("initializer=Constant", "_initializer", ("initializers", "Constant", {"value": 0.5})),
    ("initializer=RandomNormal", "_initializer",
     ("initializers", "RandomNormal", {"stddev": 0.1, "seed": 1})),
    ("initializer=RandomUniform", "_initializer",
     ("initializers", "RandomUniform", {"minval": -0.1, "maxval": 0.1})),
    ("initializer=TruncatedNormal", "_initializer",
     ("initializers", "TruncatedNormal", {"stddev": 0.1})),
    ("activation=swish", "activation", "swish"),
    ("activation=LeakyReLU", "activation", ("layers", "LeakyReLU", {})),
    ("activation=ReLU", "activation", ("layers", "ReLU", {"max_value": 6.0})),
]  # fmt: skip
VALUE_VARIANTS = [
    ("padding", "same"),
    ("padding", "causal"),
    ("data_format", "channels_first"),
    ("implementation", 1),
    ("implementation", 2),
    ("merge_mode", "sum"),
    ("merge_mode", None),
    ("interpolation", "bilinear"),
    ("dilation_rate", 2),
    ("strides", 2),
    ("depth_multiplier", 2),
    ("groups", 2),
    ("axis", [1]),
    ("axis", -1),
    ("recurrent_dropout", 0.1),
    ("dropout", 0.1),
    ("activity_regularizer", ("regularizers", "l2", [0.01])),
    ("input_length", 5),
    ("mask_zero", True),
]


def _builders(keras):
    """Constructors of a setting's value: names stay strings (Keras serializes them as
    its class's config), objects are built."""

    def build(value):
        if isinstance(value, tuple):
            module, name, args = value
            factory = getattr(getattr(keras, module), name)
            return factory(*args) if isinstance(args, list) else factory(**args)
        return value

    return build


def _input(keras, shape, batch=None, dtype=None):
    """One Input; standalone Keras 2 takes a fixed batch as `batch_shape` only."""
    extra = {"dtype": dtype} if dtype else {}
    if batch is None:
        return keras.Input(shape, **extra)
    try:
        return keras.Input(shape, batch_size=batch, **extra)
    except TypeError:
        return keras.Input(batch_shape=(batch,) + tuple(shape), **extra)


def _inputs(keras, kind, batch=None):
    """The model's inputs; a stateful RNN needs a fixed batch (`batch`)."""
    if kind == "two":
        return [_input(keras, (6,), batch), _input(keras, (6,), batch)]
    if kind == "qv":
        return [_input(keras, (4, 3), batch), _input(keras, (5, 3), batch)]
    if kind == "i5":
        return _input(keras, SHAPES[kind], batch, "int32")
    return _input(keras, SHAPES[kind], batch)


def layer_class(keras, name):
    """The class as that Keras exports it: keras.layers, or (Keras 2.3-2.5) the
    experimental preprocessing module."""
    found = getattr(keras.layers, name, None)
    if found is None:
        experimental = getattr(getattr(keras.layers, "experimental", None), "preprocessing", None)
        found = getattr(experimental, name, None)
    return found


def _layer(keras, name, args):
    args = dict(args)
    for key in ("layer", "cell"):
        if key in args:
            inner, inner_args = args[key]
            args[key] = layer_class(keras, inner)(**inner_args)
    return layer_class(keras, name)(**args)


def _call(layer, inputs, kind):
    if kind == "qv" and type(layer).__name__ == "MultiHeadAttention":
        return layer(inputs[0], inputs[1])
    return layer(inputs)


def _config_of(keras, name, args, kind):
    """The layer's config as Keras 2 writes it, and the model (None when it cannot build)."""
    layer = _layer(keras, name, args)
    inputs = _inputs(keras, kind, 2 if args.get("stateful") else None)
    outputs = _call(layer, inputs, kind)
    model = keras.Model(inputs, outputs)
    return layer.get_config(), model


def _variants(keras, name, default):
    """(variant name, extra constructor arguments) for every setting the class takes."""
    build = _builders(keras)
    out = []
    for label, key, value in OBJECT_VARIANTS:
        keys = [k for k in default if (k == key or (key.startswith("_") and k.endswith(key)))]
        if key == "dtype" and "dtype" not in default:
            keys = ["dtype"]
        if not keys:
            continue
        out.append((label, {k: value for k in keys}))
    for key, value in sorted(default.items()):
        if isinstance(value, bool):
            out.append(("flip:%s" % key, {key: not value}))
    for key, value in VALUE_VARIANTS:
        if key in default and default[key] != value:
            out.append(("value:%s=%s" % (key, json.dumps(value, default=str)), {key: value}))
    built = []
    for label, extra in out:
        try:
            built.append((label, {k: build(v) for k, v in extra.items()}))
        except AttributeError:  # an object this Keras does not have (standalone 2.x)
            continue
    return built


def child_make(out_dir, defaults_only=False, standalone=False):
    import tensorflow as tf

    keras = tf.keras
    if standalone:  # the keras package (Keras 2.0 to 2.3) on its TensorFlow backend
        import keras
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    for name, (kind, args) in sorted(SPECS.items()):
        if layer_class(keras, name) is None:
            cases.append({"class": name, "variant": "default", "skipped": "no such class"})
            continue
        try:
            default, _ = _config_of(keras, name, args, kind)
        except Exception as e:
            cases.append({"class": name, "variant": "default", "skipped": _said(e)})
            continue
        variants = [] if defaults_only else _variants(keras, name, default)
        only = os.environ.get("ONLY_VARIANTS")  # a comma-separated subset (a later setting)
        if only:
            variants = [(label, extra) for label, extra in variants if label in only.split(",")]
        for label, extra in [("default", {})] + variants:
            keras.backend.clear_session()
            case = {"class": name, "variant": label}
            try:
                if "dtype" in extra and str(extra["dtype"]).startswith("mixed"):
                    extra = dict(extra, dtype=keras.mixed_precision.Policy(extra["dtype"]))
                _, model = _config_of(keras, name, dict(args, **extra), kind)
                path = os.path.join(out_dir, "%s@%s.h5" % (name, _safe(label)))
                model.save(path)
                model_config = json.loads(model.to_json())
                case.update(file=os.path.basename(path), config=_entry(model_config, name))
            except Exception as e:
                case["skipped"] = _said(e)
            cases.append(case)
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        made = {"keras": keras.__version__ if standalone else _keras_version(tf),
                "tensorflow": tf.__version__, "python": sys.version.split()[0], "cases": cases}  # fmt: skip
        if standalone:  # the writer is that Keras, not TensorFlow's
            made.update(writer="keras-" + keras.__version__, standalone=True)
        json.dump(made, f, indent=1, default=str)


def _keras_version(tf):
    """tf.keras's version: its own attribute, or (TF 2.6+, the keras package) keras's."""
    found = getattr(tf.keras, "__version__", None)
    if found is None:
        import keras

        found = keras.__version__
    return found


def _entry(model_config, name):
    """The one layer's entry of the model config (the layer that is not an InputLayer)."""
    for entry in model_config["config"]["layers"]:
        if entry["class_name"] != "InputLayer":
            return entry
    raise ValueError("no %s in the model config" % name)


def _safe(label):
    return "".join(c if c.isalnum() or c in "=-_." else "_" for c in label)


def _said(e):
    text = "%s: %s" % (type(e).__name__, e)
    return text.strip().splitlines()[0][:400] if text.strip() else type(e).__name__


# A failing group this small is tried case by case rather than halved (failures cluster:
# one setting fails in every class, so halving an all-failing block costs twice as much).
SMALL_GROUP = 8


def child_load(folders, out, defaults_only=False):
    """Every case of every writer, judged by group testing: a merged file of many cases'
    layers (`_merge`) that loads says each of them loads; one that fails is split in two,
    down to a single case, whose own file is loaded (its error is the file's own). The
    defaults go first; a class whose default fails is not tried with other settings (row
    `skipped`): that class fails whatever the setting."""
    import tempfile
    import warnings

    warnings.filterwarnings("ignore")
    import keras
    from keras.src.legacy.saving import saving_options, saving_utils

    tmp = tempfile.mkdtemp(prefix="layer-configs-")
    counter = [0]

    def rebuild_fails(path):
        import h5py

        with h5py.File(path, "r") as f:
            raw = f.attrs["model_config"]
        config = json.loads(raw.decode("utf-8") if hasattr(raw, "decode") else raw)
        try:
            with saving_options.keras_option_scope(use_legacy_config=True):
                saving_utils.model_from_config(config)
        except Exception as e:
            return _said(e)
        return None

    def load(path):
        keras.backend.clear_session()
        counter[0] += 1
        try:
            keras.models.load_model(path, compile=False)
        except Exception as e:
            return e
        return None

    def test(folder, cases, results):
        if len(cases) == 1:
            case = cases[0]
            path = os.path.join(folder, case["file"])
            e = load(path)
            row = {"ok": e is None}
            if e is not None:
                row.update(error=_said(e), cause=_cause(e))
                row["stage"] = "rebuild" if rebuild_fails(path) else "weights"
            results[case["file"]] = row
            return
        merged = os.path.join(tmp, "merged.h5")
        _merge([os.path.join(folder, c["file"]) for c in cases], merged)
        if load(merged) is None:
            for case in cases:
                results[case["file"]] = {"ok": True, "group": len(cases)}
            return
        if len(cases) <= SMALL_GROUP:
            for case in cases:
                test(folder, [case], results)
            return
        half = len(cases) // 2
        test(folder, cases[:half], results)
        test(folder, cases[half:], results)

    with open(out, "w") as rows:
        for folder in folders:
            with open(os.path.join(folder, "cases.json")) as f:
                made = json.load(f)
            cases = [c for c in made["cases"] if "file" in c]
            results = {}
            defaults = [c for c in cases if c["variant"] == "default"]
            test(folder, defaults, results)
            failed = set(c["class"] for c in defaults if not results[c["file"]]["ok"])
            variants = sorted(
                (
                    c
                    for c in cases
                    if c["variant"] != "default" and c["class"] not in failed and not defaults_only
                ),
                key=lambda c: (c["variant"], c["class"]),
            )
            by_variant = {}
            for case in variants:
                by_variant.setdefault(case["variant"], []).append(case)
            for _, group in sorted(by_variant.items()):
                test(folder, group, results)
            for case in cases:
                row = {"writer": made.get("writer", made["tensorflow"]), "file": case["file"]}
                if case["file"] in results:
                    row.update(results[case["file"]])
                elif defaults_only:
                    row.update(ok=None, skipped="not loaded (--defaults-only)")
                else:
                    row.update(ok=None, skipped="the class's default config fails")
                rows.write(json.dumps(row, sort_keys=True) + "\n")
    print("%d loads" % counter[0])


def _merge(paths, out):
    """One H5 model holding the layers of every file in `paths` side by side (each file
    is one writer's Input(s) and one layer; names get the file's index as a prefix): the
    configs' layer lists, inputs and outputs concatenated, each layer's weight group
    copied under its new name, in the order the merged config lists the layers (the
    order Keras 3's legacy loader matches weights by)."""
    import h5py

    layers, inputs, outputs, names = [], [], [], []
    first = None
    with h5py.File(out, "w") as dst:
        weights = dst.create_group("model_weights")
        for index, path in enumerate(paths):
            with h5py.File(path, "r") as src:
                raw = src.attrs["model_config"]
                config = json.loads(raw.decode("utf-8") if hasattr(raw, "decode") else raw)
                if first is None:
                    first = src
                    for key in ("keras_version", "backend"):
                        if key in src.attrs:
                            dst.attrs[key] = src.attrs[key]
                own = set(e["name"] for e in config["config"]["layers"])
                prefix = "c%d_" % index

                def rename(value, own=own, prefix=prefix):
                    if isinstance(value, str) and value in own:
                        return prefix + value
                    if isinstance(value, list):
                        return [rename(v) for v in value]
                    if isinstance(value, dict):
                        return {k: rename(v) for k, v in value.items()}
                    return value

                for entry in config["config"]["layers"]:
                    entry = dict(entry)
                    entry["name"] = prefix + entry["name"]
                    entry["config"] = dict(entry["config"], name=entry["name"])
                    entry["inbound_nodes"] = rename(entry.get("inbound_nodes", []))
                    layers.append(entry)
                inputs.extend(rename(config["config"]["input_layers"]))
                outputs.extend(rename(config["config"]["output_layers"]))
                group = src["model_weights"]
                for name in group.attrs["layer_names"]:
                    name = name.decode() if hasattr(name, "decode") else name
                    src.copy(group[name], weights, name=prefix + name)
                    names.append((prefix + name).encode())
        weights.attrs["layer_names"] = names
        for key in ("keras_version", "backend"):
            if key in dst.attrs:
                weights.attrs[key] = dst.attrs[key]
        model = {
            "class_name": "Functional",
            "config": {"name": "merged", "layers": layers, "input_layers": inputs,
                       "output_layers": outputs},
        }  # fmt: skip
        dst.attrs["model_config"] = json.dumps(model)


def _cause(e):
    """What Keras 3's wrappers ("could not be deserialized properly") say underneath."""
    inner = e
    while inner.__cause__ is not None or inner.__context__ is not None:
        inner = inner.__cause__ or inner.__context__
    return _said(inner)


# --- the driver -----------------------------------------------------------------------------


def cmd_make(args):
    for spec in args.writer:
        version, python = spec.split("=", 1)
        env = None
        if args.standalone:  # VERSION=PYTHON:SITE, the keras package unpacked in SITE
            python, site = python.split(":", 1)
            env = dict(os.environ, PYTHONPATH=site)
        out = os.path.join(BUILD, ("keras-" if args.standalone else "tf") + version)
        start = time.time()
        command = [python, os.path.abspath(__file__), "_make", out]
        command += ["--defaults-only"] if args.defaults_only else []
        subprocess.check_call(command + (["--standalone"] if args.standalone else []), env=env)
        print("made %s in %.0fs" % (os.path.basename(out), time.time() - start))


def cmd_load(args):
    """Rows per Keras version and writer: rows/keras-<version>@tf<writer>.jsonl."""
    folders = sorted(d for d in os.listdir(BUILD) if d.startswith(("tf", "keras-")))
    if args.writers:
        folders = [d for d in folders if d in args.writers.split(",")]
    os.makedirs(os.path.join(BUILD, "rows"), exist_ok=True)
    for spec in args.keras:
        version, site = spec.split("=", 1)
        env = dict(os.environ, PYTHONPATH=site, KERAS_BACKEND="jax")
        if args.together:  # one interpreter for every writer: one Keras import, not one each
            out = os.path.join(BUILD, "rows", "keras-%s@%s.jsonl" % (version, "+".join(folders)))
            command = [args.python, os.path.abspath(__file__), "_load", out]
            command += ["--defaults-only"] if args.defaults_only else []
            subprocess.check_call(command + [os.path.join(BUILD, f) for f in folders], env=env)
            continue
        for folder in folders:
            out = os.path.join(BUILD, "rows", "keras-%s@%s.jsonl" % (version, folder))
            start = time.time()
            command = [args.python, os.path.abspath(__file__), "_load", out]
            command += ["--defaults-only"] if args.defaults_only else []
            subprocess.check_call(command + [os.path.join(BUILD, folder)], env=env)
            print("keras %s, %s: %.0fs" % (version, folder, time.time() - start))


def cmd_pack(args):
    sys.path.insert(0, REPO)
    from tools.keras.layer_config_table import pack

    pack(BUILD, DATA)


def cmd_add(args):
    sys.path.insert(0, REPO)
    from tools.keras.layer_config_table import add_writers

    add_writers(BUILD, DATA, args.writers.split(","))


def cmd_reattribute(args):
    import gzip

    sys.path.insert(0, REPO)
    from tools.keras.layer_config_table import ATTRIBUTION, reattribute

    with open(DATA, "rb") as f:
        document = json.loads(gzip.decompress(f.read()))
    document = reattribute(document)
    document["attribution"] = ATTRIBUTION
    note = "; each failure charged to what its error names (reattribute)"
    if not document["source"]["how"].endswith(note):
        document["source"]["how"] += note
    raw = json.dumps(document, sort_keys=True, indent=None, separators=(",", ":")).encode()
    with open(DATA, "wb") as f:
        f.write(gzip.compress(raw, mtime=0))
    print("reattributed %s" % DATA)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    make = sub.add_parser("make")
    make.add_argument("--writer", action="append", default=[], help="VERSION=PYTHON")
    make.add_argument("--defaults-only", action="store_true",
                      help="each class's default config only (older writers)")  # fmt: skip
    make.add_argument("--standalone", action="store_true",
                      help="the keras package (2.0-2.3): --writer VERSION=PYTHON:SITE")  # fmt: skip
    load = sub.add_parser("load")
    load.add_argument("--keras", action="append", default=[], help="VERSION=SITE")
    load.add_argument("--python", default=sys.executable)
    load.add_argument("--writers", default="",
                      help="tf2.15.1,keras-2.3.1: writer folders (default: every one)")  # fmt: skip
    load.add_argument("--defaults-only", action="store_true", help="each class's default only")
    load.add_argument("--together", action="store_true", help="every writer in one interpreter")
    sub.add_parser("pack")
    sub.add_parser("reattribute")
    add = sub.add_parser("add")
    add.add_argument("--writers", required=True, help="keras-2.3.1,...: writer folders")
    child = sub.add_parser("_make")
    child.add_argument("out")
    child.add_argument("--defaults-only", action="store_true")
    child.add_argument("--standalone", action="store_true")
    child2 = sub.add_parser("_load")
    child2.add_argument("out")
    child2.add_argument("folders", nargs="+")
    child2.add_argument("--defaults-only", action="store_true")
    args = parser.parse_args()
    if args.command == "_make":
        child_make(args.out, args.defaults_only, args.standalone)
    elif args.command == "_load":
        child_load(args.folders, args.out, args.defaults_only)
    elif args.command == "make":
        cmd_make(args)
    elif args.command == "load":
        cmd_load(args)
    elif args.command == "pack":
        cmd_pack(args)
    elif args.command == "add":
        cmd_add(args)
    elif args.command == "reattribute":
        cmd_reattribute(args)
    else:
        parser.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
