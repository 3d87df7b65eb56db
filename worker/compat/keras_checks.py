"""The named checks of a Keras file's load (worker/compat/keras.py runs them in order).

Gates answer alone: each returns the whole answer (the load stops there, as Keras's
does) or None to go on. Checks then run in the order Keras meets what they judge,
each adding its findings to the `KerasLoad`; the objects a layer names are met with
that layer, so an argument check first takes the objects of the layers up to its own
(`meet_objects_through`), and the rest are added by `unknown_objects`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from worker.compat.keras_inputs import input_findings
from worker.compat.keras_layer_configs import layer_config_findings
from worker.compat.keras_names import name_findings
from worker.compat.keras_objects import (
    MODEL_CLASSES,
    fails_only_in_compile,
    object_findings,
    training_config_findings,
)
from worker.compat.keras_rules import (
    ADDED_IN_KERAS2,
    ENGINE_MODULES,
    FIRST_ZIP_KERAS,
    FUNCTIONAL_FROM,
    KERAS3_INPUT_KEYS,
    LAMBDA_KERAS2_KEYS,
    READDED_IN_KERAS3,
    REJECTED_IN_KERAS3_ARCHIVES,
    REMOVED_IN_KERAS3,
    archive_layout,
    h5_compiles_anyway,
    keras_version_tuple,
    python_versions,
    shown_keras,
    writer_major,
)
from worker.compat.subject import Subject
from worker.model.consumer import Consumer
from worker.model.findings import Code, Finding, Fix, FixKind, error, info, warning
from worker.model.keras import KerasLayer, KerasModel, KerasObjects, layout_admits


@dataclass
class KerasLoad:
    """One consumer's load of one Keras file past the gates: what the checks read, the
    layer objects not met yet (by the position of their layer) and the findings so far."""

    s: Subject
    model: KerasModel
    runs: tuple[int, int]  # the consumer's Keras (major, minor)
    written: str  # the writer's keras_version ("" unknown)
    major: int | None  # the writer's Keras major
    tables: list[KerasObjects]
    pending: list[tuple[int, Finding]]
    compiled: list[Finding]
    findings: list[Finding] = field(default_factory=list)

    def meet_objects_through(self, index: int) -> None:
        """Add the objects of the layers up to `index`: Keras resolves a layer's objects
        (its activation, initializers) before its base class judges the arguments."""
        self.findings.extend(f for at, f in self.pending if at <= index)
        self.pending = [(at, f) for at, f in self.pending if at > index]


def start_load(s: Subject, model: KerasModel, runs: tuple[int, int]) -> KerasLoad:
    """The load past the gates, with the object tables of the consumer's Keras (and the
    writer's own Keras 3, whose newer constructor arguments are judged; none: not judged)."""
    consumer = s.consumer
    written = model.keras_version
    major = writer_major(model)
    tables = s.history.keras_tables(consumer.keras, consumer.tensorflow)
    writer = s.history.keras_tables(written, None) if major == 3 and written else []
    pending, compiled = _objects(model, consumer, runs, tables, writer)
    return KerasLoad(s, model, runs, written, major, tables, pending, compiled)


# Gates: (subject, model, the consumer's Keras or None) -> the whole answer, or None.


def not_servable(
    s: Subject, model: KerasModel, runs: tuple[int, int] | None
) -> list[Finding] | None:
    if not s.consumer.tf_serving:
        return None
    return [
        error(
            Code.KERAS_NOT_SERVABLE,
            "TensorFlow Serving loads SavedModels only; it cannot read a Keras "
            f"{'.keras archive' if model.container == 'keras-zip' else '.h5 file'}.",
            fix=Fix(FixKind.EXPORT_SAVED_MODEL),
        )
    ]


def version_unknown(
    s: Subject, model: KerasModel, runs: tuple[int, int] | None
) -> list[Finding] | None:
    if runs is not None:
        return None
    return [
        info(
            Code.KERAS_VERSION_UNKNOWN,
            "Which Keras this consumer runs is not known, so whether it loads the "
            "file is unknown; declare `keras:` (and `python:`) in its fleet entry.",
            fix=Fix(FixKind.DECLARE_KERAS),
        )
    ]


