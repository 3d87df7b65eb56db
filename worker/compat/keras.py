"""Keras files against the Keras a consumer's `load_model` runs: the measured rules.

Each rule below was seen on real releases (`tests/fixtures/keras/matrix.jsonl`:
`tf.keras.models.load_model(path, compile=False)` in nine TensorFlow
environments, 1.15.5 to 2.21.0, on files written by their Keras), in the order
Keras meets them when it loads a file:

- TensorFlow Serving reads SavedModels only: a consumer declared `serving:` cannot
  load a Keras file at all (`keras.not-servable`).
- A `.keras` zip in a Keras older than 2.12 is not read as one: TF 1.15 and 2.4
  take the path for a SavedModel directory ("SavedModel file does not exist"),
  2.8 for HDF5 ("Unable to open file (file signature not found)")
  (`keras.format-unsupported`).
- A file written by Keras 3 fails in every Keras 2: its configs carry arguments
  Keras 2 lacks ("Unrecognized keyword arguments: ['batch_shape', 'optional']"
  on InputLayer; 2.12 and 2.15: "Error when deserializing class 'InputLayer'")
  (`keras.newer-major`).
- A Keras 2 file in Keras 3 fails on arguments Keras 3 dropped
  (`keras.argument-removed`): `time_major` of the recurrent layers ("Unrecognized
  keyword arguments passed to LSTM: {'time_major': False}"), a `dtype` inside an
  initializer's config (TF 1.x's Keras 2.2.4-tf writes it: "GlorotUniform could
  not be deserialized properly"), and, in a `.keras` written by Keras 2.13+
  (layer entries that name their module), a Lambda's `function_type`, `module`,
  `output_shape_type`, `output_shape_module` ("Unrecognized keyword arguments
  passed to Lambda"); Keras 3's H5 reader translates those, and entries without a
  module (Keras 2.12's `.keras`) take the same legacy path.
- A Lambda holding marshalled Python is refused unless `safe_mode=False`
  (`keras.lambda-safe-mode`): by Keras 3 always, and by Keras 2.12-2.15 reading a
  `.keras` zip; Keras 2 reading H5 does not ask.
- A Keras 2 `.keras` written by one Keras 2 minor does not load in another: the
  weights' paths differ ("Layer 'dense' expected 2 variables, but received 0
  variables during loading"; 2.12 and 2.15 both ways) (`keras.archive-minor`).
- Marshalled Lambda code reads back only in a Python of the same code-object
  layout (`worker.formats.pycode`): 3.7 bytecode in 3.11 "EOFError: EOF read where
  object expected", 3.11 bytecode in 3.7 "SystemError: ... bad argument to internal
  function" (`keras.lambda-python`). With the consumer's Python declared the answer
  is known; otherwise from the Pythons its release has wheels for: none of them
  reads it, an error; some, a warning naming those.

Added after the held-out family was loaded (so tuned on it; see
tests/fixtures/keras/README.md):
- a class or module the consumer's Keras lacks (`keras.class-unknown`): TF 1.15's
  Keras 2.2.4-tf knows no `Functional` (Keras 2.4+ names functional models so:
  "Unknown layer: Functional"), and a Keras 2.13-2.15 `.keras` of a functional model
  names `keras.src.engine.functional`, which neither Keras 2.12 nor Keras 3 can
  import;
- an argument an older Keras 2 lacks (`keras.argument-unknown`): the global pooling
  layers' `keepdims` (Keras 2.6+) in 1.15 and 2.4 ("Keyword argument not understood:
  'keepdims'");
- (from the second held-out family) a layer held by a wrapper (Bidirectional) whose
  entry names no module, as Keras 2.10 and older write it, is a class Keras 3 cannot
  locate ("Could not locate class 'LSTM'") (`keras.class-unknown`);
- more arguments Keras 3 rejects in a Keras 2.13+ `.keras`: `batch_input_shape` on a
  layer other than InputLayer (Embedding writes it), BatchNormalization's `axis` as a
  list;
- (from the held-out `inputs` family) Embedding's `input_length`, which every Keras 2
  writes and Keras 3.0-3.1 reject (3.2 accepts it again): an error where the consumer runs
  only those, a warning where it may run them.

- (from the held-out `tf-keras-files` rows, files written by tf-keras 2.16 and 2.21) tf-keras
  2.21's InputLayer `optional`, which older Keras 2 reject (`keras.argument-unknown`);
- (from the held-out `tf-keras` rows: the committed files loaded by tf-keras 2.16-2.21, the
  Keras 2 that TF 2.16+ run with TF_USE_LEGACY_KERAS=1, declared `keras==2.16`..`2.21`)
  tf-keras reads Keras 2.13-2.15 archives: their `keras.src.engine` module (tf-keras
  imports `keras.*` as `tf_keras.*`) and their weights' paths (it forks Keras 2.15).

Written from Keras's code before any fixture tested it (`worker/compat/keras_inputs.py`):
a Keras 2 Sequential whose first entry is a layer carrying `batch_input_shape` (TF 1.x and
2.0-2.2 write no InputLayer) is rebuilt by Keras 3 on an input of one axis more; the
request the producer served fails, or the load does (`keras.input-shape`).

A rule is data about one layer or one file; the Fix says what to do with the
file or the consumer, never only prose.
"""

