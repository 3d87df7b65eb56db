"""The fleet matrix's rows: one small row per indexed model, and sorted sets to page them.

The fleet page (`worker.ui`) must answer a page of the matrix in a time that does
not grow with the index: it never reads every entry. Beside each index entry the
index writes (in the same script run, `ModelIndex.put_many`) a row of what the
matrix shows, a few hundred bytes of JSON: the model's status and, per
consumer, its cell (a state word, and the code and message of the finding
behind a failure), and adds the entry's field (`bucket/key`) to sorted sets
whose members all score 0, so Redis keeps each in the fields' byte order:
- `keys`: every row (sorted by location; a key prefix is a range of it);
- `status:<status>`: the rows of that status (exact: a row leaves the others);
- `cell:<consumer>:<state>`: the rows whose cell for that consumer is that state,
  for every state but `serves` (most cells serve: a page that wants those walks
  `keys`, where they are most rows, and filing them was most of what writing a row
  cost: bench/ui_matrix.py).
A writer reads the rows it replaces first and moves each only between the sets
that changed. A put does both inside Redis, atomically, in one script run
(`worker.sinks.index_write`); a rebuild reads the rows, then writes them
(`write_rows`), and two writers of one model at once could leave a stale member
behind there (an index written before the scripts may hold one too), so a page
always reads the row to confirm, and counts only from `keys` and `status:` sets.

A page walks one of these sets in order (`Matrix.page`), from a cursor, reads the
rows of a chunk of fields at once (a search is tested on the fields first, and
only the rows of those that match are read), keeps those every filter accepts and
stops when the page is full, or after `SCAN_BUDGET` rows read or `NAME_BUDGET`
fields looked at, whatever the index size; it then says where the next page starts.
Which set it walks is the smallest one that every wanted row is in.

A search (a piece of `bucket/key`, any case) does not walk for a rare match: every
row's field also has a name id (8 bytes of its BLAKE2b) in `names` (id -> field),
appended to one string per trigram of the lower-cased field (`gram:<trigram>`), when
its row is first written. A search of three characters or more reads the postings of
its rarest trigrams (their lengths first, O(1) each), intersects them, and the fields
of the ids left are exactly those that can contain it; they are tested, sorted, and
paged from the same cursor as a walk. Walking for a rare match read up to
`NAME_BUDGET` fields (4.8x the time at 100,000 models as at 10,000, and no match:
bench/ui_matrix.py); the postings of a rare match stay small whatever the index size.
A search whose rarest trigram is common (more than `NAMED_CAP` fields) walks as
before: its matches fill a page quickly. Postings are only appended to (a removed
field's id leaves `names`, so its postings no longer resolve); the search uses them
only while `names` holds as many fields as `keys` (an index written before the
names existed walks until `ensure_names` fills them in: `tfcompat index rebuild`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeVar

import orjson
import redis

from worker.errors import TransientError
from worker.model.index import IndexedModel
from worker.model.verdict import Status, consumer_status_json

ROWS = "tfcompat:ui:v1:rows"
KEYS = "tfcompat:ui:v1:keys"
BUILT = "tfcompat:ui:v1:built"
STATUS = "tfcompat:ui:v1:status:"
CELL = "tfcompat:ui:v1:cell:"
NAMES = "tfcompat:ui:v1:names"
GRAM = "tfcompat:ui:v1:gram:"
CHUNK = 500  # fields per ZRANGEBYLEX / HMGET round trip
SCAN_BUDGET = 5000  # rows a page reads at most before it stops and offers to go on
NAME_BUDGET = 50_000  # fields a page looks at at most (a search tests names, not rows)
NAMED_CAP = 5000  # a search resolves at most this many candidate fields, else it walks
GRAMS_READ = 3  # postings a search intersects (its rarest trigrams)
ID_BYTES = 8

# A cell's states, best first. `requests-fail`: it loads the model and every request
# fails; `fails`: it cannot load it.
SERVES, AT_RISK, UNKNOWN, REQUESTS_FAIL, FAILS = (
    "serves",
    "at-risk",
    "unknown",
    "requests-fail",
    "fails",
)
CELL_STATES = (SERVES, AT_RISK, UNKNOWN, REQUESTS_FAIL, FAILS)
FAILING = (FAILS, REQUESTS_FAIL)
_FROM_STATUS = {
    Status.COMPATIBLE: SERVES,
    Status.AT_RISK: AT_RISK,
    Status.UNKNOWN: UNKNOWN,
    Status.INCOMPATIBLE: FAILS,
    "loads": SERVES,
    "fails": FAILS,
}
STATUSES = tuple(str(s) for s in Status)
WORST_FIRST = tuple(reversed(STATUSES))


class Cell(NamedTuple):
    """One consumer's verdict on one model, as the matrix shows it (a tuple: a page
    builds a thousand)."""

    state: str
    code: str | None = None  # the finding behind a failure or a risk
    message: str | None = None


class Row(NamedTuple):
    """What the matrix shows of one model."""

    bucket: str
    key: str
    version_id: str | None
    report_bucket: str
    report_key: str
    status: str
    cells: Mapping[str, Cell]

    @property
    def field(self) -> str:
        return f"{self.bucket}/{self.key}"


def cells_of(document: Mapping[str, Any]) -> dict[str, Cell]:
    """Each consumer's cell over every artifact of a report: its worst state, with the
    first error (else warning) finding of the artifact that made it so."""
    found: dict[str, Cell] = {}
    for artifact in document.get("artifacts") or ():
        for consumer in artifact.get("consumers") or ():
            state = _state_of(consumer)
            before = found.get(consumer["name"])
            if before is not None and CELL_STATES.index(before.state) >= CELL_STATES.index(state):
                continue
            findings = consumer.get("findings") or []
            worst = next(
                (f for f in findings if f.get("severity") == "error"),
                next((f for f in findings if f.get("severity") == "warning"), None),
            )
            if state == SERVES or worst is None:
                found[consumer["name"]] = Cell(state)
            else:
                found[consumer["name"]] = Cell(state, worst.get("code"), worst.get("message"))
    return found


def _state_of(consumer: Mapping[str, Any]) -> str:
    status = consumer_status_json(consumer)
    if status == Status.INCOMPATIBLE and consumer.get("loads") is not False:
        return REQUESTS_FAIL
    return _FROM_STATUS[status]


def row_of(model: IndexedModel, cells: Mapping[str, Cell] | None = None) -> Row:
    """The model's row; `cells` from its report when known, else from the verdicts the
    index recorded (no findings, and `requests-fail` reads as `fails`)."""
    if cells is None:
        cells = {name: Cell(_FROM_STATUS.get(s, UNKNOWN)) for name, s in model.verdicts.items()}
    return Row(
        model.bucket,
        model.key,
        model.version_id,
        model.report_bucket,
        model.report_key,
        model.status,
        dict(cells),
    )


def encode_row(row: Row) -> bytes:
    cells = {name: [c.state, c.code, c.message] for name, c in row.cells.items()}
    return orjson.dumps(
        [row.bucket, row.key, row.version_id, row.report_bucket, row.report_key, row.status, cells]
    )


def decode_row(blob: bytes) -> Row:
    bucket, key, version_id, report_bucket, report_key, status, cells = orjson.loads(blob)
    make = Cell._make
    return Row(
        bucket,
        key,
        version_id,
        report_bucket,
        report_key,
        status,
        {n: make(c) for n, c in cells.items()},
    )


def write_rows(pipe: Any, rows: Iterable[Row], previous: Mapping[str, Row | None]) -> None:
    """Queue on a Redis pipeline the commands that store `rows` and file them in the sets.

    `previous` holds each field's row as it stood (None: none): a row leaves only the
    sets its previous row was filed in and no longer fits, and joins only those it was
    not in, so writing a model again that changed nothing files nothing; commands are
    grouped by set, two per set touched whatever the number of rows. (Filing every row
    anew, out of each status and state it is not, cost 27x writing the entries alone:
    bench/ui_matrix.py.)"""
    mapping: dict[str, bytes] = {}
    into: dict[str, list[str]] = {}
    out_of: dict[str, list[str]] = {}
    for row in rows:
        name = row.field
        old = previous.get(name)
        mapping[name] = encode_row(row)
        if old is None:
            into.setdefault(KEYS, []).append(name)
        if old is None or old.status != row.status:
            if old is not None:
                out_of.setdefault(STATUS + old.status, []).append(name)
            into.setdefault(STATUS + row.status, []).append(name)
        before_cells = old.cells if old is not None else {}
        for consumer, cell in row.cells.items():
            before = before_cells.get(consumer)
            if before is None or before.state != cell.state:
                if before is not None and before.state != SERVES:
                    out_of.setdefault(f"{CELL}{consumer}:{before.state}", []).append(name)
                if cell.state != SERVES:
                    into.setdefault(f"{CELL}{consumer}:{cell.state}", []).append(name)
        for consumer, before in before_cells.items():
            # a consumer the model is no longer judged by
            if consumer not in row.cells and before.state != SERVES:
                out_of.setdefault(f"{CELL}{consumer}:{before.state}", []).append(name)
    for key, names in out_of.items():
        pipe.zrem(key, *names)
    for key, names in into.items():
        pipe.zadd(key, dict.fromkeys(names, 0))
    if mapping:
        pipe.hset(ROWS, mapping=mapping)
    write_names(pipe, into.get(KEYS, ()))


def name_id(field_name: str) -> bytes:
    """A field's id in the search postings: stable, so a writer needs no round trip to
    learn it (two fields sharing one at 64 bits is not a concern at index sizes)."""
    return hashlib.blake2b(field_name.encode(), digest_size=ID_BYTES).digest()


def grams(text: str) -> set[str]:
    """The trigrams of `text` (already lower-cased): what a search's postings are keyed by."""
    return {text[i : i + 3] for i in range(len(text) - 2)}


