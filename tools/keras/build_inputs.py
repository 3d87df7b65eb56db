"""The input each Keras rebuilds a Keras 2 model on, measured in each Keras itself.

    python3 tools/keras/build_inputs.py dump  [--tf 2.8.4,2.15.1] [--keras 3.0.5,3.15.1]
                                              [--tf-keras 2.16,2.21]
    python3 tools/keras/build_inputs.py pack  [--out tests/fixtures/keras/keras_inputs.json]

dump: in each runtime (the `tf.keras` of TFENVS/<release>, or a Keras 3 wheel unpacked
      under KERAS_SITES/keras-<version> run by KERAS_PYTHON on the jax backend, as
      build_matrix.py runs them, or tf-keras: KERASENVS/tfk-<minor> with
      TF_USE_LEGACY_KERAS=1, where `tf.keras` is tf_keras), one fresh interpreter
      writes a legacy H5 model the way TF 2.0-2.2 write a Sequential (no InputLayer;
      the first layer carries
      `batch_input_shape: [null, 4]`), loads it with `load_model(path, compile=False)`,
      and records the input shape that Keras rebuilt it on and what a request of the
      declared shape, (1, 4), does; and whether Embedding's `from_config` (the H5 path's
      constructor call) takes the `input_length` every Keras 2 writes. One JSON document
      per runtime goes to build/keras/inputs/<keras version>.json.
pack: merges them into tests/fixtures/keras/keras_inputs.json (the versions already
      there are kept), keyed by Keras version, with the runtimes each was measured in
      (which must agree; errors are compared after the backend's own wording, so only
      the facts, not the text, are kept per version).

worker/compat/keras_inputs.py and worker/compat/keras.py (READDED_IN_KERAS3) were written
from Keras's code; tests/compat/test_keras_inputs.py checks them against this table.

Runs under any Python 3.7+ with the standard library only (h5py and numpy in the child).
"""

from __future__ import print_function

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TFENVS = os.environ.get("TFENVS", ".cache/tfenvs")
KERASENVS = os.environ.get("KERASENVS", ".cache/kerasenvs")
KERAS_PYTHON = os.environ.get("KERAS_PYTHON", ".cache/build-keras/base311/bin/python")
KERAS_SITES = os.environ.get("KERAS_SITES", ".cache/build-keras")
BUILD = os.path.join(REPO, "build", "keras", "inputs")
OUT = os.path.join(REPO, "tests", "fixtures", "keras", "keras_inputs.json")
DECLARED = [None, 4]
# A Sequential as TF 2.2's tf.keras writes it to H5: a weightless first layer (so the file
# needs no weights) carrying the model's batch_input_shape, and no InputLayer.
LEGACY_SEQUENTIAL = {
    "class_name": "Sequential",
    "config": {
        "name": "sequential",
        "layers": [
            {
                "class_name": "Activation",
                "config": {
                    "name": "activation",
                    "trainable": True,
                    "batch_input_shape": DECLARED,
                    "dtype": "float32",
                    "activation": "linear",
                },
            }
        ],
    },
}


def one_line(exc):
    return " ".join((type(exc).__name__ + ": " + str(exc)).split())[:300]


def runtime_keras():
    try:
        import tensorflow as tf
    except ImportError:
        import keras

        return keras, "keras " + keras.__version__
    if legacy_keras():
        import tf_keras

        runtime = "tensorflow %s, tf-keras %s (TF_USE_LEGACY_KERAS=1)"
        return tf.keras, runtime % (tf.__version__, tf_keras.__version__)
    return tf.keras, "tensorflow " + tf.__version__


def legacy_keras():
    """tf-keras: TF 2.16+ with TF_USE_LEGACY_KERAS=1, whose tf.keras is tf_keras."""
    return os.environ.get("TF_USE_LEGACY_KERAS") == "1"


def keras_version(keras):
    version = getattr(keras, "__version__", "")
    if legacy_keras():
        import tf_keras

        return tf_keras.__version__
    try:
        import keras as package

        if getattr(package, "__version__", "") and not version.endswith("-tf"):
            return package.__version__
    except ImportError:
        pass
    return version


def write_legacy_h5(path):
    """A legacy H5 model: the root attributes Keras's H5 loader reads, no weights."""
    import h5py

    # bytes, as Keras 2 wrote them: the H5 loaders of TF 1.x-2.3 call .decode() on them
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = b"2.3.0-tf"
        f.attrs["backend"] = b"tensorflow"
        f.attrs["model_config"] = json.dumps(LEGACY_SEQUENTIAL).encode("utf-8")
        weights = f.create_group("model_weights")
        weights.attrs["layer_names"] = [b"activation"]
        weights.attrs["backend"] = b"tensorflow"
        weights.attrs["keras_version"] = b"2.3.0-tf"
        group = weights.create_group("activation")
        group.attrs["weight_names"] = []