from __future__ import annotations

import re

from worker.compat.keras_inputs import input_findings
from worker.compat.keras_objects import (
    fails_only_in_compile,
    object_findings,
    training_config_findings,
)
from worker.compat.subject import Subject
from worker.model.consumer import Consumer
from worker.model.findings import Code, Finding, Fix, FixKind, error, info, warning
from worker.model.keras import KerasLayer, KerasModel, KerasObjects, layout_admits

# Recurrent layers whose Keras 2 config has `time_major`, which Keras 3 rejects.
RECURRENT = frozenset(
    {"LSTM", "GRU", "SimpleRNN", "RNN", "CuDNNLSTM", "CuDNNGRU", "ConvLSTM1D", "ConvLSTM2D"}
)
REMOVED_IN_KERAS3: dict[str, frozenset[str]] = {cls: frozenset({"time_major"}) for cls in RECURRENT}
# Lambda keys Keras 2.13+ `.keras` entries carry (with their module) that Keras 3 rejects.
LAMBDA_KERAS2_KEYS = frozenset(
    {"function_type", "module", "output_shape_type", "output_shape_module"}
)
# Keras 2.13+ `.keras` entries (with their module) Keras 3 rejects: (class or "*", key, how)
# where how is "key" (present) or "list" (a list value).
REJECTED_IN_KERAS3_ARCHIVES: tuple[tuple[str, str, str], ...] = (
    ("*", "batch_input_shape", "key"),  # on a layer other than InputLayer
    ("BatchNormalization", "axis", "list"),
)
# Arguments later Keras 2 minors added: (class, key) -> the first (major, minor) with it.
ADDED_IN_KERAS2: dict[tuple[str, str], tuple[int, int]] = {
    (cls, "keepdims"): (2, 6)
    for cls in (
        "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
        "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
    )
} | {
    # tf-keras 2.21's InputLayer writes `optional` (measured: tf-keras 2.20.1's InputLayer
    # lacks it; Keras 2.12 and 2.15 and tf-keras 2.16 fail the file: "Error when
    # deserializing class 'InputLayer' ... Unrecognized keyword arguments: ['optional']")
    ("InputLayer", "optional"): (2, 21),
} | {
    # grouped convolutions (measured: TF 2.3.4's Keras 2.4.0 takes `groups` in Conv1D, Conv2D
    # and Conv3D, TF 2.2.3's Keras 2.3.0-tf in none; TF 1.15.5 fails ethnicolr 0.9.6's Conv1D
    # file: "Keyword argument not understood: 'groups'")
    (cls, "groups"): (2, 4)
    for cls in ("Conv1D", "Conv2D", "Conv3D")
}  # fmt: skip
# Keras 2 arguments a later Keras 3 accepts again: (class, key) -> the first Keras 3 that
# does (hand-written from Keras's history, the commit beside each row).
READDED_IN_KERAS3: dict[tuple[str, str], tuple[int, int]] = {
    # keras-team/keras 4ed99584cc "Backwards compat for input_length" (v3.2.0): Embedding
    # pops it; Keras 3.0-3.1 reject it ("Unrecognized keyword arguments passed to Embedding")
    ("Embedding", "input_length"): (3, 2),
}
FUNCTIONAL_FROM = (2, 4)  # Keras 2.4 (TF 2.4) names functional models "Functional"
# Keras-internal modules a `.keras` may name, the Keras versions that import them, and how
# a message names those. tf-keras (Keras 2 for TF 2.16+, versioned as TensorFlow's minors)
# imports a `keras.*` module as `tf_keras.*` (tf_keras/src/saving/serialization_lib.py,
# `_retrieve_class_or_fn`), so it reads Keras 2.13-2.15's `keras.src.engine` (measured: their
# archives load in tf-keras 2.16-2.21) but not Keras 2.12's `keras.engine`; its own archives
# name `tf_keras.src.engine` (the class's `__module__`), which only tf-keras imports.
TF_KERAS_FROM = (2, 16)
LAST_KERAS2 = (2, 99)
ENGINE_MODULES: tuple[tuple[str, tuple[int, int], tuple[int, int], str], ...] = (
    ("keras.src.engine", (2, 13), LAST_KERAS2, "Keras 2.13-2.15 and tf-keras 2.16+"),
    ("keras.engine", (2, 6), (2, 12), "Keras 2.6-2.12"),
    ("tf_keras.src.engine", TF_KERAS_FROM, LAST_KERAS2, "tf-keras 2.16+"),
    ("keras.src.models", (3, 0), (99, 0), "Keras 3"),  # Keras 3's own
)
# Keras 2 minors from 2.15 on write and read an archive's weights at the same paths:
# tf-keras forks Keras 2.15's saving code (measured: Keras 2.15 archives load in tf-keras
# 2.16-2.21, Keras 2.12's fail there as in 2.15).
SHARED_ARCHIVE_LAYOUT_FROM = (2, 15)
# What Keras 3 writes on an InputLayer that no Keras 2 accepts.
KERAS3_INPUT_KEYS = ("batch_shape", "optional")
FIRST_ZIP_KERAS = (2, 12)


