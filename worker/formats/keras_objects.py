"""The objects a Keras configuration names, which the loading Keras resolves by name.

`load_model` rebuilds each layer from its class name, and each layer's config names
more objects that Keras looks up the same way (`activations.get`, `initializers.get`,
...; `keras.saving.deserialize_keras_object` in Keras 3): an activation, initializer,
regularizer or constraint, by a string ("relu", "<lambda>" for a lambda Keras 2 saved
by its name), by a class entry (`{"class_name", "config"[, "module",
"registered_name"]}`) or, in Keras 3, as a function entry (`{"class_name": "function",
"config": NAME, "module": ...}`). With `compile=True` (the default) it also rebuilds
the compile configuration: H5's `training_config` (`optimizer_config`, `loss`,
`metrics`, `weighted_metrics`) or a `.keras` archive's `compile_config` (`optimizer`,
`loss`, `metrics`, ...). This module lists those names; whether a consumer's Keras
resolves them is `worker.compat.keras_objects`'s question.
"""

from __future__ import annotations

from typing import Any

from worker.model.keras import KerasObjectRef

# A layer config key -> the kind of object Keras resolves its value as.
_KEY_KINDS = (
    ("_initializer", "initializers"),
    ("_regularizer", "regularizers"),
    ("_constraint", "constraints"),
)
ACTIVATION_KEYS = frozenset({"activation", "recurrent_activation"})
# Metric strings compile() resolves itself from the model's outputs, never by lookup
# (keras/src/legacy/saving/saving_utils.py `_deserialize_metric`; Keras 2's compile_utils).
SPECIAL_METRICS = frozenset({"accuracy", "acc", "crossentropy", "ce"})
MAX_REFS = 100_000


def _kind_of(key: str) -> str | None:
    if key in ACTIVATION_KEYS:
        return "activations"
    for suffix, kind in _KEY_KINDS:
        if key.endswith(suffix):
            return kind
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def object_ref(kind: str, value: Any, where: str, nested: bool = False) -> KerasObjectRef | None:
    """The reference a config value makes, or None when it names nothing (None, numbers)."""
    if isinstance(value, str):
        return KerasObjectRef(kind, value, "string", where, nested=nested) if value else None
    if isinstance(value, dict) and "class_name" not in value and "value" in value:
        # Keras 3 writes a lambda activation as its marshalled code alone, which no Keras
        # reads back by name ("Expected 'config' to be a dict", "Unknown `config` as a
        # `dict`"): as unresolvable as Keras 2's '<lambda>'
        return KerasObjectRef(kind, "<lambda>", "string", where, nested=nested)
    if not isinstance(value, dict) or not isinstance(value.get("class_name"), str):
        return None
    class_name = value["class_name"]
    module = _text(value.get("module"))
    registered = _text(value.get("registered_name"))
    inner = value.get("config")
    if class_name == "function":
        if not isinstance(inner, str):
            return None
        return KerasObjectRef(kind, inner, "function", where, module, registered, nested=nested)
    if class_name == "__lambda__":
        return KerasObjectRef(kind, "<lambda>", "lambda", where, module, nested=nested)
    keys = tuple(sorted(str(k) for k in inner)) if isinstance(inner, dict) else ()
    reduction = _text(inner.get("reduction")) if isinstance(inner, dict) else ""
    return KerasObjectRef(
        kind, class_name, "class", where, module, registered, keys, nested, reduction
    )


def layer_object_refs(config: Any, where: str) -> list[KerasObjectRef]:
    """The objects one layer's config names (its own class is the caller's)."""
    if not isinstance(config, dict):
        return []
    found = []
    for key, value in config.items():
        kind = _kind_of(str(key))
        if kind is None:
            continue
        ref = object_ref(kind, value, where)
        if ref is not None:
            found.append(ref)
    return found


def _nested(kind: str, value: Any, out: list[KerasObjectRef], depth: int = 0) -> None:
    """Losses and metrics as compile takes them: one, a list, or a dict per output."""
    if depth > 16 or len(out) >= MAX_REFS:
        return
    if isinstance(value, str) or (isinstance(value, dict) and "class_name" in value):
        if kind == "metrics" and isinstance(value, str) and value in SPECIAL_METRICS:
            return
        ref = object_ref(kind, value, "compile", nested=depth > 0)
        if ref is not None:
            out.append(ref)
        # Keras 2's MeanMetricWrapper / LossFunctionWrapper name their function in `fn`,
        # which their from_config resolves by name too
        inner = value.get("config") if isinstance(value, dict) else None
        if isinstance(inner, dict) and isinstance(inner.get("fn"), str) and inner["fn"]:
            out.append(KerasObjectRef(kind, inner["fn"], "string", "compile", nested=True))
    elif isinstance(value, dict):
        for item in value.values():
            _nested(kind, item, out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _nested(kind, item, out, depth + 1)


def compile_object_refs(training: Any) -> list[KerasObjectRef]:
    """The optimizer, losses and metrics of H5's training_config or a .keras compile_config."""
    if not isinstance(training, dict):
        return []
    found: list[KerasObjectRef] = []
    optimizer = training.get("optimizer_config", training.get("optimizer"))
    ref = object_ref("optimizers", optimizer, "compile")
    if ref is not None:
        found.append(ref)
    _nested("losses", training.get("loss"), found)
    for key in ("metrics", "weighted_metrics"):
        _nested("metrics", training.get(key), found)
    return found
