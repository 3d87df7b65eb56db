"""SavedModel (`saved_model.pb`/`.pbtxt`) and bare MetaGraphDef (`.meta`) reading.

Binary files are parsed whole by protobuf, skimmed first when large (see
`graph.read_message`), so a SavedModel with large embedded constants stays
within bounded memory and is accepted exactly when TensorFlow's parser
accepts it.
"""

from __future__ import annotations

from google.protobuf import text_format

from worker.errors import InvalidArtifact, LimitExceeded
from worker.formats.graph import (
    MAX_TEXT_BYTES,
    graph_from_message,
    graph_nodes_from_message,
    read_message,
)
from worker.formats.serve_plan import serve_plan
from worker.formats.source import Source
from worker.formats.text_fields import check_field_names
from worker.model.artifact import Graph, MetaGraph, RevivedObject
from worker.proto import tensorflow_subset_pb2 as pb
from worker.proto.convert import op_def, version_def


def _revived_objects(message: pb.MetaGraphDef) -> tuple[RevivedObject, ...]:
    """The object graph's user objects that hold slot variables (see RevivedObject)."""
    found = []
    for index, node in enumerate(message.object_graph_def.nodes):
        if node.slot_variables and node.WhichOneof("kind") == "user_object":
            user = node.user_object
            found.append(
                RevivedObject(
                    user.identifier, version_def(user.version), len(node.slot_variables), index
                )
            )
    return tuple(found)


def _meta_graph(message: pb.MetaGraphDef, has_object_graph: bool) -> MetaGraph:
    info = message.meta_info_def
    graph, nodes = graph_nodes_from_message(message.graph_def)
    signatures = list(message.signature_def)
    return MetaGraph(
        tags=tuple(info.tags),
        graph=graph,
        tensorflow_version=info.tensorflow_version,
        tensorflow_git_version=info.tensorflow_git_version,
        stripped_default_attrs=info.stripped_default_attrs,
        producer_ops={op.name: op_def(op) for op in info.stripped_op_list.op},
        signatures=tuple(sorted(signatures)),
        has_object_graph=has_object_graph,
        serve_plan=serve_plan(message, nodes),
        revived_objects=_revived_objects(message),
    )


def _binary_meta_graph(message: pb.MetaGraphDef, name: str) -> MetaGraph:
    if not message.HasField("graph_def"):
        raise InvalidArtifact(f"{name}: MetaGraphDef has no graph_def")
    return _meta_graph(message, message.HasField("object_graph_def"))


def read_saved_model(source: Source) -> tuple[int, list[MetaGraph]]:
    """(saved_model_schema_version, meta graphs) of a binary saved_model.pb."""
    message, _ = read_message(source, pb.SavedModel)
    if not message.meta_graphs:
        raise InvalidArtifact(f"{source.name}: not a SavedModel (no MetaGraphDef inside)")
    return message.saved_model_schema_version, [
        _binary_meta_graph(m, source.name) for m in message.meta_graphs
    ]


def _parse_text(source: Source, message: pb.SavedModel | pb.MetaGraphDef | pb.GraphDef) -> None:
    if source.size > MAX_TEXT_BYTES:
        raise LimitExceeded(
            f"{source.name}: text-format file of {source.size} bytes (limit {MAX_TEXT_BYTES})"
        )
    try:
        text = source.read_at(0, source.size).decode("utf-8")
        # Fields our subset leaves out are skipped; a field no TensorFlow has is refused.
        text_format.Parse(text, message, allow_unknown_field=True)
        check_field_names(text, type(message).__name__, source.name)
    except (UnicodeDecodeError, text_format.ParseError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidArtifact(f"{source.name}: not a valid text-format protobuf: {first}") from None
    except RecursionError:
        raise LimitExceeded(f"{source.name}: text-format message nested too deeply") from None


def _meta_graph_from_message(message: pb.MetaGraphDef) -> MetaGraph:
    return _meta_graph(message, has_object_graph=False)  # text: object graph unknown


def read_saved_model_text(source: Source) -> tuple[int, list[MetaGraph]]:
    message = pb.SavedModel()
    _parse_text(source, message)
    if not message.meta_graphs:
        raise InvalidArtifact(f"{source.name}: not a SavedModel (no meta_graphs)")
    return (
        message.saved_model_schema_version,
        [_meta_graph_from_message(m) for m in message.meta_graphs],
    )


def read_meta_graph_file(source: Source) -> MetaGraph:
    """A bare `.meta` file, binary or text."""
    if looks_like_text(source):
        message = pb.MetaGraphDef()
        _parse_text(source, message)
        return _meta_graph_from_message(message)
    binary, _ = read_message(source, pb.MetaGraphDef)
    return _binary_meta_graph(binary, source.name)


def read_graph_def_text(source: Source) -> Graph:
    message = pb.GraphDef()
    _parse_text(source, message)
    try:
        return graph_from_message(message)
    except LimitExceeded as exc:
        raise LimitExceeded(f"{source.name}: {exc}") from exc


def looks_like_text(source: Source) -> bool:
    """Text-format protobuf starts with a field name; binary starts with a tag byte."""
    head = source.read_at(0, min(64, source.size))
    stripped = head.lstrip()
    if not stripped:
        return False
    first = stripped[:1]
    return (first.isalpha() or first == b"#") and all(
        32 <= b < 127 or b in (9, 10, 13) for b in head
    )