def keras_version_tuple(text: str | None) -> tuple[int, int] | None:
    """(major, minor) of "2.2.4-tf", "2.15.0", "3.5", "3"; None when not a version."""
    if not text:
        return None
    match = re.match(r"(\d+)(?:\.(\d+))?", text)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def writer_major(model: KerasModel) -> int | None:
    """The writer's Keras major: from its keras_version, else from Keras 3's InputLayer keys."""
    version = keras_version_tuple(model.keras_version)
    if version is not None:
        return version[0]
    for layer in model.layers:
        if layer.class_name == "InputLayer" and "batch_shape" in layer.config_keys:
            return 3
    return None


def _shown(version: str) -> str:
    return f"Keras {version}" if version else "an unknown Keras"


def python_versions(oldest: str, newest: str) -> list[str]:
    """Every Python 3 minor from `oldest` to `newest`: ["3.9", "3.10", "3.11"]."""
    low, high = int(oldest.split(".")[1]), int(newest.split(".")[1])
    return [f"3.{n}" for n in range(low, high + 1)]


def _readded_argument(
    layer: KerasLayer, may_run: list[tuple[int, int]]
) -> tuple[str, tuple[int, int], list[tuple[int, int]]] | None:
    """A Keras 2 argument only later Keras 3 versions accept again: (key, the first Keras 3
    that does, the versions the consumer may run that reject it), or None."""
    for key in layer.config_keys:
        first = READDED_IN_KERAS3.get((layer.class_name, key))
        if first is None:
            continue
        lacking = [v for v in may_run if v < first]
        if lacking:
            return key, first, lacking
    return None


