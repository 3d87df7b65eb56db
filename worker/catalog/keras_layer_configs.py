"""What each Keras 3's legacy H5 loader does with each built-in layer's Keras 2 config.

`data/keras_layer_configs.json.gz` is built by `tools/keras/build_layer_configs.py`
(make, load, pack): one H5 file per built-in layer class and setting (default, dtype
policies, regularizers, constraints, initializers by name and by config, activation
objects, flipped booleans, enumerated values), written by Keras 2's `model.save` in
several TensorFlow releases, loaded by each Keras 3 minor's `load_model(path,
compile=False)`. Each layer config is split into features by
`worker.formats.keras_features.config_features`, the function the worker reads files
with, and per Keras 3 minor and class the table says which features loaded and which
failed, with the error and the step (rebuilding the model from its config, or loading
its weights). The file is read on first use, never at import.

A table is found by the Keras a consumer runs, like the object tables
(`worker.catalog.keras_objects`): its major.minor, or every Keras 3 from the minimum
its TensorFlow names when the Keras is not pinned. A minor not measured has no table.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from worker.catalog.keras_objects import keras_tables, table_key
from worker.model.keras import FeatureFailure, LayerConfigs, LayerConfigTable, object_part

DATA = Path(__file__).resolve().parent / "data" / "keras_layer_configs.json.gz"


def _failure(raw: Mapping[str, Any]) -> FeatureFailure:
    return FeatureFailure(
        error=str(raw["error"]),
        cause=str(raw.get("cause", raw["error"])),
        stage=str(raw["stage"]),
        variant=str(raw.get("variant", "")),
        writer=str(raw.get("writer", "")),
    )


def _parse(version: Mapping[str, Any]) -> LayerConfigTable:
    classes = {}
    for name, entry in version["classes"].items():
        classes[name] = LayerConfigs(
            loads=frozenset(entry["loads"]),
            fails={f: _failure(raw) for f, raw in entry["fails"].items()},
            combinations=tuple(
                (frozenset(raw["features"]), _failure(raw)) for raw in entry.get("combinations", ())
            ),
        )
    object_loads = frozenset(
        part
        for configs in classes.values()
        for feature in configs.loads
        if (part := object_part(feature)) is not None
    )
    return LayerConfigTable(
        str(version["keras"]), str(version["measured_in"]), classes, object_loads
    )


@functools.cache
def _tables(path: Path = DATA) -> dict[str, LayerConfigTable]:
    document = json.loads(gzip.decompress(path.read_bytes()))
    return {key: _parse(version) for key, version in document["versions"].items()}


def measured_minors() -> list[str]:
    """The Keras 3 minors the table holds, in the data's order."""
    return list(_tables())


def layer_config_tables(keras: str | None, tensorflow: str | None = None) -> list[LayerConfigTable]:
    """The tables of every Keras 3 the consumer may run (the object tables decide which
    Keras that is); a minor without a layer-config table is left out, and the rule
    (`worker.compat.keras_layer_configs`) reads its absence as unmeasured."""
    tables = _tables()
    found = []
    for objects in keras_tables(keras, tensorflow):
        table = tables.get(table_key(objects.keras))
        if table is not None:
            found.append(table)
    return found
