"""Sequential H5 files with and without a declared input, held out from
`keras.unbuilt-sequential`: written by several TensorFlow releases, loaded by others.

    python3 tools/keras/unbuilt_models.py make  [--producers 1.13.2,2.8.4] [--models lazy_fit]
    python3 tools/keras/unbuilt_models.py load  [--consumers 1.15.5,keras-3.0.5,tf-keras-2.21]
    python3 tools/keras/unbuilt_models.py write

Releases are named as tools/keras/build_matrix.py names them (TFENVS/<version>, a Keras 3
wheel "keras-3.0.5" under KERAS_SITES run by KERAS_PYTHON on jax, tf-keras "tf-keras-2.21"
in KERASENVS/tfk-2.21), and its runners are used: `make` runs this file's `_make` in the
producer's virtualenv, `load` runs build_matrix.py's `_load_batch` (one interpreter per
consumer, `load_model(path, compile=False)`, then the model on a fixed input).

make: in each producer (PRODUCERS), each model of MODELS is built with fixed seeds, run
      once (`predict`, or `compile` and one epoch of `fit` for the compiled ones), so its
      weights exist, and saved by `model.save(<name>.h5)` under build/keras-unbuilt/
      models/tf<minor>/; build/keras-unbuilt/models.json says how each was made and what
      the saved config says (the first layer's class and keys, `build_input_shape`).
load: one row per (consumer, file) into build/keras-unbuilt/rows/<consumer>.jsonl: `ok`
      (load_model returned), `error` (its first line; `cause`: what Keras 3's wrappers
      say underneath), `runs` (the model then ran on the
      file's input; `run_error`), `matches_producer` (the producer's output).
write: the files, models.json and the rows into tests/fixtures/keras-unbuilt/ (models/,
      models.json, matrix.jsonl), with their source records.

Runs under any Python 3.7+ with the standard library only (the child runs in TF 1.13's).
"""

from __future__ import print_function

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import build_matrix as bm  # noqa: E402  (its releases, runners and inputs)

REPO = bm.REPO
BUILD = os.path.join(REPO, "build", "keras-unbuilt")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "keras-unbuilt")
PRODUCERS = ["1.13.2", "1.14.0", "1.15.5", "2.0.4", "2.3.4", "2.8.4"]
CONSUMERS = ["1.15.5", "2.4.4", "2.8.4", "2.15.1", "keras-3.0.5", "keras-3.15.1",
             "tf-keras-2.21"]  # fmt: skip

