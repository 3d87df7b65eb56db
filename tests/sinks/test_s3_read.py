"""The streamed S3 reader over an in-memory client: every read returns the object's
bytes, a forward walk costs each byte once and the sha256 comes from the same pass,
a checksum the store holds lets gaps be skipped, and bytes never mix two writes."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.sinks.fake_s3 import FakeS3
from worker.errors import NotFound, Superseded, TransientError
from worker.sinks import s3_read
from worker.sinks.ports import Pin
from worker.sinks.s3_read import S3Object, S3Tree, checksum_sha256

SMALL = {"WHOLE": 4096, "KEEP": 4096, "SKIP": 8192, "STEP": 512, "CHUNK": 2048, "SIDE": 1024}
TAIL = 1024


@contextmanager
def small_blocks() -> Iterator[None]:
    """The reader's sizes scaled down, so small objects are streamed, skipped and resumed."""
    with patch.multiple(s3_read, TAIL=TAIL, **SMALL):  # type: ignore[arg-type]
        yield


def stored(data: bytes, sha256: bool = False) -> FakeS3:
    fake = FakeS3()
    fake.put("bkt", "m.pb", data, sha256=sha256)
    return fake


reads = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 6000)), max_size=40)


@given(st.binary(max_size=40_000), reads, st.booleans())
def test_any_reads_give_the_objects_bytes_and_its_sha256(
    data: bytes, wanted: list[tuple[float, int]], sha256: bool
) -> None:
    with small_blocks():
        source = S3Object(stored(data, sha256), "bkt", "m.pb")
        for fraction, length in wanted:
            offset = int(fraction * len(data))
            length = min(length, len(data) - offset)
            assert source.read_at(offset, length) == data[offset : offset + length]
        assert source.sha256() == hashlib.sha256(data).hexdigest()


@given(st.integers(5000, 40_000), st.lists(st.integers(0, 3000), max_size=30))
def test_a_forward_walk_reads_each_byte_once(size: int, steps: list[int]) -> None:
    """Reads that only move forward (skipping as a walker skips tensors), then the hash:
    the object's bytes once, plus at most its tail looked at early."""
    data = random.Random(size).randbytes(size)
    with small_blocks():
        source = S3Object(stored(data), "bkt", "m.pb")
        offset = 0
        for step in steps:
            offset = min(offset + step, len(data) - 1)
            assert source.read_at(offset, 1) == data[offset : offset + 1]
        source.sha256()
    assert len(data) <= source.bytes_read <= len(data) + TAIL


def test_a_checksum_the_store_holds_lets_a_large_gap_be_skipped() -> None:
    data = bytes(range(256)) * 400  # 102,400 bytes
    with small_blocks():
        fake = stored(data, sha256=True)
        source = S3Object(fake, "bkt", "m.pb")
        assert source.read_at(10, 100) == data[10:110]
        assert source.read_at(60_000, 100) == data[60_000:60_100]
        assert source.sha256() == hashlib.sha256(data).hexdigest()
    assert source.bytes_read < len(data) // 2
    assert any(call.get("Range") == "bytes=60000-" for call in fake.calls)


def test_without_a_checksum_a_gap_is_read_through_for_the_hash() -> None:
    data = bytes(range(256)) * 400
    with small_blocks():
        fake = stored(data)
        source = S3Object(fake, "bkt", "m.pb")
        source.read_at(60_000, 100)
        assert source.sha256() == hashlib.sha256(data).hexdigest()
    assert source.bytes_read == len(data)
    assert len(fake.calls) == 1  # one GET, streamed


def test_a_dropped_connection_resumes_where_the_stream_stopped() -> None:
    data = bytes(range(256)) * 200
    with small_blocks():
        fake = stored(data)
        fake.break_next_body_after = 20_000
        source = S3Object(fake, "bkt", "m.pb")
        assert source.read_at(30_000, 500) == data[30_000:30_500]
        assert source.sha256() == hashlib.sha256(data).hexdigest()
    (resumed,) = [c["Range"] for c in fake.calls[1:]]
    assert 0 < int(resumed.removeprefix("bytes=").rstrip("-")) <= 20_000
    assert source.bytes_read == len(data)  # nothing read twice


