"""Compiled Keras models whose losses carry a `reduction`, held out from the rule that a
Keras 2 loss object's reduction='auto' fails compiling in Keras 3 (keras.compile-argument).

    python3 tools/keras/reduction_models.py make  [--producers 2.4.4,2.8.4,2.12.1,2.15.1,2.17.1]
    python3 tools/keras/reduction_models.py load  [--consumers keras-3.0.5,...,2.15.1]
    python3 tools/keras/reduction_models.py write

The machinery is tools/keras/build_matrix.py's (TFENVS, KERAS_PYTHON, KERAS_SITES and
KERASENVS as it reads them): a producer is a TensorFlow virtualenv, TFENVS/<release>, whose
tf.keras builds the files (Keras 2 up to TF 2.15, Keras 3 from 2.16: its files write Keras
3's reductions); a consumer is such a release, a Keras 3 wheel run outside TensorFlow
("keras-3.8.0": KERAS_PYTHON with KERAS_SITES/keras-3.8.0 on its path, the jax backend) or
tf-keras ("tf-keras-2.21").

make: in each producer, each model of MODELS is built with fixed seeds (a Dense model on
      4 inputs), compiled as its entry says, run on a fixed input (the expected output)
      and saved as `.h5` and, from Keras 2.12 on, `.keras`, under build/keras-reduction/
      models/tf<minor>/ (a Keras 3's files under keras<minor>/, as build_matrix.py files
      them); build/keras-reduction/models.json says how each was made and
      what its compile configuration holds (`compile`: the losses' and metrics' classes
      and reductions as the producer serialized them).
load: for each consumer, its files in one interpreter (build_matrix.py `_load_batch`):
      `load_model(path)` (compiling) and the model run on the input: `ok`, `error`;
      where that failed, `compile_false_ok` and `compile_false_error` for
      `load_model(path, compile=False)`, as build_matrix.py records its OBJECT_MODELS.
      Rows to build/keras-reduction/rows/<consumer>.jsonl.
write: copies the files and models.json into tests/fixtures/keras-reduction/ and merges
      the rows into its matrix.jsonl (a row of the same consumer and file replaced).

Runs under any Python 3.7+ with the standard library only (it is also the child run inside
each producer's virtualenv, Python 3.7 for TF 2.4 and 2.8).
"""

from __future__ import print_function

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import build_matrix as matrix  # noqa: E402  (the producers, consumers and the load child)

REPO = matrix.REPO
BUILD = os.path.join(REPO, "build", "keras-reduction")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "keras-reduction")
PRODUCERS = ["2.4.4", "2.8.4", "2.12.1", "2.15.1", "2.17.1"]
CONSUMERS = ["keras-3.0.5", "keras-3.3.3", "keras-3.8.0", "keras-3.15.1", "2.15.1"]
INPUT = {"shape": [1, 4], "dtype": "float32"}

# name -> (loss, metrics). A loss is a string, or (class, reduction) with reduction None for
# the class's default (Keras 2's is "auto", Keras 3's "sum_over_batch_size"); "two" models
# have two outputs, "a" and "b", and take a dict or a list of losses.
MODELS = {
    "mse_default": (("MeanSquaredError", None), None),
    "bce_default": (("BinaryCrossentropy", None), None),
    "cce_default": (("CategoricalCrossentropy", None), None),
    "scce_default": (("SparseCategoricalCrossentropy", None), None),
    "huber_default": (("Huber", None), None),
    "mse_sum": (("MeanSquaredError", "sum"), None),
    "mse_none": (("MeanSquaredError", "none"), None),
    "mse_sobs": (("MeanSquaredError", "sum_over_batch_size"), None),
    "bce_sum": (("BinaryCrossentropy", "sum"), None),
    "cce_none": (("CategoricalCrossentropy", "none"), None),
    "scce_sobs": (("SparseCategoricalCrossentropy", "sum_over_batch_size"), None),
    "huber_sum": (("Huber", "sum"), None),
    "mse_string": ("mse", None),
    "metric_objects": ("mse", ["MeanAbsoluteError", "RootMeanSquaredError", "AUC"]),
    "loss_and_metrics": (("MeanSquaredError", None), ["MeanAbsoluteError"]),
    "loss_as_metric": ("mse", [("MeanSquaredError", None)]),
    "two_dict": ({"a": ("MeanSquaredError", None), "b": "mae"}, None),
    "two_dict_sum": ({"a": ("MeanSquaredError", "sum"), "b": ("Huber", "none")}, None),
    "two_list": ([("MeanSquaredError", "sum"), ("Huber", None)], None),
}


