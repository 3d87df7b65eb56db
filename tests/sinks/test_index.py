"""The model index: its storage form round-trips every real artifact exactly, and a
lost cache is rebuilt from the stored reports, current versions only."""

from __future__ import annotations

import dataclasses
import json
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any

import cramjam
import orjson
import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from tests.redis_server import REDIS_HOST, REDIS_PORT, redis_url
from tests.truth import FIXTURE_SETS
from worker.errors import ConfigError, TransientError
from worker.formats.read import read_path
from worker.model.artifact import Artifact, Graph, MetaGraph, VersionDef, artifact_from_json
from worker.model.index import IndexedModel
from worker.model.shapes import ShapedNode
from worker.sinks.index import BUILT, HASH, PARTS, ModelIndex
from worker.sinks.index_codec import Decoder, Encoder

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
    encoder = Encoder()
    blob = encoder.entry(model)
    decoded = Decoder(dict(encoder.parts), lambda ref: None).entry(blob)
    assert decoded == model
    for a, b in zip(decoded.artifacts, model.artifacts, strict=True):
        for ga, gb in zip(a.graphs(), b.graphs(), strict=True):
            assert [k.key for k in ga.kinds] == [k.key for k in gb.kinds]
    # a decoded entry re-encoded (a fleet change's re-check) is the same entry, parts too,
    # with its OpDefs' texts taken from the decoder instead of made again
    again = Encoder()
    assert again.entry(decoded) == blob
    assert again.parts.items() <= encoder.parts.items()
    # artifacts as the report's metadata (asdict's value, made faster) read back the same
    assert [artifact_from_json(a.to_json()) for a in model.artifacts] == list(artifacts)
    assert [a.to_json() for a in artifacts] == [dataclasses.asdict(a) for a in artifacts]


def test_recorded_output_shapes_round_trip() -> None:
    """The `_output_shapes` a re-check needs (worker.compat.output_shapes) are stored too."""
    node = ShapedNode("FusedBatchNormGrad", {"is_training": {"b": False}}, ((None, 4), (4,)),
                      ((None, 4), (4,), (0,)), "grad", 3)  # fmt: skip
    graph = Graph(VersionDef(26), 5, (), (), shaped_nodes=(node,))
    artifact = Artifact("m.meta", "metagraph", 1, "", meta_graphs=(MetaGraph(("serve",), graph),))
    model = IndexedModel("b", "k", "v1", "r", "rk", "ok", (artifact,), {}, {}, (), ())
    encoder = Encoder()
    blob = encoder.entry(model)
    decoded = Decoder(dict(encoder.parts), lambda ref: None).entry(blob)
    assert decoded.artifacts[0].meta_graphs[0].graph.shaped_nodes == (node,)