def test_content_written_again_since_the_event_is_superseded() -> None:
    fake = stored(b"first model")
    first = fake.versions[("bkt", "m.pb")][0].etag
    fake.put("bkt", "m.pb", b"second model")
    with pytest.raises(Superseded):
        S3Object(fake, "bkt", "m.pb", Pin(etag=first))


def test_bytes_never_mix_two_writes() -> None:
    """Written again mid-read: the next ranged GET carries the first ETag and fails."""
    data = bytes(range(256)) * 400
    with small_blocks():
        fake = stored(data, sha256=True)
        source = S3Object(fake, "bkt", "m.pb")
        source.read_at(0, 10)
        fake.put("bkt", "m.pb", bytes(len(data)), sha256=True)
        with pytest.raises(Superseded):
            source.read_at(90_000, 10)


def test_a_pinned_version_that_is_current_costs_one_get_and_says_so() -> None:
    fake = stored(b"only version")
    source = S3Object(fake, "bkt", "m.pb", Pin(version_id="v1"))
    assert (source.current, source.read_at(0, 4), len(fake.calls)) == (True, b"only", 1)


def test_a_pinned_older_version_is_read_and_known_not_current() -> None:
    fake = stored(b"old version")
    fake.put("bkt", "m.pb", b"new version")
    source = S3Object(fake, "bkt", "m.pb", Pin(version_id="v1"))
    assert (source.current, source.read_at(0, 3)) == (False, b"old")
    assert fake.calls[-1]["VersionId"] == "v1"


def test_a_missing_object_is_not_found() -> None:
    with pytest.raises(NotFound):
        S3Object(FakeS3(), "bkt", "gone.pb")


# What counts as the store's SHA-256 of the whole object: a full-object checksum only.
@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ({"ChecksumSHA256": "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="}, "2cf24dba"),
        (
            {
                "ChecksumSHA256": "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=",
                "ChecksumType": "FULL_OBJECT",
            },
            "2cf24dba",
        ),
        ({"ChecksumSHA256": "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=-3"}, None),
        (
            {
                "ChecksumSHA256": "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=",
                "ChecksumType": "COMPOSITE",
            },
            None,
        ),
        ({"ChecksumCRC32": "NhCmhg=="}, None),
        ({"ChecksumSHA256": "not base64!"}, None),
        ({"ChecksumSHA256": "c2hvcnQ="}, None),
    ],
)
def test_checksum_sha256(response: dict[str, str], expected: str | None) -> None:
    value = checksum_sha256(response)
    assert (value[:8] if value else None) == expected


def test_a_tree_lists_only_when_asked_and_leaves_folder_markers_out() -> None:
    fake = FakeS3()
    for key in ("m/1/", "m/1/saved_model.pb", "m/1/variables/variables.index", "m/2/x"):
        fake.put("bkt", key, b"x")
    tree = S3Tree(fake, "bkt", "m/1", {"saved_model.pb": Pin(version_id="v1")})
    tree.open("saved_model.pb")
    assert not any("List" in call for call in fake.calls)
    assert tree.names() == ["saved_model.pb", "variables/variables.index"]
    seen = tree.seen("saved_model.pb")
    assert seen is not None and seen.current is True
    assert tree.seen("variables/variables.index") is None


class Buggy:
    """A client whose call fails the way a bug does, not the way S3 does."""

    def get_object(self, **kwargs: object) -> None:
        raise KeyError("Body")


def test_a_bug_is_not_retried_as_an_outage() -> None:
    with pytest.raises(KeyError):
        S3Object(Buggy(), "bkt", "m.pb").read_at(0, 10)


def test_an_outage_is_transient_and_keeps_its_cause() -> None:
    from botocore.exceptions import EndpointConnectionError

    class Down:
        def get_object(self, **kwargs: object) -> None:
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1")

    with pytest.raises(TransientError) as error:
        S3Object(Down(), "bkt", "m.pb").read_at(0, 10)
    assert isinstance(error.value.__cause__, EndpointConnectionError)
