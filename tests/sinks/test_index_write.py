"""The index's one-round-trip writes leave Redis exactly as the two-round-trip writes
they replaced: the same keys, values and set members, dumped from a real Redis after
the same puts and removals of models checked from real TensorFlow-written fixtures."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.redis_server import redis_url
from tests.sinks.documents import LOCATION, NEW_OP, NONDEFAULT, STRIPPED, UNSTRIPPED, checked
from tests.truth import FIXTURE_SETS
from worker.errors import ConfigError
from worker.model.index import IndexedModel
from worker.sinks import matrix
from worker.sinks.index import HASH, PARTS, ModelIndex, model_from_report
from worker.sinks.index_codec import Encoder

SCRIPTED, PIPELINED = 10, 11  # one database per way of writing
MORE = sorted(p.parent for s in FIXTURE_SETS for p in (s / "artifacts").glob("*/*/saved_model.pb"))[
    :3
]


@pytest.fixture
def clients() -> Iterator[tuple[redis.Redis, redis.Redis]]:
    both = (redis.Redis.from_url(redis_url(SCRIPTED)), redis.Redis.from_url(redis_url(PIPELINED)))
    for client in both:
        client.flushdb()
    yield both
    for client in both:
        client.flushdb()


def pipelined_put(client: redis.Redis, models: list[IndexedModel]) -> None:
    """The write before the scripts: read the rows being replaced, then one pipeline."""
    encoder = Encoder()
    entries = {ModelIndex.field(m.bucket, m.key): encoder.entry(m) for m in models}
    rows = [matrix.row_of(m, {c[0]: matrix.Cell._make(c[1:]) for c in m.cells} or None)
            for m in models]  # fmt: skip
    before = matrix.rows_before(client, rows)
    pipe = client.pipeline(transaction=False)
    if encoder.parts:
        pipe.hset(PARTS, mapping=encoder.parts)
    pipe.hset(HASH, mapping=entries)
    matrix.write_rows(pipe, rows, before)
    pipe.execute()


def pipelined_remove(client: redis.Redis, bucket: str, key: str) -> None:
    name = ModelIndex.field(bucket, key)
    row = matrix.Matrix(client).row(name)
    pipe = client.pipeline(transaction=False)
    pipe.hdel(HASH, name)
    if row is not None:
        matrix.remove_rows(pipe, [row])
    pipe.execute()


def dump(client: redis.Redis) -> dict[bytes, Any]:
    """Every key with its type and whole value."""
    out: dict[bytes, Any] = {}
    for key in client.keys("*"):
        kind = client.type(key)
        if kind == b"hash":
            out[key] = ("hash", client.hgetall(key))
        elif kind == b"zset":
            out[key] = ("zset", client.zrange(key, 0, -1, withscores=True))
        else:
            out[key] = (kind, client.get(key))
    return out


def model(path: Path, prefix: str, version: str | None = "v1") -> IndexedModel:
    event, outcome, _ = checked(path, prefix=prefix, version_id=version)
    assert outcome.document is not None
    found = model_from_report(outcome.document, *LOCATION.of(event))
    assert found is not None
    return found


def both_ways(
    clients: tuple[redis.Redis, redis.Redis],
    scripted: Callable[[ModelIndex], None],
    pipelined: Callable[[redis.Redis], None],
) -> None:
    scripted(ModelIndex(clients[0], object(), [], "r/"))  # type: ignore[arg-type]
    pipelined(clients[1])


def test_puts_and_removals_leave_the_same_redis_as_the_pipelined_writes(
    clients: tuple[redis.Redis, redis.Redis],
) -> None:
    fixtures = [NEW_OP, UNSTRIPPED, NONDEFAULT, STRIPPED]
    models = [model(p, f"team/ü-{n}/m") for n, p in enumerate(fixtures)]
    statuses = {m.status for m in models}
    assert len(statuses) > 1  # the fixtures file rows in several status and cell sets
    assert any(c[1] != matrix.SERVES for m in models for c in m.cells)
    # the same object checked again as another model: its row moves between sets
    moved = replace(model(NONDEFAULT, "team/ü-0/m"), version_id="v2")
    assert moved.status != models[0].status or moved.cells != models[0].cells
    fewer = replace(models[1], cells=models[1].cells[:1], status="unknown")  # consumers gone
    steps: list[tuple[str, Any]] = [
        *[("put", [m]) for m in models],
        ("put", [moved]),
        ("put", [fewer]),
        ("put", [models[2]]),  # unchanged: files nothing again
        ("remove", models[3]),
        ("remove", models[3]),  # gone already
        ("put", [model(p, f"more/{n}") for n, p in enumerate(MORE)]),  # a batch
    ]
    for what, argument in steps:
        if what == "put":
            both_ways(
                clients,
                lambda i, batch=argument: i.put_many(batch),
                lambda c, batch=argument: pipelined_put(c, batch),
            )
        else:
            bucket, key = argument.bucket, argument.key
            both_ways(
                clients,
                lambda i, b=bucket, k=key: i.remove(b, k),
                lambda c, b=bucket, k=key: pipelined_remove(c, b, k),
            )
        assert dump(clients[0]) == dump(clients[1]), f"after {what}"
    assert len(dump(clients[0])) > 30  # entries, parts, rows, sets and postings


def test_a_put_is_one_round_trip(clients: tuple[redis.Redis, redis.Redis]) -> None:
    sent: list[str] = []
    client = clients[0]
    original = client.execute_command

    def counted(*args: Any, **options: Any) -> Any:
        sent.append(str(args[0]))
        return original(*args, **options)

    client.execute_command = counted  # type: ignore[method-assign]
    index = ModelIndex(client, object(), [], "r/")  # type: ignore[arg-type]
    first = model(NEW_OP, "a/b")
    index.put(first)  # each script is loaded once, on its first use
    index.remove(first.bucket, first.key)
    sent.clear()
    index.put(replace(first, status="incompatible"))
    index.remove(first.bucket, first.key)
    assert sent == ["EVALSHA", "EVALSHA"]


def test_a_redis_that_forgot_the_scripts_is_sent_them_again(
    clients: tuple[redis.Redis, redis.Redis],
) -> None:
    index = ModelIndex(clients[0], object(), [], "r/")  # type: ignore[arg-type]
    first = model(NEW_OP, "a/b")
    index.put(first)
    clients[0].script_flush()  # a restarted Redis keeps no scripts
    index.put(replace(first, status="incompatible"))
    assert matrix.Matrix(clients[0]).row(ModelIndex.field(first.bucket, first.key)) is not None
    assert clients[0].zcard(matrix.STATUS + "incompatible") == 1


def test_a_key_of_ours_holding_another_type_stops_a_put_as_a_config_error(
    clients: tuple[redis.Redis, redis.Redis],
) -> None:
    clients[0].set(matrix.ROWS, "not a hash")  # an error inside the script keeps its kind
    index = ModelIndex(clients[0], object(), [], "r/")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="another type"):
        index.put(model(NEW_OP, "a/b"))