F4 = {"shape": [2, 4], "dtype": "float32"}
# name -> (what it is, the input it is run on; "fit": compiled and fitted once)
MODELS = {
    # an input shape on the first layer, of different classes
    "dense_first": ("Dense(3, input_shape=(4,)), Dense(2); predict", F4),
    "dense_first_fit": ("Dense(3, input_shape=(4,)), Dense(2); compiled, fit", F4),
    "conv2d_first": (
        "Conv2D(2, 2, input_shape=(4, 4, 1)), Flatten, Dense(2); predict",
        {"shape": [2, 4, 4, 1], "dtype": "float32"},
    ),
    "embedding_first": (
        "Embedding(10, 3, input_shape=(5,)), GlobalAveragePooling1D, Dense(2); predict",
        {"shape": [2, 5], "dtype": "int32", "modulo": 10},
    ),
    "lstm_first": (
        "LSTM(3, input_shape=(5, 2)), Dense(2); predict",
        {"shape": [2, 5, 2], "dtype": "float32"},
    ),
    "bn_first": ("BatchNormalization(input_shape=(4,)), Dense(2); predict", F4),
    # no input shape anywhere: built by running it
    "lazy_predict": ("Dense(3), Dense(2), built by predict", F4),
    "lazy_fit": ("Dense(3), Dense(2), built by compile and fit", F4),
    "lazy_conv2d_predict": (
        "Conv2D(2, 2), Flatten, Dense(2), built by predict",
        {"shape": [2, 4, 4, 1], "dtype": "float32"},
    ),
    "lazy_embedding_fit": (
        "Embedding(10, 3), GlobalAveragePooling1D, Dense(2), built by compile and fit",
        {"shape": [2, 5], "dtype": "int32", "modulo": 10},
    ),
    "lazy_flatten_predict": (
        "Flatten, Dense(2), built by predict",
        {"shape": [2, 2, 3], "dtype": "float32"},
    ),
    # an input declared as its own entry
    "input_layer": ("InputLayer(input_shape=(4,)), Dense(3), Dense(2); predict", F4),
    "keras_input": ("keras.Input(shape=(4,)), Dense(3), Dense(2); predict", F4),
    # weightless layers only
    "weightless_shaped": (
        "Flatten(input_shape=(2, 3)), Dropout(0.5), Activation('relu'); predict",
        {"shape": [2, 2, 3], "dtype": "float32"},
    ),
    "weightless_lazy": (
        "Flatten, Dropout(0.5), Activation('relu'), built by predict",
        {"shape": [2, 2, 3], "dtype": "float32"},
    ),
    # a weightless first layer, then weights
    "flatten_first": (
        "Flatten(input_shape=(2, 3)), Dense(2); predict",
        {"shape": [2, 2, 3], "dtype": "float32"},
    ),
    "flatten_first_fit": (
        "Flatten(input_shape=(2, 3)), Dense(2); compiled, fit",
        {"shape": [2, 2, 3], "dtype": "float32"},
    ),
}
# A second round, made after the first one was measured (before any rule change): an
# InputLayer first (TF 1.13 and 1.14 drop it from the config) before other layers:
# weightless only, a weightless first layer, initializers of other names, a nested
# model, and wrappers whose config names no initializer of their own.
F23 = {"shape": [2, 2, 3], "dtype": "float32"}
F52 = {"shape": [2, 5, 2], "dtype": "float32"}
ROUND_2 = {
    "in_weightless": ("InputLayer((2, 3)), Flatten, Dropout(0.5), Activation('relu')", F23),
    "in_flatten_dense": ("InputLayer((2, 3)), Flatten, Dense(2)", F23),
    "in_dropout_dense": ("InputLayer((4,)), Dropout(0.5), Dense(2)", F4),
    "in_bn": ("InputLayer((4,)), BatchNormalization, Dense(2)", F4),
    "in_lstm": ("InputLayer((5, 2)), LSTM(3)", F52),
    "in_embedding": (
        "InputLayer((5,), int32), Embedding(10, 3), GlobalAveragePooling1D, Dense(2)",
        {"shape": [2, 5], "dtype": "int32", "modulo": 10},
    ),
    "in_conv2d": (
        "InputLayer((4, 4, 1)), Conv2D(2, 2), Flatten, Dense(2)",
        {"shape": [2, 4, 4, 1], "dtype": "float32"},
    ),
    "in_dense_fit": ("InputLayer((4,)), Dense(3), Dense(2); compiled, fit", F4),
    "in_nested": ("InputLayer((4,)), Sequential([Dense(3)]), Dense(2)", F4),
    "in_timedist": (
        "InputLayer((5, 4)), TimeDistributed(Dense(2))",
        {"shape": [2, 5, 4], "dtype": "float32"},
    ),
    "in_bidir": ("InputLayer((5, 2)), Bidirectional(LSTM(3))", F52),
    "in_prelu": ("InputLayer((4,)), PReLU, Dense(2)", F4),
}
MODELS.update(ROUND_2)


# --- inside a TensorFlow virtualenv --------------------------------------------------------


