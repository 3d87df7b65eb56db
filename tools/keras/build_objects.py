"""The built-in objects each Keras can deserialize by name, measured in each Keras itself.

    python3 tools/keras/build_objects.py dump  [--tf 2.4.4,2.15.1] [--keras 3.0.5=/path/site]
                                               [--tf-keras 2.16,2.21]
    python3 tools/keras/build_objects.py pack  [--out worker/catalog/data/keras_objects.json.gz]

dump: in each runtime, one fresh interpreter asks that Keras's own deserializers about
      every candidate name of each kind of object and prints one JSON document; each
      goes to build/keras/objects/<keras version>.json.
      Runtimes: the `tf.keras` of a TensorFlow virtualenv (TFENVS/<release>/bin/python:
      Keras 2.2.4-tf to 2.15 and, from TF 2.16, the Keras 3 it installed), and a Keras 3
      wheel unpacked with `pip install --no-deps --target DIR keras==3.X` run by a Python
      that has Keras 3's dependencies (--python; KERAS_BACKEND=jax: the numpy backend of
      Keras 3.0 imports torch).
      tf-keras, the Keras 2 that TF 2.16+ run with TF_USE_LEGACY_KERAS=1 (--tf-keras
      2.16: KERASENVS/tfk-2.16, a virtualenv with tensorflow-cpu==2.16.* and
      tf-keras==2.16.*; `tf.keras` is then tf_keras, filed under its version, "2.16").
pack: merges the dumps into the table already at --out, one entry per Keras minor
      (the newest patch measured), or per TensorFlow minor for the Keras bundled in TF
      1.13 to 2.5 ("tf-2.1"), with the runtime each was measured in; a dump that says
      something else replaces the entry of its key, every other entry is kept as it is.

How a name is judged (the child, `_dump`): candidates are the names the kind's own
module and lookup dicts hold (`keras.activations`, the implementation module's globals
that Keras 2's `deserialize` reads, Keras 3's `ALL_OBJECTS_DICT`, the layers
`keras.layers` exports, and in Keras 2 the registered names of the kind's own objects,
such as Keras 2.11+'s "Custom>Adam"), and each is passed to the kind's own entry point
the way a saved config names it: `activations.get("relu")` for functions named by a string,
`initializers.get({"class_name": ..., "config": {}})` for classes (Keras 3: first as
a `.keras` entry, `{"module": "keras.initializers", ...}`, which reaches the public
API's aliases), and for layers
`layers.deserialize({"class_name": ..., "config": {}})` (Keras 3: with the
`"module": "keras.layers"` its configs carry). A name is known unless Keras answers
with its own "unknown object" error; an error building the object with an empty config
(a missing argument) still means the name resolved. A name nobody could resolve,
`TfcompatNoSuchObject`, gives each kind's own error text, kept as the message with
`{name}` in place of that name. A class's accepted arguments are its constructor's
parameters (`**kwargs`: it takes more, which its base class then judges).

Runs under any Python 3.7+ with the standard library only.
"""

from __future__ import print_function

import argparse
import glob
import gzip
import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TFENVS = os.environ.get("TFENVS", ".cache/tfenvs")
KERASENVS = os.environ.get("KERASENVS", ".cache/kerasenvs")
BUILD = os.path.join(REPO, "build", "keras", "objects")
OUT = os.path.join(REPO, "worker", "catalog", "data", "keras_objects.json.gz")
KINDS = (
    "layers",
    "activations",
    "initializers",
    "regularizers",
    "constraints",
    "losses",
    "metrics",
    "optimizers",
)
# How a saved config names each kind: by a string (a function's name) or a class entry.
STRING_KINDS = ("activations", "losses", "metrics")
CANARY = "TfcompatNoSuchObject"
# Errors that mean "this name resolved to nothing" in some Keras: anything else raised
# while building the object from an empty config means the name was found.
UNKNOWN_MARKERS = (
    "Unknown ",
    "Could not interpret",
    "Could not locate",
    "cannot be imported",
    "not a KerasSaveable",
)
TIMEOUT = 900


