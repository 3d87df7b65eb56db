"""How the model index stores an entry: small per-model documents over shared parts.

A fleet change reads every entry back, so the stored form is chosen for
decoding speed. Measured with bench/fleet_impact.py: the previous form (each
entry one zlib-compressed JSON document carrying its OpDefs and edges inline)
spent 4.2 s of a 5.2 s `fleet impact` loading 10,000 entries, most of it
building the same objects again and again.

Parts an entry shares with others are stored once, content-addressed (the
`ref` is a digest of the part's text), in one Redis hash beside the entries:
- `a…`: a node kind's attrs, as the canonical JSON text that is also the kind's
  identity for the checks' caches (`NodeKind.key`);
- `e…`: a graph's edges, as a flat JSON list of ints (four per edge), or that list
  and [[position, output arg], ...] when edges inside function bodies name their arg;
- `o…`: an OpDef of a producer's `stripped_op_list`;
- `p…`: a whole `stripped_op_list`, as {op name: `o…` ref}.
Models exported by the same code share most of these, and one decoder decodes
each part once per pass: the shared objects are the same objects, so the
per-OpDef caches of `compat` hit across models too.

The entry itself is two LZ4-compressed JSON documents (LZ4: inflating zlib cost
three times as much, for a third less Redis memory), framed (`Encoder.entry`):
a header with the verdicts, and the artifacts, which go through
`worker.model.artifact.artifact_from_json` (the one mapping of artifact fields
to JSON), with the packed graph and OpDef refs decoded here. An entry written
before the framing (one document) is still read.

An entry's artifacts are decoded when first asked for (`StoredModel`): a fleet
change that checks a model anew needs them; one that keeps every recorded
verdict or takes it from the catalog releases' record (a consumer removed,
renamed, defined as one the model was judged by, or a catalog release) reads
only the header, and parsing and building the artifacts was most of decoding
an entry (bench/fleet_impact.py). A part gone from Redis is found then, as a
TransientError that says how to restore it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, fields
from functools import cached_property
from typing import Any, TypeVar

import cramjam
import orjson

from worker.errors import TransientError
from worker.model.artifact import (
    Artifact,
    Edge,
    Graph,
    MetaGraph,
    NodeKind,
    OpDef,
    PinnedDevice,
    VersionDef,
    artifact_from_json,
    op_def_from_dict,
)
from worker.model.index import IndexedModel, ReleaseVerdicts
from worker.model.shapes import shaped_node_from_json

_T = TypeVar("_T")
Parts = dict[str, bytes]
"""ref -> the part's text."""

# The first byte of an entry in two parts; an older entry (one LZ4 block of JSON that
# opens with more than 15 literal bytes) starts with a byte of 0xF0 or more.
FRAMED = b"\x00"

_ARTIFACT_INLINE = [f.name for f in fields(Artifact) if f.name not in ("graph", "meta_graphs")]
_META_INLINE = [f.name for f in fields(MetaGraph) if f.name not in ("graph", "producer_ops")]


def ref_of(kind: str, text: bytes) -> str:
    return kind + hashlib.blake2b(text, digest_size=12).hexdigest()


_OP_TEXTS: dict[int, tuple[OpDef, bytes]] = {}
"""id -> (the OpDef, held so the id stays its own; its text): asdict is slow, and the
models of one producer share their OpDef objects."""


