"""Objects a Keras file names by name, against what the consumer's Keras resolves.

Written from Keras's own deserialization code (read in the wheels), and judged with
the measured tables of `worker.catalog.keras_objects` (each Keras's own lookups):

- Layers and the objects in their configs (activation, initializers, regularizers,
  constraints). Keras 2 looks a name up in the kind's module (`deserialize_keras_object`
  with `module_objects=globals()`: "Unknown activation function: <lambda>", "Unknown
  layer: MyLayer"); Keras 3 reads an H5 file's strings with the kind's `get`
  (`ALL_OBJECTS_DICT`: "Could not interpret activation function identifier: <lambda>")
  and a `.keras` entry by its module (`keras.*`: the public API; `"module":
  "builtins"` functions: any of activations, losses, metrics; any other module: only a
  custom object: "Could not locate function 'my_act'"). A name the consumer declares
  in `custom_objects` resolves (Keras looks there first, by class name or registered
  name). Keras 3's marshalled `__lambda__` is refused under safe_mode.
- The compile configuration, which `load_model` rebuilds unless `compile=False`:
  - Keras 2 resolves the optimizer, every loss and every metric when it compiles
    (`saving_utils.compile_args_from_training_config`, then `compile`): an unknown one
    fails the load;
  - Keras 3 resolves the optimizer (`optimizers.deserialize`, by its lowercased name)
    and builds it from its config: the base optimizer ignores `decay` and rejects any
    other argument its class lacks ("Argument(s) not recognized: {'lr': 0.001}",
    `base_optimizer.py`), so Keras 2's `lr`, `jit_compile`, `is_legacy_optimizer` fail;
  - Keras 3 reading H5 (`legacy/saving/saving_utils.py`): a loss given as one unknown
    string fails (`_resolve_compile_arguments_compat` indexes the string: "string
    indices must be integers"); metrics and losses in a list or per output are handed
    to `compile` as strings, built lazily, and a failure there is only logged
    (`try_build_compiled_arguments`), so they do not stop the load;
  - Keras 3 reading `.keras` (`Trainer.compile_from_config`): function entries are
    resolved (unknown: "Could not locate function"); plain strings are left to the
    lazy build, as above.
  A compile failure says that `load_model(path, compile=False)` skips it.

Optimizer arguments in Keras 2 consumers are not checked (their optimizers take
legacy arguments in ways this table does not measure): not verified, not "fine".
"""

from __future__ import annotations

from worker.compat.keras_rules import h5_compiles_anyway, keras_version_tuple
from worker.model.consumer import Consumer
from worker.model.findings import Code, Finding, Fix, FixKind, error, info, warning
from worker.model.keras import KerasModel, KerasObjectRef, KerasObjects, KindTable

MODEL_CLASSES = frozenset({"Sequential", "Functional", "Model"})
# Keras 3 `_retrieve_class_or_fn`: a "builtins" function is looked up in these modules
# (serialization_lib.BUILTIN_MODULES; those this table measures).
BUILTIN_FUNCTION_KINDS = ("activations", "losses", "metrics")
# Keras 3 base_optimizer.py pops `decay` with a warning before rejecting the rest.
IGNORED_OPTIMIZER_ARGS = frozenset({"decay"})
SHOWN = {
    "layers": "layer",
    "activations": "activation",
    "initializers": "initializer",
    "regularizers": "regularizer",
    "constraints": "constraint",
    "losses": "loss",
    "metrics": "metric",
    "optimizers": "optimizer",
}


def _declared(ref: KerasObjectRef, consumer: Consumer) -> bool:
    names = set(consumer.custom_objects)
    return ref.name in names or (bool(ref.registered_name) and ref.registered_name in names)


def _knows_optimizer(kind: KindTable, name: str) -> bool:
    """Keras 2 and 3 resolve a built-in optimizer's name in any case: their
    optimizers.deserialize lowercases a class name it finds among its lowercase keys
    ('adam', 'Adam', 'ADAM'); the tables hold the names as measured."""
    if kind.knows(name) or kind.knows(name.lower()):
        return True
    lowered = name.lower()
    return any(known.lower() == lowered for known in kind.objects if ">" not in known)


