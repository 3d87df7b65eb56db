"""Layer and model names a Keras 3 refuses (keras.layer-name).

Keras 2 takes any name TensorFlow's name scopes take, '/' included (DenseNet's
'conv1/conv', MobileNetV3's 'Conv/BatchNorm'); Keras 3 refuses '/' in every layer and
model name it rebuilds, so a Keras 2 file with one fails whole, whatever its container
(the facts: `worker.compat.keras_rules.REFUSED_IN_NAMES`). Only the names of the
configuration are judged: Keras 3 loads an H5 file's weights by layer order, so the
weights' own names never reach the check.
"""

from __future__ import annotations

from worker.compat.keras_rules import REFUSED_IN_NAMES
from worker.model.findings import Code, Finding, Fix, FixKind, error, info, warning
from worker.model.keras import KerasModel

# a model used as a layer: renamed, a Keras 2 H5 still fails in Keras 3 until its calls
# are renumbered (the fix's text; tests/fixtures/keras-rename)
NESTED_MODELS = ("Functional", "Model", "Sequential")


def refused_names(model: KerasModel) -> list[tuple[str, str, str]]:
    """(name, class, character) of every name holding a character some Keras 3 refuses,
    in the order Keras rebuilds them: a Sequential's own name first (built before its
    layers), a functional model's last (built from its layers)."""
    named = [(layer.name, layer.class_name) for layer in model.layers]
    if model.model_name:
        own = (model.model_name, model.model_class or "model")
        named = [own, *named] if model.model_class == "Sequential" else [*named, own]
    return [
        (name, cls, char) for name, cls in named for char, _, _ in REFUSED_IN_NAMES if char in name
    ]


def name_findings(model: KerasModel, may_run: list[tuple[int, int]]) -> list[Finding]:
    """The first refused name against the Keras 3 versions the consumer may run: an error
    when every one refuses it, a warning when only some do, and unknown (info,
    keras.layer-unmeasured) when none of them was measured."""
    found = refused_names(model)
    keras3 = {v for v in may_run if v[0] >= 3}
    if not found or not keras3:
        return []
    name, cls, char = found[0]
    (_, first, last) = next(fact for fact in REFUSED_IN_NAMES if fact[0] == char)
    refusing = sorted(v for v in keras3 if first <= v <= last)
    if not refusing:
        shown = ", ".join(f"{v[0]}.{v[1]}" for v in sorted(keras3))
        return [
            info(
                Code.KERAS_LAYER_UNMEASURED,
                f"'{name}' ({cls}) holds {char!r} in its name, which Keras "
                f"{first[0]}.{first[1]}-{last[0]}.{last[1]} refuse; no file with such a name "
                f"was measured in Keras {shown}.",
            )
        ]
    others = len({n for n, _, _ in found}) - 1
    also = f"; {others} other name(s) in the file hold it too" if others else ""
    refused_by = (
        f"Keras {first[0]}.{first[1]}-{last[0]}.{last[1]}"
        if len(refusing) == len(keras3)
        else f"Keras {', '.join(f'{v[0]}.{v[1]}' for v in refusing)} (of those it may run)"
    )
    message = (
        f"'{name}' ({cls}) holds {char!r} in its name, which {refused_by} refuse in any "
        f'layer or model name ("Argument `name` must be a string and cannot contain character '
        f'`{char}`"){also}.'
    )
    nested = model.model_class != "Sequential" and any(  # a Sequential has no inbound nodes
        layer.class_name in NESTED_MODELS for layer in model.layers
    )
    fix = Fix(FixKind.RENAME_LAYERS, name=name, keras=model.keras_version or None,
              value="nested" if nested and model.container == "hdf5" else None)  # fmt: skip
    if len(refusing) == len(keras3):
        return [error(Code.KERAS_LAYER_NAME, message, fix=fix)]
    return [warning(Code.KERAS_LAYER_NAME, message, fix=fix)]