# --- inside a Keras runtime ---------------------------------------------------------------


def _keras():
    """The Keras `load_model` uses here: tf.keras in a TensorFlow env, else `keras`."""
    try:
        import tensorflow as tf  # noqa: F401
    except ImportError:
        import keras

        return keras, keras.__version__, "keras " + keras.__version__
    keras = tf.keras
    version = getattr(keras, "__version__", "")
    if os.environ.get("TF_USE_LEGACY_KERAS") == "1" and _key(tf.__version__) >= (2, 16):
        import tf_keras  # what tf.keras is now

        runtime = "tensorflow %s, tf-keras %s (TF_USE_LEGACY_KERAS=1)"
        return keras, tf_keras.__version__, runtime % (tf.__version__, tf_keras.__version__)
    try:
        import keras as package

        if _key(tf.__version__) >= (2, 6):
            version = package.__version__
    except ImportError:
        pass
    return keras, version, "tensorflow " + tf.__version__


def _key(version):
    out = []
    for part in version.split(".")[:3]:
        digits = ""
        for c in part:
            if not c.isdigit():
                break
            digits += c
        out.append(int(digits or 0))
    return tuple(out)


def _implementation(module):
    """The module whose globals a Keras 2 `deserialize` looks names up in."""
    import importlib

    deserialize = getattr(module, "deserialize", None) or getattr(module, "get", None)
    name = getattr(deserialize, "__module__", None)
    if not name:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _candidates(module, kind):
    import inspect

    names = {}
    pools = [vars(module)]
    impl = _implementation(module)
    if impl is not None:
        pools.append(vars(impl))
        for table in ("ALL_OBJECTS_DICT",):
            if isinstance(getattr(impl, table, None), dict):
                pools.append(getattr(impl, table))
        local = getattr(impl, "LOCAL", None)
        if local is not None and isinstance(getattr(local, "ALL_OBJECTS", None), dict):
            pools.append(local.ALL_OBJECTS)
    if isinstance(getattr(module, "ALL_OBJECTS_DICT", None), dict):
        pools.append(module.ALL_OBJECTS_DICT)
    for pool in pools:
        for name, value in list(pool.items()):
            if not isinstance(name, str) or name.startswith("_") or name in names:
                continue
            if inspect.isclass(value) or inspect.isfunction(value) or callable(value):
                if inspect.ismodule(value):
                    continue
                names[name] = value
    return names


def _registered(keras, kind):
    """{name: object} registered in Keras's global custom objects whose object lives in the
    kind's package: Keras 2.11+ register their optimizers ("Custom>Adam"), which is the
    name an H5 file's training_config gives them."""
    found = {}
    get = getattr(getattr(keras, "utils", None), "get_custom_objects", None)
    if get is None:
        return found
    try:
        registry = get()
    except Exception:
        return found
    for name, value in list(registry.items()):
        module = getattr(value, "__module__", "") or ""
        if isinstance(name, str) and "." + kind + "." in module + ".":
            found[name] = value
    return found


def _arguments(value):
    """(constructor parameters, takes **kwargs) of a class; (None, None) for a function."""
    import inspect

    if not inspect.isclass(value):
        return None, None
    try:
        signature = inspect.signature(value.__init__)
    except (TypeError, ValueError):
        return None, None
    params, more = [], False
    for p in list(signature.parameters.values())[1:]:
        if p.kind == p.VAR_KEYWORD:
            more = True
        elif p.kind != p.VAR_POSITIONAL:
            params.append(p.name)
    return params, more


def _takes(function, name):
    import inspect

    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _layers_deserialize(module):
    """`layers.deserialize`; TF 1.13's public tf.keras.layers does not export it, its
    implementation package does (what its load_model calls)."""
    found = getattr(module, "deserialize", None)
    if found is None:
        import importlib

        found = importlib.import_module("tensorflow.python.keras.layers").deserialize
    return found


