"""What a TensorFlow artifact says about itself, as plain data.

Every reader returns an `Artifact`. Nothing here holds a protobuf object: attr
values are kept in protobuf's canonical JSON shape (`{"type": "DT_FLOAT"}`,
`{"list": {"i": [1, 2]}}`, tensor contents replaced by their size and digest),
so metadata round-trips through JSON exactly. That is what lets a fleet change
re-check every stored model without downloading it again.

A graph is summarised as *node kinds*: nodes sharing op, attrs and number of
data inputs collapse into one kind with a count, and edges into the distinct
(kind, output) -> (kind, input) pairs. TensorFlow's load-time checks depend on
exactly these, so the summary loses nothing the rules need, while a graph of
100,000 nodes shrinks to a few hundred kinds.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from worker.model.serving import ServePlan, serve_plan_from_json
from worker.model.shapes import ShapedNode, shaped_node_from_json
from worker.model.tflite import TfliteModel, tflite_from_json

AttrJSON = dict[str, Any]
"""An AttrValue in protobuf's JSON shape, e.g. {"type": "DT_INT32"}."""


@dataclass(frozen=True)
class VersionDef:
    producer: int
    min_consumer: int = 0
    bad_consumers: tuple[int, ...] = ()

    def describe(self) -> str:
        text = f"producer {self.producer} min-consumer {self.min_consumer}"
        if self.bad_consumers:
            text += " bad-consumers " + ",".join(str(v) for v in self.bad_consumers)
        return text


@dataclass(frozen=True)
class ArgDef:
    name: str
    type: str = ""  # DataType name when fixed, e.g. "DT_FLOAT"
    type_attr: str = ""
    number_attr: str = ""
    type_list_attr: str = ""
    is_ref: bool = False


@dataclass(frozen=True)
class AttrDef:
    name: str
    type: str
    default: AttrJSON | None = None
    allowed_values: AttrJSON | None = None
    has_minimum: bool = False
    minimum: int = 0


@dataclass(frozen=True)
class OpDef:
    """The parts of TensorFlow's OpDef that decide whether a node loads."""

    name: str
    inputs: tuple[ArgDef, ...] = ()
    outputs: tuple[ArgDef, ...] = ()
    attrs: tuple[AttrDef, ...] = ()
    deprecation_version: int | None = None
    deprecation_explanation: str = ""

    def attr(self, name: str) -> AttrDef | None:
        return self.attr_map.get(name)

    @functools.cached_property
    def attr_map(self) -> dict[str, AttrDef]:
        return {a.name: a for a in self.attrs}


@dataclass(frozen=True)
class NodeKind:
    """Nodes that share op, attrs and data-input count, wherever they stand."""

    op: str
    attrs: dict[str, AttrJSON]
    inputs: int  # data inputs (control inputs "^x" excluded)
    count: int
    example: str  # one node's name, for messages
    function: str | None = None  # the library function holding it; None: top-level graph

    @functools.cached_property
    def key(self) -> tuple[str, str, int, bool]:
        """What validation depends on (not the node's name): equal keys, equal findings."""
        return (self.op, json.dumps(self.attrs, sort_keys=True), self.inputs, self.function is None)

    @property
    def where(self) -> str:
        """'node X' or 'node X in function F', as messages name a node."""
        return f"node {self.example}" + (f" in function {self.function}" if self.function else "")

    def text_attr(self, name: str) -> str:
        """A string attr's value as text ('' when absent or not base64, as JSON holds bytes)."""
        raw = self.attrs.get(name, {}).get("s", "")
        try:
            return base64.b64decode(raw).decode("utf-8", "replace")
        except ValueError:
            return ""


@dataclass(frozen=True)
class Edge:
    """Kind `src` output `output` feeds kind `dst` input `input`.

    Inside a function body TensorFlow names an output by its OpDef arg
    ("TopKV2:indices:0"): `output_arg` is then that arg's name and `output` the
    index within it; the flat position depends on the OpDef that reads it."""

    src: int
    output: int
    dst: int
    input: int
    output_arg: str = ""


@dataclass(frozen=True)
class PinnedDevice:
    """Nodes that name a device (`NodeDef.device`), per device, op and function: what a
    Session's placer must honour (an export that did not clear devices keeps them)."""

    device: str  # as written: "/device:GPU:0", "/job:localhost/replica:0/task:0/device:GPU:0"
    op: str
    example: str  # one node's name, for messages
    function: str | None = None  # the library function holding them; None: top-level graph
    count: int = 1