class Encoder:
    """Packs entries; collects the parts they refer to (callers store both)."""

    def __init__(self) -> None:
        self.parts: Parts = {}

    def part(self, kind: str, text: bytes) -> str:
        ref = ref_of(kind, text)
        self.parts[ref] = text
        return ref

    def op(self, op: OpDef) -> str:
        hit = _OP_TEXTS.get(id(op))
        if hit is None or hit[0] is not op:
            if len(_OP_TEXTS) >= 10_000:
                _OP_TEXTS.clear()
            hit = _OP_TEXTS[id(op)] = (op, orjson.dumps(asdict(op), option=orjson.OPT_SORT_KEYS))
        return self.part("o", hit[1])

    def graph(self, graph: Graph) -> dict[str, Any]:
        flat = [n for e in graph.edges for n in (e.src, e.output, e.dst, e.input)]
        # Edges inside function bodies also name their output arg: (edge position, arg).
        args = [[n, e.output_arg] for n, e in enumerate(graph.edges) if e.output_arg]
        shaped = {"shaped_nodes": [asdict(n) for n in graph.shaped_nodes]}
        pinned = {"devices": [asdict(p) for p in graph.devices]}
        return {
            **(shaped if graph.shaped_nodes else {}),  # most graphs have none: no key
            **(pinned if graph.devices else {}),
            "versions": graph.versions,
            "node_count": graph.node_count,
            "library_node_count": graph.library_node_count,
            "functions": graph.functions,
            "kinds": [
                [k.op, self.part("a", k.key[1].encode()), k.inputs, k.count, k.example, k.function]
                for k in graph.kinds
            ],
            "edges": self.part("e", orjson.dumps([flat, args] if args else flat)),
        }

    def artifact(self, artifact: Artifact) -> dict[str, Any]:
        data: dict[str, Any] = {name: getattr(artifact, name) for name in _ARTIFACT_INLINE}
        data["graph"] = self.graph(artifact.graph) if artifact.graph is not None else None
        data["meta_graphs"] = [
            {
                **{name: getattr(m, name) for name in _META_INLINE},
                "graph": self.graph(m.graph),
                "producer_ops": self.part(
                    "p",
                    orjson.dumps(
                        {name: self.op(op) for name, op in m.producer_ops.items()},
                        option=orjson.OPT_SORT_KEYS,
                    ),
                ),
            }
            for m in artifact.meta_graphs
        ]
        return data

    def entry(self, model: IndexedModel) -> bytes:
        """FRAMED, the header's length (4 bytes, little-endian), the header, the artifacts;
        each LZ4-compressed JSON."""
        header = {
            "bucket": model.bucket,
            "key": model.key,
            "version_id": model.version_id,
            "report_bucket": model.report_bucket,
            "report_key": model.report_key,
            "status": model.status,
            "verdicts": model.verdicts,
            "consumer_digests": model.consumer_digests,
            "compatible_releases": model.compatible_releases,
            "owners": model.owners,
            "releases": model.releases,
        }
        # orjson writes the dataclasses and tuples left inline as JSON objects and lists.
        head = bytes(cramjam.lz4.compress_block(orjson.dumps(header)))
        artifacts = orjson.dumps([self.artifact(a) for a in model.artifacts])
        return (
            FRAMED
            + len(head).to_bytes(4, "little")
            + head
            + bytes(cramjam.lz4.compress_block(artifacts))
        )


def _build(cls: type[_T], **values: Any) -> _T:
    """A frozen dataclass instance without running its __init__: a pass over the index
    builds hundreds of thousands of kinds, and the generated __init__ of a frozen
    dataclass costs three times this. Only for trusted, complete field sets."""
    instance = cls.__new__(cls)
    instance.__dict__.update(values)
    return instance


_MODEL_FIELDS = [f.name for f in fields(IndexedModel)]


def _releases(data: dict[str, Any] | None) -> ReleaseVerdicts | None:
    if data is None:  # an entry put before releases were recorded
        return None
    return ReleaseVerdicts(
        data["digest"],
        tuple((state, error, count) for state, error, count in data["runs"]),
        tuple(tuple(e) for e in data["errors"]),
        tuple((code, tuple(map(tuple, fix))) for code, fix in data.get("causes") or ()),
    )


class StoredModel(IndexedModel):
    """An index entry as decoded: its artifacts are built on first use (from the entry's
    JSON and the decoder of its pass); otherwise an `IndexedModel` (equal to one with the
    same fields; pickled as one)."""

    @cached_property
    def artifacts(self) -> tuple[Artifact, ...]:
        rows, decoder = self.__dict__["_pending"]
        try:
            if isinstance(rows, bytes):  # the framed entry's artifacts, still packed
                rows = orjson.loads(memoryview(cramjam.lz4.decompress_block(rows)))
            built = tuple(
                artifact_from_json(a, graph=decoder.graph, producer_ops=decoder.producer_ops)
                for a in rows
            )
        except (KeyError, ValueError, TypeError, cramjam.DecompressionError) as exc:
            raise TransientError(
                f"model index: the metadata of {self.location} cannot be read ({exc}); "
                "`tfcompat index rebuild` restores the index's parts from the stored reports"
            ) from exc
        del self.__dict__["_pending"]
        return built

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IndexedModel):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _MODEL_FIELDS)

    def __reduce__(self) -> tuple[Any, ...]:
        return IndexedModel, tuple(getattr(self, name) for name in _MODEL_FIELDS)


