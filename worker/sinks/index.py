"""The model index: every current object version's metadata and verdicts.

The reports in the object store are the durable truth; Redis holds a compact,
compressed copy of each for fast fleet re-evaluation. When Redis has lost it
(a flush, a new Redis), the index is rebuilt from the reports on first use,
so nothing is lost. Keyed by object (bucket/key): a newer version replaces the
older one; deleted objects are removed.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any, Protocol, TypeVar

import orjson
import structlog

from worker.model.artifact import (
    ArgDef,
    Artifact,
    AttrDef,
    Edge,
    Graph,
    MetaGraph,
    NodeKind,
    OpDef,
    VersionDef,
    artifact_from_json,
)
from worker.model.index import IndexedModel

log = structlog.get_logger(__name__)
_T = TypeVar("_T")

HASH = "tfcompat:index:v1"
BUILT = "tfcompat:index:v1:built"


def model_from_report(
    document: dict[str, Any], report_bucket: str, report_key: str
) -> IndexedModel | None:
    """The index entry of a stored report, or None for a foreign or old document."""
    try:
        obj = document["object"]
        fleet = document.get("fleet") or {}
        artifacts = tuple(
            artifact_from_json(a["metadata"]) for a in document["artifacts"] if a.get("metadata")
        )
        return IndexedModel(
            bucket=obj["bucket"],
            key=obj["key"],
            version_id=obj.get("version_id"),
            report_bucket=report_bucket,
            report_key=report_key,
            status=document["status"],
            artifacts=artifacts,
            verdicts=dict(fleet.get("verdicts") or {}),
            consumer_digests=dict(fleet.get("consumer_digests") or {}),
            compatible_releases=tuple(document.get("compatible_releases") or ()),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _pack_graph(graph: Graph) -> dict[str, Any]:
    return {
        "versions": asdict(graph.versions) if graph.versions else None,
        "node_count": graph.node_count,
        # A kind's attrs are kept as their canonical JSON text: it is the kind's
        # identity for the checks' caches, so decoding never re-serialises them.
        "kinds": [[k.op, k.key[1], k.inputs, k.count, k.example, k.function] for k in graph.kinds],
        "edges": [
            [e.src, e.output, e.dst, e.input, *([e.output_arg] if e.output_arg else [])]
            for e in graph.edges
        ],
        "functions": list(graph.functions),
        "library_node_count": graph.library_node_count,
    }


def _pack_artifact(artifact: Artifact) -> dict[str, Any]:
    data = artifact.to_json()
    data["graph"] = _pack_graph(artifact.graph) if artifact.graph else None
    data["meta_graphs"] = [
        {
            **{k: v for k, v in asdict(m).items() if k not in ("graph", "producer_ops")},
            "graph": _pack_graph(m.graph),
            "producer_ops": {
                name: orjson.dumps(asdict(op), option=orjson.OPT_SORT_KEYS).decode()
                for name, op in m.producer_ops.items()
            },
        }
        for m in artifact.meta_graphs
    ]
    return data


def _build(cls: type[_T], **fields: Any) -> _T:
    """A frozen dataclass instance without running its __init__: decoding builds
    hundreds of thousands of kinds and edges, and the generated __init__ of a frozen
    dataclass costs three times this. Only for trusted, complete field sets."""
    instance = cls.__new__(cls)
    instance.__dict__.update(fields)
    return instance


class _Interner:
    """Decoding thousands of entries: identical attrs and OpDefs become one object."""

    def __init__(self) -> None:
        self.attrs: dict[str, dict[str, Any]] = {}
        self.ops: dict[str, OpDef] = {}

    def kind(self, row: list[Any]) -> NodeKind:
        op, attrs_text, inputs, count, example, function = row
        attrs = self.attrs.get(attrs_text)
        if attrs is None:
            attrs = self.attrs[attrs_text] = orjson.loads(attrs_text)
        return _build(
            NodeKind,
            op=op,
            attrs=attrs,
            inputs=inputs,
            count=count,
            example=example,
            function=function,
            key=(op, attrs_text, inputs, function is None),
        )  # the cached_property

    def op(self, text: str) -> OpDef:
        found = self.ops.get(text)
        if found is None:
            data = orjson.loads(text)
            found = self.ops[text] = OpDef(
                name=data["name"],
                inputs=tuple(ArgDef(**a) for a in data["inputs"]),
                outputs=tuple(ArgDef(**a) for a in data["outputs"]),
                attrs=tuple(AttrDef(**a) for a in data["attrs"]),
                deprecation_version=data["deprecation_version"],
                deprecation_explanation=data["deprecation_explanation"],
            )
        return found

    def graph(self, data: dict[str, Any]) -> Graph:
        v = data["versions"]
        return Graph(
            versions=VersionDef(v["producer"], v["min_consumer"], tuple(v["bad_consumers"]))
            if v
            else None,
            node_count=data["node_count"],
            kinds=tuple(self.kind(row) for row in data["kinds"]),
            edges=tuple(
                _build(Edge, src=e[0], output=e[1], dst=e[2], input=e[3], output_arg=e[4])
                if len(e) > 4
                else _build(Edge, src=e[0], output=e[1], dst=e[2], input=e[3])
                for e in data["edges"]
            ),
            functions=tuple(data["functions"]),
            library_node_count=data["library_node_count"],
        )

    def artifact(self, data: dict[str, Any]) -> Artifact:
        ckpt = data.get("checkpoint")
        return Artifact(
            path=data["path"],
            format=data["format"],
            size=data["size"],
            sha256=data["sha256"],
            meta_graphs=tuple(
                MetaGraph(
                    tags=tuple(m["tags"]),
                    graph=self.graph(m["graph"]),
                    tensorflow_version=m["tensorflow_version"],
                    tensorflow_git_version=m["tensorflow_git_version"],
                    stripped_default_attrs=m["stripped_default_attrs"],
                    producer_ops={k: self.op(t) for k, t in m["producer_ops"].items()},
                    signatures=tuple(m["signatures"]),
                    has_object_graph=m["has_object_graph"],
                )
                for m in data["meta_graphs"]
            ),
            graph=self.graph(data["graph"]) if data.get("graph") else None,
            checkpoint=artifact_from_json({**_EMPTY, "checkpoint": ckpt}).checkpoint
            if ckpt
            else None,
            saved_model_schema_version=data.get("saved_model_schema_version"),
            notes=tuple(data.get("notes", ())),
        )


_EMPTY = {"path": "", "format": "", "size": 0, "sha256": "", "meta_graphs": []}


def encode_model(model: IndexedModel) -> bytes:
    data = {
        "bucket": model.bucket,
        "key": model.key,
        "version_id": model.version_id,
        "report_bucket": model.report_bucket,
        "report_key": model.report_key,
        "status": model.status,
        "artifacts": [_pack_artifact(a) for a in model.artifacts],
        "verdicts": model.verdicts,
        "consumer_digests": model.consumer_digests,
        "compatible_releases": list(model.compatible_releases),
        "owners": list(model.owners),
    }
    return zlib.compress(orjson.dumps(data), 6)


def decode_model(blob: bytes, interner: _Interner | None = None) -> IndexedModel:
    interner = interner or _Interner()
    data = orjson.loads(zlib.decompress(blob))
    return IndexedModel(
        bucket=data["bucket"],
        key=data["key"],
        version_id=data["version_id"],
        report_bucket=data["report_bucket"],
        report_key=data["report_key"],
        status=data["status"],
        artifacts=tuple(interner.artifact(a) for a in data["artifacts"]),
        verdicts=data["verdicts"],
        consumer_digests=data["consumer_digests"],
        compatible_releases=tuple(data["compatible_releases"]),
        owners=tuple(data["owners"]),
    )


class ReportSource(Protocol):
    """Where stored reports are listed and read (the object store)."""

    def list_keys(self, bucket: str, prefix: str) -> list[str]: ...

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None: ...

    def current_version(self, bucket: str, key: str) -> str | bool | None:
        """The object's current version id; None if unversioned; False if it is gone."""
        ...