def _removed_argument(model: KerasModel, layer: KerasLayer) -> str | None:
    """What Keras 3 rejects in this Keras 2 layer's config, or None."""
    if layer.typed_objects:
        first = layer.typed_objects[0]
        return f"{first.split(':', 1)[1]} (its {first.split(':', 1)[0]}) carries 'dtype'"
    dropped = sorted(REMOVED_IN_KERAS3.get(layer.class_name, frozenset()) & set(layer.config_keys))
    if dropped:
        return f"argument(s) {', '.join(dropped)}"
    if not (layer.has_module and model.container == "keras-zip"):
        return None
    if layer.class_name == "Lambda":
        keys = sorted(LAMBDA_KERAS2_KEYS & set(layer.config_keys))
        if keys:
            return f"argument(s) {', '.join(keys)}"
    for cls, key, how in REJECTED_IN_KERAS3_ARCHIVES:
        if cls not in ("*", layer.class_name) or (cls == "*" and layer.class_name == "InputLayer"):
            continue
        if how == "key" and key in layer.config_keys:
            return f"argument {key}"
        if how == "list" and key in layer.list_valued:
            return f"argument {key} as a list"
    return None


def _archive_layout(version: tuple[int, int]) -> tuple[int, int]:
    """The Keras 2 minor whose weight paths an archive of this Keras 2 version uses."""
    return SHARED_ARCHIVE_LAYOUT_FROM if version >= SHARED_ARCHIVE_LAYOUT_FROM else version


def _unknown_class(model: KerasModel, runs: tuple[int, int]) -> Finding | None:
    """A class or module the consumer's Keras does not have (met before any argument)."""
    if model.model_class == "Functional" and runs < FUNCTIONAL_FROM:
        return error(
            Code.KERAS_CLASS_UNKNOWN,
            f"The model is a 'Functional' (Keras 2.4 and later name functional models so); "
            f"Keras {'.'.join(map(str, runs))} knows no such class ('Unknown layer: "
            "Functional').",
            fix=Fix(FixKind.UPGRADE_TO),
        )
    if runs[0] >= 3 and writer_major(model) == 2:
        for layer in model.layers:
            if layer.wrapped and not layer.has_module:
                return error(
                    Code.KERAS_CLASS_UNKNOWN,
                    f"Layer '{layer.name}' ({layer.class_name}) sits in a wrapper and its entry "
                    "names no module (Keras 2.10 and older write it so); Keras 3 cannot locate "
                    f"the class ('Could not locate class {layer.class_name!r}').",
                    fix=Fix(FixKind.RESAVE_AS_KERAS3, keras=model.keras_version or None),
                )
    if model.container != "keras-zip":
        return None
    for prefix, first, last, shown in ENGINE_MODULES:
        if model.model_module.startswith(prefix) and not first <= runs <= last:
            return error(
                Code.KERAS_CLASS_UNKNOWN,
                f"The archive names its model's class by the Keras-internal module "
                f"'{model.model_module}', which exists only in {shown} ('Could not deserialize "
                f"class '{model.model_class}' because its parent module ... cannot be "
                "imported').",
                fix=Fix(FixKind.UPGRADE_TO)
                if first[0] >= 3
                else Fix(FixKind.RESAVE_AS_H5, keras=model.keras_version or None),
            )
    return None


def _older_keras2(model: KerasModel, runs: tuple[int, int]) -> tuple[str, Finding] | None:
    """The first argument the consumer's older Keras 2 does not know (and its layer)."""
    for layer in model.layers:
        for key in layer.config_keys:
            first = ADDED_IN_KERAS2.get((layer.class_name, key))
            if first is not None and runs < first:
                return layer.name, error(
                    Code.KERAS_ARGUMENT_UNKNOWN,
                    f"Layer '{layer.name}' ({layer.class_name}) has argument {key}, which "
                    f"Keras {first[0]}.{first[1]} added; Keras {'.'.join(map(str, runs))} "
                    f"does not know it ('Keyword argument not understood: {key!r}', or "
                    f"'Unrecognized keyword arguments: [{key!r}]').",
                    fix=Fix(FixKind.UPGRADE_TO),
                )
    return None