def loss_object(keras, spec):
    """A loss given by name, or a loss class with the reduction asked for (its default
    when None)."""
    if not isinstance(spec, tuple):
        return spec
    name, reduction = spec
    cls = getattr(keras.losses, name)
    return cls() if reduction is None else cls(reduction=reduction)


def build(name):
    import numpy as np

    keras, release = matrix.runtime_keras()
    np.random.seed(0)
    if release is None:
        keras.utils.set_random_seed(0)
    else:
        import tensorflow as tf

        tf.random.set_seed(0)
    loss, metrics = MODELS[name]
    layers = keras.layers
    inputs = keras.Input(shape=(4,))
    if isinstance(loss, (dict, list)):
        hidden = layers.Dense(3, name="hidden")(inputs)
        outputs = [layers.Dense(2, name="a")(hidden), layers.Dense(2, name="b")(hidden)]
        if isinstance(loss, dict):
            loss = {k: loss_object(keras, v) for k, v in loss.items()}
        else:
            loss = [loss_object(keras, v) for v in loss]
    else:
        outputs = layers.Dense(2, name="dense")(inputs)
        loss = loss_object(keras, loss)
    model = keras.Model(inputs, outputs)
    compiled = {"loss": loss}
    if metrics:
        compiled["metrics"] = [
            loss_object(keras, m) if isinstance(m, tuple) else getattr(keras.metrics, m)()
            for m in metrics
        ]
    model.compile(optimizer="adam", **compiled)
    return model


def written_compile(path):
    """The loss and metrics of the compile configuration the saved H5 file holds
    (`training_config`), as the producer wrote them."""
    import h5py

    with h5py.File(path, "r") as f:
        text = f.attrs.get("training_config")
    if text is None:
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    config = json.loads(text)
    return {k: config.get(k) for k in ("loss", "metrics", "weighted_metrics")}


def child_make(args):
    """Each model of --models built, run and saved in this one interpreter (seeded anew
    for each, the session cleared between them); one JSON line per model."""
    keras, _ = matrix.runtime_keras()
    for name in args.models.split(","):
        try:
            results = make_one(name, args.out)
        except Exception as exc:  # a model this release cannot build is recorded
            results = {"h5": {"written": False, "error": matrix.one_line(exc)}}
        results["model"] = name
        print(json.dumps(results))
        sys.stdout.flush()
        keras.backend.clear_session()


def make_one(name, out):
    import numpy as np

    _, release = matrix.runtime_keras()
    model = build(name)
    expected = np.asarray(model.predict(matrix.model_input(INPUT))).round(5).tolist()
    record = {
        "tensorflow": release,
        "keras": matrix.keras_version(),
        "expected": expected,
        "input": INPUT,
    }
    results = {}
    for ext in ("h5", "keras"):
        path = os.path.join(out, name + "." + ext)
        entry = dict(record)
        try:
            if ext == "keras" and matrix.version_key(matrix.keras_version()) < (2, 12):
                raise RuntimeError("no .keras zip format before Keras 2.12")
            if ext == "keras" and (2, 12) <= matrix.version_key(matrix.keras_version()) < (3,):
                # asked for by name: in one interpreter saving several models, TF 2.12.1's
                # tf.keras took `x.keras` for its legacy saver and wrote HDF5
                model.save(path, save_format="keras_v3")
            else:
                model.save(path)
            entry["written"] = os.path.isfile(path)
            if ext == "keras" and not zipfile.is_zipfile(path):
                raise RuntimeError("the .keras file written is not a zip archive")
            if ext == "h5":
                entry["compile"] = written_compile(path)
        except Exception as exc:  # what this release cannot write is recorded, not fatal
            entry["written"] = False
            entry["error"] = matrix.one_line(exc)
        results[ext] = entry
    return results