def write_names(pipe: Any, fields: Iterable[str]) -> None:
    """Queue the commands that give `fields` (new rows) their name ids and append each
    id to its trigrams' postings: one HSET, and one APPEND per trigram of the batch.
    Writing a field twice appends its id twice; a search reads each id once."""
    ids: dict[bytes, str] = {}
    postings: dict[str, bytearray] = {}
    for name in fields:
        found = name_id(name)
        ids[found] = name
        for gram in grams(name.lower()):
            postings.setdefault(gram, bytearray()).extend(found)
    if not ids:
        return
    pipe.hset(NAMES, mapping=ids)
    for gram, blob in postings.items():
        pipe.append(GRAM + gram, bytes(blob))


def remove_rows(pipe: Any, rows: Iterable[Row]) -> None:
    """Queue the commands that drop `rows` (as they stand) and their place in the sets."""
    for row in rows:
        name = row.field
        pipe.hdel(ROWS, name)
        pipe.zrem(KEYS, name)
        pipe.hdel(NAMES, name_id(name))
        pipe.zrem(STATUS + row.status, name)
        for consumer, cell in row.cells.items():
            if cell.state != SERVES:
                pipe.zrem(f"{CELL}{consumer}:{cell.state}", name)


# --- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    """A page of the matrix: its filters, its order and where it starts."""

    status: str | None = None  # the model's status
    consumer: str | None = None  # with `cell`: that consumer's cell; alone: nothing
    cell: str | None = None  # a cell state; without `consumer`: any consumer's cell
    prefix: str = ""  # the start of `bucket/key`
    search: str = ""  # a piece of `bucket/key`, any case
    owner: str | None = None
    sort: str = "key"  # key | -key | status (worst first, then by key)
    after: str | None = None  # the cursor a previous page returned
    limit: int = 50