class FakeRedis:
    """Just the commands the index uses, for a test that needs no server."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def hset(
        self, name: str, key: str | None = None, value: bytes | None = None, mapping: Any = None
    ) -> None:
        target = self.data.setdefault(name, {})
        if key is not None:
            target[key] = value
        target.update(mapping or {})

    def hget(self, name: str, key: str) -> bytes | None:
        return self.data.get(name, {}).get(key)  # type: ignore[no-any-return]

    def hgetall(self, name: str) -> dict[str, bytes]:
        return dict(self.data.get(name, {}))

    def hdel(self, name: str, key: str) -> None:
        self.data.get(name, {}).pop(key, None)

    def hlen(self, name: str) -> int:
        return len(self.data.get(name, {}))

    def hscan(self, name: str, cursor: int = 0, count: int = 0) -> tuple[int, dict[str, bytes]]:
        return 0, dict(self.data.get(name, {}))

    def exists(self, name: str) -> bool:
        return name in self.data

    def set(self, name: str, value: str, nx: bool = False, ex: int | None = None) -> bool:
        if nx and name in self.data:
            return False
        self.data[name] = value
        return True

    def eval(self, script: str, numkeys: int, key: str, token: str, *args: Any) -> int:
        """The rebuild lock's compare-and-delete and compare-and-expire."""
        if self.data.get(key) != token:
            return 0
        if "'del'" in script:
            del self.data[key]
        return 1

    def delete(self, *names: str) -> None:
        for name in names:
            self.data.pop(name, None)

    def hsetnx(self, name: str, key: str, value: bytes) -> bool:
        target = self.data.setdefault(name, {})
        if key in target:
            return False
        target[key] = value
        return True

    def hmget(self, name: str, keys: list[str]) -> list[bytes | None]:
        return [self.data.get(name, {}).get(k) for k in keys]

    def zadd(self, name: str, mapping: dict[str, float]) -> None:
        self.data.setdefault(name, {}).update(mapping)

    def append(self, name: str, value: bytes) -> None:
        self.data[name] = self.data.get(name, b"") + value

    def zrem(self, name: str, *members: str) -> None:
        for member in members:
            self.data.get(name, {}).pop(member, None)

    def pipeline(self, transaction: bool = True) -> FakePipeline:
        return FakePipeline(self)

    def register_script(self, source: str) -> Any:
        """The index's write scripts (`worker.sinks.index_write`), run as the commands
        they replace: `matrix.write_rows` or `remove_rows` over the rows stored now."""
        from worker.sinks import index_write, matrix

        def put(keys: list[str], args: list[Any]) -> int:
            entries, parts = keys[0], keys[1]
            at = 5
            for _ in range(args[4]):
                self.hset(parts, args[at], args[at + 1])
                at += 2
            written = 0
            while at < len(args):
                field, entry, blob = args[at : at + 3]
                self.hset(entries, field, entry)
                row = matrix.decode_row(blob)
                matrix.write_rows(self, [row], matrix.rows_before(self, [row]))
                written += 1
                at += 5 + args[at + 4]
            return written

        def remove(keys: list[str], args: list[Any]) -> int:
            field = args[3]
            self.hdel(keys[0], field)
            row = matrix.Matrix(self).row(field)
            if row is not None:
                matrix.remove_rows(self, [row])
            return int(row is not None)

        return {index_write.PUT: put, index_write.REMOVE: remove}[source]


class FakePipeline:
    """Runs each command at once and answers every result at `execute`, as Redis does."""

    def __init__(self, redis: FakeRedis) -> None:
        self.redis, self.results = redis, []  # type: ignore[var-annotated]

    def __getattr__(self, name: str) -> Any:
        def command(*args: Any, **kwargs: Any) -> FakePipeline:
            self.results.append(getattr(self.redis, name)(*args, **kwargs))
            return self

        return command

    def execute(self) -> list[Any]:
        return self.results


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


def test_a_reader_that_may_not_build_never_writes_a_lost_index() -> None:
    documents = {"r/u/latest.json": report("u", None, "at-risk")}
    redis = FakeRedis()
    index = ModelIndex(redis, Reports(documents, {"u": None}), ["m"], "r/", builds=False)
    with pytest.raises(TransientError, match="tfcompat index rebuild"):
        list(index.models())
    assert redis.data == {}  # the receiver's page read nothing into Redis


def test_one_rebuild_at_a_time() -> None:
    from worker.sinks.index import REBUILD_LOCK

    redis = FakeRedis()
    index = ModelIndex(redis, Reports({}, {}), ["m"], "r/")
    redis.set(REBUILD_LOCK, "another-workers-token")
    with pytest.raises(TransientError, match="being rebuilt by another worker"):
        index.rebuild_locked()
    del redis.data[REBUILD_LOCK]
    assert index.rebuild_locked() == 0 and REBUILD_LOCK not in redis.data  # released


def test_a_rebuild_streams_its_reports_a_batch_at_a_time() -> None:
    from worker.sinks import index as module

    documents = {f"r/k{n}/latest.json": report(f"k{n}", None, "compatible") for n in range(5)}
    redis = FakeRedis()
    index = ModelIndex(redis, Reports(documents, {f"k{n}": None for n in range(5)}), ["m"], "r/")
    beats: list[int] = []
    batch, module.BATCH = module.BATCH, 2
    try:
        written = index.rebuild(lambda: beats.append(len(redis.data[HASH])))
    finally:
        module.BATCH = batch
    assert written == 5 and beats == [2, 4]  # written as it reads, never all held at once


def _model(key: str, artifacts: tuple[Any, ...] = ()) -> IndexedModel:
    return IndexedModel("m", key, None, "m", f"r/{key}.json", "compatible", artifacts, {}, {})


