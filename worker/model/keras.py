"""What a Keras model file says about itself, as plain data.

A Keras file is a model configuration (JSON) beside its weights: a `.keras` zip
(`metadata.json`, `config.json`, `model.weights.h5`; Keras 3, and Keras 2.12 to
2.15 wrote the same container with Keras 2 configs) or a legacy HDF5 file whose
root group carries `keras_version`, `backend` and `model_config`. Whether a
Keras release can rebuild the model depends on the writer's version and on
the layers' classes and config keys, so those are what is kept; weights are
never read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PythonCode:
    """Python bytecode marshalled into a config (a Lambda's `function`).

    `layout` is the code-object layout `marshal` wrote, which says which Python
    versions can read it back: "3.0-3.7", "3.8-3.10" or "3.11+" (None: the bytes
    are not a code object any of those layouts reads)."""

    layout: str | None
    size: int  # decoded bytes


def layout_admits(layout: str, python: str) -> bool:
    """Whether Python `python` ("3.11", "3.7.16") reads code of `layout`."""
    parts = python.split(".")
    try:
        version = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        return False
    if layout == "3.0-3.7":
        return (3, 0) <= version <= (3, 7)
    if layout == "3.8-3.10":
        return (3, 8) <= version <= (3, 10)
    if layout == "3.11+":
        return version >= (3, 11)
    return False


@dataclass(frozen=True)
class KerasLayer:
    """One layer (or nested model) of the configuration, depth first."""

    class_name: str
    name: str
    config_keys: tuple[str, ...]
    has_module: bool = False  # the entry names its module (Keras 2.13+ and 3 serialization)
    function_type: str | None = None  # a Lambda's: "lambda", "function", "raw", ...
    code: PythonCode | None = None  # a Lambda's marshalled function
    # nested objects (initializers, regularizers, ...) whose config carries `dtype`, a key
    # only TF 1.x's Keras 2.2.4-tf wrote there: "kernel_initializer:GlorotUniform"
    typed_objects: tuple[str, ...] = ()
    list_valued: tuple[str, ...] = ()  # config keys whose value is a list (`axis: [2]`)
    wrapped: bool = False  # held by a wrapper (Bidirectional's `layer`, an RNN's `cell`)
    depth: int = 1  # 1: an entry of the model's own `layers`; deeper: inside a nested one
    # the input batch shape the entry declares, as Keras 2 reads it: `batch_input_shape`
    # (Keras 2, any layer) or an InputLayer's `batch_shape` (Keras 3); None for an unknown dim
    batch_input_shape: tuple[int | None, ...] | None = None
    # the config's `dtype` when it names an integer type ("int32"; Keras 2.0 wrote the
    # input's dtype on the first layer), and then the layer's initializers that draw
    # other values than zeros and ones ("embeddings_initializer:RandomUniform")
    integer_dtype: str = ""
    drawing_initializers: tuple[str, ...] = ()
    # the config's parts a Keras 3 legacy H5 loader judges (worker.formats.keras_features):
    # "time_major", "dtype=Policy", "use_bias=false", ...
    features: tuple[str, ...] = ()


@dataclass(frozen=True)
class KerasObjectRef:
    """One object the configuration names, which the consumer's Keras must resolve by
    name: a layer's class, an activation, initializer, regularizer or constraint in a
    layer's config, or the optimizer, a loss or a metric of the compile configuration.

    `kind` is the Keras module that resolves it ("layers", "activations", "initializers",
    "regularizers", "constraints", "losses", "metrics", "optimizers"); `form` how the
    file names it: "string" (a function by name: Keras 2's "relu", "<lambda>"),
    "function" (Keras 3's {"class_name": "function", "config": NAME}), "class" (a class
    entry), "lambda" (Keras 3's marshalled `__lambda__`, which safe_mode governs)."""

    kind: str
    name: str
    form: str
    where: str  # the layer's name, or "compile"
    module: str = ""  # the module a Keras 2.13+/3 entry names ("keras.layers", "__main__")
    registered_name: str = ""  # register_keras_serializable's "Package>Name", when written
    config_keys: tuple[str, ...] = ()  # a class entry's config keys (an optimizer's arguments)
    nested: bool = False  # a compile entry inside a list or per-output dict (not the one loss)
    reduction: str = ""  # a loss class entry's `reduction` as written ("auto", "sum", ...)
    config_name: str = ""  # a class entry's config `name` ("Adam" under "Custom>Adam")


@dataclass(frozen=True)
class KerasModel:
    container: str  # "keras-zip" (a .keras archive) | "hdf5" (a legacy .h5 model)
    keras_version: str  # as written ("2.2.4-tf", "2.15.0", "3.15.1"); "" when absent
    backend: str = ""  # H5 root attribute; .keras files do not say
    model_class: str = ""  # "Sequential", "Functional", "Model", ...
    date_saved: str = ""
    layers: tuple[KerasLayer, ...] = ()
    model_module: str = ""  # the top-level entry's module ("keras", "keras.src.engine.functional")
    model_name: str = ""  # the top-level model's own name ("densenet121"; "" unread)
    # models used as a layer that a layer reads at a call node the config does not list
    # (Keras 2 numbers a nested model's first call 1: formats.keras.unreached_calls)
    unreached_calls: tuple[str, ...] = ()
    # nested Functionals the model's output_layers reads at such a node (Keras 3.0-3.2 fail)
    unreached_outputs: tuple[str, ...] = ()
    # Sequentials used as a layer with no input shape of their own (formats.keras)
    unbuilt_nested: tuple[str, ...] = ()
    # every object the configuration names (layer classes included), in the order Keras
    # meets them: the layers' first, then the compile configuration's
    objects: tuple[KerasObjectRef, ...] = ()
    compile_keys: tuple[str, ...] = ()  # the H5 training_config's keys
    compiled: bool = False  # carries a compile configuration (H5 training_config, .keras
    # compile_config): load_model(path) compiles it unless compile=False
    # a Sequential's config names the shape it was built on (`build_input_shape`, written by
    # Keras 2.3+ and 3 for a model built without an input layer); False: absent or null
    build_input_shape: bool = False
    # the top-level config is the bare list of a Sequential's layers (Keras before 2.2.3)
    layer_list: bool = False

    @property
    def major(self) -> int | None:
        head = self.keras_version.split(".", 1)[0]
        return int(head) if head.isdigit() else None

    @property
    def lambdas(self) -> list[KerasLayer]:
        return [layer for layer in self.layers if layer.code is not None]


# What a Keras version deserializes by name (measured: worker.catalog.keras_objects).


@dataclass(frozen=True)
class KerasClass:
    """A built-in object's constructor: its parameters, and whether it takes **kwargs
    (then its base class judges the rest). Functions have neither (`args` None)."""

    args: tuple[str, ...] | None = None
    kwargs: bool = False
    # with **kwargs: every parameter it reaches through its base classes' __init__
    # (None: not measured)
    chain_args: tuple[str, ...] | None = None


@dataclass(frozen=True)
class KindTable:
    objects: Mapping[str, KerasClass]
    unknown_message: str  # the error for an unknown name, "{name}" in its place
    unknown_message_archive: str = ""  # Keras 3: for a module-qualified .keras entry
    # Keras 3 losses and metrics: names its `deserialize(name)` raises on (an alias such
    # as "mse" re-resolved by a public name that does not exist), with the error
    deserialize_fails: Mapping[str, str] | None = None  # None: not measured

    def knows(self, name: str) -> bool:
        return name in self.objects

    def message(self, name: str, archive: bool = False) -> str:
        template = (self.unknown_message_archive if archive else "") or self.unknown_message
        return template.replace("{name}", name)


@dataclass(frozen=True)
class KerasObjects:
    keras: str  # the version measured ("2.15.0", "3.6.0", "2.2.4-tf")
    measured_in: str  # "tensorflow 2.15.1, Python 3.11", "keras 3.6.0, Python 3.11, ..."
    kinds: Mapping[str, KindTable]

    def kind(self, kind: str) -> KindTable | None:
        return self.kinds.get(kind)


# What a Keras 3 legacy H5 loader does with each layer config feature (measured:
# worker.catalog.keras_layer_configs).


@dataclass(frozen=True)
class FeatureFailure:
    """A failed load of a file whose layer had the feature: Keras's error, what its
    wrappers hid underneath (`cause`), the step (`stage`: "rebuild", the model from its
    config; "weights", loading its weights), the setting the file was written with and
    the TensorFlow release whose Keras 2 wrote it."""

    error: str
    cause: str
    stage: str
    variant: str = ""
    writer: str = ""


@dataclass(frozen=True)
class LayerConfigs:
    """One layer class in one Keras 3: the features measured to load, those a failure is
    charged to, and combinations of loading features that fail together."""

    loads: frozenset[str]
    fails: Mapping[str, FeatureFailure]
    combinations: tuple[tuple[frozenset[str], FeatureFailure], ...] = ()


# Keys whose object entries Keras rebuilds by their kind's `get` (initializers.get,
# regularizers.get, constraints.get), the same for every layer class.
OBJECT_KINDS = ("_initializer", "_regularizer", "_constraint")


def object_part(feature: str) -> str | None:
    """An object-entry feature without its layer's key, by the kind of that key
    ("depthwise_initializer=VarianceScaling.mode" -> "initializer=VarianceScaling.mode"),
    or None for any other feature."""
    key, sep, rest = feature.partition("=")
    if not sep or not rest[:1].isupper():
        return None
    for kind in OBJECT_KINDS:
        if key.endswith(kind):
            return f"{kind[1:]}={rest}"
    return None


@dataclass(frozen=True)
class LayerConfigTable:
    keras: str  # the Keras 3 measured ("3.6.0")
    measured_in: str
    classes: Mapping[str, LayerConfigs]
    # object-entry features measured to load in any class, by the kind of their key:
    # "initializer=VarianceScaling", "initializer=VarianceScaling.mode" (a layer rebuilds
    # an entry by its kind's `get`, whatever the layer: worker.compat.keras_layer_configs)
    object_loads: frozenset[str] = frozenset()


def _shape(value: Any) -> tuple[int | None, ...] | None:
    return None if value is None else tuple(value)


def keras_from_json(data: dict[str, Any] | None) -> KerasModel | None:
    """Inverse of `dataclasses.asdict` of a `KerasModel` (reports, the model index)."""
    if data is None:
        return None
    layers = []
    for layer in data["layers"]:
        code = layer.get("code")
        layers.append(
            KerasLayer(
                class_name=layer["class_name"],
                name=layer["name"],
                config_keys=tuple(layer["config_keys"]),
                has_module=layer["has_module"],
                function_type=layer["function_type"],
                code=PythonCode(code["layout"], code["size"]) if code is not None else None,
                typed_objects=tuple(layer["typed_objects"]),
                list_valued=tuple(layer.get("list_valued", ())),
                wrapped=layer.get("wrapped", False),
                depth=layer.get("depth", 1),
                batch_input_shape=_shape(layer.get("batch_input_shape")),
                integer_dtype=layer.get("integer_dtype", ""),
                drawing_initializers=tuple(layer.get("drawing_initializers", ())),
                features=tuple(layer.get("features", ())),
            )
        )
    objects = tuple(
        KerasObjectRef(
            kind=o["kind"],
            name=o["name"],
            form=o["form"],
            where=o["where"],
            module=o.get("module", ""),
            registered_name=o.get("registered_name", ""),
            config_keys=tuple(o.get("config_keys", ())),
            nested=o.get("nested", False),
            reduction=o.get("reduction", ""),
            config_name=o.get("config_name", ""),
        )
        for o in data.get("objects", ())
    )
    return KerasModel(
        container=data["container"],
        objects=objects,
        compiled=data.get("compiled", False),
        compile_keys=tuple(data.get("compile_keys", ())),
        build_input_shape=data.get("build_input_shape", False),
        layer_list=data.get("layer_list", False),
        keras_version=data["keras_version"],
        backend=data["backend"],
        model_class=data["model_class"],
        date_saved=data["date_saved"],
        layers=tuple(layers),
        model_module=data.get("model_module", ""),
        model_name=data.get("model_name", ""),
        unreached_calls=tuple(data.get("unreached_calls", ())),
        unreached_outputs=tuple(data.get("unreached_outputs", ())),
        unbuilt_nested=tuple(data.get("unbuilt_nested", ())),
    )