def _known(ref: KerasObjectRef, table: KerasObjects, major: int) -> bool:
    """Whether the consumer's Keras resolves the reference as a built-in."""
    kind = table.kind(ref.kind)
    if kind is None:
        return True  # a kind this Keras was not measured for: not judged here
    if ref.kind == "optimizers" and (major < 3 or not ref.module or ref.module.startswith("keras")):
        return _knows_optimizer(kind, ref.name)
    if major < 3 or not ref.module:
        return kind.knows(ref.name)
    if ref.form == "function" and ref.module == "builtins":
        return any(
            (t := table.kind(k)) is not None and t.knows(ref.name) for k in BUILTIN_FUNCTION_KINDS
        )
    if ref.module == "keras" or ref.module.startswith("keras."):
        if kind.knows(ref.name) or (ref.kind == "optimizers" and kind.knows(ref.name.lower())):
            return True
        return _layer_as_activation(ref, table)
    return False  # a module of the user's own: only a custom object resolves it


# Keras 3.10.0 on, activations.get deserializes a dict entry with
# serialization_lib.deserialize_keras_object (keras/src/activations/__init__.py), which
# builds any class its module names, so a built-in layer (a LeakyReLU as a Dense's
# activation) is a callable activation; before, `deserialize` took activations only.
ANY_CLASS_ACTIVATIONS_FROM = (3, 10)


def _layer_as_activation(ref: KerasObjectRef, table: KerasObjects) -> bool:
    version = keras_version_tuple(table.keras)
    layers = table.kind("layers")
    return (
        ref.kind == "activations"
        and ref.form == "class"
        and (ref.module == "keras.layers" or ref.module.startswith("keras.layers."))
        and version is not None
        and version >= ANY_CLASS_ACTIVATIONS_FROM
        and layers is not None
        and layers.knows(ref.name)
    )


def _deserialize_fails(
    ref: KerasObjectRef, model: KerasModel, tables: list[KerasObjects], major: int
) -> str | None:
    """Keras 3 reading H5 hands each compile string to its kind's `deserialize`, which
    fails on some built-in names (measured: `deserialize_fails`); the error, when every
    table the consumer may run fails it."""
    if major < 3 or model.container != "hdf5" or ref.where != "compile" or ref.form != "string":
        return None
    found = []
    for table in tables:
        kind = table.kind(ref.kind)
        fails = kind.deserialize_fails if kind is not None else None
        if fails is None or ref.name not in fails:
            return None
        found.append(fails[ref.name])
    return found[0] if found else None


def _resolved_lazily(ref: KerasObjectRef, model: KerasModel, major: int) -> bool:
    """Keras 3 hands compile strings to `compile` unresolved and builds them lazily,
    logging a failure (H5: all but a loss given as one string; .keras: every string)."""
    if major < 3 or ref.where != "compile" or ref.form != "string":
        return False
    if model.container == "hdf5" and ref.kind == "losses" and not ref.nested:
        return False
    return ref.kind in ("losses", "metrics")


def _compile_note(anyway: bool, consumer: Consumer) -> str:
    """How to skip the compile configuration; `anyway`: the consumer's Keras compiles
    this file whatever compile= says (h5_compiles_anyway)."""
    if anyway:
        return (
            f" Keras {consumer.keras}'s load_model compiles an H5 file even with "
            "compile=False (Keras 3.0-3.2 pass neither compile nor custom_objects to the H5 "
            "loader); from Keras 3.3, load_model(path, compile=False) skips the compile "
            "configuration."
        )
    return (
        " load_model compiles by default; load_model(path, compile=False) skips the "
        "compile configuration."
    )


def _compile_fix(name: str, anyway: bool) -> Fix:
    """compile=False, which Keras 3.0-3.2 ignore for an H5 file: there, from Keras 3.3."""
    if anyway:
        return Fix(FixKind.LOAD_WITHOUT_COMPILE, name=name, keras="3.3")
    return Fix(FixKind.LOAD_WITHOUT_COMPILE, name=name)


