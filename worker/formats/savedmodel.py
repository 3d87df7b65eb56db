"""SavedModel (`saved_model.pb`/`.pbtxt`) and bare MetaGraphDef (`.meta`) reading.

The MetaGraphDef's graph is walked with `graph.read_graph_def`, so a SavedModel
with large embedded constants stays within bounded memory; `meta_info_def`
(tags, producer version strings, `stripped_op_list`) is small and parsed whole.
"""

from __future__ import annotations

from google.protobuf import text_format

from worker.errors import InvalidArtifact, LimitExceeded
from worker.formats import wire
from worker.formats.graph import MAX_TEXT_BYTES, SMALL_MESSAGE, graph_from_message, read_graph_def
from worker.formats.source import Source
from worker.formats.wire import Cursor
from worker.model.artifact import Graph, MetaGraph
from worker.proto import tensorflow_subset_pb2 as pb
from worker.proto.convert import op_def

# Field numbers from TensorFlow's saved_model.proto and meta_graph.proto.
_SM_SCHEMA_VERSION, _SM_META_GRAPHS = 1, 2
_MG_META_INFO, _MG_GRAPH_DEF, _MG_SIGNATURE_DEF, _MG_OBJECT_GRAPH = 1, 2, 5, 7
MAX_META_INFO_BYTES = 256 << 20


def _meta_graph(
    info: pb.MetaGraphDef.MetaInfoDef, graph: Graph, signatures: list[str], has_object_graph: bool
) -> MetaGraph:
    return MetaGraph(
        tags=tuple(info.tags),
        graph=graph,
        tensorflow_version=info.tensorflow_version,
        tensorflow_git_version=info.tensorflow_git_version,
        stripped_default_attrs=info.stripped_default_attrs,
        producer_ops={op.name: op_def(op) for op in info.stripped_op_list.op},
        signatures=tuple(sorted(signatures)),
        has_object_graph=has_object_graph,
    )


def read_meta_graph(cursor: Cursor) -> MetaGraph:
    """Summarise the binary MetaGraphDef between the cursor's position and end."""
    info = pb.MetaGraphDef.MetaInfoDef()
    graph: Graph | None = None
    signatures: list[str] = []
    has_object_graph = False
    name = cursor.source.name
    for f in cursor.fields():
        if f.wire_type != wire.LENGTH_DELIMITED:
            continue
        if f.number == _MG_META_INFO:
            if f.value > MAX_META_INFO_BYTES:
                raise LimitExceeded(f"{name}: meta_info_def of {f.value} bytes")
            try:
                info.ParseFromString(cursor.payload(f))
            except Exception:
                raise InvalidArtifact(f"{name}: meta_info_def is not valid protobuf") from None
        elif f.number == _MG_GRAPH_DEF:
            graph = read_graph_def(cursor.sub(f))
        elif f.number == _MG_SIGNATURE_DEF and f.value <= SMALL_MESSAGE:
            entry = pb.MetaGraphDef.SignatureDefEntry()
            try:
                entry.ParseFromString(cursor.payload(f))
            except Exception:
                raise InvalidArtifact(f"{name}: a signature_def is not valid protobuf") from None
            signatures.append(entry.key)
        elif f.number == _MG_OBJECT_GRAPH:
            has_object_graph = True
    if graph is None:
        raise InvalidArtifact(f"{name}: MetaGraphDef has no graph_def")
    return _meta_graph(info, graph, signatures, has_object_graph)


def read_saved_model(source: Source) -> tuple[int, list[MetaGraph]]:
    """(saved_model_schema_version, meta graphs) of a binary saved_model.pb."""
    cursor = Cursor(source)
    schema = 0
    meta_graphs = []
    for f in cursor.fields():
        if f.number == _SM_SCHEMA_VERSION and f.wire_type == wire.VARINT:
            schema = f.value
        elif f.number == _SM_META_GRAPHS and f.wire_type == wire.LENGTH_DELIMITED:
            meta_graphs.append(read_meta_graph(cursor.sub(f)))
    if not meta_graphs:
        raise InvalidArtifact(f"{source.name}: not a SavedModel (no MetaGraphDef inside)")
    return schema, meta_graphs


def _parse_text(source: Source, message: pb.SavedModel | pb.MetaGraphDef | pb.GraphDef) -> None:
    if source.size > MAX_TEXT_BYTES:
        raise LimitExceeded(
            f"{source.name}: text-format file of {source.size} bytes (limit {MAX_TEXT_BYTES})"
        )
    try:
        text = source.read_at(0, source.size).decode("utf-8")
        text_format.Parse(text, message, allow_unknown_field=True)
    except (UnicodeDecodeError, text_format.ParseError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidArtifact(f"{source.name}: not a valid text-format protobuf: {first}") from None
    except RecursionError:
        raise LimitExceeded(f"{source.name}: text-format message nested too deeply") from None


def _meta_graph_from_message(message: pb.MetaGraphDef) -> MetaGraph:
    return _meta_graph(
        message.meta_info_def,
        graph_from_message(message.graph_def),
        list(message.signature_def),
        has_object_graph=False,  # text form: object_graph_def is an unknown field here
    )


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
    return read_meta_graph(Cursor(source))


def read_graph_def_text(source: Source) -> Graph:
    message = pb.GraphDef()
    _parse_text(source, message)
    return graph_from_message(message)


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