def cmd_make(args):
    models_json = os.path.join(BUILD, "models.json")
    made = matrix.load_json(models_json, {})
    for release in args.producers:
        folder = matrix.folder_of(release)
        out = os.path.join(BUILD, "models", folder)
        if not os.path.isdir(out):
            os.makedirs(out)
        started = time.time()
        command = [matrix.python_of(release), os.path.abspath(__file__), "_make",
                   "--models", ",".join(args.models), "--out", out]  # fmt: skip
        ran = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=matrix.TIMEOUT * 4, check=False,
                             env=matrix.env_of(release))  # fmt: skip
        lines = [l for l in ran.stdout.decode("utf-8", "replace").splitlines()
                 if l.startswith("{")]  # fmt: skip
        if not lines:
            print(release, ran.stderr.decode("utf-8", "replace")[-2000:], file=sys.stderr)
        for line in lines:
            results = json.loads(line)
            model = results.pop("model")
            for ext, entry in results.items():
                written = entry.get("keras", "2")
                if matrix.version_key(written) >= (3,):
                    # a Keras 3 file goes to keras<minor>, as build_matrix.py files a Keras 3
                    # wheel's, whatever TensorFlow ran it ("tensorflow" says which)
                    moved = os.path.join(BUILD, "models", "keras" + matrix.minor(written))
                    if not os.path.isdir(moved):
                        os.makedirs(moved)
                    source = os.path.join(out, "%s.%s" % (model, ext))
                    if os.path.exists(source):
                        shutil.move(source, os.path.join(moved, "%s.%s" % (model, ext)))
                    folder = "keras" + matrix.minor(written)
                key = "%s/%s.%s" % (folder, model, ext)
                if entry.get("written"):
                    entry["path"] = "models/" + key
                made[key] = entry
                print(key, "written" if entry.get("written") else entry.get("error"))
        print("  %s: %.0f s" % (release, time.time() - started))
    with open(models_json, "w") as f:
        json.dump(made, f, indent=1, sort_keys=True)


def cmd_load(args):
    """Each consumer's files in one interpreter of it, compiling (build_matrix's
    `_load_batch` with --compiled); a file whose row did not come back is loaded alone."""
    made = matrix.load_json(os.path.join(BUILD, "models.json"), {})
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
        argv = {
            k: ["_load", "--path", os.path.join(BUILD, made[k]["path"]),
                "--input", json.dumps(made[k]["input"]), "--compiled"]
            for k in keys
        }  # fmt: skip
        jobs = os.path.join(BUILD, "jobs-%s.json" % consumer)
        with open(jobs, "w") as f:
            json.dump([argv[k] for k in keys], f)
        command = [matrix.python_of(consumer), os.path.join(HERE, "build_matrix.py"),
                   "_load_batch", "--jobs", jobs]  # fmt: skip
        started = time.time()
        try:
            ran = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 timeout=matrix.TIMEOUT * 4, check=False,
                                 env=matrix.env_of(consumer))  # fmt: skip
            lines = ran.stdout.decode("utf-8", "replace").splitlines()
        except subprocess.TimeoutExpired:
            lines = []
        results = [json.loads(l) for l in lines if l.startswith("{")]
        for key, result in zip(keys, results):
            matrix.write_row(consumer, key, made[key], result, path)
        for key in keys[len(results) :]:
            matrix.write_row(consumer, key, made[key], matrix.run_child(consumer, argv[key]), path)
        print("  %s: %.0f s" % (consumer, time.time() - started))


def cmd_write(args):
    made = matrix.load_json(os.path.join(BUILD, "models.json"), {})
    fixtures_json = os.path.join(FIXTURES, "models.json")
    described = matrix.load_json(fixtures_json, {})
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
    found = os.path.join(FIXTURES, "matrix.jsonl")
    sources = [found] if os.path.exists(found) else []
    rows_dir = os.path.join(BUILD, "rows")
    if os.path.isdir(rows_dir):
        sources += [os.path.join(rows_dir, n) for n in sorted(os.listdir(rows_dir))]
    for source in sources:
        with open(source) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    rows[(row["consumer"], row["model"])] = row
    with open(found, "w") as f:
        for key in sorted(rows, key=lambda k: (matrix.version_key(k[0].split("-")[-1]), k)):
            f.write(json.dumps(rows[key], sort_keys=True) + "\n")
    sys.path.insert(0, os.path.dirname(HERE))
    from fixture_sources import record  # the files' source records (sources.json)

    record(fixtures_json)
    record(found)
    print("%d rows in %s" % (len(rows), found))


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
    p.add_argument("--models", required=True)
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    handlers = {"make": cmd_make, "load": cmd_load, "write": cmd_write, "_make": child_make}
    if args.command not in handlers:
        parser.error("a command is needed: make, load or write")
    handlers[args.command](args)


if __name__ == "__main__":
    main()