def format_unsupported(
    s: Subject, model: KerasModel, runs: tuple[int, int] | None
) -> list[Finding] | None:
    if runs is not None and runs[0] >= 3 and model.layer_list and model.container == "hdf5":
        # Keras 3's legacy saving_utils.model_from_config pops `batch_input_shape` from the
        # top-level config as from a dict (3.0.5-3.15.1 alike): a list fails there
        return [
            error(
                Code.KERAS_FORMAT,
                "The file's model_config is a Sequential whose config is the bare list of its "
                f"layers, as Keras before 2.2.3 wrote it (written by "
                f"{shown_keras(model.keras_version)}); "
                f"Keras {s.consumer.keras}'s H5 loader reads the config as a dictionary and "
                "fails before any layer is made ('TypeError: pop expected at most 1 argument, "
                "got 2'). Keras 2 reads it.",
                fix=Fix(FixKind.RESAVE_AS_H5, keras="2.15"),
            )
        ]
    if runs is None or not (model.container == "keras-zip" and runs < FIRST_ZIP_KERAS):
        return None
    written = model.keras_version
    return [
        error(
            Code.KERAS_FORMAT,
            f"Keras {s.consumer.keras} predates the .keras zip format (Keras 2.12): its "
            "load_model takes the path for a SavedModel directory (TF 2.5 and older) or "
            f"an HDF5 file, and fails. The file was written by {shown_keras(written)}.",
            fix=Fix(FixKind.RESAVE_AS_H5, keras=written or None)
            if writer_major(model) == 2
            else Fix(FixKind.EXPORT_SAVED_MODEL),
        )
    ]


def class_unknown(
    s: Subject, model: KerasModel, runs: tuple[int, int] | None
) -> list[Finding] | None:
    """A class or module the consumer's Keras lacks stops the load; a Lambda's Python is
    still judged (a resave keeps it)."""
    if runs is None:
        return None
    unknown = _unknown_class(model, runs)
    return None if unknown is None else [unknown, *_lambda_python(s, model)]


def newer_major(
    s: Subject, model: KerasModel, runs: tuple[int, int] | None
) -> list[Finding] | None:
    if runs is None or not (writer_major(model) == 3 and runs[0] == 2):
        return None
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
    return [
        error(
            Code.KERAS_NEWER_MAJOR,
            f"Written by {shown_keras(model.keras_version)}; Keras {s.consumer.keras} cannot "
            f"rebuild Keras 3 configs{detail}. A SavedModel from model.export() loads in "
            "Keras 2 releases.",
            fix=Fix(FixKind.UPGRADE_TO),
        )
    ]


# Checks, in the order Keras meets what they judge: each adds to the load's findings.


def argument_unknown(load: KerasLoad) -> None:
    """An argument the consumer's older Keras 2 lacks (keras.argument-unknown)."""
    if not (load.major == 2 and load.runs[0] == 2):
        return
    older = _older_keras2(load.model, load.runs)
    if older is not None:
        at = next(i for i, layer in enumerate(load.model.layers) if layer.name == older[0])
        # an object Keras fails to resolve in an earlier layer is met first, in the same
        # layer too (measured: TF 1.15.5 fails TF 2.8's Conv1D with a lambda activation
        # and `groups` on "Unknown activation function:<lambda>")
        load.meet_objects_through(at)
        load.findings.append(older[1])


def layer_names(load: KerasLoad) -> None:
    """A layer or model name Keras 3 refuses (keras.layer-name): met in `Operation.__init__`,
    before the layer's arguments and objects are judged."""
    if load.runs[0] < 3:
        return
    may_run = [v for t in load.tables if (v := keras_version_tuple(t.keras)) is not None]
    load.findings.extend(name_findings(load.model, may_run or [load.runs]))


