"""Every row of the Keras fixture matrix: our verdict against what real Keras did.

`tests/fixtures/keras/matrix.jsonl` has one row per (consumer release, file):
`tf.keras.models.load_model(path, compile=False)` in that release's environment
(tools/keras/build_matrix.py). For every row, with no skips: `loads` equals the
row's `ok` (and `serves`: a loaded model ran and returned the producer's output),
and where it failed, our first error's code names the row's error class. Where
Keras refused a Lambda under safe_mode, `unsafe_load_ok` says whether the bytecode
itself loaded with safe_mode=False: we predict a `keras.lambda-python` error exactly
when it did not.

Rows are `tuned` (the families the rules were written from: files by 1.15.5, 2.4.4,
2.8.4, 2.12.1, 2.15.1, 2.18.1, 2.21.0 of the dense, lstm and lambda models, loaded
by those releases), `held-out` (made and loaded after the rules were written: files
by 2.10.1 and 2.17.1, the gru, functional and embedding models, and the consumers
2.10.1 and 2.17.1; the rules agreed on 348 of 363, the rest taught new rules) or
`held-out-2` (conv1d, bidirectional and layernorm models by 1.15.5, 2.10.1, 2.15.1
and 2.21.0, made and loaded after those: loads agreed on 162 of 162, the error class
on 156; one more rule came from the 6), or `objects` (objects named by name and
compiled files, loaded with compile=True, made and loaded after
worker/compat/keras_objects.py was committed; see tests/fixtures/keras/README.md), or
`inputs` (models declaring their input in different ways, run on a request of the declared
shape, made and loaded after worker/compat/keras_inputs.py was committed: 646 of 672 agreed
first; a loaded model whose request failed must load and not serve, and an output unlike
the producer's is what a keras.input-shape warning predicts), or `inputs-2` (other first
layers, made and loaded after the first inputs family's tuning: 188 of 216 agreed first), or
`tf-keras` (every committed file loaded, after tf-keras joined the object table, by tf-keras,
the Keras 2 that TF 2.16+ run with TF_USE_LEGACY_KERAS=1: consumers "tf-keras-2.16" are
tensorflow-cpu 2.16 with tf-keras 2.16, declared as `tf==2.16,keras==2.16`; 2.16 and 2.21
loaded after the rule wiring was committed: 482 of 534 agreed first, the Keras 2.15 archives
that load in tf-keras taught the rest but TF 1.13's rows below), or `tf-keras-minors` (the
same files by tf-keras 2.17-2.20, loaded before that tuning was committed and not read to
write it: 964 of 1068 agreed with the rules as first wired, 1060 with the tuned ones), or
`tf-keras-files` (files written by tf-keras 2.16 and 2.21, made and loaded after that tuning
was committed, loaded by tf-keras, Keras 2.12 and 2.15 and Keras 3).
Rows not yet explained are listed in KNOWN_MISSES with the reason;
`tools/keras/agreement.py` prints the figures.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.findings import Code, Severity

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "keras"
# The Python of each consumer environment the matrix was measured in (tools/keras/).
PYTHON_OF = {
    "1.15.5": "3.7",
    "2.4.4": "3.7",
    "2.8.4": "3.7",
    "2.10.1": "3.7",
    "2.12.1": "3.11",
    "2.13.1": "3.11",
    "2.14.1": "3.11",
    "2.15.1": "3.11",
    "2.16.2": "3.11",
    "2.17.1": "3.11",
    "2.18.1": "3.11",
    "2.21.0": "3.11",
}
HELD_OUT_PRODUCERS = {"tf2.10", "tf2.17"}
HELD_OUT_MODELS = {"gru", "functional", "embedding"}
HELD_OUT_CONSUMERS = {"2.10.1", "2.17.1"}
# A second held-out family, made and loaded after the rules the first one taught were in.
HELD_OUT_2_MODELS = {"conv1d", "bidirectional", "layernorm"}
# Objects named by name and compiled files (tools/keras/build_matrix.py OBJECT_MODELS), made
# and loaded only after worker/compat/keras_objects.py was committed; consumers named
# "keras-3.X.Y" are that Keras 3 wheel outside TensorFlow (jax backend).
OBJECT_MODELS = {
    "lambda_act", "fn_act", "custom_layer", "registered_layer", "custom_init",
    "loss_fn", "metric_fn", "adam", "sgd", "loss_list", "adam_functional",
}  # fmt: skip
# Declared inputs (tools/keras/build_matrix.py INPUT_MODELS), made and loaded only after
# worker/compat/keras_inputs.py was committed (commit "keras.input-shape: a Keras 2 Sequential
# whose first entry is a layer carrying batch_input_shape ..."): each
# file run on a request of its declared batch shape; `loaded` says whether load_model
# returned, so a failing request is told from a failing load.
INPUT_MODELS = {
    "seq_input_shape", "seq_batch_shape", "seq_input_dim", "seq_last1", "seq_none_dim",
    "seq_rank1", "seq_conv1d", "seq_embed_flat", "seq_embed_pool", "seq_dropout",
    "seq_layer_in", "seq_built", "fn_none_dim", "fn_rank1", "fn_multi", "fn_dict",
}  # fmt: skip
# A second inputs family, made and loaded after the first one's tuning was committed.
INPUT_MODELS_2 = {
    "seq_flat_first", "seq_bn_first", "seq_ln_first", "seq_act_first", "seq_reshape_first",
    "seq_dense_pool", "seq_rank3_last1", "seq_conv2d", "seq_masking", "seq_timedist",
    "seq_noise", "seq_dense_drop",
}  # fmt: skip
# tf-keras consumers (tools/keras/build_matrix.py "tf-keras-2.16"): the TensorFlow release
# each environment installed, the newest patch of the minor.
TF_KERAS = "tf-keras-"
TF_KERAS_RELEASE = {"2.16": "2.16.2", "2.17": "2.17.1", "2.18": "2.18.1", "2.19": "2.19.1",
                    "2.20": "2.20.0", "2.21": "2.21.0"}  # fmt: skip
# tf-keras consumers whose rows the tuning was written from; the other minors' rows are
# `tf-keras-minors` (loaded before that tuning was committed, not read to write it).
TF_KERAS_TUNED = {"2.16", "2.21"}
# Files written by tf-keras (folders tfkeras<minor>), made and loaded after the tf-keras
# tuning was committed: the `tf-keras-files` family, whoever loads them.
TF_KERAS_FILES = "tfkeras"
FAMILIES = (
    "tuned", "held-out", "held-out-2", "objects", "inputs", "inputs-2", "tf-keras",
    "tf-keras-minors", "tf-keras-files",
)  # fmt: skip

# Keras's error text -> the finding code that names it; the first match wins, so the more
# specific patterns come first. (consumer major, pattern, code)
ERROR_CLASSES: list[tuple[int | None, str, Code]] = [
    # the input Keras 3 rebuilt a Keras 2 model on (the `inputs` family)
    (3, "Invalid input shape", Code.KERAS_INPUT_SHAPE),
    (3, "is incompatible with the layer", Code.KERAS_INPUT_SHAPE),
    (3, "Kernel shape must have the same length", Code.KERAS_INPUT_SHAPE),
    (3, "Shapes used to initialize variables must be fully-defined", Code.KERAS_INPUT_SHAPE),
    (None, "SavedModel file does not exist", Code.KERAS_FORMAT),
    (3, "pop expected at most 1 argument", Code.KERAS_FORMAT),  # a list Sequential config
    (None, "file signature not found", Code.KERAS_FORMAT),
    (None, "Requested the deserialization of a", Code.KERAS_LAMBDA_SAFE_MODE),
    (None, "EOF read where object expected", Code.KERAS_LAMBDA_PYTHON),
    (None, "bad argument to internal function", Code.KERAS_LAMBDA_PYTHON),
    (None, "bad marshal data", Code.KERAS_LAMBDA_PYTHON),
    (None, "variables during loading", Code.KERAS_ARCHIVE_MINOR),
    (None, "Unknown layer: Functional", Code.KERAS_CLASS_UNKNOWN),
    # a Sequential rebuilt without an input shape holds no weights when they load
    (None, "Model expected 0 layers", Code.KERAS_UNBUILT_SEQUENTIAL),
    (None, "into a model with 0 layers", Code.KERAS_UNBUILT_SEQUENTIAL),
    (None, "have not yet been created", Code.KERAS_UNBUILT_SEQUENTIAL),  # a nested one
    (None, "because its parent module", Code.KERAS_CLASS_UNKNOWN),
    (3, "Could not locate class 'LSTM'", Code.KERAS_CLASS_UNKNOWN),
    (3, "Could not locate class 'Dense'", Code.KERAS_CLASS_UNKNOWN),  # in TimeDistributed
    # a tf-keras archive's model class, by its module tf_keras.src.engine.functional
    (3, "Could not locate class 'Functional'", Code.KERAS_CLASS_UNKNOWN),
    # objects named by name (the `objects` family)
    (None, "Argument(s) not recognized", Code.KERAS_COMPILE_ARGUMENT),
    (3, "Invalid value for argument `reduction`", Code.KERAS_COMPILE_ARGUMENT),
    (2, "KeyError: 'sample_weight_mode'", Code.KERAS_COMPILE_ARGUMENT),
    (3, "because it is not a KerasSaveable", Code.KERAS_UNKNOWN_OBJECT),
    (3, "Expected 'config' to be a dict", Code.KERAS_UNKNOWN_OBJECT),
    (3, "Unknown `config` as a `dict`", Code.KERAS_UNKNOWN_OBJECT),
    (3, "got an unexpected keyword argument", Code.KERAS_ARGUMENT_REMOVED),
    (3, "takes no arguments", Code.KERAS_ARGUMENT_REMOVED),  # Zeros(dtype=...), TF 1.x's
    (3, "Unrecognized keyword arguments passed to", Code.KERAS_ARGUMENT_REMOVED),
    (None, "Unknown ", Code.KERAS_UNKNOWN_OBJECT),
    (2, "Cannot deserialize object of type", Code.KERAS_UNKNOWN_OBJECT),  # tf-keras archives
    (None, "Could not interpret", Code.KERAS_UNKNOWN_OBJECT),
    (None, "Could not locate", Code.KERAS_UNKNOWN_OBJECT),
    (3, "string indices must be integers", Code.KERAS_UNKNOWN_OBJECT),
    (2, "Keyword argument not understood", Code.KERAS_ARGUMENT_UNKNOWN),
    (2, "got an unexpected keyword argument 'fn'", Code.KERAS_ARGUMENT_UNKNOWN),  # a loss
    (2, "got an unexpected keyword argument 'reduction'", Code.KERAS_ARGUMENT_UNKNOWN),
    # an integer layer dtype the layer's float initializer fills (real files, Keras 2.0)
    (2, "to EagerTensor of dtype int", Code.KERAS_LAYER_DTYPE),
    (2, "Expected int32, got", Code.KERAS_LAYER_DTYPE),
    (3, "Unrecognized keyword arguments passed to", Code.KERAS_ARGUMENT_REMOVED),
    (3, "could not be deserialized properly", Code.KERAS_ARGUMENT_REMOVED),
    (3, "Error when deserializing class", Code.KERAS_ARGUMENT_REMOVED),
    (2, "Unrecognized keyword arguments", Code.KERAS_NEWER_MAJOR),
    (2, "Error when deserializing class", Code.KERAS_NEWER_MAJOR),
    (2, "Could not deserialize class", Code.KERAS_NEWER_MAJOR),
]


def error_class(consumer: str, error: str) -> Code | None:
    version = consumer.removeprefix("keras-")
    major = (
        2
        if consumer.startswith(TF_KERAS)
        else 3
        if consumer.startswith("keras-") or tuple(int(p) for p in version.split(".")[:2]) >= (2, 16)
        else 2
    )
    for wanted, pattern, code in ERROR_CLASSES:
        if (wanted is None or wanted == major) and pattern in error:
            return code
    return None


# Keras 3 wraps what failed inside a layer in these, quoting the whole config first; rows
# recorded before build_matrix.py kept the `cause` underneath lost it to the 400-character
# cut, so for those the wrapper says only that a layer's config failed: either class.
KERAS3_WRAPPERS = ("could not be deserialized properly", "Error when deserializing class")
WRAPPED = frozenset({Code.KERAS_ARGUMENT_REMOVED, Code.KERAS_UNKNOWN_OBJECT})


def expected_codes(row: dict[str, Any]) -> set[Code]:
    """The codes that name the row's error (empty: none does)."""
    if "cause" in row:
        found = error_class(row["consumer"], row["cause"])
        if found == Code.KERAS_ARGUMENT_REMOVED and row["model"].startswith("keras3"):
            # a Keras 3 file's argument an older Keras 3 lacks, not one Keras 3 dropped
            found = Code.KERAS_ARGUMENT_UNKNOWN
        if found == Code.KERAS_NEWER_MAJOR and row["model"].startswith(TF_KERAS_FILES):
            # a newer Keras 2 file's argument an older Keras 2 lacks, not a Keras 3 file
            found = Code.KERAS_ARGUMENT_UNKNOWN
        return {found} if found else set()
    error = row["error"]
    if family(row) == "objects" and any(w in error for w in KERAS3_WRAPPERS):
        major3 = row["consumer"].startswith("keras-") or error_class(row["consumer"], error) in (
            WRAPPED | {Code.KERAS_NEWER_MAJOR}
        )
        if major3 and error_class(row["consumer"], error) in WRAPPED:
            return set(WRAPPED)
    found = error_class(row["consumer"], error)
    return {found} if found else set()