def _lambda_python(s: Subject, model: KerasModel) -> list[Finding]:
    """Marshalled Lambda code against the Python(s) the consumer may run."""
    consumer = s.consumer
    findings: list[Finding] = []
    for layer in model.lambdas:
        assert layer.code is not None
        layout = layer.code.layout
        if layout is None:
            findings.append(
                warning(
                    Code.KERAS_LAMBDA_PYTHON,
                    f"Lambda layer '{layer.name}' holds marshalled Python that no known "
                    "code-object layout reads; whether any Python can load it is unknown.",
                    fix=Fix(FixKind.REPLACE_LAMBDA),
                )
            )
            continue
        if consumer.python:
            if not layout_admits(layout, consumer.python):
                findings.append(
                    error(
                        Code.KERAS_LAMBDA_PYTHON,
                        f"Lambda layer '{layer.name}' holds Python bytecode written by Python "
                        f"{layout}, which Python {consumer.python} cannot read back (marshal: "
                        "'EOF read where object expected' or 'bad argument to internal "
                        "function').",
                        fix=Fix(FixKind.RESAVE_WITH_PYTHON, python=consumer.python),
                    )
                )
            continue
        pythons = consumer.python_range
        if pythons is None:
            continue
        candidates = python_versions(*pythons)
        readers = [p for p in candidates if layout_admits(layout, p)]
        release = f"TensorFlow {consumer.tensorflow}"
        if not readers:
            findings.append(
                error(
                    Code.KERAS_LAMBDA_PYTHON,
                    f"Lambda layer '{layer.name}' holds Python bytecode written by Python "
                    f"{layout}; {release} runs on Python {pythons[0]}-{pythons[1]}, none of "
                    "which reads it back.",
                    fix=Fix(FixKind.REPLACE_LAMBDA),
                )
            )
        elif readers != candidates:
            findings.append(
                warning(
                    Code.KERAS_LAMBDA_PYTHON,
                    f"Lambda layer '{layer.name}' holds Python bytecode written by Python "
                    f"{layout}: {release} loads it only on Python {readers[0]}-{readers[-1]} "
                    f"(it also runs on {', '.join(p for p in candidates if p not in readers)}). "
                    "Declare the consumer's `python:` to know.",
                    fix=Fix(FixKind.DECLARE_KERAS),
                )
            )
    return findings


