"""A consumer: one TensorFlow binary that loads models, and how it loads them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from worker.model.artifact import OpDef
from worker.model.tflite import TfliteInterpreter


def minor(release: str) -> str:
    """'2.16.2' -> '2.16': the catalog keeps one registry per minor, so a fact about
    when an op appeared is only as precise as the minor."""
    return ".".join(release.split(".")[:2])


class Loader(StrEnum):
    """How a consumer loads a model; TensorFlow's outcome differs by loader."""

    SAVED_MODEL_V1 = "saved-model-v1"  # tf.compat.v1 SavedModel loader; TF Serving
    SAVED_MODEL_V2 = "saved-model-v2"  # tf.saved_model.load
    GRAPH_IMPORT = "graph-import"  # tf.import_graph_def of the bare GraphDef


KernelDefs = Mapping[str, Mapping[str, Sequence[Sequence[tuple[str, Sequence[str]]]]]]
"""op -> device ("CPU", "GPU", "DEFAULT") -> each kernel's type constraints, a list of
(attr, allowed DataType names); an empty list of constraints takes every type."""


@dataclass(frozen=True)
class RevivedType:
    """One registration tf.saved_model.load revives a user object identifier with
    (`revived_types.VersionedTypeRegistration`), measured in the consumer's process."""

    version: int
    min_producer_version: int
    min_consumer_version: int
    bad_consumers: tuple[int, ...]
    methods: tuple[str, ...]  # methods the revived object has that the loader calls

    def should_load(self, producer: int, min_consumer: int, bad: tuple[int, ...]) -> bool:
        """VersionedTypeRegistration.should_load: this registration revives the object."""
        return (
            producer >= self.min_producer_version
            and self.version >= min_consumer
            and self.version not in bad
        )


RevivedTypes = Mapping[str, tuple[RevivedType, ...]]


@dataclass(frozen=True)
class DataTypes:
    """What a binary's `DataType` enum holds (`types.proto`, append-only across releases).

    A node whose type attr holds a value the enum lacks fails validation ("AttrValue has
    invalid DataType enum: N"). `known`: names it surely holds; `at_most`: the names it
    can hold at most (None: no measurement bounds it); a name in `at_most` and not in
    `known` was not measured for this binary. `first`: per name, the oldest measured
    release that knows it (the upgrade a fix names)."""

    known: frozenset[str]
    at_most: frozenset[str] | None
    source: str
    first: Mapping[str, str]

    def lacks(self, name: str) -> bool:
        return name not in self.known and self.at_most is not None and name not in self.at_most

    def unmeasured(self, name: str) -> bool:
        return name not in self.known and not self.lacks(name)


@dataclass(frozen=True)
class Registry:
    """The ops a consumer's binary registers, and the kernels it has for them."""

    ops: Mapping[str, OpDef]
    source: str  # "catalog 2.12.1", a manifest path, ...
    fingerprint: str = ""  # names the contents: a manifest's sha256 (a re-dump changes it)
    kernels: KernelDefs | None = None  # None: not measured for this binary
    revived: RevivedTypes | None = None  # what tf.saved_model.load revives (None: unknown)
    data_types: DataTypes | None = None  # its DataType enum (None: not measured)


@dataclass(frozen=True)
class Consumer:
    name: str
    tensorflow: str | None  # release, e.g. "2.12.1"; None when unknown (custom build)
    graph_def_version: int  # TF_GRAPH_DEF_VERSION the binary was built with
    graph_def_min_producer: int = 0
    checkpoint_version: int = 1
    checkpoint_min_producer: int = 0
    registry: Registry | None = None
    loader: Loader = Loader.SAVED_MODEL_V1
    rejects_unknown_attrs: bool = False  # up to 2.4 reject; 2.5 and later ignore
    validates_library: bool = True  # 1.13 and older check function bodies only when called
    looks_up_op_list_first: bool = False  # 1.13/1.14 v1 loader: the stripped op list first
    # tf.saved_model.load reads an unfilled lifted variable as an empty tensor (2.8+)
    lifted_reads_empty: bool = False
    # Keras files (`worker.compat.keras`): the Keras `load_model` runs ("2.15", "3.6"; derived
    # from the release, or declared), the Python it runs on ("3.11"; None: not declared), and
    # whether the consumer is a TensorFlow Serving binary (it reads SavedModels only)
    keras: str | None = None
    python: str | None = None
    tf_serving: bool = False
    # names the consumer's process registers or passes as load_model's custom_objects
    # (class names, function names or register_keras_serializable's "Package>Name")
    custom_objects: tuple[str, ...] = ()
    # (oldest, newest) Python its release has wheels for, when `python` is not declared
    python_range: tuple[str, str] | None = None
    environment: str = ""
    owners: tuple[str, ...] = ()
    # What it runs .tflite files with: a TensorFlow release's tf.lite.Interpreter, or a
    # TFLite runtime of its own (`standalone`: it reads nothing else). None: unknown.
    tflite: TfliteInterpreter | None = None
    gpu: bool = False  # it runs on a GPU: an op with a GPU kernel only still runs
    # `same_answer: strict` in its fleet entry: a measured change of results is an error
    same_answer_strict: bool = False