class Decoder:
    """Decodes entries of one pass over the index, each shared part once."""

    def __init__(self, parts: Parts, fetch: Callable[[str], bytes | None]) -> None:
        self._parts = parts
        self._fetch = fetch  # a part written after `parts` was read
        self._attrs: dict[str, tuple[dict[str, Any], str]] = {}
        self._edges: dict[str, tuple[Edge, ...]] = {}
        self._ops: dict[str, OpDef] = {}
        self._op_lists: dict[str, dict[str, OpDef]] = {}

    def _text(self, ref: str) -> bytes:
        text = self._parts.get(ref)
        if text is None:
            text = self._fetch(ref)
            if text is None:
                raise KeyError(f"index part {ref} is missing")
            self._parts[ref] = text
        return text

    def op(self, ref: str) -> OpDef:
        """The OpDef of part `ref`; its text is remembered as the encoder's (`_OP_TEXTS`),
        since it is the very text the encoder makes of it: an entry re-encoded after a
        fleet change's re-check does not turn its OpDefs into JSON again (that was a
        sixth of the re-check's own time per model, bench/fleet_fanout.py)."""
        found = self._ops.get(ref)
        if found is None:
            text = self._text(ref)
            found = self._ops[ref] = op_def_from_dict(orjson.loads(text))
            if len(_OP_TEXTS) >= 10_000:
                _OP_TEXTS.clear()
            _OP_TEXTS[id(found)] = (found, text if isinstance(text, bytes) else text.encode())
        return found

    def producer_ops(self, ref: str) -> dict[str, OpDef]:
        """One dict per distinct op list, shared by the models that have it (read-only)."""
        found = self._op_lists.get(ref)
        if found is None:
            refs = orjson.loads(self._text(ref))
            found = self._op_lists[ref] = {name: self.op(r) for name, r in refs.items()}
        return found

    def _edge_tuple(self, ref: str) -> tuple[Edge, ...]:
        found = self._edges.get(ref)
        if found is None:
            flat = orjson.loads(self._text(ref))
            args: list[list[Any]] = []
            if flat and isinstance(flat[0], list):  # [ints, [[position, arg], ...]]
                flat, args = flat
            it = iter(flat)
            edges = [
                _build(Edge, src=s, output=o, dst=d, input=i)
                for s, o, d, i in zip(it, it, it, it, strict=True)
            ]
            for position, arg in args:
                e = edges[position]
                edges[position] = Edge(e.src, e.output, e.dst, e.input, arg)
            found = self._edges[ref] = tuple(edges)
        return found

    def _kinds(self, rows: Iterable[list[Any]]) -> tuple[NodeKind, ...]:
        kinds = []
        attrs_of = self._attrs
        new = NodeKind.__new__
        for op, ref, inputs, count, example, function in rows:
            attrs = attrs_of.get(ref)
            if attrs is None:
                text = self._text(ref).decode()
                attrs = attrs_of[ref] = (orjson.loads(text), text)
            kind = new(NodeKind)  # as _build, inlined: this loop is the decoder's hot spot
            kind.__dict__.update(
                {
                    "op": op,
                    "attrs": attrs[0],
                    "inputs": inputs,
                    "count": count,
                    "example": example,
                    "function": function,
                    "key": (op, attrs[1], inputs, function is None),  # the cached_property
                }
            )
            kinds.append(kind)
        return tuple(kinds)

    def graph(self, data: dict[str, Any]) -> Graph:
        v = data["versions"]
        return Graph(
            versions=VersionDef(v["producer"], v["min_consumer"], tuple(v["bad_consumers"]))
            if v is not None
            else None,
            node_count=data["node_count"],
            kinds=self._kinds(data["kinds"]),
            edges=self._edge_tuple(data["edges"]),
            functions=tuple(data["functions"]),
            library_node_count=data["library_node_count"],
            shaped_nodes=tuple(shaped_node_from_json(n) for n in data.get("shaped_nodes", ())),
            devices=tuple(PinnedDevice(**p) for p in data.get("devices", ())),
        )

    def entry(self, blob: bytes) -> IndexedModel:
        pending: bytes | list[Any]
        if blob[:1] == FRAMED:
            size = int.from_bytes(blob[1:5], "little")
            data = orjson.loads(memoryview(cramjam.lz4.decompress_block(blob[5 : 5 + size])))
            pending = blob[5 + size :]  # decoded when a check needs the artifacts
        else:  # an entry written before the header was framed apart from the artifacts
            data = orjson.loads(memoryview(cramjam.lz4.decompress_block(blob)))
            pending = data["artifacts"]
        model = StoredModel.__new__(StoredModel)  # as _build, with what `artifacts` needs
        model.__dict__.update(
            bucket=data["bucket"],
            key=data["key"],
            version_id=data["version_id"],
            report_bucket=data["report_bucket"],
            report_key=data["report_key"],
            status=data["status"],
            verdicts=data["verdicts"],
            consumer_digests=data["consumer_digests"],
            compatible_releases=tuple(data["compatible_releases"]),
            owners=tuple(data["owners"]),
            releases=_releases(data.get("releases")),
            _pending=(pending, self),
        )
        return model