def build(name, keras):
    layers = keras.layers
    if name in ("dense_first", "dense_first_fit"):
        return keras.Sequential([layers.Dense(3, input_shape=(4,)), layers.Dense(2)])
    if name == "conv2d_first":
        return keras.Sequential([layers.Conv2D(2, 2, input_shape=(4, 4, 1)), layers.Flatten(),
                                 layers.Dense(2)])  # fmt: skip
    if name == "embedding_first":
        return keras.Sequential([layers.Embedding(10, 3, input_shape=(5,)),
                                 layers.GlobalAveragePooling1D(), layers.Dense(2)])  # fmt: skip
    if name == "lstm_first":
        return keras.Sequential([layers.LSTM(3, input_shape=(5, 2)), layers.Dense(2)])
    if name == "bn_first":
        return keras.Sequential([layers.BatchNormalization(input_shape=(4,)), layers.Dense(2)])
    if name in ("lazy_predict", "lazy_fit"):
        return keras.Sequential([layers.Dense(3), layers.Dense(2)])
    if name == "lazy_conv2d_predict":
        return keras.Sequential([layers.Conv2D(2, 2), layers.Flatten(), layers.Dense(2)])
    if name == "lazy_embedding_fit":
        return keras.Sequential([layers.Embedding(10, 3), layers.GlobalAveragePooling1D(),
                                 layers.Dense(2)])  # fmt: skip
    if name == "lazy_flatten_predict":
        return keras.Sequential([layers.Flatten(), layers.Dense(2)])
    if name == "input_layer":
        return keras.Sequential([layers.InputLayer(input_shape=(4,)), layers.Dense(3),
                                 layers.Dense(2)])  # fmt: skip
    if name == "keras_input":
        return keras.Sequential([keras.Input(shape=(4,)), layers.Dense(3), layers.Dense(2)])
    if name == "weightless_shaped":
        return keras.Sequential([layers.Flatten(input_shape=(2, 3)), layers.Dropout(0.5),
                                 layers.Activation("relu")])  # fmt: skip
    if name == "weightless_lazy":
        return keras.Sequential([layers.Flatten(), layers.Dropout(0.5),
                                 layers.Activation("relu")])  # fmt: skip
    if name in ("flatten_first", "flatten_first_fit"):
        return keras.Sequential([layers.Flatten(input_shape=(2, 3)), layers.Dense(2)])
    return build_2(name, keras)


def build_2(name, keras):
    """ROUND_2: an InputLayer first."""
    layers = keras.layers
    shapes = {"in_weightless": (2, 3), "in_flatten_dense": (2, 3), "in_lstm": (5, 2),
              "in_embedding": (5,), "in_conv2d": (4, 4, 1), "in_timedist": (5, 4),
              "in_bidir": (5, 2)}  # fmt: skip
    kwargs = {"dtype": "int32"} if name == "in_embedding" else {}
    first = layers.InputLayer(input_shape=shapes.get(name, (4,)), **kwargs)
    rest = {
        "in_weightless": lambda: [
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Activation("relu"),
        ],
        "in_flatten_dense": lambda: [layers.Flatten(), layers.Dense(2)],
        "in_dropout_dense": lambda: [layers.Dropout(0.5), layers.Dense(2)],
        "in_bn": lambda: [layers.BatchNormalization(), layers.Dense(2)],
        "in_lstm": lambda: [layers.LSTM(3)],
        "in_embedding": lambda: [
            layers.Embedding(10, 3),
            layers.GlobalAveragePooling1D(),
            layers.Dense(2),
        ],
        "in_conv2d": lambda: [layers.Conv2D(2, 2), layers.Flatten(), layers.Dense(2)],
        "in_dense_fit": lambda: [layers.Dense(3), layers.Dense(2)],
        "in_nested": lambda: [keras.Sequential([layers.Dense(3)]), layers.Dense(2)],
        "in_timedist": lambda: [layers.TimeDistributed(layers.Dense(2))],
        "in_bidir": lambda: [layers.Bidirectional(layers.LSTM(3))],
        "in_prelu": lambda: [layers.PReLU(), layers.Dense(2)],
    }
    if name not in rest:
        raise SystemExit("unknown model " + name)
    return keras.Sequential([first] + rest[name]())


