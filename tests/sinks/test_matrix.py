"""The fleet matrix's rows: filed in sets as the index writes entries, paged in order
from a cursor without reading the whole index."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
import redis

from tests.redis_server import redis_url
from tests.sinks.documents import NEW_OP, checked
from worker.model.index import IndexedModel
from worker.sinks import matrix
from worker.sinks.index import ModelIndex, model_from_report
from worker.sinks.matrix import Cell, Matrix, Query, Row, cells_of

DB = 9


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(redis_url(DB))
    r.flushdb()
    yield r
    r.flushdb()


def row(key: str, status: str = "compatible", **cells: str) -> Row:
    return Row(
        "m",
        key,
        None,
        "m",
        f"r/{key}.json",
        status,
        {name.replace("_", "-"): Cell(state) for name, state in cells.items()},
    )


def put(client: redis.Redis, rows: list[Row]) -> None:
    before = matrix.rows_before(client, rows)
    pipe = client.pipeline(transaction=False)
    matrix.write_rows(pipe, rows, before)
    pipe.execute()


def keys(page: matrix.Page) -> list[str]:
    return [r.key for r in page.rows]


# --- cells from a report --------------------------------------------------------------------


def test_a_cell_that_loads_and_fails_requests_is_told_apart_from_one_that_cannot_load() -> None:
    document = {
        "artifacts": [
            {
                "consumers": [
                    {
                        "name": "a",
                        "loads": True,
                        "serves": False,
                        "findings": [
                            {"severity": "info", "code": "version.forward-window", "message": "i"},
                            {"severity": "error", "code": "resource.uninitialized", "message": "r"},
                        ],
                    },
                    {"name": "b", "loads": False, "serves": False, "findings": []},
                    {"name": "c", "loads": True, "serves": True, "findings": []},
                    {"name": "d", "loads": None, "serves": None, "findings": []},
                ]
            }
        ]
    }
    assert cells_of(document) == {
        "a": Cell("requests-fail", "resource.uninitialized", "r"),
        "b": Cell("fails"),
        "c": Cell("serves"),
        "d": Cell("unknown"),
    }


def test_a_real_report_gives_each_fleet_consumer_a_cell_with_the_finding_behind_it() -> None:
    _, outcome, _ = checked(NEW_OP)
    assert outcome.document is not None
    cells = cells_of(outcome.document)
    assert cells["serving-canary"].state == "serves"
    prod = cells["serving-prod"]
    assert prod.state == "fails" and prod.code == "op.not-registered"
    assert "DecodeWebP" in (prod.message or "")


# --- filing and paging -----------------------------------------------------------------------


@pytest.mark.services
def test_a_row_written_again_leaves_the_sets_of_its_old_status_and_cells(
    client: redis.Redis,
) -> None:
    put(client, [row("a", "incompatible", edge="fails", prod="fails")])
    put(client, [row("a", "compatible", edge="serves")])  # prod no longer judges it
    m = Matrix(client)
    assert client.zcard(f"{matrix.CELL}prod:fails") == 0
    assert keys(m.page(Query(status="incompatible"))) == []
    assert keys(m.page(Query(consumer="edge", cell="fails"))) == []
    assert keys(m.page(Query(consumer="edge", cell="serves"))) == ["a"]  # from `keys`
    assert client.zcard(matrix.STATUS + "incompatible") == 0
    assert client.zcard(f"{matrix.CELL}edge:fails") == 0
    assert not client.exists(f"{matrix.CELL}edge:serves")  # serving cells are not filed


@pytest.mark.services
def test_filters_combine_and_each_is_checked_against_the_row(client: redis.Redis) -> None:
    put(
        client,
        [
            row("ranking/1", "incompatible", edge="fails", prod="serves"),
            row("ranking/2", "at-risk", edge="at-risk", prod="serves"),
            row("vision/1", "incompatible", edge="serves", prod="requests-fail"),
            row("vision/2", "compatible", edge="serves", prod="serves"),
        ],
    )
    m = Matrix(client)
    assert keys(m.page(Query(cell="fails"))) == ["ranking/1"]  # any consumer's cell
    assert keys(m.page(Query(cell="requests-fail", consumer="prod"))) == ["vision/1"]
    assert keys(m.page(Query(status="incompatible", prefix="m/vision/"))) == ["vision/1"]
    assert keys(m.page(Query(search="VISION/2"))) == ["vision/2"]
    assert keys(m.page(Query(sort="-key", limit=2))) == ["vision/2", "vision/1"]
    by_status = m.page(Query(sort="status"))
    assert [r.status for r in by_status.rows] == [
        "incompatible",
        "incompatible",
        "at-risk",
        "compatible",
    ]
    assert by_status.total == 4
    assert keys(m.page(Query(owner="ranking"), lambda r: r.key.split("/")[0])) == [
        "ranking/1",
        "ranking/2",
    ]


@pytest.mark.services
def test_pages_follow_each_other_from_the_cursor_with_every_row_once(
    client: redis.Redis,
) -> None:
    put(client, [row(f"k/{i:05d}", "incompatible" if i % 3 else "compatible") for i in range(1234)])
    m = Matrix(client)
    seen: list[str] = []
    after = None
    while True:
        page = m.page(Query(status="incompatible", limit=100, after=after))
        seen += keys(page)
        if page.next is None:
            break
        after = page.next
    assert seen == [f"k/{i:05d}" for i in range(1234) if i % 3]
    assert m.page(Query(status="incompatible")).total == len(seen)


@pytest.mark.services
def test_a_page_reads_at_most_the_budget_of_rows_and_says_where_to_go_on(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(matrix, "SCAN_BUDGET", 300)
    put(client, [row(f"k/{i:05d}", edge="serves") for i in range(1000)])
    put(client, [row("z/needle", edge="at-risk")])
    m = Matrix(client)
    page = m.page(Query(cell="at-risk"))  # any consumer's cell: every row is read
    assert page.rows == [] and page.stopped_early and page.scanned == 300
    assert page.total is None  # a cell of any consumer cannot be counted from a set
    found = []
    while page.next is not None:
        page = m.page(Query(cell="at-risk", after=page.next))
        found += keys(page)
    assert found == ["z/needle"]


@pytest.mark.services
def test_a_short_search_reads_only_the_rows_whose_location_matches(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # under three characters there is no trigram to look up: the page walks the keys
    monkeypatch.setattr(matrix, "NAME_BUDGET", 600)
    put(client, [row(f"k/{i:05d}") for i in range(1000)] + [row("z/needle")])
    m = Matrix(client)
    page = m.page(Query(search="NE"))
    assert page.rows == [] and page.stopped_early and page.scanned == 0
    assert page.examined == 600
    page = m.page(Query(search="NE", after=page.next))
    assert keys(page) == ["z/needle"] and page.scanned == 1 and page.next is None


@pytest.mark.services
def test_a_rare_search_finds_its_match_in_one_page_reading_only_its_row(
    client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(matrix, "NAME_BUDGET", 600)
    put(client, [row(f"k/{i:05d}") for i in range(1000)] + [row("z/needle")])
    page = Matrix(client).page(Query(search="NEEDLE"))
    assert keys(page) == ["z/needle"] and page.scanned == 1 and page.examined == 1
    assert not page.stopped_early and page.next is None


@pytest.mark.services
def test_a_search_pages_its_matches_in_every_order_from_the_cursor(
    client: redis.Redis,
) -> None:
    put(
        client,
        [row(f"k/{i:04d}", "incompatible" if i % 2 else "compatible") for i in range(300)],
    )
    m = Matrix(client)
    wanted = [f"k/{i:04d}" for i in range(300) if "01" in f"{i:04d}"]

    def every(query: Query) -> list[str]:
        seen: list[str] = []
        while True:
            page = m.page(query)
            seen += keys(page)
            if page.next is None:
                return seen
            query = replace(query, after=page.next)

    assert m.named("01") is None  # too short for a trigram
    assert every(Query(search="/01", limit=3)) == [k for k in wanted if k.startswith("k/01")]
    assert every(Query(search="01", limit=4)) == wanted  # walked
    assert every(Query(search="k/00", limit=7, sort="-key")) == [
        f"k/{i:04d}" for i in reversed(range(100))
    ]
    by_status = every(Query(search="/00", sort="status", limit=5))
    assert by_status == [f"k/{i:04d}" for i in range(1, 100, 2)] + [
        f"k/{i:04d}" for i in range(0, 100, 2)
    ]
    assert every(Query(search="/00", prefix="m/k/005", limit=2)) == [
        f"k/{i:04d}" for i in range(50, 60)
    ]


@pytest.mark.services
def test_a_removed_row_is_no_longer_found_by_a_search(client: redis.Redis) -> None:
    put(client, [row("vision/needle"), row("vision/other")])
    pipe = client.pipeline(transaction=False)
    matrix.remove_rows(pipe, [row("vision/needle")])
    pipe.execute()
    m = Matrix(client)
    assert m.named("needle") == []
    assert keys(m.page(Query(search="needle"))) == []
    put(client, [row("vision/needle")])  # written again: found again, once
    assert keys(m.page(Query(search="needle"))) == ["vision/needle"]


@pytest.mark.services
def test_rows_written_before_the_search_postings_are_walked_until_named(
    client: redis.Redis,
) -> None:
    put(client, [row(f"k/{i:03d}") for i in range(50)] + [row("z/needle")])
    client.delete(matrix.NAMES)  # as an index written before the postings existed
    for gram in client.keys(matrix.GRAM + "*"):
        client.delete(gram)
    m = Matrix(client)
    assert m.named("needle") is None
    assert keys(m.page(Query(search="needle"))) == ["z/needle"]  # walked
    assert m.ensure_names() == 51
    assert m.named("needle") == ["m/z/needle"]
    assert m.ensure_names() == 0  # once


@pytest.mark.services
def test_the_index_writes_and_removes_rows_with_its_entries(client: redis.Redis) -> None:
    event, outcome, store = checked(NEW_OP, prefix="vision/7")
    assert outcome.document is not None
    model = model_from_report(outcome.document, "models", "r.json")
    assert model is not None
    index = ModelIndex(client, store, ["models"], "tfcompat-reports/")
    index.put(model)
    m = Matrix(client)
    found = m.row(f"models/{event.key}")
    assert found is not None and found.cells["serving-prod"].code == "op.not-registered"
    index.remove("models", event.key)
    assert m.row(f"models/{event.key}") is None
    assert client.zcard(matrix.KEYS) == 0
    assert client.zcard(f"{matrix.CELL}serving-prod:fails") == 0


@pytest.mark.services
def test_entries_written_before_rows_existed_get_rows_from_their_verdicts(
    client: redis.Redis,
) -> None:
    index = ModelIndex(client, object(), [], "r/")  # type: ignore[arg-type]
    client.set("tfcompat:index:v2:built", "1")
    index.put(IndexedModel("m", "old", None, "m", "r/old", "incompatible", (), {"e": "fails"}, {}))
    client.delete(matrix.ROWS, matrix.KEYS, matrix.BUILT)  # as an index written before
    assert index.ensure_rows() == 1
    found = Matrix(client).row("m/old")
    assert found is not None and found.cells == {"e": Cell("fails")}
    assert index.ensure_rows() == 0  # once