@dataclass
class Page:
    rows: list[Row] = field(default_factory=list)
    next: str | None = None  # the cursor of the next page; None: this is the last
    total: int | None = None  # how many rows match, when one set says it exactly
    scanned: int = 0  # rows read
    examined: int = 0  # fields looked at (a search skips most without reading their rows)
    stopped_early: bool = False  # the budget ran out before the page was full


OwnerOf = Callable[[Row], str]
_F = TypeVar("_F", bound=Callable[..., Any])


def _redis_read(method: _F) -> _F:
    """Redis errors as our own: the page says the index is unavailable, and why."""

    @functools.wraps(method)
    def read(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except redis.RedisError as exc:
            raise TransientError(f"model index: Redis unavailable (matrix rows): {exc}") from exc

    return read  # type: ignore[return-value]


def _accepts(query: Query, owner_of: OwnerOf | None) -> Callable[[Row], bool]:
    search = query.search.lower()

    def accepts(row: Row) -> bool:
        if query.status and row.status != query.status:
            return False
        if query.cell:
            if query.consumer:
                cell = row.cells.get(query.consumer)
                if cell is None or cell.state != query.cell:
                    return False
            elif not any(c.state == query.cell for c in row.cells.values()):
                return False
        if not row.field.startswith(query.prefix):
            return False
        if search and search not in row.field.lower():
            return False
        return not (query.owner and owner_of is not None and owner_of(row) != query.owner)

    return accepts


class Matrix:
    """Reads the rows (a Redis client that answers bytes)."""

    def __init__(self, client: Any) -> None:
        self._redis = client

    @_redis_read
    def rows(self, fields: Sequence[str]) -> list[Row | None]:
        if not fields:
            return []
        blobs = self._redis.hmget(ROWS, list(fields))
        return [decode_row(b) if b is not None else None for b in blobs]

    def row(self, field_name: str) -> Row | None:
        return self.rows([field_name])[0]

    @_redis_read
    def count(self) -> int:
        return int(self._redis.zcard(KEYS))

    def _segments(self, query: Query) -> tuple[list[str], bool]:
        """The sets to walk, in order, and whether they hold exactly the wanted rows
        (nothing else to filter): then their counts are the total."""
        if query.sort == "status":
            wanted = [query.status] if query.status else list(WORST_FIRST)
            exact = not (query.cell or query.search or query.owner)
            return [STATUS + s for s in wanted], exact
        candidates = [KEYS]
        if query.status:
            candidates.append(STATUS + query.status)
        if query.consumer and query.cell and query.cell != SERVES:
            candidates.append(f"{CELL}{query.consumer}:{query.cell}")
        pipe = self._redis.pipeline(transaction=False)
        for name in candidates:
            pipe.zcard(name)
        sizes = pipe.execute()
        smallest = min(range(len(candidates)), key=lambda i: sizes[i])
        chosen = candidates[smallest]
        exact = not (query.cell or query.search or query.owner) and (
            (chosen == KEYS and not query.status) or chosen.startswith(STATUS)
        )
        return [chosen], exact

    def _range(self, query: Query) -> tuple[bytes, bytes]:
        if not query.prefix:
            return b"-", b"+"
        start = query.prefix.encode()
        return b"[" + start, b"[" + start + b"\xff"

    @_redis_read
    def page(self, query: Query, owner_of: OwnerOf | None = None) -> Page:
        """One page: at most `query.limit` rows, reading at most SCAN_BUDGET rows."""
        segments, exact = self._segments(query)
        accepts = _accepts(query, owner_of)
        low, high = self._range(query)
        reverse = query.sort == "-key"
        first, last = _cursor(query.after)
        page = Page()
        if exact and query.after is None:
            pipe = self._redis.pipeline(transaction=False)
            for name in segments:
                pipe.zlexcount(name, low, high)
            page.total = sum(pipe.execute())
        named = _name_filter(query)
        candidates = self.named(query.search) if query.search else None
        for index in range(first, len(segments)):
            resume = last if index == first else None
            belongs = _belongs(segments[index])
            if candidates is not None:
                listed = _listed(candidates, query.prefix, resume, reverse)
                chunks: Iterable[list[str]] = _chunked(listed, CHUNK)
            else:
                chunks = self._chunks(segments[index], low, high, resume, reverse, query.limit + 1)
            for fields in chunks:
                # what the field itself tells (a search) is tested before any row is read
                wanted = [f for f in fields if named(f)]
                rows = dict(zip(wanted, self.rows(wanted), strict=True))
                for name in fields:
                    page.examined += 1
                    if name in rows:
                        page.scanned += 1
                        row = rows[name]
                        if row is not None and belongs(row) and accepts(row):
                            page.rows.append(row)
                    if len(page.rows) >= query.limit:
                        page.next = f"{index}:{name}"
                        return page
                    if page.scanned >= SCAN_BUDGET or page.examined >= NAME_BUDGET:
                        page.next = f"{index}:{name}"
                        page.stopped_early = True
                        return page
        return page

    @_redis_read
    def named(self, search: str) -> list[str] | None:
        """The fields that contain `search` (any case), from the trigram postings; None
        when the postings cannot say within NAMED_CAP fields (a search under three
        characters, a common one, or names not yet filled in): the page walks instead."""
        wanted = sorted(grams(search.lower()))
        if not wanted:
            return None
        pipe = self._redis.pipeline(transaction=False)
        pipe.hlen(NAMES)
        pipe.zcard(KEYS)
        for gram in wanted:
            pipe.strlen(GRAM + gram)
        named_count, key_count, *sizes = pipe.execute()
        if named_count < key_count:
            return None  # some rows have no name yet: only a walk sees them
        rarest = sorted(zip(sizes, wanted, strict=True))[:GRAMS_READ]
        if rarest[0][0] == 0:
            return []  # a trigram no field has
        if rarest[0][0] > NAMED_CAP * ID_BYTES * 8:
            return None  # even the rarest trigram is common: a walk fills pages quickly
        limit = max(rarest[0][0] * 8, NAMED_CAP * ID_BYTES)
        pipe = self._redis.pipeline(transaction=False)
        for size, gram in rarest:
            if size <= limit:
                pipe.get(GRAM + gram)
        ids: set[bytes] | None = None
        for blob in pipe.execute():
            these = {blob[i : i + ID_BYTES] for i in range(0, len(blob), ID_BYTES)}
            ids = these if ids is None else ids & these
        if ids is None or len(ids) > NAMED_CAP:
            return None
        if not ids:
            return []
        lowered = search.lower()
        fields = {
            f.decode() if isinstance(f, bytes) else f
            for f in self._redis.hmget(NAMES, list(ids))
            if f is not None
        }
        return sorted(f for f in fields if lowered in f.lower())

    def _chunks(
        self,
        name: str,
        low: bytes,
        high: bytes,
        resume: str | None,
        reverse: bool,
        first: int = CHUNK,
    ) -> Iterator[list[str]]:
        """The set's fields in the range, after `resume`: `first` of them, then chunks
        twice as large up to CHUNK (a page that filters nothing reads no row it does not
        show; one that filters much reads few round trips)."""
        size = min(first, CHUNK)
        while True:
            if reverse:
                top = b"(" + resume.encode() if resume is not None else high
                got = self._redis.zrevrangebylex(name, top, low, start=0, num=size)
            else:
                bottom = b"(" + resume.encode() if resume is not None else low
                got = self._redis.zrangebylex(name, bottom, high, start=0, num=size)
            fields = [f.decode() if isinstance(f, bytes) else f for f in got]
            if not fields:
                return
            yield fields
            if len(fields) < size:
                return
            resume = fields[-1]
            size = min(size * 2, CHUNK)

    @_redis_read
    def ensure_names(self, batch: int = CHUNK) -> int:
        """Give every row's field its name id and postings (an index written before the
        search postings existed has none): the fields missing from `names`, a batch per
        round trip. The number of fields named."""
        written = 0
        for fields in self._chunks(KEYS, b"-", b"+", None, False, batch):
            have = self._redis.hmget(NAMES, [name_id(f) for f in fields])
            missing = [f for f, known in zip(fields, have, strict=True) if known is None]
            if missing:
                pipe = self._redis.pipeline(transaction=False)
                write_names(pipe, missing)
                pipe.execute()
                written += len(missing)
        return written

    def walk(self, query: Query, owner_of: OwnerOf | None = None) -> Iterator[Row]:
        """Every row the query's filters accept, in its order (a download: no budget)."""
        after = query.after
        while True:
            chunk = self.page(replace(query, after=after, limit=CHUNK), owner_of)
            yield from chunk.rows
            if chunk.next is None:
                return
            after = chunk.next

    @_redis_read
    def failing(self, consumer: str, cap: int) -> tuple[list[Row], bool]:
        """The rows whose cell for `consumer` fails (loads or requests), at most `cap`;
        and whether there were more."""
        found: list[Row] = []
        seen: set[str] = set()  # a stale candidate may sit in both sets
        for state in FAILING:
            for fields in self._chunks(f"{CELL}{consumer}:{state}", b"-", b"+", None, False):
                for row in self.rows(fields):
                    cell = row.cells.get(consumer) if row is not None else None
                    if row is not None and cell is not None and cell.state in FAILING:
                        if row.field in seen:
                            continue
                        seen.add(row.field)
                        if len(found) >= cap:
                            return found, True
                        found.append(row)
        return found, False


def rows_before(client: Any, rows: Sequence[Row]) -> dict[str, Row | None]:
    """The rows stored now for the fields of `rows` (one HMGET), for `write_rows`."""
    fields = [r.field for r in rows]
    return dict(zip(fields, Matrix(client).rows(fields), strict=True))


def _belongs(segment: str) -> Callable[[Row], bool]:
    """Whether a row read from `segment` is its member now (a status set may keep a
    stale member for a moment; a search's fields are every set's candidates)."""
    if segment.startswith(STATUS):
        status = segment[len(STATUS) :]
        return lambda row: row.status == status
    return lambda row: True


def _listed(fields: list[str], prefix: str, resume: str | None, reverse: bool) -> list[str]:
    """A search's fields (sorted) in a page's order: under `prefix`, after `resume`."""
    found = [f for f in fields if f.startswith(prefix)]
    if reverse:
        found.reverse()
        return [f for f in found if resume is None or f < resume]
    return [f for f in found if resume is None or f > resume]


def _chunked(fields: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(fields), size):
        yield fields[start : start + size]


def _name_filter(query: Query) -> Callable[[str], bool]:
    search = query.search.lower()
    if not search:
        return lambda name: True
    return lambda name: search in name.lower()


def _cursor(after: str | None) -> tuple[int, str | None]:
    if not after:
        return 0, None
    index, _, name = after.partition(":")
    try:
        return max(0, int(index)), name
    except ValueError:
        return 0, None