def saved_config(path):
    """What the file's model_config says: the model's class, its top-level layers' classes,
    the first layer's config keys and input keys, the Sequential's build_input_shape."""
    import h5py

    with h5py.File(path, "r") as f:
        text = f.attrs["model_config"]
        text = text.decode("utf-8") if isinstance(text, bytes) else text
        has_training = "training_config" in f.attrs
    config = json.loads(text)
    own = config.get("config")
    listed = own.get("layers", []) if isinstance(own, dict) else own
    first = listed[0] if listed else {}
    first_config = first.get("config", {})
    said = {
        "model_class": config.get("class_name"),
        "layers": [layer.get("class_name") for layer in listed],
        "first_layer": first.get("class_name"),
        "first_layer_keys": sorted(first_config),
        "training_config": has_training,
    }
    for key in ("batch_input_shape", "batch_shape"):
        if key in first_config:
            said["first_" + key] = first_config[key]
    if isinstance(own, dict):
        said["build_input_shape"] = own.get("build_input_shape", "absent")
    else:  # Keras 2.2's Sequential config is the list of layers itself
        said["build_input_shape"] = "absent (the config is a list of layers)"
    return said


def child_make(args):
    """Build, run once and save one model; print what was written as one JSON line."""
    import numpy as np
    import tensorflow as tf

    keras = tf.keras
    np.random.seed(0)
    if hasattr(tf.random, "set_seed"):
        tf.random.set_seed(0)
    else:  # TF 1.x
        tf.compat.v1.set_random_seed(0)
    _, spec = MODELS[args.model]
    x = bm.model_input(spec)
    entry = {"tensorflow": tf.__version__, "keras": bm.keras_version(), "input": spec}
    try:
        model = build(args.model, keras)
        if args.model.endswith("_fit"):
            model.compile(optimizer="sgd", loss="mse")
            outputs = model.predict(x) if model.built else None
            y = np.zeros_like(outputs) if outputs is not None else np.zeros((2, 2), "float32")
            model.fit(x, y, epochs=1, batch_size=2, verbose=0)
            entry["compiled"] = True
        expected = np.asarray(model.predict(x)).round(5).tolist()
        entry["expected"] = expected
        entry["weights"] = len(model.get_weights())
        path = os.path.join(args.out, args.model + ".h5")
        model.save(path)
        entry["written"] = os.path.isfile(path)
        entry["config"] = saved_config(path)
    except Exception as exc:  # what this release cannot build or write is recorded
        entry["written"] = False
        entry["error"] = bm.one_line(exc).splitlines()[0]
    print(json.dumps(entry))


# --- driver (any Python 3) ------------------------------------------------------------------


def cmd_make(args):
    made = bm.load_json(os.path.join(BUILD, "models.json"), {})
    for release in args.producers:
        out = os.path.join(BUILD, "models", bm.folder_of(release))
        if not os.path.isdir(out):
            os.makedirs(out)
        for model in args.models:
            started = time.time()
            command = [bm.python_of(release), os.path.abspath(__file__), "_make", "--model",
                       model, "--out", out]  # fmt: skip
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=bm.TIMEOUT, check=False)  # fmt: skip
            lines = [l for l in done.stdout.decode("utf-8", "replace").splitlines()
                     if l.startswith("{")]  # fmt: skip
            if not lines:
                tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
                print(release, model, "child failed:", tail, file=sys.stderr)
                continue
            entry = json.loads(lines[-1])
            entry["made"] = MODELS[model][0]
            entry["round"] = 2 if model in ROUND_2 else 1
            key = "%s/%s.h5" % (bm.folder_of(release), model)
            if entry["written"]:
                entry["path"] = "models/" + key
            made[key] = entry
            print(key, "written" if entry["written"] else entry["error"],
                  "%.0f s" % (time.time() - started))  # fmt: skip
    with open(os.path.join(BUILD, "models.json"), "w") as f:
        json.dump(made, f, indent=1, sort_keys=True)


def first_line(text):
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def row_of(consumer, key, entry, result):
    """build_matrix's `_load --declared` answer as this set's row."""
    row = {"consumer": consumer, "model": key, "ok": bool(result.get("loaded"))}
    if not row["ok"]:
        row["error"] = first_line(result.get("error", "no answer"))
        if result.get("cause"):  # what Keras 3's wrappers say underneath
            row["cause"] = first_line(result["cause"])
        return row
    row["runs"] = bool(result.get("ok"))
    if row["runs"]:
        row["matches_producer"] = bm.close(result["output"], entry["expected"])
    else:
        row["run_error"] = first_line(result.get("error"))
    return row