def _unknown(
    ref: KerasObjectRef,
    model: KerasModel,
    consumer: Consumer,
    table: KerasObjects,
    major: int,
    anyway: bool,
) -> Finding:
    kind = table.kind(ref.kind)
    assert kind is not None
    archive = major >= 3 and model.container == "keras-zip" and bool(ref.module)
    if major >= 3 and model.container == "hdf5" and ref.kind == "losses" and not ref.nested:
        said = "TypeError: string indices must be integers"
    else:
        said = kind.message(ref.name, archive=archive)
    what = SHOWN.get(ref.kind, ref.kind)
    place = "the compile configuration" if ref.where == "compile" else f"layer '{ref.where}'"
    if ref.name == "<lambda>":
        origin = "a Python lambda saved by its name, which no Keras can look up"
    elif ref.module and not ref.module.startswith("keras") and ref.module != "builtins":
        origin = f"defined in module '{ref.module}'"
    else:
        origin = "not one of its built-ins"
    message = (
        f"The {what} '{ref.name}' named by {place} is unknown to Keras {consumer.keras} "
        f"({origin}): '{said}'. Pass it in load_model(..., custom_objects={{...}}), "
        "declare it in the consumer's custom_objects when its process registers it, or "
        "re-save the model with the object registered (keras.saving."
        "register_keras_serializable)."
    )
    if ref.where == "compile":
        message += _compile_note(anyway, consumer)
        fix = _compile_fix(ref.name, anyway)
    else:
        fix = Fix(FixKind.REGISTER_CUSTOM_OBJECT, name=ref.registered_name or ref.name)
    return error(Code.KERAS_UNKNOWN_OBJECT, message, attr=ref.kind, fix=fix)


def _optimizer_arguments(
    ref: KerasObjectRef, model: KerasModel, consumer: Consumer, table: KerasObjects, anyway: bool
) -> Finding | None:
    """Keras 3: an optimizer argument its class (and base class) does not take."""
    kind = table.kind("optimizers")
    if kind is None or not ref.config_keys:
        return None
    found = kind.objects.get(ref.name) or kind.objects.get(ref.name.lower())
    if found is None or found.args is None:
        return None
    accepted = set(found.args) | IGNORED_OPTIMIZER_ARGS
    base = kind.objects.get("Optimizer")
    if found.kwargs and base is not None and base.args is not None:
        accepted |= set(base.args)
    rejected = sorted(k for k in ref.config_keys if k not in accepted)
    if not rejected:
        return None
    shown = "{" + ", ".join(f"'{k}': ..." for k in rejected) + "}"
    return error(
        Code.KERAS_COMPILE_ARGUMENT,
        f"The compile configuration's optimizer {ref.name} has argument(s) "
        f"{', '.join(rejected)}, which Keras {consumer.keras} does not take ('Argument(s) "
        f"not recognized: {shown}'; the file was written by Keras "
        f"{model.keras_version or 'unknown'}).{_compile_note(anyway, consumer)}",
        attr="optimizers",
        fix=_compile_fix(ref.name, anyway),
    )


# Loss reductions Keras 2 writes that no Keras 3 takes: Keras 2's default
# (losses_utils.ReductionV2.AUTO, written by every built-in loss object), which Keras 3's
# standardize_reduction (keras/src/losses/loss.py) refuses: it takes "sum_over_batch_size",
# "sum", "none" and None (3.0), and "mean" and "mean_with_sample_weight" later.
KERAS2_ONLY_REDUCTIONS = frozenset({"auto"})


def _loss_reduction(
    ref: KerasObjectRef, model: KerasModel, consumer: Consumer, anyway: bool
) -> Finding:
    return error(
        Code.KERAS_COMPILE_ARGUMENT,
        f"The compile configuration's loss {ref.name} has reduction='{ref.reduction}', "
        f"Keras 2's default (the file was written by Keras {model.keras_version or '2'}), "
        f"which Keras {consumer.keras} refuses ('Invalid value for argument `reduction`. "
        f"Expected one of {{...}}. Received: reduction={ref.reduction}')."
        f"{_compile_note(anyway, consumer)}",
        attr="losses",
        fix=_compile_fix(ref.name, anyway),
    )


# The config key Keras 2.13+ loss objects write (LossFunctionWrapper.get_config: the wrapped
# function's name), which no Keras 3 loss class takes: Keras 3's H5 loader passes the config
# to the class and fails ("__init__() got an unexpected keyword argument 'fn'") before the
# reduction is judged. Measured: tests/fixtures/keras-reduction, TF 2.15.1's files in Keras
# 3.0.5, 3.3.3, 3.8.0 and 3.15.1.
KERAS2_LOSS_FUNCTION_KEY = "fn"


# The Keras 2 before which a loss class refuses `fn` in an H5 file's compile configuration:
# Keras 2.12 passes the config whole to the class (measured: TF 2.12.1 fails TF 2.15.1's
# files, 'unexpected keyword argument 'fn''; 2.8.4's Loss.from_config is cls(**config)),
# 2.13 to 2.15 pop it (measured: TF 2.13.1, 2.14.1 and 2.15.1 load them).
KERAS2_TAKES_LOSS_FUNCTION_KEY = (2, 13)