def keras_findings(s: Subject) -> list[Finding]:
    """The consumer's load of a Keras file, as the rules above predict it."""
    model = s.artifact.keras
    if model is None:
        return []
    consumer = s.consumer
    if consumer.tf_serving:
        return [
            error(
                Code.KERAS_NOT_SERVABLE,
                "TensorFlow Serving loads SavedModels only; it cannot read a Keras "
                f"{'.keras archive' if model.container == 'keras-zip' else '.h5 file'}.",
                fix=Fix(FixKind.EXPORT_SAVED_MODEL),
            )
        ]
    runs = keras_version_tuple(consumer.keras)
    if runs is None:
        return [
            info(
                Code.KERAS_VERSION_UNKNOWN,
                "Which Keras this consumer runs is not known, so whether it loads the "
                "file is unknown; declare `keras:` (and `python:`) in its fleet entry.",
                fix=Fix(FixKind.DECLARE_KERAS),
            )
        ]
    written = model.keras_version
    major = writer_major(model)
    if model.container == "keras-zip" and runs < FIRST_ZIP_KERAS:
        return [
            error(
                Code.KERAS_FORMAT,
                f"Keras {consumer.keras} predates the .keras zip format (Keras 2.12): its "
                "load_model takes the path for a SavedModel directory (TF 2.5 and older) or "
                f"an HDF5 file, and fails. The file was written by {_shown(written)}.",
                fix=Fix(FixKind.RESAVE_AS_H5, keras=written or None)
                if major == 2
                else Fix(FixKind.EXPORT_SAVED_MODEL),
            )
        ]
    findings: list[Finding] = []
    unknown = _unknown_class(model, runs)
    if unknown is not None:
        return [unknown, *_lambda_python(s, model)]
    if major == 3 and runs[0] == 2:
        keys = sorted(
            {
                key
                for layer in model.layers
                if layer.class_name == "InputLayer"
                for key in layer.config_keys
                if key in KERAS3_INPUT_KEYS
            }
        )
        detail = f" (Unrecognized keyword arguments: {keys})" if keys else ""
        findings.append(
            error(
                Code.KERAS_NEWER_MAJOR,
                f"Written by {_shown(written)}; Keras {consumer.keras} cannot rebuild Keras 3 "
                f"configs{detail}. A SavedModel from model.export() loads in Keras 2 releases.",
                fix=Fix(FixKind.UPGRADE_TO),
            )
        )
        return findings
    tables = s.history.keras_tables(consumer.keras, consumer.tensorflow)
    # the writer's own Keras 3 (a newer one's constructor arguments; none: not judged)
    writer = s.history.keras_tables(written, None) if major == 3 and written else []
    layer_objects, compile_objects = _objects(model, consumer, runs, tables, writer)
    if major == 2 and runs[0] == 2:
        older = _older_keras2(model, runs)
        if older is not None:
            at = next(i for i, layer in enumerate(model.layers) if layer.name == older[0])
            # an object Keras fails to resolve in an earlier layer is met first, in the same
            # layer too (measured: TF 1.15.5 fails TF 2.8's Conv1D with a lambda activation
            # and `groups` on "Unknown activation function:<lambda>")
            findings.extend(f for i, f in layer_objects if i <= at)
            layer_objects = [(i, f) for i, f in layer_objects if i > at]
            findings.append(older[1])
    if major == 2 and runs[0] >= 3:
        may_run = [v for t in tables if (v := keras_version_tuple(t.keras)) is not None]
        may_run = may_run or [runs]
        for index, layer in enumerate(model.layers):
            why = _removed_argument(model, layer)
            readded = _readded_argument(layer, may_run)
            if why is None and readded is not None:
                key, first, lacking = readded
                if len(lacking) < len(may_run):
                    shown = ", ".join(f"{v[0]}.{v[1]}" for v in sorted(set(lacking)))
                    findings.append(
                        warning(
                            Code.KERAS_ARGUMENT_REMOVED,
                            f"Layer '{layer.name}' ({layer.class_name}) has argument {key}, "
                            f"which Keras 3 accepts again only from {first[0]}.{first[1]}; "
                            f"TensorFlow {consumer.tensorflow} may run Keras {shown}, which "
                            "reject it. Declare the consumer's `keras:` to know.",
                            fix=Fix(FixKind.DECLARE_KERAS),
                        )
                    )
                else:
                    why = f"argument {key} (Keras 3 accepts it again from {first[0]}.{first[1]})"
            if why is not None:
                # an object Keras fails to resolve in an earlier layer is met first
                # (in the same layer too: its activation and initializers are resolved
                # before the base Layer judges the remaining arguments)
                met = [f for at, f in layer_objects if at <= index]
                findings.extend(met)
                layer_objects = [(at, f) for at, f in layer_objects if at > index]
                findings.append(
                    error(
                        Code.KERAS_ARGUMENT_REMOVED,
                        f"Layer '{layer.name}' ({layer.class_name}): {why}, which Keras 3 no "
                        f"longer accepts (the file was written by {_shown(written)}).",
                        fix=Fix(FixKind.RESAVE_AS_KERAS3, keras=written or None),
                    )
                )
                break
    findings.extend(f for _, f in layer_objects)
    if major == 2 and runs[0] == 2:
        findings.extend(_integer_weights(model, written))
    # the input Keras 3 builds the model on (the layers' arguments are met first)
    findings.extend(input_findings(model, runs))
    if model.lambdas and (runs[0] >= 3 or model.container == "keras-zip"):
        names = ", ".join(f"'{layer.name}'" for layer in model.lambdas)
        findings.append(
            error(
                Code.KERAS_LAMBDA_SAFE_MODE,
                f"Lambda layer(s) {names} hold a marshalled Python function, which Keras "
                f"{consumer.keras} refuses to deserialize unless load_model(..., "
                "safe_mode=False) is given for a trusted file.",
                fix=Fix(FixKind.REPLACE_LAMBDA),
            )
        )
    if model.container == "keras-zip" and major == 2 and runs[0] == 2:
        wrote = keras_version_tuple(written)
        if wrote is not None and _archive_layout(wrote) != _archive_layout(runs):
            findings.append(
                error(
                    Code.KERAS_ARCHIVE_MINOR,
                    f"A Keras 2 .keras archive written by Keras {written} does not load in Keras "
                    f"{consumer.keras}: the weights' paths differ between Keras 2 minors "
                    "('expected N variables, but received 0 variables during loading').",
                    fix=Fix(FixKind.RESAVE_AS_H5, keras=written),
                )
            )
    findings.extend(_lambda_python(s, model))
    findings.extend(compile_objects)
    if fails_only_in_compile(findings):
        findings.append(
            info(
                Code.KERAS_COMPILE_ONLY,
                "Only the compile configuration fails: load_model(path, compile=False) loads "
                f"the model in Keras {consumer.keras}.",
                fix=Fix(FixKind.LOAD_WITHOUT_COMPILE),
            )
        )
    return findings


