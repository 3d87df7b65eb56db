"""The model index: every current object version's metadata and verdicts.

The reports in the object store are the durable truth; Redis holds a compact,
compressed copy of each for fast fleet re-evaluation. When Redis has lost it
(a flush, a new Redis), the index is rebuilt from the reports on first use,
so nothing is lost. Keyed by object (bucket/key): a newer version replaces the
older one; deleted objects are removed.

One entry per model, not per object: a SavedModel's `variables/variables.index` is
checked as its SavedModel when its upload event comes (and tagged), but the index
keeps the SavedModel once, as its graph file's entry (`folded_member`), so every
count the fleet page and a fleet change give is a count of models. That check read
the whole folder, variables included (the graph's own may have come before them), so
it becomes the graph entry's verdict when the graph is indexed already (its key and
version stay the graph's; its report is the member's).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Protocol, TypeVar

import cramjam
import redis
import structlog

from worker.errors import ConfigError, TransientError
from worker.fleet.releases import releases_of
from worker.formats.layout import VARIABLES_INDEX
from worker.formats.read import SAVED_MODEL_FILES
from worker.model.artifact import Artifact, artifact_from_json
from worker.model.index import IndexedModel
from worker.sinks import matrix
from worker.sinks.index_codec import Decoder, Encoder
from worker.sinks.index_write import IndexWriter

log = structlog.get_logger(__name__)
_T = TypeVar("_T")

HASH = "tfcompat:index:v2"
PARTS = "tfcompat:index:v2:parts"
BUILT = "tfcompat:index:v2:built"
REBUILT = "tfcompat:index:v2:rebuilt"  # hash: at (epoch seconds), models (the last rebuild's)
FLEET_APPLIED = "tfcompat:fleet:applied"
OLD_KEYS = ("tfcompat:index:v1", "tfcompat:index:v1:built")  # dropped by a rebuild
BATCH = 1000  # entries per HSCAN round trip
REBUILD_LOCK = "tfcompat:index:v2:rebuild-lock"
REBUILD_LEASE = 300  # seconds; renewed after every batch a rebuild writes
_RELEASE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)
_RENEW = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('expire', KEYS[1], ARGV[2]) end return 0"
)


def model_from_report(
    document: dict[str, Any],
    report_bucket: str,
    report_key: str,
    artifacts: tuple[Artifact, ...] | None = None,
) -> IndexedModel | None:
    """The index entry of a stored report, or None for a foreign or old document.
    `artifacts`: the ones the report was made from, when the caller holds them (a fleet
    change re-checks indexed artifacts): decoding them again from the report's metadata
    cost a fifth of a fleet change's own time per model (bench/fleet_fanout.py)."""
    try:
        obj = document["object"]
        fleet = document.get("fleet") or {}
        if artifacts is None:
            artifacts = tuple(
                artifact_from_json(a["metadata"])
                for a in document["artifacts"]
                if a.get("metadata")
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
            releases=releases_of(document["artifacts"]),
            cells=tuple(
                (name, c.state, c.code, c.message) for name, c in matrix.cells_of(document).items()
            ),
        )
    except (KeyError, TypeError, ValueError):
        return None


def folded_member(model: IndexedModel) -> bool:
    """A SavedModel's variables index checked as its SavedModel: the model is its graph
    file's entry (`saved_model.pb` or `.pbtxt`, whose own upload event reads the same
    folder), so this one is not kept. Counted too, a SavedModel was two models on the
    fleet page (20 for 12) and in a fleet change's counts. A variables index with no
    SavedModel around it (invalid: variables/ without a graph) keeps its entry: the
    page must show it, and nothing else stands for it."""
    key = model.key
    return (key == VARIABLES_INDEX or key.endswith("/" + VARIABLES_INDEX)) and any(
        a.format == "savedmodel" for a in model.artifacts
    )


class ReportSource(Protocol):
    """Where stored reports are listed and read (the object store)."""

    def list_keys(self, bucket: str, prefix: str) -> list[str]: ...

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None: ...

    def current_version(self, bucket: str, key: str) -> str | bool | None:
        """The object's current version id; None if unversioned; False if it is gone."""
        ...