def _chain_arguments(cls):
    """Every parameter a class takes through its **kwargs: its own, then each base
    class's `__init__` along the MRO for as long as each passes **kwargs on."""
    import inspect

    found = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        try:
            signature = inspect.signature(klass.__init__)
        except (TypeError, ValueError):
            break
        more = False
        for p in list(signature.parameters.values())[1:]:
            if p.kind == p.VAR_KEYWORD:
                more = True
            elif p.kind != p.VAR_POSITIONAL and p.name not in found:
                found.append(p.name)
        if not more:
            break
    return found


def _probe(keras, kind, name, major):
    """None when the name resolved, else Keras's error text."""
    module = getattr(keras, kind)
    try:
        if kind == "layers":
            entry = {"class_name": name, "config": {}}
            if major >= 3:
                entry["module"] = "keras.layers"
            deserialize = _layers_deserialize(module)
            if major < 3 and _takes(deserialize, "use_legacy_format"):
                # Keras 2.13-2.15 return an unknown name as it is unless asked for the
                # legacy (H5) path, which is what load_model takes for an .h5 file
                deserialize(entry, use_legacy_format=True)
            else:
                deserialize(entry)
        elif kind in STRING_KINDS:
            deserialize = getattr(module, "deserialize", None)
            if major < 3 and deserialize is not None and _takes(deserialize, "use_legacy_format"):
                # Keras 2.13-2.15's metrics.get returns an unknown string as it is; their
                # H5 loader takes the legacy path, which raises
                deserialize(name, use_legacy_format=True)
            else:
                module.get(name)
        elif major >= 3 and name != CANARY:
            # as a .keras entry names it: by its module, so the public API's aliases
            # (keras.initializers.Orthogonal) resolve; else as a Keras 2 H5 entry does
            entry = {"module": "keras." + kind, "class_name": name, "config": {},
                     "registered_name": None}  # fmt: skip
            try:
                keras.saving.deserialize_keras_object(entry)
            except Exception as exc:
                if not any(marker in str(exc) for marker in UNKNOWN_MARKERS):
                    return None  # found; building it from an empty config failed
                module.get({"class_name": name, "config": {}})
        else:
            module.get({"class_name": name, "config": {}})
    except Exception as exc:  # Keras answers with many types; the text tells
        text = str(exc)
        if any(marker in text for marker in UNKNOWN_MARKERS) and (
            name in text or CANARY in text or "identifier" in text
        ):
            return type(exc).__name__ + ": " + text
    return None


def _deserialize_fails(module, names):
    """{name: error} for the names `module.deserialize(name)` raises on."""
    fails = {}
    for name in sorted(names):
        try:
            module.deserialize(name)
        except Exception as exc:
            fails[name] = _first_sentence(type(exc).__name__ + ": " + str(exc), "\0")
    return fails


def _probe_h5_layer(name):
    """Keras 3's error for an unknown layer in a legacy H5 config (its legacy loader)."""
    try:
        from keras.src.legacy.saving import saving_utils
    except ImportError:
        return None
    try:
        saving_utils.model_from_config({"class_name": name, "config": {}})
    except Exception as exc:
        return type(exc).__name__ + ": " + str(exc)
    return None


def _probe_archive(keras, kind):
    """Keras 3's error for an unknown object as a `.keras` config names it: a class with
    the module it was defined in, a function by name (`"module": "builtins"`)."""
    if kind in STRING_KINDS:
        entry = {"module": "builtins", "class_name": "function", "config": CANARY,
                 "registered_name": "function"}  # fmt: skip
    else:
        entry = {"module": "tfcompat_absent", "class_name": CANARY, "config": {},
                 "registered_name": CANARY}  # fmt: skip
    try:
        keras.saving.deserialize_keras_object(entry)
    except Exception as exc:
        return type(exc).__name__ + ": " + str(exc)
    return None