def rows() -> list[dict[str, Any]]:
    with (FIXTURES / "matrix.jsonl").open() as f:
        return [json.loads(line) for line in f if line.strip()]


def family(row: dict[str, Any]) -> str:
    producer, name = row["model"].split("/")
    if producer.startswith(TF_KERAS_FILES):
        return "tf-keras-files"
    if row["consumer"].startswith(TF_KERAS):
        tuned = row["consumer"].removeprefix(TF_KERAS) in TF_KERAS_TUNED
        return "tf-keras" if tuned else "tf-keras-minors"
    if name.split(".")[0] in INPUT_MODELS:
        return "inputs"
    if name.split(".")[0] in INPUT_MODELS_2:
        return "inputs-2"
    if name.split(".")[0] in OBJECT_MODELS:
        return "objects"
    if name.split(".")[0] in HELD_OUT_2_MODELS:
        return "held-out-2"
    held = (
        producer in HELD_OUT_PRODUCERS
        or name.split(".")[0] in HELD_OUT_MODELS
        or row["consumer"] in HELD_OUT_CONSUMERS
    )
    return "held-out" if held else "tuned"


@functools.cache
def artifact(model: str) -> Artifact:
    (found,) = read_path(str(FIXTURES / "models" / model))
    return found


def consumer_of(name: str) -> Consumer:
    """The row's consumer: a catalog release on its measured Python, or a Keras 3 wheel
    run outside TensorFlow ("keras-3.5.0": the newest release with that Keras pinned), or
    tf-keras ("tf-keras-2.16": that release with `keras==2.16`, as a fleet declares it)."""
    if name.startswith(TF_KERAS):
        minor = name.removeprefix(TF_KERAS)
        return replace(load_catalog().consumer(TF_KERAS_RELEASE[minor]), keras=minor, python="3.11")
    if name.startswith("keras-"):
        return replace(
            load_catalog().consumer("2.21.0"), keras=name.removeprefix("keras-"), python="3.11"
        )
    return replace(load_catalog().consumer(name), python=PYTHON_OF[name])


