"""A Keras 2 H5 file in Keras 3: each layer's config against the measured table.

Keras 3 reads a Keras 2 H5 file through its legacy path (keras/src/legacy/saving/
legacy_h5_format.py `load_model_from_hdf5`): `saving_utils.model_from_config` rebuilds
the model from the file's `model_config` (translating only `batch_input_shape`, a
one-element `axis` list and a Lambda's Keras 2 keys at the top entry), each layer by its
class's `from_config` (`cls(**config)`, whose constructor refuses an argument it lacks;
dtype policies, initializers, regularizers, constraints and activation objects
rebuilt from their entries on the way), then `load_weights_from_hdf5_group` matches the
rebuilt layers' variables with the file's. Which of a layer's config parts fail there
depends on the class and the Keras 3 minor, so it is measured, not written by hand:
`worker.catalog.keras_layer_configs` holds, per Keras 3 minor and built-in class, the
config features (`worker.formats.keras_features`) that loaded and those a failure is
charged to, from one file per class and setting written by real Keras 2 releases.

For each layer of the file (built-in classes; the model classes, InputLayer and Lambda
have rules of their own):
- a feature measured to fail in every Keras 3 the consumer may run: the load fails
  (`keras.layer-config`, an error naming the measured error and the step);
- in some of them only: a warning naming those;
- every feature measured to load: nothing to say. An object entry's feature (an
  initializer, regularizer or constraint: `kernel_initializer=VarianceScaling.mode`)
  measured to load in another class of the same Keras loads here too: the layer's
  constructor rebuilds it with its kind's `get` (`initializers.get`, ...), the same call
  for every class; a failure measured in this class is looked up first;
- a feature or class nobody measured, or a consumer whose only Keras 3 has no table:
  whether it loads is unknown (`keras.layer-unmeasured`; the verdict's `loads` is then
  unknown, never "yes"). A consumer that may run several Keras 3 (a TF 2.16+ release
  without a pinned Keras) is judged, as with the object tables, on the measured ones,
  and an information names the others: a Keras without a table, and per feature a
  Keras whose table did not measure it (most minors were measured on each class's
  default config only); unknown only when none of them measured it.

The table charges a failure to the config parts Keras's error names
(tools/keras/layer_config_table.py `charged`), never to every part of the failing file:
a file written by an older Keras 2, which lacks the keys a TF 2.15 config of the same
class carries, is not judged by what those keys did.
Keras stops at its first failure, so the check says nothing once an earlier check
found one.
"""

from __future__ import annotations

from dataclasses import dataclass

from worker.compat.keras_rules import shown_keras
from worker.model.consumer import Consumer
from worker.model.findings import Code, Finding, Fix, FixKind, error, info, warning
from worker.model.keras import (
    FeatureFailure,
    KerasLayer,
    KerasModel,
    KerasObjects,
    LayerConfigs,
    LayerConfigTable,
    object_part,
)

# Judged by rules of their own (keras_checks, keras_inputs), and not in the table.
NOT_JUDGED = frozenset({"Sequential", "Functional", "Model", "InputLayer", "Lambda"})
STAGE = {
    "rebuild": "rebuilding the model from its config",
    "weights": "loading the weights",
}


@dataclass(frozen=True)
class LayerAnswer:
    """One layer in one Keras 3: the failure (and the feature it is charged to), or the
    features nobody measured (`unmeasured`; the class itself when not in the table)."""

    failure: FeatureFailure | None = None
    feature: str = ""
    unmeasured: tuple[str, ...] = ()


def judge_layer(layer: KerasLayer, table: LayerConfigTable) -> LayerAnswer:
    """What `table`'s Keras does with the layer's config: a failing feature wins over
    unmeasured ones (the measured failure needs nothing else)."""
    configs = table.classes.get(layer.class_name)
    if configs is None:
        return LayerAnswer(unmeasured=(layer.class_name,))
    features = set(layer.features)
    for feature in layer.features:
        found = configs.fails.get(feature)
        if found is not None:
            return LayerAnswer(found, feature)
    for combination, found in configs.combinations:
        if combination <= features:
            return LayerAnswer(found, " + ".join(sorted(combination)))
    unmeasured = tuple(f for f in layer.features if not _loads(f, configs, table))
    return LayerAnswer(unmeasured=unmeasured)


def _loads(feature: str, configs: LayerConfigs, table: LayerConfigTable) -> bool:
    """Measured to load in this class, or (an object entry: an initializer, regularizer
    or constraint) in any class of the same Keras: a layer rebuilds such an entry by its
    kind's `get` before anything of its own, so what the entry does is the layer's only
    when it fails, and a failure in this class was looked up first."""
    if feature in configs.loads:
        return True
    part = object_part(feature)
    return part is not None and part in table.object_loads


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _built_in(layer: KerasLayer, objects: list[KerasObjects]) -> bool:
    """A class some Keras the consumer may run knows by name: a custom class is the
    unknown-object check's, not this one's."""
    for table in objects:
        kind = table.kind("layers")
        if kind is not None and kind.knows(layer.class_name):
            return True
    return False