def _refuses_loss_function_key(consumer: Consumer) -> bool:
    runs = keras_version_tuple(consumer.keras)
    return runs is not None and runs[0] == 2 and runs < KERAS2_TAKES_LOSS_FUNCTION_KEY


def _loss_function_key(
    ref: KerasObjectRef, model: KerasModel, consumer: Consumer, major: int, anyway: bool
) -> Finding:
    which = "no Keras 3 loss class takes" if major >= 3 else "Keras 2 before 2.13 does not take"
    return error(
        Code.KERAS_ARGUMENT_REMOVED if major >= 3 else Code.KERAS_ARGUMENT_UNKNOWN,
        f"The compile configuration's loss {ref.name} carries `fn`, which Keras "
        f"{model.keras_version or '2.13+'}'s loss objects write and {which}: Keras "
        f"{consumer.keras} fails it ('{ref.name}.__init__() got an unexpected keyword "
        f"argument 'fn'').{_compile_note(anyway, consumer)}",
        attr="losses",
        fix=_compile_fix(ref.name, anyway),
    )


def _metric_reduction(ref: KerasObjectRef, consumer: Consumer, anyway: bool) -> Finding:
    """A loss object used as a metric: Keras 2 writes it among the metrics with its
    `reduction`, and reads it back as the metric class of that name, which takes none
    (measured: TF 2.12.1 to 2.15.1 fail TF 2.4.4 to 2.15.1's files, "__init__() got an
    unexpected keyword argument 'reduction'")."""
    return error(
        Code.KERAS_ARGUMENT_UNKNOWN,
        f"The compile configuration's metrics hold the loss object {ref.name} with its "
        f"reduction='{ref.reduction}': Keras {consumer.keras} reads it back as its metric "
        f"{ref.name}, which takes no `reduction` ('{ref.name}.__init__() got an unexpected "
        f"keyword argument 'reduction'').{_compile_note(anyway, consumer)}",
        attr="metrics",
        fix=_compile_fix(ref.name, anyway),
    )


def _resolved_by_config_name(
    ref: KerasObjectRef, model: KerasModel, tables: list[KerasObjects], major: int
) -> bool:
    """Keras 3 reading H5 takes an optimizer class entry it does not know (Keras 2.11+'s
    "Custom>Adam") by its config's `name` instead, with its defaults
    (keras/src/legacy/saving/saving_utils.py `_resolve_compile_arguments_compat`:
    `optimizers.get(config["name"])`): resolved when every table knows that name."""
    if (
        major < 3
        or model.container != "hdf5"
        or ref.where != "compile"
        or ref.kind != "optimizers"
        or ref.form != "class"
        or not ref.config_name
    ):
        return False
    for table in tables:
        kind = table.kind(ref.kind)
        if kind is None or _known(ref, table, major):
            return False
        if not (kind.knows(ref.config_name) or kind.knows(ref.config_name.lower())):
            return False
    return True