def _integer_weights(model: KerasModel, written: str) -> list[Finding]:
    """A layer whose config names an integer `dtype` and draws its weights from a random
    or constant initializer. Keras 2.0 wrote the model input's dtype on the first layer
    (an Embedding fed int32 ids: `dtype: 'int32'`); tf.keras makes a layer's `dtype` the
    dtype of its weights (base_layer `add_weight`), so building the layer fails: "Cannot
    convert -0.05 to EagerTensor of dtype int32" (TF 1.15: "Expected int32, got -0.05 of
    type 'float'"), measured in tf.keras of 1.15.5, 2.8.4, 2.15.1 and tf-keras 2.16, 2.21
    on ethnicolr 0.4.0's files."""
    for layer in model.layers:
        if layer.integer_dtype and layer.drawing_initializers:
            drawn = ", ".join(layer.drawing_initializers)
            return [
                error(
                    Code.KERAS_LAYER_DTYPE,
                    f"Layer '{layer.name}' ({layer.class_name}) has dtype "
                    f"{layer.integer_dtype}, which Keras {written or '2.0'} read as its "
                    "input's; this Keras creates the layer's weights in that dtype, and its "
                    f"initializer ({drawn}) draws values an integer cannot hold: the load "
                    f"fails ('Cannot convert ... to EagerTensor of dtype {layer.integer_dtype}').",
                    fix=Fix(FixKind.FLOAT_LAYER_DTYPE, name=layer.name),
                )
            ]
    return []


def _objects(
    model: KerasModel,
    consumer: Consumer,
    runs: tuple[int, int],
    tables: list[KerasObjects],
    writer: list[KerasObjects],
) -> tuple[list[tuple[int, Finding]], list[Finding]]:
    """`keras.unknown-object` and compile findings: the layers' (with the position of the
    layer Keras meets them in) and the compile configuration's."""
    found = object_findings(model, consumer, runs[0], tables, writer)
    position = {layer.name: index for index, layer in enumerate(model.layers)}
    layers = [(position.get(where, 0), f) for where, f in found if where != "compile"]
    compiled = training_config_findings(model, consumer)
    compiled += [f for where, f in found if where == "compile"]
    return layers, compiled