@dataclass(frozen=True)
class Graph:
    versions: VersionDef | None
    node_count: int
    kinds: tuple[NodeKind, ...]
    edges: tuple[Edge, ...]
    functions: tuple[str, ...] = ()  # names defined in the function library
    library_node_count: int = 0
    # Top-level nodes of ops whose shape functions changed, with the `_output_shapes`
    # their producer recorded (worker.model.shapes); () when none, or not read
    shaped_nodes: tuple[ShapedNode, ...] = ()
    # Nodes pinned to a device (worker.compat.devices); () when none
    devices: tuple[PinnedDevice, ...] = ()

    def ops(self) -> list[str]:
        return sorted({k.op for k in self.kinds if k.op not in self.functions})


@dataclass(frozen=True)
class RevivedObject:
    """A user object of a TF2 SavedModel's object graph that tf.saved_model.load must
    revive as its own class: one holding slot variables (an optimizer), which the
    loader hands to the revived object's `add_slot`."""

    identifier: str  # SavedUserObject.identifier ("optimizer", "tf_deprecated_optimizer")
    version: VersionDef  # SavedUserObject.version
    slots: int  # slot variables it holds
    node: int  # its index in the object graph


@dataclass(frozen=True)
class MetaGraph:
    """One MetaGraphDef (a SavedModel holds one per tag set)."""

    tags: tuple[str, ...]
    graph: Graph
    tensorflow_version: str = ""
    tensorflow_git_version: str = ""
    stripped_default_attrs: bool = False
    producer_ops: dict[str, OpDef] = field(default_factory=dict)  # stripped_op_list
    signatures: tuple[str, ...] = ()
    has_object_graph: bool = False  # written by tf.saved_model.save (TF2)
    serve_plan: ServePlan | None = None  # what the loader and requests run (None: unknown)
    revived_objects: tuple[RevivedObject, ...] = ()  # TF2 object graph: objects with slots


@dataclass(frozen=True)
class Checkpoint:
    """A tensor bundle's `.index`: header versions and the tensors it lists."""

    versions: VersionDef
    num_shards: int
    endianness: str  # "LITTLE" or "BIG"
    tensors: int
    tensor_bytes: int
    entries: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)
    # key -> (dtype name, shape); capped, see formats.checkpoint.MAX_LISTED_ENTRIES


from worker.model.keras import KerasModel, keras_from_json  # noqa: E402 (beside its use)


@dataclass(frozen=True)
class Artifact:
    """What one artifact (file, directory or archive member set) says."""

    path: str
    format: str  # "graphdef" | "savedmodel" | "metagraph" | "checkpoint" | "tflite"
    size: int
    sha256: str
    meta_graphs: tuple[MetaGraph, ...] = ()
    graph: Graph | None = None  # frozen GraphDef
    checkpoint: Checkpoint | None = None  # standalone, or a SavedModel's variables
    keras: KerasModel | None = None  # a Keras file: format "keras" (.keras zip) or "keras-h5"
    saved_model_schema_version: int | None = None
    notes: tuple[str, ...] = ()
    tflite: TfliteModel | None = None  # a .tflite flatbuffer
    # A SavedModel whose variables/ holds files but no variables.index: the loader skips
    # the restore (loader.cc RunRestore). A SavedModel read without any variables/ (a
    # lone saved_model.pb in a repository or a bucket) is judged as the whole directory.
    restore_skipped: bool = False
    # The files under a SavedModel's assets/ (None: the directory was not seen whole,
    # e.g. a lone saved_model.pb): what the loader feeds the asset tensors with.
    asset_files: tuple[str, ...] | None = None

    def graphs(self) -> list[Graph]:
        found = [m.graph for m in self.meta_graphs]
        if self.graph is not None:
            found.append(self.graph)
        return found

    def to_json(self) -> dict[str, Any]:
        """`dataclasses.asdict(self)`, value for value (tests/model/test_artifact.py)."""
        found = plain(self)
        assert isinstance(found, dict)
        return found


_ATOMS = frozenset({str, int, float, bool, type(None)})
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def plain(value: Any) -> Any:
    """What `dataclasses.asdict` makes of `value`, the same way (dataclasses to dicts of
    their fields, named tuples, lists, tuples and dicts rebuilt, anything else deep-copied)
    without asdict's calls per field and leaf: a stored report's metadata cost a
    sixth of an upload's checking (bench/pipeline_throughput.py)."""
    kind = type(value)
    if kind in _ATOMS:
        return value  # what deepcopy returns for these
    names = _FIELD_NAMES.get(kind)
    if names is None and hasattr(kind, "__dataclass_fields__"):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(value))
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return kind(*[plain(v) for v in value])
    if isinstance(value, (list, tuple)):
        return kind(plain(v) for v in value)
    if isinstance(value, dict):
        return kind((plain(k), plain(v)) for k, v in value.items())
    return copy.deepcopy(value)