def object_findings(
    model: KerasModel,
    consumer: Consumer,
    major: int,
    tables: list[KerasObjects],
    writer: list[KerasObjects] | None = None,
) -> list[tuple[str, Finding]]:
    """What the consumer's Keras cannot resolve, in the order it meets it: the layers
    and their objects, then the compile configuration. When the consumer may run any of
    several Keras versions (a TF 2.16+ release without `keras:`), a name some of them
    lack is a warning naming those. When no table of its Keras was measured, whether it
    resolves the file's names is not known: `keras.version-unknown`, and the verdict is
    unknown, never a guessed "loads". Each finding comes with where Keras meets it: a
    layer's name, or "compile"."""
    if not tables:
        if not model.objects:
            return []
        return [
            (
                "compile",
                info(
                    Code.KERAS_VERSION_UNKNOWN,
                    f"No table of the objects Keras {consumer.keras} deserializes was measured "
                    "(tools/keras/build_objects.py), so whether it resolves the names this file "
                    "uses, and so whether it loads the file, is unknown; declare a measured "
                    "`keras:` version in the consumer's fleet entry, or measure this one.",
                    fix=Fix(FixKind.DECLARE_KERAS),
                ),
            )
        ]
    findings: list[tuple[str, Finding]] = []
    anyway = h5_compiles_anyway(model, [t.keras for t in tables])
    for ref in model.objects:
        if ref.kind == "layers" and ref.name in MODEL_CLASSES:
            continue
        if ref.form == "lambda":
            if major >= 3:
                findings.append((ref.where, _lambda_refused(ref, consumer)))
            continue
        if not model.compiled and ref.where == "compile":
            continue
        if _declared(ref, consumer):
            continue
        failed = _deserialize_fails(ref, model, tables, major)
        if failed is not None:
            findings.append((ref.where, _deserialize_failure(ref, consumer, failed, anyway)))
            continue
        if _resolved_lazily(ref, model, major):
            continue
        if _resolved_by_config_name(ref, model, tables, major):
            continue
        lacking = [t for t in tables if not _known(ref, t, major)]
        if len(lacking) == len(tables):
            findings.append((ref.where, _unknown(ref, model, consumer, tables[0], major, anyway)))
            continue
        if lacking:
            findings.append((ref.where, _unknown_in_some(ref, consumer, lacking)))
            continue
        if major >= 3 and ref.kind == "layers" and writer:
            rejected_layer = _layer_arguments(ref, model, consumer, tables, writer[0])
            if rejected_layer is not None:
                findings.append((ref.where, rejected_layer))
                continue
        if (
            model.container == "hdf5"
            and ref.kind == "losses"
            and ref.where == "compile"
            and ref.form == "class"
            and KERAS2_LOSS_FUNCTION_KEY in ref.config_keys
            and (major >= 3 or _refuses_loss_function_key(consumer))
        ):
            findings.append((ref.where, _loss_function_key(ref, model, consumer, major, anyway)))
            continue
        if (
            major == 2
            and model.container == "hdf5"  # a .keras names the loss's module: read as a loss
            and ref.kind == "metrics"
            and ref.where == "compile"
            and ref.form == "class"
            and "reduction" in ref.config_keys
        ):
            findings.append((ref.where, _metric_reduction(ref, consumer, anyway)))
            continue
        if (
            major >= 3
            and ref.kind == "losses"
            and ref.where == "compile"
            and ref.reduction in KERAS2_ONLY_REDUCTIONS
        ):
            findings.append((ref.where, _loss_reduction(ref, model, consumer, anyway)))
            continue
        if major >= 3 and ref.kind == "optimizers" and ref.where == "compile":
            rejected = [_optimizer_arguments(ref, model, consumer, t, anyway) for t in tables]
            if all(r is not None for r in rejected):
                findings.append((ref.where, rejected[0]))  # type: ignore[arg-type]
    return findings


def _deserialize_failure(
    ref: KerasObjectRef, consumer: Consumer, said: str, anyway: bool
) -> Finding:
    what = SHOWN.get(ref.kind, ref.kind)
    return error(
        Code.KERAS_UNKNOWN_OBJECT,
        f"The compile configuration's {what} '{ref.name}' is a built-in name that Keras "
        f"{consumer.keras}'s H5 loader cannot deserialize ('{said}')."
        f"{_compile_note(anyway, consumer)}",
        attr=ref.kind,
        fix=_compile_fix(ref.name, anyway),
    )


# Keys the H5 loader of TF 1.13 to 2.2's bundled Keras reads from training_config without
# a default (saving_utils.compile_args_from_training_config; engine/saving.py in 1.13):
# files by Keras 2.3+ (TF 2.3+) do not write `sample_weight_mode`: "KeyError".
REQUIRED_TRAINING_KEYS = ("sample_weight_mode",)
STRICT_TRAINING_CONFIG_UNTIL = (2, 2)


def training_config_findings(model: KerasModel, consumer: Consumer) -> list[Finding]:
    """A compiled H5 file lacking a key the consumer's bundled Keras reads strictly."""
    release = consumer.tensorflow
    if model.container != "hdf5" or not model.compiled or release is None:
        return []
    if not (consumer.keras or "").endswith("-tf"):  # the Keras TF 1.13-2.2 bundle
        return []
    parts = release.split(".")
    try:
        minor = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        return []
    if minor > STRICT_TRAINING_CONFIG_UNTIL:
        return []
    missing = [k for k in REQUIRED_TRAINING_KEYS if k not in model.compile_keys]
    if not missing:
        return []
    return [
        error(
            Code.KERAS_COMPILE_ARGUMENT,
            f"The file's training_config has no '{missing[0]}', which the H5 loader of "
            f"TensorFlow {release}'s Keras reads without a default (KeyError: "
            f"'{missing[0]}'); Keras 2.3 and later do not write it."
            f"{_compile_note(False, consumer)}",
            attr="training_config",
            fix=Fix(FixKind.LOAD_WITHOUT_COMPILE, name=missing[0]),
        )
    ]