def _first_sentence(text, name):
    text = text.replace(name, "{name}")
    cut = min((i for i in (text.find(". "), text.find("\n")) if i > 0), default=len(text))
    return text[: cut + 1 if text[cut : cut + 1] == "." else cut][:300]


def child_dump(args):
    import inspect
    import warnings

    warnings.simplefilter("ignore")
    keras, version, runtime = _keras()
    major = _key(version)[0]
    out = {
        "keras": version,
        "runtime": runtime,
        "python": "%d.%d" % sys.version_info[:2],
        "backend": os.environ.get("KERAS_BACKEND", "tensorflow" if "tensorflow" in runtime else ""),
        "kinds": {},
    }
    for kind in KINDS:
        module = getattr(keras, kind, None)
        if module is None:
            continue
        # the canary first: Keras 2.3+ fills its layer lookup on the first deserialize
        unknown = (_probe_h5_layer(CANARY) if major >= 3 and kind == "layers" else None) or (
            _probe(keras, kind, CANARY, major) or ""
        )
        objects = {}
        candidates = _candidates(module, kind)
        if major < 3:
            for name, value in _registered(keras, kind).items():
                candidates.setdefault(name, value)
        for name, value in sorted(candidates.items()):
            if kind == "layers" and not inspect.isclass(value):
                continue
            if _probe(keras, kind, name, major) is not None:
                continue
            params, more = _arguments(value)
            objects[name] = {} if params is None else {"args": params, "kwargs": more}
            if params is not None and more:
                objects[name]["chain_args"] = _chain_arguments(value)
        out["kinds"][kind] = {
            "objects": objects,
            "unknown_message": _first_sentence(unknown, CANARY),
        }
        if major >= 3 and kind in ("losses", "metrics"):
            # Keras 3's H5 loader hands each compile string to `deserialize`, which
            # re-resolves a known function by its public name: aliases ("mse") fail
            out["kinds"][kind]["deserialize_fails"] = _deserialize_fails(module, objects)
        if major >= 3:
            archived = _probe_archive(keras, kind) or ""
            out["kinds"][kind]["unknown_message_archive"] = _first_sentence(archived, CANARY)
    print(json.dumps(out, sort_keys=True))


# --- driver (any Python 3) ------------------------------------------------------------------


def run(command, env=None):
    done = subprocess.run(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=TIMEOUT,
        check=False,
        env=env,
    )
    lines = [l for l in done.stdout.decode("utf-8", "replace").splitlines() if l.startswith("{")]
    if not lines:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise RuntimeError(" | ".join(tail) or "no output")
    return json.loads(lines[-1])


def cmd_dump(args):
    if not os.path.isdir(BUILD):
        os.makedirs(BUILD)
    jobs = [
        (release, [os.path.join(TFENVS, release, "bin", "python")], None) for release in args.tf
    ]
    for minor in args.tf_keras:
        env = dict(os.environ, TF_USE_LEGACY_KERAS="1")
        jobs.append(("tf-keras " + minor,
                     [os.path.join(KERASENVS, "tfk-" + minor, "bin", "python")], env))  # fmt: skip
    for spec in args.keras:
        version, site = spec.split("=", 1)
        env = dict(os.environ, PYTHONPATH=site, KERAS_BACKEND=args.backend)
        jobs.append((version, [args.python], env))
    for label, python, env in jobs:
        try:
            found = run(python + [os.path.abspath(__file__), "_dump"], env)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            print(label, "FAILED", exc, file=sys.stderr)
            continue
        found["key"] = table_key(found["keras"], found["runtime"])
        path = os.path.join(BUILD, "%s.json" % found["key"])
        with open(path, "w") as f:
            json.dump(found, f, indent=1, sort_keys=True)
        counts = ", ".join(
            "%s %d" % (k, len(v["objects"])) for k, v in sorted(found["kinds"].items())
        )
        print(label, "->", found["keras"], "(%s)" % found["runtime"], counts)