def child_probe(args):
    import numpy as np

    keras, runtime = runtime_keras()
    facts = {"keras": keras_version(keras), "measured_in": runtime + ", Python %d.%d" % (
        sys.version_info[0], sys.version_info[1])}  # fmt: skip
    path = os.path.join(tempfile.mkdtemp(), "legacy_sequential.h5")
    write_legacy_h5(path)
    sequential = {"declared": DECLARED}
    try:
        model = keras.models.load_model(path, compile=False)
        sequential["rebuilt"] = [None if d is None else int(d) for d in model.input_shape]
        try:
            model.predict(np.ones((1, 4), dtype="float32"))
            sequential["request"] = "served"
        except Exception as exc:
            sequential["request"] = "fails"
            sequential["request_error"] = one_line(exc)
    except Exception as exc:
        sequential["load"] = "fails"
        sequential["load_error"] = one_line(exc)
    facts["sequential_first_layer"] = sequential
    try:
        keras.layers.Embedding.from_config(
            {"name": "e", "input_dim": 10, "output_dim": 4, "input_length": 6}
        )
        facts["embedding_input_length"] = "accepted"
    except Exception as exc:
        facts["embedding_input_length"] = "rejected"
        facts["embedding_error"] = one_line(exc)
    print(json.dumps(facts, sort_keys=True))


def run(command, env=None):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, timeout=600, check=False)  # fmt: skip
    lines = [l for l in done.stdout.decode("utf-8", "replace").splitlines() if l.startswith("{")]
    if not lines:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise SystemExit("%s: %s" % (" ".join(command), tail[0]))
    return json.loads(lines[-1])


def cmd_dump(args):
    if not os.path.isdir(BUILD):
        os.makedirs(BUILD)
    runtimes = [(os.path.join(TFENVS, tf, "bin", "python"), None) for tf in args.tf]
    for minor in args.tf_keras:
        env = dict(os.environ, TF_USE_LEGACY_KERAS="1")
        runtimes.append((os.path.join(KERASENVS, "tfk-" + minor, "bin", "python"), env))
    for version in args.keras:
        site = os.path.join(KERAS_SITES, "keras-" + version)
        env = dict(os.environ, PYTHONPATH=site, KERAS_BACKEND="jax")
        runtimes.append((KERAS_PYTHON, env))
    for python, env in runtimes:
        facts = run([python, os.path.abspath(__file__), "_probe"], env)
        name = "%s@%s.json" % (facts["keras"], facts["measured_in"].split(",")[0].replace(" ", "-"))
        with open(os.path.join(BUILD, name), "w") as f:
            json.dump(facts, f, indent=1, sort_keys=True)
        print(facts["keras"], json.dumps(_facts(facts)))


def version_key(version):
    key = []
    for part in version.split(".")[:3]:
        digits = "".join(c for c in part if c.isdigit())
        key.append(int(digits or 0))
    return tuple(key)


def _facts(document):
    """What is compared across runtimes: everything but the runtime and the error texts."""
    if isinstance(document, dict):
        return {k: _facts(v) for k, v in document.items()
                if k != "measured_in" and not k.endswith("_error")}  # fmt: skip
    return document


def cmd_pack(args):
    sys.path.insert(0, os.path.dirname(HERE))  # tools/: provenance (packing runs in 3.7+)
    from provenance import source_record

    table = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            table = json.load(f)["keras"]
    for path in sorted(glob.glob(os.path.join(BUILD, "*.json"))):
        with open(path) as f:
            facts = json.load(f)
        version, runtime = facts.pop("keras"), facts.pop("measured_in")
        known = table.setdefault(version, dict(facts, measured_in=[]))
        if _facts(known) != _facts(facts):
            raise SystemExit("Keras %s: runtimes disagree (%s)" % (version, runtime))
        if runtime not in known["measured_in"]:
            known["measured_in"].append(runtime)
    ordered = {k: table[k] for k in sorted(table, key=version_key)}
    with open(args.out, "w") as f:
        source = source_record(
            "tools/keras/build_inputs.py",
            "each Keras's load of a TF 2.2-style Sequential H5 asked for (1, 4), and "
            "Embedding.from_config with input_length",
            list(dict.fromkeys(r for v in ordered.values() for r in v["measured_in"])),
        )
        json.dump({"source": source, "keras": ordered}, f, indent=1)
        f.write("\n")
    print("%d Keras versions in %s" % (len(ordered), args.out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("dump")
    p.add_argument("--tf", type=lambda s: s.split(","), default=[])
    p.add_argument("--keras", type=lambda s: s.split(","), default=[])
    p.add_argument("--tf-keras", type=lambda s: s.split(","), default=[])
    p = sub.add_parser("pack")
    p.add_argument("--out", default=OUT)
    sub.add_parser("_probe")
    args = parser.parse_args()
    handlers = {"dump": cmd_dump, "pack": cmd_pack, "_probe": child_probe}
    if args.command not in handlers:
        parser.error("a command is needed: dump or pack")
    handlers[args.command](args)


if __name__ == "__main__":
    main()