# Keras 3's Layer.__init__ pops input_dim and input_shape from **kwargs before refusing
# the rest ("Unrecognized keyword arguments passed to Dense: {...}";
# keras/src/layers/layer.py, 3.0.5 and 3.15.1 alike).
LAYER_POPPED = frozenset({"input_dim", "input_shape"})


def _chain(table: KerasObjects, name: str) -> set[str] | None:
    kind = table.kind("layers")
    found = kind.objects.get(name) if kind is not None else None
    if found is None or found.args is None:
        return None
    if not found.kwargs:
        return set(found.args)
    if found.chain_args is None:
        return None
    return set(found.args) | set(found.chain_args) | LAYER_POPPED


def _layer_arguments(
    ref: KerasObjectRef,
    model: KerasModel,
    consumer: Consumer,
    tables: list[KerasObjects],
    writer: KerasObjects,
) -> Finding | None:
    """A built-in layer of a Keras 3 file with constructor arguments its writer's Keras
    takes and every Keras 3 the consumer may run lacks (a newer Keras 3 added them), as
    the measured constructor chains say. Keys the writer's own chain lacks are handled
    by the class's from_config (InputLayer, Sequential's input) and are not judged. A
    Keras 3 H5 file names no module: its layers are looked up among the built-ins
    (legacy_h5_format's model_from_config), then built from their config the same way."""
    built_in = ref.module == "keras.layers" or ref.module.startswith("keras.layers.")
    if not (built_in or (model.container == "hdf5" and not ref.module)):
        return None
    layer = next((x for x in model.layers if x.name == ref.where), None)
    if layer is None or layer.wrapped or ref.name in MODEL_CLASSES | {"InputLayer"}:
        return None
    written = _chain(writer, ref.name)
    if written is None:
        return None
    rejected: list[str] = []
    for table in tables:
        kind = table.kind("layers")
        found = kind.objects.get(ref.name) if kind is not None else None
        if found is None or found.args is None:
            return None  # not measured: not judged
        accepted = set(found.args)
        if found.kwargs:
            if found.chain_args is None:
                return None
            accepted |= set(found.chain_args) | LAYER_POPPED
        extra = sorted(k for k in layer.config_keys if k in written and k not in accepted)
        if not extra:
            return None
        rejected = rejected or extra
    if not rejected:
        return None
    shown = "{" + ", ".join(f"'{k}': ..." for k in rejected) + "}"
    return error(
        Code.KERAS_ARGUMENT_UNKNOWN,
        f"Layer '{ref.where}' ({ref.name}) has argument(s) {', '.join(rejected)}, which "
        f"Keras {consumer.keras} does not take (the file was written by Keras "
        f"{model.keras_version}): 'Unrecognized keyword arguments passed to {ref.name}: "
        f"{shown}'.",
        attr="layers",
        fix=Fix(FixKind.UPGRADE_TO),
    )


def _lambda_refused(ref: KerasObjectRef, consumer: Consumer) -> Finding:
    place = "the compile configuration" if ref.where == "compile" else repr(ref.where)
    return error(
        Code.KERAS_LAMBDA_SAFE_MODE,
        f"The {SHOWN.get(ref.kind, ref.kind)} of {place} is a marshalled Python lambda, "
        f"which Keras {consumer.keras} refuses to deserialize unless load_model(..., "
        "safe_mode=False) is given for a trusted file.",
        attr=ref.kind,
        fix=Fix(FixKind.REPLACE_LAMBDA),
    )


def _unknown_in_some(
    ref: KerasObjectRef, consumer: Consumer, lacking: list[KerasObjects]
) -> Finding:
    versions = ", ".join(t.keras for t in lacking)
    return warning(
        Code.KERAS_UNKNOWN_OBJECT,
        f"The {SHOWN.get(ref.kind, ref.kind)} '{ref.name}' is unknown to some of the Keras "
        f"versions TensorFlow {consumer.tensorflow} may run (Keras {versions}); declare the "
        "consumer's `keras:` to know.",
        attr=ref.kind,
        fix=Fix(FixKind.DECLARE_KERAS),
    )


def fails_only_in_compile(findings: list[Finding]) -> bool:
    """Every load error is the compile configuration's: compile=False would load it."""
    errors = [f for f in findings if f.fails_load]
    return bool(errors) and all(
        f.fix is not None and f.fix.kind == FixKind.LOAD_WITHOUT_COMPILE for f in errors
    )