def versions_from_json(d: dict[str, Any] | None) -> VersionDef | None:
    if d is None:
        return None
    return VersionDef(d["producer"], d["min_consumer"], tuple(d["bad_consumers"]))


def graph_from_json(d: dict[str, Any]) -> Graph:
    """Inverse of a `Graph` in `Artifact.to_json`."""
    return Graph(
        versions=versions_from_json(d["versions"]),
        node_count=d["node_count"],
        kinds=tuple(NodeKind(**k) for k in d["kinds"]),
        edges=tuple(Edge(**e) for e in d["edges"]),
        functions=tuple(d["functions"]),
        library_node_count=d["library_node_count"],
        shaped_nodes=tuple(shaped_node_from_json(n) for n in d.get("shaped_nodes", ())),
        devices=tuple(PinnedDevice(**p) for p in d.get("devices", ())),
    )


def op_def_from_dict(d: dict[str, Any]) -> OpDef:
    """Inverse of `dataclasses.asdict(op)` (not the manifest form: see catalog.opdefs)."""
    return OpDef(
        name=d["name"],
        inputs=tuple(ArgDef(**a) for a in d["inputs"]),
        outputs=tuple(ArgDef(**a) for a in d["outputs"]),
        attrs=tuple(AttrDef(**a) for a in d["attrs"]),
        deprecation_version=d["deprecation_version"],
        deprecation_explanation=d["deprecation_explanation"],
    )


def producer_ops_from_json(d: dict[str, Any]) -> dict[str, OpDef]:
    return {name: op_def_from_dict(op) for name, op in d.items()}


def artifact_from_json(
    data: dict[str, Any],
    *,
    graph: Callable[[Any], Graph] = graph_from_json,
    producer_ops: Callable[[Any], dict[str, OpDef]] = producer_ops_from_json,
) -> Artifact:
    """Inverse of `Artifact.to_json`; raises KeyError/TypeError on foreign data.

    The one place that knows how an artifact's fields map to JSON. A store with
    its own form for the bulky parts (the model index keeps graphs packed and
    OpDefs interned) passes `graph` and `producer_ops` to decode those, and
    shares the rest."""
    ckpt = data.get("checkpoint")
    checkpoint = None
    if ckpt is not None:
        bundle_versions = versions_from_json(ckpt["versions"])
        assert bundle_versions is not None
        checkpoint = Checkpoint(
            versions=bundle_versions,
            num_shards=ckpt["num_shards"],
            endianness=ckpt["endianness"],
            tensors=ckpt["tensors"],
            tensor_bytes=ckpt["tensor_bytes"],
            entries={k: (v[0], tuple(v[1])) for k, v in ckpt["entries"].items()},
        )
    return Artifact(
        path=data["path"],
        format=data["format"],
        size=data["size"],
        sha256=data["sha256"],
        meta_graphs=tuple(
            MetaGraph(
                tags=tuple(m["tags"]),
                graph=graph(m["graph"]),
                tensorflow_version=m["tensorflow_version"],
                tensorflow_git_version=m["tensorflow_git_version"],
                stripped_default_attrs=m["stripped_default_attrs"],
                producer_ops=producer_ops(m["producer_ops"]),
                signatures=tuple(m["signatures"]),
                has_object_graph=m["has_object_graph"],
                serve_plan=serve_plan_from_json(m.get("serve_plan")),
                revived_objects=tuple(
                    RevivedObject(
                        o["identifier"],
                        versions_from_json(o["version"]) or VersionDef(0),
                        o["slots"],
                        o["node"],
                    )
                    for o in m.get("revived_objects", ())
                ),
            )
            for m in data["meta_graphs"]
        ),
        graph=graph(data["graph"]) if data.get("graph") is not None else None,
        checkpoint=checkpoint,
        keras=keras_from_json(data.get("keras")),
        saved_model_schema_version=data.get("saved_model_schema_version"),
        notes=tuple(data.get("notes", ())),
        tflite=tflite_from_json(data["tflite"]) if data.get("tflite") is not None else None,
        restore_skipped=bool(data.get("restore_skipped", False)),
        asset_files=(tuple(data["asset_files"]) if data.get("asset_files") is not None else None),
    )
