"""A Keras layer config split into the features a Keras 3 legacy H5 loader judges.

Keras 3 reads a Keras 2 H5 file's layer config in `legacy/saving/saving_utils.
model_from_config` and the class's `from_config` (`cls(**config)`): what can fail there is
an argument its constructor lacks (a key), an object it cannot rebuild from its entry (a
`{"class_name": ...}` value: a dtype policy, an initializer, a regularizer, a constraint,
an activation layer), or a value it refuses (a boolean or an enumerated setting such as
`implementation: 1`); the weights then fail when the rebuilt layer holds other variables
than the file. So a config is judged by those parts, each one a feature:

- `key`: every argument the config holds (`"time_major"`, `"groups"`);
- `key=Class`: a value written as an object entry (`"dtype=Policy"`,
  `"kernel_regularizer=L2"`, `"activation=LeakyReLU"`), and `key=Class.arg` for each
  argument of its config (`"kernel_initializer=GlorotUniform.dtype"`: TF 1.x writes a
  dtype there, which Keras 3's initializers refuse);
- `key=true` / `key=false`: a boolean value;
- `key=value`: a dtype string and the values of ENUMERATED keys.

`tools/keras/build_layer_configs.py` measures each (class, feature) with the same function,
so what the worker reads and what the table holds are the same strings. A nested layer
(a wrapper's `layer`, an RNN's `cell`) is a layer of its own: its key is a feature here,
and `key.module=none` when that nested entry names no `module` (Keras before 2.13 wrote
none): a Keras 3 wrapper's `from_config` rebuilds its nested layer with
`serialization_lib.deserialize_keras_object`, which without a module finds only
registered classes ("Could not locate class 'Dense'"), whatever the top-level legacy
path does. A Sequential's first layer's `batch_input_shape` is not a feature: what
Keras 3 makes of it depends on the model, and `worker.compat.keras_inputs` judges it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Keys holding a layer of its own (a wrapper's, an RNN's cell): that layer is judged as a
# layer (`KerasLayer.wrapped`), so here only the key counts.
NESTED_LAYER_KEYS = ("layer", "cell", "forward_layer", "backward_layer")
# Judged by a rule of its own, from what Keras does with it across the model
# (`worker.compat.keras_inputs`: the first layer's batch_input_shape in a Sequential).
NOT_FEATURES = frozenset({"batch_input_shape"})
# Keys whose value (a string or a number) selects a code path a Keras may not have.
ENUMERATED = frozenset({"padding", "data_format", "implementation", "merge_mode", "interpolation"})


def _value(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def config_features(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The features of one layer's `config` (the entry's `config` dict), sorted."""
    found: set[str] = set()
    for raw_key, value in config.items():
        key = str(raw_key)
        if key in NOT_FEATURES:
            continue
        found.add(key)
        if key in NESTED_LAYER_KEYS:
            if isinstance(value, Mapping) and "class_name" in value and "module" not in value:
                found.add(f"{key}.module=none")
            continue
        if isinstance(value, Mapping) and isinstance(value.get("class_name"), str):
            found.add(f"{key}={value['class_name']}")
            inner = value.get("config")
            if isinstance(inner, Mapping):
                found.update(f"{key}={value['class_name']}.{k}" for k in inner)
        elif isinstance(value, bool):
            found.add(f"{key}={_value(value)}")
        elif key == "dtype" and isinstance(value, str):
            found.add(f"dtype={value}")
        elif key in ENUMERATED:
            shown = _value(value)
            if shown is not None:
                found.add(f"{key}={shown}")
    return tuple(sorted(found))