def _failure(layer: KerasLayer, answer: LayerAnswer, consumer: Consumer, model: KerasModel) -> str:
    found = answer.failure
    assert found is not None
    said = found.cause if found.cause and found.cause != found.error else found.error
    seen = f"measured on a {found.variant!r} file by TensorFlow {found.writer}"
    return (
        f"Layer '{layer.name}' ({layer.class_name}) of this {shown_keras(model.keras_version)} "
        f"H5 file fails in Keras {consumer.keras}'s legacy H5 loader when "
        f"{STAGE.get(found.stage, found.stage)}, on its config's {answer.feature!r} "
        f"('{said[:300]}'; {seen}). Load it with tf-keras (TF_USE_LEGACY_KERAS=1), or "
        "rebuild the model in Keras 3 without that setting and save it as .keras."
    )


def layer_config_findings(
    model: KerasModel,
    consumer: Consumer,
    tables: list[LayerConfigTable],
    objects: list[KerasObjects],
) -> list[Finding]:
    """The first layer Keras 3 fails on, or the layers whose load nobody measured; a
    Keras 3 the consumer may run that has an object table but no layer-config table
    leaves every judged layer unmeasured there."""
    if model.container != "hdf5" or model.major != 2:
        return []
    measured = {_minor(t.keras) for t in tables}
    may_run = sorted({o.keras for o in objects if o.keras.startswith("3.")})
    missing = [k for k in may_run if _minor(k) not in measured]
    judged = [x for x in model.layers if x.class_name not in NOT_JUDGED and _built_in(x, objects)]
    if not judged or not may_run:
        return []
    if not tables:
        return [
            info(
                Code.KERAS_LAYER_UNMEASURED,
                f"Whether Keras {consumer.keras} loads this Keras 2 H5 file's layer configs is "
                f"unknown: no layer-config table was measured for Keras {', '.join(missing)}.",
            )
        ]
    unmeasured: list[str] = []
    gaps: dict[str, set[str]] = {}
    notes: list[Finding] = []
    if missing:
        # as with the object tables, a consumer that may run several Keras 3 is judged on
        # the measured ones; the others are named
        notes.append(
            info(
                Code.KERAS_LAYER_CONFIG,
                f"The layer configs were judged on the measured Keras "
                f"{', '.join(t.keras for t in tables)}; Keras {', '.join(missing)}, which "
                f"TensorFlow {consumer.tensorflow} may also run, were not measured.",
            )
        )
    for layer in judged:
        answers = [judge_layer(layer, t) for t in tables]
        failing = [(t, a) for t, a in zip(tables, answers, strict=True) if a.failure]
        fix = Fix(FixKind.RESAVE_AS_KERAS3, keras=model.keras_version or None)
        if failing and len(failing) == len(tables):
            said = _failure(layer, answers[0], consumer, model)
            return [*notes, error(Code.KERAS_LAYER_CONFIG, said, attr=answers[0].feature, fix=fix)]
        if failing:
            shown = ", ".join(t.keras for t, _ in failing)
            return [
                *notes,
                warning(
                    Code.KERAS_LAYER_CONFIG,
                    f"Layer '{layer.name}' ({layer.class_name}) fails in some of the Keras "
                    f"versions TensorFlow {consumer.tensorflow} may run (Keras {shown}: "
                    f"its config's {failing[0][1].feature!r}); declare the consumer's "
                    "`keras:` to know.",
                    attr=failing[0][1].feature,
                    fix=Fix(FixKind.DECLARE_KERAS),
                ),
            ]
        # as with the minors without a table, a feature some Keras the consumer may run
        # measured is judged on those; unknown only when none of them measured it
        each = [set(a.unmeasured) for a in answers]
        parts = sorted(set.intersection(*each)) if each else []
        if parts:
            unmeasured.append(f"'{layer.name}' ({layer.class_name}: {', '.join(parts[:4])})")
        partly = sorted(set.union(*each) - set(parts)) if each else []
        if partly:
            gaps.setdefault(layer.class_name, set()).update(
                t.keras for t, a in zip(tables, answers, strict=True) if a.unmeasured
            )
    if gaps:
        shown = "; ".join(f"{c}: Keras {', '.join(sorted(v))}" for c, v in sorted(gaps.items()))
        notes.append(
            info(
                Code.KERAS_LAYER_CONFIG,
                "Some layer settings were judged on the Keras versions that measured them "
                f"and not measured in others TensorFlow {consumer.tensorflow} may run "
                f"({shown[:400]}).",
            )
        )
    if not unmeasured:
        return notes
    return [
        *notes,
        info(
            Code.KERAS_LAYER_UNMEASURED,
            f"Whether Keras {consumer.keras} loads this Keras 2 H5 file is unknown: "
            f"layer {', '.join(unmeasured[:3])}{' and others' if len(unmeasured) > 3 else ''} "
            "has config parts no measured file had.",
        ),
    ]