@contextmanager
def redis_errors(doing: str) -> Iterator[None]:
    """Redis errors as our own: a hiccup (connection, timeout, loading, failover, OOM) is
    transient and the task retries; a refusal that retrying cannot fix is a ConfigError."""
    try:
        yield
    except (redis.AuthenticationError, redis.exceptions.AuthorizationError) as exc:
        raise ConfigError(f"model index: Redis refused the credentials ({doing}): {exc}") from exc
    except redis.exceptions.NoPermissionError as exc:
        raise ConfigError(f"model index: Redis ACL forbids {doing}: {exc}") from exc
    except redis.ResponseError as exc:
        if str(exc).startswith("WRONGTYPE"):
            raise ConfigError(
                f"model index: a Redis key of ours holds another type ({doing}): is the "
                f"database shared with another application? {exc}"
            ) from exc
        raise TransientError(f"model index: Redis answered an error ({doing}): {exc}") from exc
    except redis.RedisError as exc:
        raise TransientError(f"model index: Redis unavailable ({doing}): {exc}") from exc


@contextmanager
def gc_paused() -> Iterator[None]:
    """Decoding allocates hundreds of thousands of acyclic objects; the cyclic collector
    would walk the growing heap again and again for nothing.

    The young generations are collected first: the pause ends by moving every tracked
    object to the oldest generation, and garbage cycles still young then (a failed
    task's exception, its traceback and the frames holding the chunk it decoded) would
    wait there for a full collection, which a large heap makes rare. Measured with a
    worker re-checking chunks while S3 was down: the pool process grew from 176 MB to
    1.4 GB in two minutes that way; collecting first costs well under a millisecond."""
    enabled = gc.isenabled()
    if enabled:
        gc.collect(1)
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            # What the pause allocated and still holds (every decoded model a change keeps)
            # would all be young: the first collection after it would walk them all, which
            # cost a third of a 10,000-model `fleet impact` (bench/fleet_impact.py). Moving
            # every tracked object to the oldest generation costs nothing; they are walked
            # at the next full collection, as any long-lived object is.
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _decoded(decoder: Decoder, batch: list[tuple[bytes | str, bytes]]) -> list[IndexedModel]:
    """The batch's entries decoded; an unreadable entry is logged and left out."""
    decoded = []
    with gc_paused():
        for field, blob in batch:
            try:
                decoded.append(decoder.entry(blob))
            except (ValueError, KeyError, TypeError, cramjam.DecompressionError):
                log.warning("index.entry_unreadable", field=str(field))
    return decoded


def _row(model: IndexedModel) -> matrix.Row:
    """The model's fleet-page row: its report's cells, else its recorded verdicts."""
    make = matrix.Cell._make
    cells = {c[0]: make(c[1:]) for c in model.cells} if model.cells else None
    return matrix.row_of(model, cells)