def disagreement(row: dict[str, Any], found: Artifact | None = None) -> str | None:
    """Why our verdict differs from the row, or None when it agrees; `found` is the file
    read from elsewhere than tests/fixtures/keras/models (the real files)."""
    consumer = consumer_of(row["consumer"])
    verdict = check_artifact(found or artifact(row["model"]), consumer, load_catalog())
    errors = [f for f in verdict.findings if f.severity == Severity.ERROR]
    loaded = row.get("loaded", row["ok"])
    if verdict.loads is not loaded:
        return f"loads {verdict.loads}, Keras loaded={loaded} ({row.get('error', '')[:120]})"
    if row["ok"] and "loaded" in row:
        # served; an output unlike the producer's is what a keras.input-shape warning says
        differs = any(f.code == Code.KERAS_INPUT_SHAPE for f in verdict.findings)
        if verdict.serves is not True or differs != (row.get("matches_producer") is False):
            return f"serves {verdict.serves}, output matches {row.get('matches_producer')}"
        return None
    if row["ok"]:
        if verdict.serves is not True or row.get("matches_producer") is False:
            return f"serves {verdict.serves}, output matches {row.get('matches_producer')}"
        return None
    if verdict.serves is not False:
        return f"serves {verdict.serves}, Keras failed the request: {row['error'][:120]}"
    expected = expected_codes(row)
    if not expected:
        return f"no error class for {row['error'][:160]!r}"
    if errors[0].code not in expected:
        return f"first error {errors[0].code}, Keras's is {expected}: {row['error'][:120]}"
    if "compile_false_ok" in row:
        compile_only = any(f.code == Code.KERAS_COMPILE_ONLY for f in verdict.findings)
        if compile_only != row["compile_false_ok"]:
            return f"compile-only {compile_only}, compile=False ok={row['compile_false_ok']}"
    if "unsafe_load_ok" in row:
        predicted = any(f.code == Code.KERAS_LAMBDA_PYTHON for f in errors)
        if predicted == row["unsafe_load_ok"]:
            return f"lambda-python {predicted}, safe_mode=False ok={row['unsafe_load_ok']}"
    return None


def figures() -> Iterator[tuple[str, int, int]]:
    """(family, rows, agreeing) for the matrix, as tools/keras/agreement.py prints them."""
    for name in FAMILIES:
        picked = [r for r in rows() if family(r) == name]
        yield name, len(picked), sum(1 for r in picked if disagreement(r) is None)


def test_the_matrix_covers_both_families() -> None:
    counted = {name: total for name, total, _ in figures()}
    assert counted["tuned"] >= 231 and counted["held-out"] > 0 and counted["objects"] >= 130
    assert counted["inputs"] >= 672 and counted["inputs-2"] >= 216


# Held-out `objects` rows no rule explains yet, each with why (strict: a row that starts
# agreeing fails here until it is taken off the list).
KNOWN_MISSES: dict[tuple[str, str], str] = {}


def _marked(row: dict[str, Any]) -> Any:
    why = KNOWN_MISSES.get((row["consumer"], row["model"]))
    marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
    return pytest.param(row, marks=marks, id=f"{row['consumer']}:{row['model']}")


@pytest.mark.parametrize("row", [_marked(r) for r in rows()])
def test_verdict_agrees_with_real_keras(row: dict[str, Any]) -> None:
    assert disagreement(row) is None, family(row)
