"""The model index: every current object version's metadata and verdicts.

The reports in the object store are the durable truth; Redis holds a compact,
compressed copy of each for fast fleet re-evaluation. When Redis has lost it
(a flush, a new Redis), the index is rebuilt from the reports on first use,
so nothing is lost. Keyed by object (bucket/key): a newer version replaces the
older one; deleted objects are removed.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import structlog

from worker.fleet.impact import IndexedModel
from worker.formats.metadata import artifact_from_json

log = structlog.get_logger(__name__)

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


def encode_model(model: IndexedModel) -> bytes:
    data = {
        "bucket": model.bucket,
        "key": model.key,
        "version_id": model.version_id,
        "report_bucket": model.report_bucket,
        "report_key": model.report_key,
        "status": model.status,
        "artifacts": [a.to_json() for a in model.artifacts],
        "verdicts": model.verdicts,
        "consumer_digests": model.consumer_digests,
        "compatible_releases": list(model.compatible_releases),
        "owners": list(model.owners),
    }
    return zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 6)


def decode_model(blob: bytes) -> IndexedModel:
    data = json.loads(zlib.decompress(blob))
    return IndexedModel(
        bucket=data["bucket"],
        key=data["key"],
        version_id=data["version_id"],
        report_bucket=data["report_bucket"],
        report_key=data["report_key"],
        status=data["status"],
        artifacts=tuple(artifact_from_json(a) for a in data["artifacts"]),
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
        for _, blob in self.redis.hscan_iter(HASH, count=500):
            try:
                yield decode_model(blob)
            except (ValueError, KeyError, zlib.error):
                log.warning("index.entry_unreadable")

    def ensure_built(self) -> None:
        if not self.redis.exists(BUILT):
            self.rebuild()

    def rebuild(self) -> int:
        """Re-read every stored report; keep, per object, the current version's."""
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
        pipe = self.redis.pipeline()
        pipe.delete(HASH)
        for model in latest.values():
            pipe.hset(HASH, self.field(model.bucket, model.key), encode_model(model))
        pipe.set(BUILT, "1")
        pipe.execute()
        log.info("index.rebuilt", models=len(latest), buckets=self._buckets)
        return len(latest)