class ModelIndex:
    """The index over Redis (cache) and the stored reports (truth)."""

    def __init__(
        self, redis: Any, reports: ReportSource, buckets: Sequence[str], prefix: str
    ) -> None:
        self.redis = redis
        self._reports = reports
        self._buckets = list(dict.fromkeys(buckets))
        self._prefix = prefix

    @staticmethod
    def field(bucket: str, key: str) -> str:
        return f"{bucket}/{key}"

    def put(self, model: IndexedModel) -> None:
        self.redis.hset(HASH, self.field(model.bucket, model.key), encode_model(model))

    def remove(self, bucket: str, key: str) -> None:
        self.redis.hdel(HASH, self.field(bucket, key))

    def count(self) -> int:
        self.ensure_built()
        return int(self.redis.hlen(HASH))

    def models(self) -> Iterator[IndexedModel]:
        self.ensure_built()
        interner = _Interner()
        for _, blob in self.redis.hscan_iter(HASH, count=1000):
            try:
                yield decode_model(blob, interner)
            except (ValueError, KeyError, TypeError, zlib.error):
                log.warning("index.entry_unreadable")

    def ensure_built(self) -> None:
        if not self.redis.exists(BUILT):
            self.rebuild()

    def rebuild(self) -> int:
        """Re-read every stored report; keep, per object, the current version's.

        Runs when Redis has lost the index (`ensure_built`) or on request; it
        adds what is missing and never drops an entry a worker just put."""
        latest: dict[tuple[str, str], IndexedModel] = {}
        for bucket in self._buckets:
            for report_key in self._reports.list_keys(bucket, self._prefix):
                if not report_key.endswith(".json"):
                    continue
                document = self._reports.get_json(bucket, report_key)
                model = model_from_report(document or {}, bucket, report_key)
                if model is None:
                    continue
                current = self._reports.current_version(model.bucket, model.key)
                if current is False:
                    continue  # the object is gone
                if model.version_id is not None and current != model.version_id:
                    continue  # an overwritten version
                latest[(model.bucket, model.key)] = model
        # Workers may put entries while this runs: theirs are at least as new as any
        # report read here, so rebuilt entries only fill what is missing.
        pipe = self.redis.pipeline()
        for model in latest.values():
            pipe.hsetnx(HASH, self.field(model.bucket, model.key), encode_model(model))
        pipe.set(BUILT, "1")
        pipe.execute()
        log.info("index.rebuilt", models=len(latest), buckets=self._buckets)
        return len(latest)