def cmd_load(args):
    made = bm.load_json(os.path.join(BUILD, "models.json"), {})
    base = BUILD
    if not made:  # the committed set, loaded again
        made, base = bm.load_json(os.path.join(FIXTURES, "models.json"), {}), FIXTURES
    rows_dir = os.path.join(BUILD, "rows")
    if not os.path.isdir(rows_dir):
        os.makedirs(rows_dir)
    wanted = [k for k, v in sorted(made.items()) if v.get("written")]
    for consumer in args.consumers:
        path = os.path.join(rows_dir, consumer + ".jsonl")
        done = set()
        if os.path.exists(path):
            with open(path) as f:
                done = {json.loads(l)["model"] for l in f if l.strip()}
        keys = [k for k in wanted if k not in done]
        if not keys:
            continue
        argv = {k: ["_load", "--path", os.path.join(base, made[k]["path"]), "--input",
                    json.dumps(made[k]["input"]), "--declared"] for k in keys}  # fmt: skip
        jobs = os.path.join(BUILD, "jobs-%s.json" % consumer)
        with open(jobs, "w") as f:
            json.dump([argv[k] for k in keys], f)
        command = [bm.python_of(consumer), os.path.join(HERE, "build_matrix.py"), "_load_batch",
                   "--jobs", jobs]  # fmt: skip
        started = time.time()
        try:
            done_run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      timeout=bm.TIMEOUT * 4, check=False,
                                      env=bm.env_of(consumer))  # fmt: skip
            lines = done_run.stdout.decode("utf-8", "replace").splitlines()
        except subprocess.TimeoutExpired:
            lines = []
        results = [json.loads(l) for l in lines if l.startswith("{")]
        for key in keys[len(results) :]:  # the interpreter died: those files alone
            results.append(bm.run_child(consumer, argv[key]))
        with open(path, "a") as f:
            for key, result in zip(keys, results):
                row = row_of(consumer, key, made[key], result)
                f.write(json.dumps(row, sort_keys=True) + "\n")
                print(consumer, key, "ok" if row["ok"] else "FAILS " + row["error"][:100])
        print("  %s: %.0f s" % (consumer, time.time() - started))


def cmd_write(args):
    made = bm.load_json(os.path.join(BUILD, "models.json"), {})
    fixtures_json = os.path.join(FIXTURES, "models.json")
    for entry in made.values():
        entry.setdefault("round", 1)  # the first round was made before rounds were recorded
        if entry.get("written"):
            target = os.path.join(FIXTURES, entry["path"])
            if not os.path.isdir(os.path.dirname(target)):
                os.makedirs(os.path.dirname(target))
            shutil.copyfile(os.path.join(BUILD, entry["path"]), target)
    with open(fixtures_json, "w") as f:
        json.dump(made, f, indent=1, sort_keys=True)
        f.write("\n")
    rows = {}
    rows_dir = os.path.join(BUILD, "rows")
    for name in sorted(os.listdir(rows_dir)) if os.path.isdir(rows_dir) else []:
        with open(os.path.join(rows_dir, name)) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    rows[(row["consumer"], row["model"])] = row
    matrix = os.path.join(FIXTURES, "matrix.jsonl")
    with open(matrix, "w") as f:
        for key in sorted(rows):
            f.write(json.dumps(rows[key], sort_keys=True) + "\n")
    sys.path.insert(0, os.path.dirname(HERE))
    from fixture_sources import record

    record(fixtures_json)
    record(matrix)
    print("%d files, %d rows" % (sum(1 for e in made.values() if e.get("written")), len(rows)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("make")
    p.add_argument("--producers", type=lambda s: s.split(","), default=PRODUCERS)
    p.add_argument("--models", type=lambda s: s.split(","), default=sorted(MODELS))
    p = sub.add_parser("load")
    p.add_argument("--consumers", type=lambda s: s.split(","), default=CONSUMERS)
    sub.add_parser("write")
    p = sub.add_parser("_make")
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    handlers = {"make": cmd_make, "load": cmd_load, "write": cmd_write, "_make": child_make}
    if args.command not in handlers:
        parser.error("a command is needed: make, load or write")
    handlers[args.command](args)


if __name__ == "__main__":
    main()