def test_models_read_back_share_one_object_per_distinct_part() -> None:
    (artifact,) = read_path(str(PATHS[0]))
    index = ModelIndex(FakeRedis(), Reports({}, {}), ["m"], "r/")
    index.rebuild()
    for n in range(3):
        index.put(_model(f"k{n}", (replace(artifact, path=f"p{n}"),)))
    graphs = [m.artifacts[0].graphs()[0] for m in index.models()]
    assert len(graphs) == 3 and graphs[0] == graphs[1] == graphs[2]
    assert graphs[0].edges is graphs[1].edges is graphs[2].edges
    ops = [m.artifacts[0].meta_graphs[0].producer_ops for m in index.models()]
    for name, op in ops[0].items():
        assert ops[1][name] is op


def test_an_entry_builds_its_artifacts_only_when_asked_and_pickles_as_a_plain_entry() -> None:
    (artifact,) = read_path(str(PATHS[0]))
    model = _model("k", (artifact,))
    encoder = Encoder()
    blob = encoder.entry(model)
    decoded = Decoder(dict(encoder.parts), lambda ref: None).entry(blob)
    assert "artifacts" not in vars(decoded) and decoded.verdicts == model.verdicts
    assert decoded.artifacts == (artifact,) and "artifacts" in vars(decoded)
    again = pickle.loads(pickle.dumps(decoded))
    assert type(again) is IndexedModel and again == model == decoded


def test_a_part_written_after_the_pass_began_is_fetched() -> None:
    (artifact,) = read_path(str(PATHS[0]))
    encoder = Encoder()
    blob = encoder.entry(_model("k", (artifact,)))
    fetched: list[str] = []

    def fetch(ref: str) -> bytes | None:
        fetched.append(ref)
        return encoder.parts.get(ref)

    assert Decoder({}, fetch).entry(blob).artifacts == (artifact,)
    assert sorted(fetched) == sorted(encoder.parts)


def test_an_entry_whose_parts_are_gone_says_so_when_its_artifacts_are_needed() -> None:
    (artifact,) = read_path(str(PATHS[0]))
    client = FakeRedis()
    index = ModelIndex(client, Reports({}, {}), ["m"], "r/")
    index.rebuild()
    index.put(replace(_model("broken", (artifact,)), verdicts={"c": "compatible"}))
    client.delete(PARTS)
    index.put(_model("empty"))
    models = {m.key: m for m in index.models()}
    assert set(models) == {"broken", "empty"}
    assert models["broken"].verdicts == {"c": "compatible"}  # the header needs no part
    with pytest.raises(TransientError, match="index rebuild"):
        _ = models["broken"].artifacts
    with pytest.raises(TransientError):  # asked again: the same answer, not another error
        _ = models["broken"].artifacts


def test_an_unreadable_entry_is_skipped_not_fatal() -> None:
    client = FakeRedis()
    index = ModelIndex(client, Reports({}, {}), ["m"], "r/")
    index.rebuild()
    index.put(_model("fine"))
    client.hset(HASH, "m/garbled", b"\xf0not lz4 at all")
    client.hset(HASH, "m/cut", Encoder().entry(_model("cut"))[:9])
    assert [m.key for m in index.models()] == ["fine"]


def test_an_entry_written_before_the_framing_is_still_read() -> None:
    (artifact,) = read_path(str(PATHS[0]))
    model = _model("old", (artifact,))
    encoder = Encoder()
    document = {
        "bucket": model.bucket, "key": model.key, "version_id": None,
        "report_bucket": model.report_bucket, "report_key": model.report_key,
        "status": model.status, "artifacts": [encoder.artifact(artifact)], "verdicts": {},
        "consumer_digests": {}, "compatible_releases": [], "owners": [],
    }  # fmt: skip
    blob = bytes(cramjam.lz4.compress_block(orjson.dumps(document)))
    assert blob[:1] != b"\x00"
    assert Decoder(dict(encoder.parts), lambda ref: None).entry(blob) == model


@pytest.fixture
def real_redis() -> Any:
    client = redis.Redis.from_url(redis_url(13))
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.skip(f"no Redis at {REDIS_HOST}:{REDIS_PORT}")
    client.flushdb()
    yield client
    client.flushdb()


