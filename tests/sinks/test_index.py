"""The model index: its storage form round-trips every real artifact exactly, and a
lost cache is rebuilt from the stored reports, current versions only."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.truth import FIXTURE_SETS
from worker.formats.read import read_path
from worker.model.index import IndexedModel
from worker.sinks.index import BUILT, HASH, ModelIndex, decode_model, encode_model

PATHS = (
    sorted(p.parent for s in FIXTURE_SETS for p in (s / "artifacts").glob("*/*/saved_model.pb"))[
        :60
    ]
    + sorted(
        p
        for s in FIXTURE_SETS
        for p in (s / "artifacts").glob("*/*/*.pb")
        if p.name != "saved_model.pb" and p.name != "fingerprint.pb"
    )[:20]
)


@pytest.mark.parametrize("path", PATHS, ids=[f"{p.parent.name}/{p.name}" for p in PATHS])
def test_index_entries_round_trip_exactly(path: Any) -> None:
    artifacts = tuple(read_path(str(path)))
    model = IndexedModel(
        "b",
        "k",
        "v1",
        "r",
        "rk",
        "at-risk",
        artifacts,
        {"c": "loads"},
        {"c": "d"},
        ("2.12.0-2.21.x",),
        ("team",),
    )
    decoded = decode_model(encode_model(model))
    assert decoded == model
    for a, b in zip(decoded.artifacts, model.artifacts, strict=True):
        for ga, gb in zip(a.graphs(), b.graphs(), strict=True):
            assert [k.key for k in ga.kinds] == [k.key for k in gb.kinds]


class FakeRedis:
    """Just the hash commands the index uses, for a test that needs no server."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def hset(self, name: str, key: str, value: bytes) -> None:
        self.data.setdefault(name, {})[key] = value

    def hdel(self, name: str, key: str) -> None:
        self.data.get(name, {}).pop(key, None)

    def hlen(self, name: str) -> int:
        return len(self.data.get(name, {}))

    def hkeys(self, name: str) -> list[str]:
        return list(self.data.get(name, {}))

    def hmget(self, name: str, keys: list[str]) -> list[bytes | None]:
        return [self.data.get(name, {}).get(k) for k in keys]

    def hscan_iter(self, name: str, count: int = 0) -> Any:
        return iter(list(self.data.get(name, {}).items()))

    def exists(self, name: str) -> bool:
        return name in self.data

    def set(self, name: str, value: str) -> None:
        self.data[name] = value

    def delete(self, name: str) -> None:
        self.data.pop(name, None)

    def hsetnx(self, name: str, key: str, value: bytes) -> None:
        self.data.setdefault(name, {}).setdefault(key, value)

    def pipeline(self) -> FakeRedis:
        return self

    def execute(self) -> None:
        pass


class Reports:
    def __init__(self, documents: dict[str, dict[str, Any]], current: dict[str, Any]) -> None:
        self.documents, self.current = documents, current

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        return sorted(k for k in self.documents if k.startswith(prefix))

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None:
        return self.documents.get(key)

    def current_version(self, bucket: str, key: str) -> Any:
        return self.current.get(key, False)


def report(key: str, version: str | None, status: str) -> dict[str, Any]:
    return {
        "object": {"bucket": "m", "key": key, "version_id": version},
        "status": status,
        "artifacts": [],
        "fleet": {"verdicts": {"c": "loads"}, "consumer_digests": {}},
    }


def test_a_lost_cache_is_rebuilt_from_reports_keeping_current_versions_only() -> None:
    documents = {
        "r/a/v1.json": report("a", "v1", "compatible"),  # overwritten by v2
        "r/a/v2.json": report("a", "v2", "incompatible"),
        "r/gone/latest.json": report("gone", None, "compatible"),  # object deleted
        "r/u/latest.json": report("u", None, "at-risk"),  # unversioned
        "r/junk.json": {"not": "a report"},
    }
    redis = FakeRedis()
    index = ModelIndex(redis, Reports(documents, {"a": "v2", "u": None}), ["m"], "r/")
    assert index.count() == 2  # nothing cached yet: rebuilt on first use
    models = {m.key: m for m in index.models()}
    assert models["a"].version_id == "v2" and models["a"].status == "incompatible"
    assert models["u"].status == "at-risk"
    assert BUILT in redis.data and len(redis.data[HASH]) == 2
    index.remove("m", "u")
    assert [m.key for m in index.models()] == ["a"]


def test_a_rebuild_never_overwrites_an_entry_a_worker_put_meanwhile() -> None:
    documents = {"r/a/latest.json": report("a", None, "compatible")}
    redis = FakeRedis()
    index = ModelIndex(redis, Reports(documents, {"a": None}), ["m"], "r/")
    newer = IndexedModel("m", "a", None, "m", "r/a/latest.json", "incompatible", (), {}, {})
    index.put(newer)  # a worker recorded a newer result before the rebuild wrote
    index.rebuild()
    assert [m.status for m in index.models()] == ["incompatible"]
    json.dumps([m.verdicts for m in index.models()])