class ModelIndex:
    """The index over Redis (cache) and the stored reports (truth).

    Every Redis call goes through `redis_errors`: callers see TransientError or
    ConfigError, never a Redis exception."""

    def __init__(
        self,
        client: Any,
        reports: ReportSource,
        buckets: Sequence[str],
        prefix: str,
        *,
        builds: bool = True,
    ) -> None:
        self._builds = builds
        self._redis = client
        self._reports = reports
        self._buckets = list(dict.fromkeys(buckets))
        self._prefix = prefix
        self._writer: IndexWriter | None = None

    def _writes(self) -> IndexWriter:
        """The write scripts, registered on first use (a reader never needs them)."""
        if self._writer is None:
            self._writer = IndexWriter(self._redis, HASH, PARTS)
        return self._writer

    @property
    def redis_client(self) -> Any:
        """The Redis client (the fleet page reads the matrix rows through it)."""
        return self._redis

    def lazy_decoder(self) -> Decoder:
        """A decoder that reads only the parts the entries it decodes refer to: reading one
        or a few entries costs no read of every part."""
        return Decoder(
            {}, lambda ref: self._call("reading an index part", self._redis.hget, PARTS, ref)
        )

    @staticmethod
    def field(bucket: str, key: str) -> str:
        return f"{bucket}/{key}"

    def _call(self, doing: str, command: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        with redis_errors(doing):
            return command(*args, **kwargs)

    def put(self, model: IndexedModel) -> None:
        """Store one entry with the parts it refers to and its fleet-page row, in one
        round trip and atomically (`worker.sinks.index_write`): a reader that sees the
        entry finds its parts."""
        self.put_many([model])

    def put_many(self, models: Iterable[IndexedModel], batch: int = BATCH) -> None:
        """`put` for many entries, a batch per round trip (one script run), each shared
        part sent once per batch."""
        pending: list[IndexedModel] = []
        for model in models:
            pending.append(model)
            if len(pending) >= batch:
                self._put_batch(pending)
                pending = []
        if pending:
            self._put_batch(pending)

    def _graph_row(self, member: IndexedModel) -> matrix.Row | None:
        """The indexed row of the SavedModel a variables index belongs to, if any."""
        folder = member.key[: -len(VARIABLES_INDEX)]  # "" or ending in "/"
        names = [self.field(member.bucket, f"{folder}{n}") for n in SAVED_MODEL_FILES]
        rows = self._call("reading matrix rows", matrix.Matrix(self._redis).rows, names)
        return next((r for r in rows if r is not None), None)

    def _put_batch(self, models: list[IndexedModel]) -> None:
        folded = [m for m in models if folded_member(m)]
        if folded:
            models = [m for m in models if not folded_member(m)]
            for member in folded:
                # an index written before members were folded may hold it: drop that
                self.remove(member.bucket, member.key)
                graph = self._graph_row(member)
                if graph is not None:  # its check saw the folder whole: the model's verdict
                    models.append(replace(member, key=graph.key, version_id=graph.version_id))
            if not models:
                return
        encoder = Encoder()
        written = [(encoder.entry(m), _row(m)) for m in models]  # fills encoder.parts
        self._call("writing entries", self._writes().put, encoder.parts, written)

    def remove(self, bucket: str, key: str) -> None:
        """Drop the entry and its fleet-page row, in one round trip."""
        self._call("removing an entry", self._writes().remove, self.field(bucket, key))

    def ensure_rows(self) -> int:
        """Give every entry its fleet-page row (`worker.sinks.matrix`) once: an index
        written before the rows existed has none. Rows made here come from the recorded
        verdicts (no findings); a model checked again gets its report's. The number of
        rows written. Every row's field also gets its search postings here, once."""
        written = self._ensure_rows()
        named = self._call("naming matrix rows", matrix.Matrix(self._redis).ensure_names)
        if named:
            log.info("index.matrix_names_written", fields=named)
        return written

    def _ensure_rows(self) -> int:
        if self._call("checking the matrix rows", self._redis.exists, matrix.BUILT):
            return 0
        written = 0
        decoder = self.decoder()
        fields = self.fields()
        for start in range(0, len(fields), BATCH):
            names = fields[start : start + BATCH]
            have = self._call("reading matrix rows", self._redis.hmget, matrix.ROWS, names)
            missing = [n for n, row in zip(names, have, strict=True) if row is None]
            models = list(self.models_of(missing, decoder))

            def write(models: list[IndexedModel] = models) -> None:
                pipe = self._redis.pipeline(transaction=False)
                matrix.write_rows(pipe, [_row(m) for m in models], {})  # none had a row
                pipe.execute()

            self._call("writing matrix rows", write)
            written += len(models)
        self._call("recording the matrix rows", self._redis.set, matrix.BUILT, "1")
        log.info("index.matrix_rows_written", rows=written)
        return written

    def count(self) -> int:
        self.ensure_built()
        return self.stored_count()

    def stored_count(self) -> int:
        """Entries in Redis now, built or not (never starts a rebuild)."""
        return int(self._call("counting entries", self._redis.hlen, HASH))

    def models(self) -> Iterator[IndexedModel]:
        """Every entry, decoded a batch at a time (each shared part once per pass)."""
        self.ensure_built()
        decoder = self.decoder()
        seen: set[bytes | str] = set()  # HSCAN may return an entry twice (rehashing)
        cursor = 0
        while True:
            cursor, batch = self._call(
                "reading entries", self._redis.hscan, HASH, cursor, count=BATCH
            )
            fresh = [(f, blob) for f, blob in batch.items() if f not in seen]
            seen.update(batch)
            yield from _decoded(decoder, fresh)
            if cursor == 0:
                return

    def fields(self) -> list[bytes]:
        """Every entry's field, to read a share of the index (`models_of`)."""
        self.ensure_built()
        return list(self._call("listing entries", self._redis.hkeys, HASH))

    def decoder(self) -> Decoder:
        """A decoder for one pass: the shared parts read once (a forked process that
        reads a share of the index inherits it, parts and all)."""
        parts = self._call("reading index parts", self._redis.hgetall, PARTS)
        return Decoder(
            {k.decode() if isinstance(k, bytes) else k: v for k, v in parts.items()},
            lambda ref: self._call("reading an index part", self._redis.hget, PARTS, ref),
        )

    def models_of(self, fields: Sequence[bytes | str], decoder: Decoder) -> Iterator[IndexedModel]:
        """The entries of `fields` (from `fields`) still in the index, a batch per round
        trip."""
        for start in range(0, len(fields), BATCH):
            names = list(fields[start : start + BATCH])
            blobs = self._call("reading entries", self._redis.hmget, HASH, names)
            yield from _decoded(
                decoder, [(f, b) for f, b in zip(names, blobs, strict=True) if b is not None]
            )

    def ensure_built(self) -> None:
        """Rebuild a lost index before reading it, in a process that may build it (a
        worker, under the rebuild lock); elsewhere (the receiver's page) a lost index is
        a TransientError that names the way to rebuild it: a read there never writes."""
        if self._call("checking the index", self._redis.exists, BUILT):
            return
        if not self._builds:
            raise TransientError(
                "the model index is not built: a worker rebuilds it "
                "(`tfcompat index rebuild`, or the next fleet change)"
            )
        self.rebuild_locked()

    def rebuild_locked(self, lease: int = REBUILD_LEASE) -> int:
        """`rebuild` under the index's rebuild lock (one rebuild at a time across every
        worker); TransientError while another holds it, so the task retries later and then
        finds the index built. The lock is a lease: a killed rebuild frees it in `lease`."""
        import secrets

        token = secrets.token_hex(8)
        taken = self._call(
            "taking the rebuild lock", self._redis.set, REBUILD_LOCK, token, nx=True, ex=lease
        )
        if not taken:
            raise TransientError("the model index is being rebuilt by another worker")
        try:
            return self.rebuild(lambda: self._renew_rebuild_lock(token, lease))
        finally:
            self._call(
                "releasing the rebuild lock", self._redis.eval, _RELEASE, 1, REBUILD_LOCK, token
            )

    def _renew_rebuild_lock(self, token: str, lease: int) -> None:
        renewed = self._call(
            "renewing the rebuild lock", self._redis.eval, _RENEW, 1, REBUILD_LOCK, token, lease
        )
        if not renewed:
            raise TransientError("the index rebuild lost its lock (it ran past its lease)")

    def rebuild(self, heartbeat: Callable[[], None] | None = None) -> int:
        """Re-read every stored report; keep, per object, the current version's.

        Streams: reports are read and written a batch (`BATCH`) at a time, so memory
        stays bounded whatever the index's size (`heartbeat` runs after each batch).
        Workers may put entries while this runs: theirs are at least as new as any
        report read here, so rebuilt entries only fill what is missing (HSETNX); it
        never drops an entry a worker just put."""
        total = 0
        batch: list[IndexedModel] = []
        folded: set[tuple[str, str]] = set()  # members an older index may still hold
        for bucket in self._buckets:
            for report_key in self._reports.list_keys(bucket, self._prefix):
                if not report_key.endswith(".json"):
                    continue
                document = self._reports.get_json(bucket, report_key)
                model = model_from_report(document or {}, bucket, report_key)
                if model is None:
                    continue
                if folded_member(model):
                    folded.add((model.bucket, model.key))
                    continue
                current = self._reports.current_version(model.bucket, model.key)
                if current is False:
                    continue  # the object is gone
                if model.version_id is not None and current != model.version_id:
                    continue  # an overwritten version
                batch.append(model)
                if len(batch) >= BATCH:
                    total += self._fill(batch)
                    batch = []
                    if heartbeat is not None:
                        heartbeat()
        total += self._fill(batch)
        for bucket, key in folded:  # a SavedModel's member folds into its model's row
            self.remove(bucket, key)
        self._call("recording the rebuild", self._finish_rebuild, total)
        log.info("index.rebuilt", models=total, buckets=self._buckets)
        return total

    def _finish_rebuild(self, models: int) -> None:
        import time

        pipe = self._redis.pipeline(transaction=False)
        pipe.delete(*OLD_KEYS)  # an index of the previous format, now unread
        pipe.set(BUILT, "1")
        pipe.hset(REBUILT, mapping={"at": time.time(), "models": models})
        pipe.execute()

    def last_rebuild(self) -> tuple[float, int] | None:
        """(when, models) of the last rebuild that finished; None before the first."""
        found = self._call("reading the last rebuild", self._redis.hgetall, REBUILT)
        at = found.get(b"at", found.get("at"))
        models = found.get(b"models", found.get("models"))
        return (float(at), int(models)) if at is not None and models is not None else None

    def rows_built(self) -> bool:
        return bool(self._call("checking the matrix rows", self._redis.exists, matrix.BUILT))

    def claim_rebuild(self, ttl_s: int = 600) -> bool:
        """True for one caller within `ttl_s` (one worker enqueues the start-up rebuild)."""
        return bool(
            self._call(
                "claiming the index rebuild",
                self._redis.set,
                REBUILD_LOCK + ":claim",
                "1",
                nx=True,
                ex=ttl_s,
            )
        )

    def is_built(self) -> bool:
        return bool(self._call("checking the index", self._redis.exists, BUILT))

    def _fill(self, models: list[IndexedModel]) -> int:
        """Write the entries (and their matrix rows) missing from the index."""
        if not models:
            return 0
        encoder = Encoder()
        entries = [(self.field(m.bucket, m.key), encoder.entry(m)) for m in models]

        def write() -> list[Any]:
            pipe = self._redis.pipeline(transaction=False)
            if encoder.parts:
                pipe.hset(PARTS, mapping=encoder.parts)
            for field, blob in entries:
                pipe.hsetnx(HASH, field, blob)
            return list(pipe.execute())

        answers = self._call("rebuilding the index", write)
        first = 1 if encoder.parts else 0
        written = [m for m, set_now in zip(models, answers[first:], strict=False) if set_now]
        rows = [_row(m) for m in written]
        before = self._call("reading matrix rows", matrix.rows_before, self._redis, rows)

        def write_rows() -> None:
            pipe = self._redis.pipeline(transaction=False)
            matrix.write_rows(pipe, rows, before)
            pipe.execute()

        self._call("writing matrix rows", write_rows)
        return len(models)

    # --- the fleet last applied (pipeline.reevaluate) ------------------------------------

    def applied_fleet(self) -> str | None:
        """The digest of the fleet last applied to the index; None before the first."""
        value = self._call("reading the applied fleet", self._redis.get, FLEET_APPLIED)
        return value.decode() if isinstance(value, bytes) else value

    def record_applied_fleet(self, digest: str) -> None:
        self._call("recording the applied fleet", self._redis.set, FLEET_APPLIED, digest)

    def claim_fleet_change(self, digest: str, ttl_s: int = 3600) -> bool:
        """True for exactly one caller per fleet digest within `ttl_s` (one worker
        enqueues the re-evaluation; the others see it claimed)."""
        claim = f"{FLEET_APPLIED}:claim:{digest}"
        return bool(
            self._call("claiming a fleet change", self._redis.set, claim, "1", nx=True, ex=ttl_s)
        )