def table_key(version, runtime):
    """The key a table is filed under: "tf-2.1" for the Keras bundled in TensorFlow 1.13
    to 2.5 (their version strings repeat across releases whose tables differ: 1.13 to
    2.0 all say "2.2.4-tf"), else the Keras package's "major.minor"."""
    if runtime.startswith("tensorflow "):
        release = runtime.split(" ", 1)[1].split(",")[0]
        if _key(release) < (2, 6):
            return "tf-" + ".".join(release.split(".")[:2])
    return ".".join(version.split(".")[:2])


def _same_facts(old, new):
    """Whether a re-measured entry says what the table's entry says, ignoring what the
    older tool did not record (chain_args) and where it was measured."""

    def facts(entry, recorded):
        kinds = {}
        for kind, table in entry["kinds"].items():
            objects = {}
            for name, value in table["objects"].items():
                objects[name] = {k: v for k, v in value.items() if k in recorded}
            kinds[kind] = dict(table, objects=objects)
        return dict(entry, kinds=kinds, measured_in=None)

    recorded = {"args", "kwargs"}
    if any("chain_args" in value for table in old["kinds"].values()
           for value in table["objects"].values()):  # fmt: skip
        recorded.add("chain_args")
    return facts(old, recorded) == facts(new, recorded)


def cmd_pack(args):
    sys.path.insert(0, os.path.dirname(HERE))  # tools/: provenance (packing runs in 3.7+)
    from provenance import source_record

    versions = {}
    if os.path.exists(args.out):
        with gzip.open(args.out) as f:
            versions = json.load(f)["versions"]
    dumps = []
    for path in sorted(glob.glob(os.path.join(BUILD, "*.json"))):
        with open(path) as f:
            dumps.append(json.load(f))
    for found in sorted(dumps, key=lambda d: (_key(d["keras"]), d["runtime"])):
        key = found.pop("key")
        found["measured_in"] = "%s, Python %s%s" % (
            found.pop("runtime"),
            found.pop("python"),
            ", KERAS_BACKEND=" + found["backend"] if found.get("backend") else "",
        )
        found.pop("backend", None)
        if key in versions and _same_facts(versions[key], found):
            continue  # re-measured alike: the entry stays as it was written
        versions[key] = found  # the newest patch of a minor wins
    table = {
        "source": source_record(
            "tools/keras/build_objects.py",
            "each Keras's own deserializers, asked per name",
            [v["measured_in"] for _, v in sorted(versions.items())],
        ),
        "versions": versions,
    }
    raw = json.dumps(table, sort_keys=True, separators=(",", ":")).encode()
    with gzip.GzipFile(args.out, "wb", mtime=0) as f:
        f.write(raw)
    print(
        "%d Keras versions, %d bytes -> %s" % (len(versions), os.path.getsize(args.out), args.out)
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("dump")
    p.add_argument("--tf", type=lambda s: [v for v in s.split(",") if v], default=[])
    p.add_argument("--keras", type=lambda s: [v for v in s.split(",") if v], default=[],
                   help="VERSION=SITE_DIR,...: Keras 3 wheels unpacked with pip --target")  # fmt: skip
    p.add_argument("--tf-keras", type=lambda s: [v for v in s.split(",") if v], default=[],
                   help="2.16,2.21: KERASENVS/tfk-<minor>, TF_USE_LEGACY_KERAS=1")  # fmt: skip
    p.add_argument("--python", default=sys.executable,
                   help="a Python with Keras 3's dependencies, for --keras")  # fmt: skip
    p.add_argument("--backend", default="jax")
    p = sub.add_parser("pack")
    p.add_argument("--out", default=OUT)
    sub.add_parser("_dump")
    args = parser.parse_args()
    handlers = {"dump": cmd_dump, "pack": cmd_pack, "_dump": child_dump}
    if args.command not in handlers:
        parser.error("a command is needed: dump or pack")
    handlers[args.command](args)


if __name__ == "__main__":
    main()