@pytest.mark.services
def test_a_redis_that_does_not_answer_is_a_transient_error() -> None:
    client = redis.Redis(host=REDIS_HOST, port=1, socket_connect_timeout=1)  # nothing listens
    index = ModelIndex(client, Reports({}, {}), ["m"], "r/")
    with pytest.raises(TransientError, match="Redis unavailable"):
        index.count()
    with pytest.raises(TransientError):
        index.put(_model("k"))
    with pytest.raises(TransientError):
        list(index.models())


@pytest.mark.services
def test_a_key_of_ours_holding_another_type_is_a_config_error(real_redis: Any) -> None:
    real_redis.set(BUILT, "1")
    real_redis.set(HASH, "not a hash")
    index = ModelIndex(real_redis, Reports({}, {}), ["m"], "r/")
    with pytest.raises(ConfigError, match="another type"):
        index.count()


@pytest.mark.services
def test_entries_round_trip_through_a_real_redis(real_redis: Any) -> None:
    artifacts = tuple(read_path(str(PATHS[0])))
    index = ModelIndex(real_redis, Reports({}, {}), ["m"], "r/")
    index.rebuild()
    models = [_model(f"k{n}", artifacts) for n in range(2500)]  # more than one HSCAN batch
    for model in models:
        index.put(model)
    assert sorted(index.models(), key=lambda m: m.key) == sorted(models, key=lambda m: m.key)
    assert index.count() == 2500


@pytest.mark.services
def test_one_worker_claims_a_fleet_change_and_the_applied_fleet_is_remembered(
    real_redis: Any,
) -> None:
    index = ModelIndex(real_redis, Reports({}, {}), ["m"], "r/")
    assert index.applied_fleet() is None
    assert index.claim_fleet_change("d1")
    assert not index.claim_fleet_change("d1")
    assert index.claim_fleet_change("d2")
    index.record_applied_fleet("d1")
    assert index.applied_fleet() == "d1"


@pytest.mark.services
def test_a_rebuild_drops_the_index_of_the_previous_format(real_redis: Any) -> None:
    real_redis.hset("tfcompat:index:v1", "m/a", b"old")
    real_redis.set("tfcompat:index:v1:built", "1")
    ModelIndex(real_redis, Reports({}, {}), ["m"], "r/").rebuild()
    assert not real_redis.exists("tfcompat:index:v1", "tfcompat:index:v1:built")


KERAS_MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "models"
KERAS = sorted(KERAS_MODELS.glob("tf2.1[58]/*"))


@pytest.mark.parametrize("path", KERAS, ids=[f"{p.parent.name}/{p.name}" for p in KERAS])
def test_keras_entries_round_trip_exactly(path: Any) -> None:
    artifacts = tuple(read_path(str(path)))
    assert artifacts[0].keras is not None
    model = IndexedModel("b", "k", None, "r", "rk", "at-risk", artifacts, {}, {}, (), ())
    encoder = Encoder()
    blob = encoder.entry(model)
    decoded = Decoder(dict(encoder.parts), lambda ref: None).entry(blob)
    assert decoded == model


@pytest.mark.services
def test_a_share_of_the_index_reads_just_those_entries(real_redis: Any) -> None:
    artifacts = tuple(read_path(str(PATHS[0])))
    index = ModelIndex(real_redis, Reports({}, {}), ["m"], "r/")
    index.rebuild()
    index.put_many(_model(f"k{n}", artifacts) for n in range(30))
    fields = index.fields()
    assert sorted(fields) == sorted(f"m/k{n}".encode() for n in range(30))
    index.remove("m", "k3")  # gone between listing and reading: left out
    share = [b"m/k3", b"m/k4", b"m/k29"]
    assert [m.key for m in index.models_of(share, index.decoder())] == ["k4", "k29"]


FRAMED_BLOBS = st.builds(
    lambda size, head, rest: b"\x00" + size.to_bytes(4, "little") + head + rest,
    st.integers(0, 300),
    st.binary(max_size=120),
    st.binary(max_size=60),
)
GOOD_HEAD = bytes(
    cramjam.lz4.compress_block(
        orjson.dumps(
            {"bucket": "m", "key": "k", "version_id": None, "report_bucket": "r",
             "report_key": "rk", "status": "compatible", "verdicts": {},
             "consumer_digests": {}, "compatible_releases": [], "owners": []}
        )
    )
)  # fmt: skip