def argument_removed(load: KerasLoad) -> None:
    """A Keras 2 argument Keras 3 rejects (keras.argument-removed; a warning where only
    some Keras 3 the consumer may run reject it)."""
    if not (load.major == 2 and load.runs[0] >= 3):
        return
    model, consumer = load.model, load.s.consumer
    may_run = [v for t in load.tables if (v := keras_version_tuple(t.keras)) is not None]
    may_run = may_run or [load.runs]
    for index, layer in enumerate(model.layers):
        why = _removed_argument(model, layer)
        readded = _readded_argument(layer, may_run)
        if why is None and readded is not None:
            key, first, lacking = readded
            if len(lacking) < len(may_run):
                shown = ", ".join(f"{v[0]}.{v[1]}" for v in sorted(set(lacking)))
                load.findings.append(
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
            load.meet_objects_through(index)
            load.findings.append(
                error(
                    Code.KERAS_ARGUMENT_REMOVED,
                    f"Layer '{layer.name}' ({layer.class_name}): {why}, which Keras 3 no "
                    f"longer accepts (the file was written by {shown_keras(load.written)}).",
                    fix=Fix(FixKind.RESAVE_AS_KERAS3, keras=load.written or None),
                )
            )
            return


def _layer_config_findings(load: KerasLoad) -> list[Finding]:
    if any(f.fails_load for f in load.findings):
        return []  # Keras stopped at an earlier failure
    consumer = load.s.consumer
    tables = load.s.history.keras_layer_configs(consumer.keras, consumer.tensorflow)
    return layer_config_findings(load.model, consumer, tables, load.tables)


def layer_configs(load: KerasLoad) -> None:
    """A Keras 2 H5 file's layer configs in Keras 3 (keras.layer-config, measured per class
    and config feature); nothing once an earlier check found the load's failure."""
    found = _layer_config_findings(load)
    load.findings.extend(f for f in found if f.code != Code.KERAS_LAYER_UNMEASURED)


def layer_unmeasured(load: KerasLoad) -> None:
    """The same layers' configs no measured file had (keras.layer-unmeasured: unknown)."""
    found = _layer_config_findings(load)
    load.findings.extend(f for f in found if f.code == Code.KERAS_LAYER_UNMEASURED)


def unknown_objects(load: KerasLoad) -> None:
    """The layers' objects not met by an argument check (keras.unknown-object)."""
    load.findings.extend(f for _, f in load.pending)
    load.pending = []


def layer_dtype(load: KerasLoad) -> None:
    if load.major == 2 and load.runs[0] == 2:
        load.findings.extend(_integer_weights(load.model, load.written))


def input_shape(load: KerasLoad) -> None:
    """The input Keras 3 builds the model on (the layers' arguments are met first)."""
    load.findings.extend(input_findings(load.model, load.runs))


def lambda_safe_mode(load: KerasLoad) -> None:
    model = load.model
    if model.lambdas and (load.runs[0] >= 3 or model.container == "keras-zip"):
        names = ", ".join(f"'{layer.name}'" for layer in model.lambdas)
        load.findings.append(
            error(
                Code.KERAS_LAMBDA_SAFE_MODE,
                f"Lambda layer(s) {names} hold a marshalled Python function, which Keras "
                f"{load.s.consumer.keras} refuses to deserialize unless load_model(..., "
                "safe_mode=False) is given for a trusted file.",
                fix=Fix(FixKind.REPLACE_LAMBDA),
            )
        )


def archive_minor(load: KerasLoad) -> None:
    if not (load.model.container == "keras-zip" and load.major == 2 and load.runs[0] == 2):
        return
    written = load.written
    wrote = keras_version_tuple(written)
    if wrote is not None and archive_layout(wrote) != archive_layout(load.runs):
        load.findings.append(
            error(
                Code.KERAS_ARCHIVE_MINOR,
                f"A Keras 2 .keras archive written by Keras {written} does not load in Keras "
                f"{load.s.consumer.keras}: the weights' paths differ between Keras 2 minors "
                "('expected N variables, but received 0 variables during loading').",
                fix=Fix(FixKind.RESAVE_AS_H5, keras=written),
            )
        )


def lambda_python(load: KerasLoad) -> None:
    load.findings.extend(_lambda_python(load.s, load.model))


# Keras 3.0-3.2's functional_from_config reads output_layers' node indexes as written;
# 3.3.0 lowers a nested Functional's by one (keras/src/models/functional.py get_tensor).
LAST_UNLOWERED_OUTPUTS = (3, 2)


def nested_calls(load: KerasLoad) -> None:
    """A model used as a layer whose call Keras 3's H5 loader never resolves
    (keras.nested-call): met once every layer is made, when functional_from_config wires
    the calls. Keras 2 numbers a nested model's first call node 1 (its construction is node
    0) and lists only the call; Keras 3 makes only the calls, so a layer reading node 1
    waits for good. Read in each Keras 3 minor's functional.py (3.0.5-3.15.1): 3.12, 3.14
    and 3.15 raise once no node can be processed; the others loop in the loader and the
    load never returns. Measured: tests/fixtures/keras-rename (every renamed-only nested
    model fails in 3.0, 3.5, 3.10 and 3.15; renumbered, all load) and keras-nested (held
    out: shared, two-level, multi-input and Sequential nesting fail in seven minors)."""
    model = load.model
    if not (load.runs[0] >= 3 and load.major == 2 and model.container == "hdf5"):
        return
    outputs = [n for n in model.unreached_outputs if n not in model.unreached_calls]
    if outputs and load.runs <= LAST_UNLOWERED_OUTPUTS:
        load.findings.append(
            error(
                Code.KERAS_NESTED_CALL,
                f"'{outputs[0]}' is a functional model used as a layer, and the model's "
                "output_layers reads its call as node 1, as Keras 2 numbers it (its "
                f"construction is node 0); Keras {load.s.consumer.keras}'s H5 loader looks "
                "that node up as is and fails ('IndexError: list index out of range'); Keras "
                "3.3 and later lower a nested Functional's index there by one and load it.",
                fix=Fix(FixKind.RENUMBER_NESTED_CALLS, name=outputs[0], keras="3.3"),
            )
        )
    if not model.unreached_calls:
        return
    name = model.unreached_calls[0]
    others = len(model.unreached_calls) - 1
    also = f" ({others} more such model(s))" if others else ""
    load.findings.append(
        error(
            Code.KERAS_NESTED_CALL,
            f"'{name}' is a model used as a layer{also}, and a layer reads its call as node 1, "
            "as Keras 2 numbers it (its construction is node 0); Keras 3's H5 loader makes only "
            "its calls, so that node never exists: Keras 3.12, 3.14 and 3.15 fail the load "
            "('Invalid Functional model configuration. The graph of the Functional model "
            "either has loops or disconnected nodes'), the other Keras 3 minors loop in "
            "functional_from_config and the load never returns.",
            fix=Fix(FixKind.RENUMBER_NESTED_CALLS, name=name),
        )
    )


def unbuilt_sequential(load: KerasLoad) -> None:
    """A Sequential H5 whose config gives no input shape (keras.unbuilt-sequential): met when
    the weights load, after the rebuild. Read in Keras's code: Sequential.from_config adds
    the layers and builds the model only from an InputLayer, a first layer's
    `batch_input_shape` (`batch_shape`) or the config's `build_input_shape`; with none, no
    layer holds weights yet, and the H5 weights loader (tf.keras's hdf5_format, tf-keras's
    and Keras 3's legacy_h5_format alike) counts only the layers that hold weights
    (`[l for l in model.layers if l.weights]`) against the file's, and fails on the
    difference. TF 1.13's Keras 2.2.4-tf drops the first layer's `batch_input_shape` from a
    Sequential's config, so every Keras fails its files (tests/fixtures/keras tf1.13: 1.15.5,
    2.8.4 and tf-keras 2.16-2.21). A layer holds weights when its config, or that of a layer
    it wraps (TimeDistributed's, Bidirectional's `layer`), names an initializer; a model of
    no such layer, or holding a nested model, is not judged. Held out
    (tests/fixtures/keras-unbuilt): TF 1.14 drops the InputLayer too, and every consumer
    fails those files whatever the first layer; a wrapper alone was missed as first
    measured (tuned on that round's in_timedist and in_bidir)."""
    model = load.model
    if model.container == "hdf5" and model.unbuilt_nested:
        _unbuilt_nested(load)
    if model.container != "hdf5" or model.model_class != "Sequential":
        return
    top = [layer for layer in model.layers if layer.depth == 1]
    if not top or model.build_input_shape:
        return
    first = top[0]
    declared = {"batch_input_shape", "batch_shape"} & set(first.config_keys)
    if first.class_name == "InputLayer" or declared:
        return
    if any(layer.class_name in MODEL_CLASSES for layer in top):
        return
    # each top-level layer with the layers it holds (a wrapper's `layer`, depth first)
    held: list[list[KerasLayer]] = []
    for layer in model.layers:
        if layer.depth == 1:
            held.append([layer])
        elif held:
            held[-1].append(layer)
    weighted = [
        group[0]
        for group in held
        if any(key.endswith("_initializer") for inner in group for key in inner.config_keys)
    ]
    if not weighted:
        return
    runs = ".".join(map(str, load.runs))
    count = len(weighted)
    message = (
        "'Layer count mismatch when loading weights from file. Model expected 0 layers, "
        f"found {count} saved layers'; the Keras of TensorFlow 1.x: 'You are trying to load a "
        f"weight file containing {count} layers into a model with 0 layers'"
    )
    written = f" (Keras {load.written} wrote it so)" if load.written else ""
    load.findings.append(
        error(
            Code.KERAS_UNBUILT_SEQUENTIAL,
            f"The model is a Sequential whose config declares no input shape{written}: no "
            f"InputLayer, no batch_input_shape on its first layer '{first.name}' and no "
            f"build_input_shape. Keras {runs} rebuilds it unbuilt, so none of its layers "
            f"holds weights yet, and loading the file's weights fails ({message}).",
            fix=Fix(FixKind.REBUILD_WITH_INPUT, name=first.name or None),
        )
    )


def _unbuilt_nested(load: KerasLoad) -> None:
    """A Sequential used as a layer whose own config gives no input shape (TF 1.13-2.0 write
    a nested Sequential so, its input on the Sequential's own config, which from_config
    does not read): it stays unbuilt whatever the outer model's input. Measured after the
    rule below was written (tests/fixtures/keras-unbuilt in_nested by TF 1.13-2.0: every
    tf.keras and tf-keras fails; Keras 3 fails TF 2.0's file on the weights count): tuned
    on those rows."""
    name = load.model.unbuilt_nested[0]
    said = (
        f"'Weights for model {name} have not yet been created'"
        if load.runs[0] < 3
        else "'Layer count mismatch when loading weights from file'"
    )
    load.findings.append(
        error(
            Code.KERAS_UNBUILT_SEQUENTIAL,
            f"'{name}' is a Sequential used as a layer whose own config declares no input "
            "shape (no InputLayer, no batch_input_shape on its first layer, no "
            f"build_input_shape); Keras {'.'.join(map(str, load.runs))} rebuilds it unbuilt "
            f"whatever the outer model's input, and loading the file's weights fails ({said}).",
            fix=Fix(FixKind.REBUILD_WITH_INPUT, name=name or None),
        )
    )


def compile_objects(load: KerasLoad) -> None:
    """The compile configuration (training_config / compile_config), met last."""
    load.findings.extend(load.compiled)


def compile_only(load: KerasLoad) -> None:
    """compile=False loads it: only the compile configuration fails and nothing the
    rebuild meets is unknown (an unmeasured layer config would make that a guess)."""
    unknown = any(f.code == Code.KERAS_LAYER_UNMEASURED for f in load.findings)
    if h5_compiles_anyway(load.model, [t.keras for t in load.tables]):
        return  # Keras 3.0-3.2 compile an H5 file whatever compile= says
    if fails_only_in_compile(load.findings) and not unknown:
        load.findings.append(
            info(
                Code.KERAS_COMPILE_ONLY,
                "Only the compile configuration fails: load_model(path, compile=False) loads "
                f"the model in Keras {load.s.consumer.keras}.",
                fix=Fix(FixKind.LOAD_WITHOUT_COMPILE),
            )
        )


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
            added = ADDED_IN_KERAS2.get((layer.class_name, key))
            if added is not None and runs < added.first:
                first = added.first
                return layer.name, error(
                    Code.KERAS_ARGUMENT_UNKNOWN,
                    f"Layer '{layer.name}' ({layer.class_name}) has argument {key}, which "
                    f"Keras {first[0]}.{first[1]} added; Keras {'.'.join(map(str, runs))} "
                    f"does not know it ('Keyword argument not understood: {key!r}', or "
                    f"'Unrecognized keyword arguments: [{key!r}]').",
                    fix=Fix(FixKind.UPGRADE_TO),
                ).seen_only(added.evidence)
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
