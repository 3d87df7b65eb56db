"""Read Keras model files: `.keras` archives and legacy `.h5` models.

What a Keras release does with a file depends on who wrote it and what its
configuration holds (`worker.compat.keras`), so the reader keeps:
- the writer's `keras_version` (`metadata.json` in a `.keras` zip, the root
  group's attribute in an H5 file) and, for H5, the `backend`;
- every layer of the configuration, nested models and wrapped layers included:
  its class, its config keys, whether the entry names its module (the
  serialization Keras 2.13+ and 3 write), and for a Lambda, how its function is
  stored and, when it is marshalled bytecode, which Pythons can read it back.

A `.keras` archive is opened with the archive reader (`open_archive`: every
cap, the central directory checked against the local headers), keeping only
`metadata.json` and `config.json` in memory; the weights are counted, never
kept. An H5 file is read with `worker.formats.hdf5` (root attributes only). A
JSON document nested deeper than `MAX_DEPTH`, a config larger than
`MAX_CONFIG_BYTES`, anything malformed: `InvalidArtifact`, never a crash.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from worker.errors import InvalidArtifact, LimitExceeded, UnsupportedArtifact
from worker.formats.archive import open_archive
from worker.formats.hdf5 import root_string_attributes
from worker.formats.keras_features import NESTED_LAYER_KEYS, config_features
from worker.formats.keras_objects import compile_object_refs, layer_object_refs
from worker.formats.pycode import code_layout
from worker.formats.source import Source
from worker.model.keras import KerasLayer, KerasModel, KerasObjectRef, PythonCode

ARCHIVE_FILES = ("metadata.json", "config.json")
MAX_CONFIG_BYTES = 64 << 20
MAX_DEPTH = 64
MAX_LAYERS = 100_000
# Keys under which a layer holds another layer (wrappers, RNN cells, nested models).
MAX_RANK = 32  # more axes than any Keras input declares: not read as a shape
MODEL_CLASSES = frozenset({"Sequential", "Functional", "Model"})


def _json(raw: bytes | str, where: str) -> Any:
    if len(raw) > MAX_CONFIG_BYTES:
        raise LimitExceeded(f"{where} is {len(raw)} bytes, more than {MAX_CONFIG_BYTES}")
    try:
        return json.loads(raw)
    except RecursionError:
        raise InvalidArtifact(f"{where}: JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArtifact(f"{where}: not valid JSON ({exc})") from None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _code(function: Any) -> PythonCode | None:
    """A Lambda's marshalled function: Keras 2 writes [base64, defaults, closure],
    Keras 3 {"class_name": "__lambda__", "config": {"code": base64, ...}}."""
    encoded: Any = None
    if isinstance(function, list) and function:
        encoded = function[0]
    elif isinstance(function, dict) and isinstance(function.get("config"), dict):
        encoded = function["config"].get("code")
    if not isinstance(encoded, str):
        return None
    try:
        raw = base64.b64decode(encoded.encode("ascii", "replace"))
    except (binascii.Error, ValueError):
        return PythonCode(None, 0)
    return PythonCode(code_layout(raw), len(raw))


def _batch_shape(config: dict[str, Any]) -> tuple[int | None, ...] | None:
    """The batch shape an entry declares (`batch_input_shape`, or Keras 3's `batch_shape`):
    dims are ints or None; anything else (a nested structure, a string) is not a shape
    this reader judges, so None."""
    value = config.get("batch_input_shape", config.get("batch_shape"))
    if not isinstance(value, list) or len(value) > MAX_RANK:
        return None
    if not all(d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in value):
        return None
    return tuple(value)


INTEGER_DTYPES = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
)
# initializers whose values an integer variable holds exactly
EXACT_INITIALIZERS = frozenset({"Zeros", "Ones", "zeros", "ones"})


def _integer_dtype(config: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """The config's integer `dtype` and the initializers that draw other values; ('', ())
    when the dtype is not an integer type."""
    dtype = config.get("dtype")
    if not isinstance(dtype, str) or dtype not in INTEGER_DTYPES:
        return "", ()
    drawing = []
    for key, value in config.items():
        if not key.endswith("_initializer"):
            continue
        name = value.get("class_name") if isinstance(value, dict) else value
        if isinstance(name, str) and name not in EXACT_INITIALIZERS:
            drawing.append(f"{key}:{name}")
    return dtype, tuple(sorted(drawing))


def _typed_objects(config: dict[str, Any]) -> tuple[str, ...]:
    """Nested objects (initializers, regularizers, constraints) whose config has `dtype`.
    A layer given as an object (a LeakyReLU as an activation: its entry names
    `keras.layers`) takes `dtype` as its own argument and is not one of them."""
    found = []
    for key, value in config.items():
        if key in NESTED_LAYER_KEYS or key == "layers" or not isinstance(value, dict):
            continue
        module = value.get("module")
        if isinstance(module, str) and (
            module == "keras.layers" or module.startswith("keras.layers.")
        ):
            continue
        inner = value.get("config")
        if (
            isinstance(inner, dict)
            and "dtype" in inner
            and isinstance(value.get("class_name"), str)
        ):
            found.append(f"{key}:{value['class_name']}")
    return tuple(sorted(found))


class _Walker:
    def __init__(self, where: str) -> None:
        self.where = where
        self.layers: list[KerasLayer] = []
        self.objects: list[KerasObjectRef] = []

    def entry(self, entry: Any, depth: int, wrapped: bool = False) -> None:
        """One serialized layer: {"class_name", "config", ["module"], ...}."""
        if depth > MAX_DEPTH:
            raise InvalidArtifact(f"{self.where}: layers nested more than {MAX_DEPTH} deep")
        if not isinstance(entry, dict) or not isinstance(entry.get("class_name"), str):
            return
        config = entry.get("config")
        if len(self.layers) >= MAX_LAYERS:
            raise LimitExceeded(f"{self.where}: more than {MAX_LAYERS} layers")
        keys: tuple[str, ...] = ()
        function_type = None
        code = None
        typed: tuple[str, ...] = ()
        listed: tuple[str, ...] = ()
        shape = None
        integer_dtype = ""
        drawing: tuple[str, ...] = ()
        features: tuple[str, ...] = ()
        if isinstance(config, dict):
            features = config_features(config)
            shape = _batch_shape(config)
            integer_dtype, drawing = _integer_dtype(config)
            keys = tuple(sorted(str(k) for k in config))
            listed = tuple(sorted(str(k) for k, v in config.items() if isinstance(v, list)))
            typed = _typed_objects(config)
            if entry["class_name"] == "Lambda":
                function_type = _text(config.get("function_type")) or None
                code = _code(config.get("function"))
        name = _text(config.get("name")) if isinstance(config, dict) else ""
        self.layers.append(
            KerasLayer(
                class_name=entry["class_name"],
                name=name or _text(entry.get("name")),
                config_keys=keys,
                has_module="module" in entry,
                function_type=function_type,
                code=code,
                typed_objects=typed,
                list_valued=listed,
                wrapped=wrapped,
                depth=depth,
                batch_input_shape=shape,
                integer_dtype=integer_dtype,
                drawing_initializers=drawing,
                features=features,
            )
        )
        where = self.layers[-1].name or entry["class_name"]
        self.objects.append(
            KerasObjectRef(
                "layers",
                entry["class_name"],
                "class",
                where,
                _text(entry.get("module")),
                _text(entry.get("registered_name")),
            )
        )
        self.objects.extend(layer_object_refs(config, where))
        self.children(config, depth + 1)

    def children(self, config: Any, depth: int) -> None:
        # TF 1.x's Sequential config may be the layer list itself
        layers = config if isinstance(config, list) else None
        if isinstance(config, dict):
            layers = config.get("layers")
            for key in NESTED_LAYER_KEYS:
                self.entry(config.get(key), depth, wrapped=True)
        for layer in layers or []:
            self.entry(layer, depth)


def keras_model(
    config: Any, container: str, version: str, where: str, training: Any = None, **extra: str
) -> KerasModel:
    """The `KerasModel` of a top-level model config (its layers depth first) and of its
    compile configuration (`training`: H5's training_config; a .keras config holds its
    own compile_config)."""
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise InvalidArtifact(f"{where}: the model config has no class_name")
    walker = _Walker(where)
    walker.children(config.get("config"), 1)
    if training is None:
        training = config.get("compile_config")
    compiled = isinstance(training, dict) and bool(training)
    own = config.get("config")
    return KerasModel(
        build_input_shape=isinstance(own, dict) and own.get("build_input_shape") is not None,
        layer_list=isinstance(own, list),
        compile_keys=tuple(sorted(str(k) for k in training)) if compiled else (),
        objects=(*walker.objects, *compile_object_refs(training)),
        compiled=compiled,
        container=container,
        keras_version=version,
        model_class=config["class_name"],
        model_module=_text(config.get("module")),
        model_name=_model_name(config.get("config")),
        layers=tuple(walker.layers),
        unreached_calls=unreached_calls(config),
        unreached_outputs=unreached_outputs(config),
        unbuilt_nested=unbuilt_nested(config),
        **extra,
    )


# The nested models measured: Functional (tests/fixtures/keras-rename, keras-nested) and
# Sequential, with or without an input shape (keras-nested: Keras 2 numbers its call 1
# too, and every Keras 3 minor fails it the same way).
MEASURED_NESTED = frozenset({"Functional", "Model", "Sequential"})


def _functional_layers(
    config: Any, depth: int
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, tuple[Any, int]]] | None:
    """A functional config's own config, its layer entries and, by name, each entry's
    class and number of listed calls (inbound nodes); None past MAX_DEPTH or with no
    layer list."""
    inner = config.get("config") if isinstance(config, dict) else None
    layers = inner.get("layers") if isinstance(inner, dict) else None
    if not isinstance(inner, dict) or not isinstance(layers, list) or depth > MAX_DEPTH:
        return None
    entries = [e for e in layers if isinstance(e, dict) and isinstance(e.get("config"), dict)]
    calls = {}
    for entry in entries:
        nodes = entry.get("inbound_nodes")
        calls[_text(entry["config"].get("name"))] = (
            entry.get("class_name"),
            len(nodes) if isinstance(nodes, list) else 0,
        )
    return inner, entries, calls


def unreached_calls(config: Any, depth: int = 0) -> tuple[str, ...]:
    """Models used as a layer that another layer of the same functional config reads at a
    call node the config does not list. Keras 2 counts a nested model's construction as
    its node 0 and writes its first call as node 1 (`[name, 1, 0, {}]`), listing only the
    call among its inbound nodes; Keras 3's H5 loader (`functional_from_config`) gives it
    only the calls it makes, so such a reference is never resolved. Every functional
    config in the file, nested ones included; layer-first, the names once each."""
    found: list[str] = []
    read = _functional_layers(config, depth)
    if read is None:
        return ()
    _, entries, calls = read
    for entry in entries:
        nodes = entry.get("inbound_nodes")
        for node in nodes if isinstance(nodes, list) else []:
            for ref in node if isinstance(node, list) else []:
                if not (isinstance(ref, list) and len(ref) >= 3 and isinstance(ref[1], int)):
                    continue
                target = calls.get(_text(ref[0]))
                name = _text(ref[0])
                if (
                    target
                    and target[0] in MEASURED_NESTED
                    and ref[1] >= target[1]
                    and (name not in found)
                ):
                    found.append(name)
        if entry.get("class_name") in MODEL_CLASSES:
            found += [n for n in unreached_calls(entry, depth + 1) if n not in found]
    return tuple(found)


def _declares_input(config: dict[str, Any]) -> bool:
    """Whether a Sequential's own config gives Sequential.from_config an input shape: an
    InputLayer first, a first layer's `batch_input_shape` (`batch_shape`), or a
    `build_input_shape` (a `batch_input_shape` on the Sequential's own config is not read)."""
    if config.get("build_input_shape") is not None:
        return True
    layers = config.get("layers")
    first = layers[0] if isinstance(layers, list) and layers else None
    if not isinstance(first, dict):
        return False
    inner = first.get("config")
    return first.get("class_name") == "InputLayer" or (
        isinstance(inner, dict) and ("batch_input_shape" in inner or "batch_shape" in inner)
    )


def _names_initializer(entry: Any, depth: int = 0) -> bool:
    """Whether a layer entry, or any layer it holds, names an initializer (holds weights)."""
    config = entry.get("config") if isinstance(entry, dict) else None
    if not isinstance(config, dict) or depth > MAX_DEPTH:
        return False
    if any(str(k).endswith("_initializer") for k in config):
        return True
    held = [config.get(k) for k in NESTED_LAYER_KEYS] + list(config.get("layers") or [])
    return any(_names_initializer(e, depth + 1) for e in held)


def unbuilt_nested(config: Any, depth: int = 0) -> tuple[str, ...]:
    """Sequentials used as a layer whose own config gives no input shape and that hold
    weights: Sequential.from_config leaves them unbuilt whatever the outer model's input,
    and loading the H5 weights fails (tf.keras: 'Weights for model ... have not yet been
    created'). Every model config in the file, names once each."""
    found: list[str] = []
    inner = config.get("config") if isinstance(config, dict) else None
    layers = inner.get("layers") if isinstance(inner, dict) else None
    if not isinstance(layers, list) or depth > MAX_DEPTH:
        return ()
    for entry in layers:
        if not isinstance(entry, dict) or entry.get("class_name") not in MODEL_CLASSES:
            continue
        own = entry.get("config")
        if (
            entry.get("class_name") == "Sequential"
            and isinstance(own, dict)
            and not _declares_input(own)
            and _names_initializer(entry)
        ):
            name = _text(own.get("name"))
            found += [name] if name not in found else []
        found += [n for n in unbuilt_nested(entry, depth + 1) if n not in found]
    return tuple(found)


def _output_refs(value: Any) -> list[list[Any]]:
    """A functional config's `output_layers`: one [name, node, tensor] or a list of them."""
    if isinstance(value, list) and value and isinstance(value[0], str):
        return [value]
    if isinstance(value, dict):
        return [v for v in value.values() if isinstance(v, list)]
    return [v for v in value if isinstance(v, list)] if isinstance(value, list) else []


def unreached_outputs(config: Any, depth: int = 0) -> tuple[str, ...]:
    """Nested Functionals a functional config's `output_layers` reads at a call node the
    config does not list (Keras 2's numbering, see `unreached_calls`): Keras 3.0-3.2's
    functional_from_config looks that node up as is (an IndexError); 3.3 and later lower a
    Functional's index there by one. Every functional config in the file, names once."""
    found: list[str] = []
    read = _functional_layers(config, depth)
    if read is None:
        return ()
    inner, entries, calls = read
    for ref in _output_refs(inner.get("output_layers")):
        if len(ref) < 3 or not isinstance(ref[1], int) or isinstance(ref[1], bool):
            continue
        name = _text(ref[0])
        target = calls.get(name)
        if target and target[0] in ("Functional", "Model") and ref[1] >= target[1]:
            found += [name] if name not in found else []
    for entry in entries:
        if entry.get("class_name") in MODEL_CLASSES:
            found += [n for n in unreached_outputs(entry, depth + 1) if n not in found]
    return tuple(found)


def _model_name(config: Any) -> str:
    """The top-level model's `name` (a TF 1.x Sequential config, a bare list, has none)."""
    return _text(config.get("name")) if isinstance(config, dict) else ""


def _member(member: Source) -> bytes:
    return member.read_at(0, member.size)


def read_keras_archive(source: Source) -> KerasModel:
    """A `.keras` zip: its metadata.json and config.json."""
    tree = open_archive(source, wanted=lambda name: name in ARCHIVE_FILES)
    names = set(tree.names())
    missing = [n for n in ARCHIVE_FILES if n not in names]
    if missing:
        raise InvalidArtifact(
            f"{source.name}: a zip without {' and '.join(missing)}; not a Keras .keras archive"
        )
    metadata = _json(_member(tree.open("metadata.json")), f"{source.name}: metadata.json")
    config = _json(_member(tree.open("config.json")), f"{source.name}: config.json")
    if not isinstance(metadata, dict):
        raise InvalidArtifact(f"{source.name}: metadata.json is not a JSON object")
    return keras_model(
        config,
        "keras-zip",
        _text(metadata.get("keras_version")),
        f"{source.name}: config.json",
        date_saved=_text(metadata.get("date_saved")),
    )


def read_keras_h5(source: Source) -> KerasModel:
    """A legacy H5 model: the root group's keras_version, backend and model_config."""
    attributes = root_string_attributes(source)
    if "model_config" not in attributes:
        what = (
            "Keras weights (no model_config)" if "keras_version" in attributes else "no Keras model"
        )
        raise UnsupportedArtifact(
            f"{source.name}: an HDF5 file holding {what}; tfcompat reads Keras models saved "
            "whole (model.save('model.keras') or model.save('model.h5')), not weights alone"
        )
    config = _json(attributes["model_config"], f"{source.name}: model_config")
    training = (
        _json(attributes["training_config"], f"{source.name}: training_config")
        if "training_config" in attributes
        else None
    )
    return keras_model(
        config,
        "hdf5",
        attributes.get("keras_version", ""),
        f"{source.name}: model_config",
        training=training,
        backend=attributes.get("backend", ""),
    )