@given(st.binary(max_size=200) | FRAMED_BLOBS | st.binary(max_size=80).map(
    lambda rest: b"\x00" + len(GOOD_HEAD).to_bytes(4, "little") + GOOD_HEAD + rest
))  # fmt: skip
def test_any_bytes_are_an_entry_or_refused_and_its_artifacts_read_or_a_transient_error(
    blob: bytes,
) -> None:
    try:
        model = Decoder({}, lambda ref: None).entry(blob)
    except (ValueError, KeyError, TypeError, cramjam.DecompressionError):
        return  # what `models` logs and skips
    try:
        assert isinstance(model.artifacts, tuple)
    except TransientError as exc:
        assert "index rebuild" in str(exc)


# A SavedModel is one model: its variables index's event folds into its graph's entry.
SAVED_MODEL = next(p for p in PATHS if (p / "variables" / "variables.index").exists())


def _saved_model_entry(key: str) -> IndexedModel:
    return _model(key, tuple(read_path(str(SAVED_MODEL))))


def test_a_savedmodel_s_variables_index_is_not_a_model_of_its_own(real_redis: Any) -> None:
    index = ModelIndex(real_redis, Reports({}, {}), ["m"], "r/")
    index.rebuild()
    index.put(_saved_model_entry("s/1/saved_model.pb"))
    index.put(_saved_model_entry("s/1/variables/variables.index"))
    assert [m.key for m in index.models()] == ["s/1/saved_model.pb"]
    assert index.count() == 1


def test_a_variables_index_without_a_savedmodel_keeps_its_entry(real_redis: Any) -> None:
    index = ModelIndex(real_redis, Reports({}, {}), ["m"], "r/")
    index.rebuild()
    index.put(_model("x/variables/variables.index"))  # invalid: nothing read around it
    assert [m.key for m in index.models()] == ["x/variables/variables.index"]


def test_a_member_indexed_before_it_was_folded_leaves_with_its_row(real_redis: Any) -> None:
    index = ModelIndex(real_redis, Reports({}, {}), ["m"], "r/")
    index.rebuild()
    member = _saved_model_entry("s/1/variables/variables.index")
    encoder = Encoder()
    real_redis.hset(HASH, "m/s/1/variables/variables.index", encoder.entry(member))
    real_redis.hset(PARTS, mapping=encoder.parts)
    index.put(member)  # its next event
    assert index.count() == 0


def test_a_rebuild_keeps_one_entry_per_savedmodel(real_redis: Any) -> None:
    (artifact,) = read_path(str(SAVED_MODEL))
    documents = {}
    for key in ("s/1/saved_model.pb", "s/1/variables/variables.index"):
        document = report(key, None, "compatible")
        document["artifacts"] = [{"metadata": artifact.to_json()}]
        documents[f"r/{key}/latest.json"] = document
    current = {"s/1/saved_model.pb": None, "s/1/variables/variables.index": None}
    index = ModelIndex(real_redis, Reports(documents, current), ["m"], "r/")
    assert index.rebuild() == 1
    assert [m.key for m in index.models()] == ["s/1/saved_model.pb"]


def test_a_variables_index_checked_later_gives_its_savedmodel_the_whole_folder_s_verdict(
    real_redis: Any,
) -> None:
    index = ModelIndex(real_redis, Reports({}, {}), ["m"], "r/")
    index.rebuild()
    graph = replace(_saved_model_entry("s/1/saved_model.pb"), version_id="g1")
    index.put(graph)  # checked before its variables were uploaded
    member = replace(
        _saved_model_entry("s/1/variables/variables.index"),
        version_id="m1",
        status="incompatible",
        report_key="r/s/1/variables/variables.index/m1.json",
    )
    index.put(member)
    (entry,) = index.models()
    assert (entry.key, entry.version_id) == ("s/1/saved_model.pb", "g1")
    assert entry.status == "incompatible"
    assert entry.report_key == "r/s/1/variables/variables.index/m1.json"
