"""The facts the Keras rules read (worker/compat/keras.py tells where each was measured),
and the small conversions every check shares: Keras and Python version numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from worker.model.findings import SeenOnly
from worker.model.keras import KerasModel

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


@dataclass(frozen=True)
class AddedArgument:
    """A constructor argument a later Keras 2 minor added, and the fixture files it was
    seen failing in: the rows are seen-only (the object table records no Keras 2
    constructor arguments per release yet, so no tool derives them)."""

    first: tuple[int, int]  # the first Keras (major, minor) that takes it
    evidence: SeenOnly


_KEEPDIMS = AddedArgument(
    (2, 6), SeenOnly("tests/fixtures/keras tf2.10/conv1d.h5 and tf2.10/embedding.h5 in 1.15.5")
)
_OPTIONAL = AddedArgument(
    (2, 21), SeenOnly("tests/fixtures/keras tfkeras2.21/* in 2.12.1, 2.15.1 and tf-keras 2.16")
)
_GROUPS = AddedArgument(
    (2, 4),
    SeenOnly(
        "tests/fixtures/keras tf2.10/conv1d.h5 in 1.15.5 and tests/fixtures/keras-real "
        "ethnicolr-0.9.6/nc_voter_name_race_lstm_oversample"
    ),
)
# Arguments later Keras 2 minors added: (class, key) -> the first (major, minor) with it.
ADDED_IN_KERAS2: dict[tuple[str, str], AddedArgument] = {
    (cls, "keepdims"): _KEEPDIMS
    for cls in (
        "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
        "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
    )
} | {
    # tf-keras 2.21's InputLayer writes `optional` (measured: tf-keras 2.20.1's InputLayer
    # lacks it; Keras 2.12 and 2.15 and tf-keras 2.16 fail the file: "Error when
    # deserializing class 'InputLayer' ... Unrecognized keyword arguments: ['optional']")
    ("InputLayer", "optional"): _OPTIONAL,
} | {
    # grouped convolutions (measured: TF 2.3.4's Keras 2.4.0 takes `groups` in Conv1D, Conv2D
    # and Conv3D, TF 2.2.3's Keras 2.3.0-tf in none; TF 1.15.5 fails ethnicolr 0.9.6's Conv1D
    # file: "Keyword argument not understood: 'groups'")
    (cls, "groups"): _GROUPS
    for cls in ("Conv1D", "Conv2D", "Conv3D")
}  # fmt: skip
# Keras 2 arguments a later Keras 3 accepts again: (class, key) -> the first Keras 3 that
# does (hand-written from Keras's history, the commit beside each row).
READDED_IN_KERAS3: dict[tuple[str, str], tuple[int, int]] = {
    # keras-team/keras 4ed99584cc "Backwards compat for input_length" (v3.2.0): Embedding
    # pops it; Keras 3.0-3.1 reject it ("Unrecognized keyword arguments passed to Embedding")
    ("Embedding", "input_length"): (3, 2),
}
# Characters Keras 3 refuses in any layer's or model's name, and the Keras 3 minors that
# refuse it. The check is `Operation.__init__` (keras/src/ops/operation.py: "Argument `name`
# must be a string and cannot contain character `/`"), which every layer and model runs
# when Keras 3 rebuilds it, read unchanged in the newest patch of each minor 3.0-3.15.
# Measured (tests/fixtures/keras-names): each of those 16 minors fails an H5 by Keras 2.6 and
# 2.15 with '/' in a layer's, the input's, the model's or a nested model's (or its layer's)
# name, and loads '>', a backslash, '.' and '-' (Keras 2 itself refuses ':', a space and
# non-ASCII letters: "is not a valid scope name").
REFUSED_IN_NAMES: tuple[tuple[str, tuple[int, int], tuple[int, int]], ...] = (
    ("/", (3, 0), (3, 15)),
)
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


# Keras 3.0-3.2's load_model hands an .h5 path to the H5 loader without `compile` or
# `custom_objects` (keras/saving/saving_api.py; 3.3.0 passes both): compile=False
# compiles the file anyway.
H5_COMPILES_ANYWAY = ((3, 0), (3, 2))


def h5_compiles_anyway(model: KerasModel, may_run: list[str]) -> bool:
    """Whether every Keras the consumer may run (its measured tables' versions) compiles
    this file even when load_model says compile=False."""
    first, last = H5_COMPILES_ANYWAY
    runs = [keras_version_tuple(k) for k in may_run]
    return (
        model.container == "hdf5"
        and bool(runs)
        and all(v is not None and first <= v <= last for v in runs)
    )


def writer_major(model: KerasModel) -> int | None:
    """The writer's Keras major: from its keras_version, else from Keras 3's InputLayer keys."""
    version = keras_version_tuple(model.keras_version)
    if version is not None:
        return version[0]
    for layer in model.layers:
        if layer.class_name == "InputLayer" and "batch_shape" in layer.config_keys:
            return 3
    return None


def shown_keras(version: str) -> str:
    return f"Keras {version}" if version else "an unknown Keras"


def python_versions(oldest: str, newest: str) -> list[str]:
    """Every Python 3 minor from `oldest` to `newest`: ["3.9", "3.10", "3.11"]."""
    low, high = int(oldest.split(".")[1]), int(newest.split(".")[1])
    return [f"3.{n}" for n in range(low, high + 1)]


def archive_layout(version: tuple[int, int]) -> tuple[int, int]:
    """The Keras 2 minor whose weight paths an archive of this Keras 2 version uses."""
    return SHARED_ARCHIVE_LAYOUT_FROM if version >= SHARED_ARCHIVE_LAYOUT_FROM else version
