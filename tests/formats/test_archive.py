"""Archives: real model layouts come out intact; hostile archives get our error.

Archives are built here in memory with tarfile/zipfile around files real
TensorFlow wrote, plus the archives the fixture generator packed.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import re
import struct
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.errors import InvalidArtifact, LimitExceeded, UnsupportedArtifact
from worker.formats.archive import ArchiveLimits, is_archive, open_archive
from worker.formats.checkpoint import read_checkpoint_index
from worker.formats.source import BytesSource, FileSource

SHARED = Path(__file__).resolve().parents[1] / "fixtures" / "tf-base" / "artifacts"
LOCAL = Path(__file__).resolve().parents[1] / "fixtures" / "tf-real"
SMALL = ArchiveLimits(max_members=50, max_member_bytes=4 << 20, max_total_bytes=8 << 20)

Member = tuple[str, bytes]


def _saved_model(producer: str) -> list[Member]:
    root = SHARED / producer / "savedmodel_v2"
    return [
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    ]


def _tar(
    members: list[Member], mode: str = "w:gz", extra: tuple[tarfile.TarInfo, ...] = ()
) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=mode) as tar:  # type: ignore[call-overload]
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return out.getvalue()


def _zip(members: list[Member], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return out.getvalue()


def _open(data: bytes, limits: ArchiveLimits = SMALL) -> dict[str, bytes]:
    tree = open_archive(BytesSource("upload", data), limits=limits)
    return {name: tree.open(name).read_at(0, tree.open(name).size) for name in tree.names()}


def _tgz(members: list[Member]) -> bytes:
    return _tar(members, "w:gz")


def _plain_tar(members: list[Member]) -> bytes:
    return _tar(members, "w")


BUILDERS: dict[str, Callable[[list[Member]], bytes]] = {
    "tgz": _tgz,
    "tar": _plain_tar,
    "zip": _zip,
}


def _rejects(error: type[InvalidArtifact], data: bytes, match: str, **limits: int) -> None:
    lim = ArchiveLimits(**{**SMALL.__dict__, **limits})
    with pytest.raises(error, match=match) as caught:
        open_archive(BytesSource("upload", data), limits=lim)
    assert "\n" not in str(caught.value)


# --- Real layouts ------------------------------------------------------------------


@pytest.mark.parametrize("kind", BUILDERS)
def test_sagemaker_layout_comes_out_byte_for_byte(kind: str) -> None:
    model = _saved_model("tf2.12")
    members = _open(BUILDERS[kind]([(f"model/1/{name}", data) for name, data in model]))
    assert members == {f"model/1/{name}": data for name, data in model}


@pytest.mark.parametrize("kind", BUILDERS)
def test_serving_layout_keeps_every_version(kind: str) -> None:
    layout = [(f"m/1/{n}", d) for n, d in _saved_model("tf2.12")]
    layout += [(f"m/2/{n}", d) for n, d in _saved_model("tf2.21")]
    members = _open(BUILDERS[kind](layout))
    assert sorted(members) == sorted(name for name, _ in layout)


def test_member_is_a_source_other_readers_accept() -> None:
    tree = open_archive(
        BytesSource("model.tar.gz", _tgz([(f"model/1/{n}", d) for n, d in _saved_model("tf2.21")]))
    )
    index = tree.open("model/1/variables/variables.index")
    assert index.name == "model.tar.gz/model/1/variables/variables.index"
    assert read_checkpoint_index(index).versions.producer == 1


def test_dot_prefixes_and_repeated_slashes_are_normalised() -> None:
    members = _open(_tgz([("./model//1/./saved_model.pb", b"x")]))
    assert list(members) == ["model/1/saved_model.pb"]


def test_directories_are_skipped() -> None:
    folder = tarfile.TarInfo("model/1")
    folder.type = tarfile.DIRTYPE
    assert list(_open(_tar([("model/1/a", b"a")], extra=(folder,)))) == ["model/1/a"]


def _generated_archives() -> list[tuple[Path, list[str]]]:
    listing = LOCAL / "artifacts.json"
    if not listing.exists():
        return []
    found = []
    for artifact in json.loads(listing.read_text()):
        path = LOCAL / artifact.get("load_path", "")
        if artifact.get("archive_members") and path.is_file():
            found.append((path, sorted(artifact["archive_members"])))
    return found


@pytest.mark.parametrize(
    ("path", "expected"),
    _generated_archives(),
    ids=lambda v: "/".join(getattr(v, "parts", [])[-3:]),
)
def test_generated_fixture_archive_lists_its_members(path: Path, expected: list[str]) -> None:
    tree = open_archive(FileSource(path))
    assert tree.names() == expected
    assert tree.notes == ()


# --- Sniffing ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", BUILDERS)
def test_archives_are_recognised_by_their_bytes(kind: str) -> None:
    assert is_archive(BytesSource("model.pb", BUILDERS[kind]([("a", b"a")])))


def test_empty_zip_is_an_archive_with_no_members() -> None:
    empty = _zip([])
    assert empty.startswith(b"PK\x05\x06")
    assert is_archive(BytesSource("e.zip", empty))
    assert _open(empty) == {}


@pytest.mark.parametrize(
    "data", [b"", b"\x08\x01", (SHARED / "tf2.12/savedmodel_v2/saved_model.pb").read_bytes()]
)
def test_other_bytes_are_not_archives(data: bytes) -> None:
    assert not is_archive(BytesSource("x.tar.gz", data))
    with pytest.raises(UnsupportedArtifact, match=r"not a tar, tar.gz or zip"):
        open_archive(BytesSource("x.tar.gz", data))


def test_gzip_without_a_tar_inside_is_invalid() -> None:
    _rejects(InvalidArtifact, gzip.compress(b"just a file" * 100), "not a readable tar")


# --- Hostile names and member types --------------------------------------------


@pytest.mark.parametrize("kind", BUILDERS)
@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("../x", "'../x' climbs out"),
        ("model/../../x", "climbs out"),
        ("/etc/passwd", "'/etc/passwd' has an absolute path"),
        ("C:/Windows/x", "absolute path"),
        ("..\\x", "climbs out"),
    ],
)
def test_escaping_names_are_rejected(kind: str, name: str, match: str) -> None:
    _rejects(InvalidArtifact, BUILDERS[kind]([("ok", b"1"), (name, b"2")]), match)


@pytest.mark.parametrize(
    ("linktype", "match"),
    [(tarfile.SYMTYPE, "'evil' is a symlink to '/etc/passwd'"), (tarfile.LNKTYPE, "hard link")],
)
def test_tar_links_are_rejected(linktype: bytes, match: str) -> None:
    link = tarfile.TarInfo("evil")
    link.type = linktype
    link.linkname = "/etc/passwd"
    _rejects(InvalidArtifact, _tgz_with([link]), match)


@pytest.mark.parametrize("devtype", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_tar_devices_and_fifos_are_rejected(devtype: bytes) -> None:
    special = tarfile.TarInfo("dev")
    special.type = devtype
    _rejects(InvalidArtifact, _tgz_with([special]), "'dev' is a (device|FIFO)")


def _tgz_with(extra: list[tarfile.TarInfo]) -> bytes:
    return _tar([("model/saved_model.pb", b"x")], extra=tuple(extra))


def test_zip_symlink_is_rejected() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        link = zipfile.ZipInfo("evil")
        link.create_system = 3
        link.external_attr = (0o120777) << 16
        archive.writestr(link, "/etc/passwd")
    _rejects(InvalidArtifact, out.getvalue(), "'evil' is a symlink")


@pytest.mark.parametrize("kind", BUILDERS)
def test_duplicate_names_after_normalisation_are_rejected(kind: str) -> None:
    data = BUILDERS[kind]([("m/a", b"1"), ("./m//a", b"2")])
    _rejects(InvalidArtifact, data, "'m/a' appears twice")


@pytest.mark.parametrize("kind", BUILDERS)
def test_name_used_as_file_and_directory_is_rejected(kind: str) -> None:
    _rejects(
        InvalidArtifact,
        BUILDERS[kind]([("m", b"1"), ("m/a", b"2")]),
        "'m/a' is used both as a file and as a directory",
    )


def test_encrypted_zip_member_is_rejected() -> None:
    data = bytearray(_zip([("secret", b"x")], zipfile.ZIP_STORED))
    data[6] |= 0x1  # general-purpose flags, local header
    data[data.index(b"PK\x01\x02") + 8] |= 0x1  # and central directory
    _rejects(InvalidArtifact, bytes(data), "'secret' is encrypted")


def test_zip_with_bzip2_members_is_unsupported() -> None:
    _rejects(UnsupportedArtifact, _zip([("a", b"a")], zipfile.ZIP_BZIP2), "re-create the zip")


# --- Nested archives -----------------------------------------------------------------


@pytest.mark.parametrize("kind", BUILDERS)
def test_nested_archives_are_skipped_with_a_note(kind: str) -> None:
    inner = [("inner/file", b"data")]
    data = BUILDERS[kind](
        [
            ("model/1/saved_model.pb", b"\x08\x01"),
            ("a.zip", _zip(inner)),
            ("b.tgz", _tgz(inner)),
            ("c.tar", _plain_tar(inner)),
        ]
    )
    tree = open_archive(BytesSource("upload", data), limits=SMALL)
    assert tree.names() == ["model/1/saved_model.pb"]
    assert tree.notes == tuple(
        f"skipped {name}: an archive inside the archive is not opened"
        for name in ("a.zip", "b.tgz", "c.tar")
    )


# --- Caps ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", BUILDERS)
def test_too_many_members_is_refused(kind: str) -> None:
    data = BUILDERS[kind]([(f"f{i}", b"") for i in range(12)])
    _rejects(LimitExceeded, data, "more than 10 members|lists 12 members", max_members=10)


@pytest.mark.parametrize("kind", BUILDERS)
def test_member_larger_than_the_cap_is_refused(kind: str) -> None:
    data = BUILDERS[kind]([("big", bytes(range(256)) * 64)])
    _rejects(
        LimitExceeded, data, "'big' is 16384 bytes, more than the 10000", max_member_bytes=10_000
    )


@pytest.mark.parametrize("kind", BUILDERS)
def test_members_larger_than_the_total_cap_are_refused(kind: str) -> None:
    data = BUILDERS[kind]([(f"f{i}", bytes(range(256)) * 16) for i in range(4)])
    _rejects(
        LimitExceeded,
        data,
        "members exceed 10000 bytes in total \\(at 'f2'\\)",
        max_total_bytes=10_000,
    )


BOMB = bytes(64 << 20)  # compresses about 1000:1


def _inflated_before_stopping(message: str) -> int:
    match = re.search(r"\((\d+) bytes from \d+, at member 'zeros'\)", message)
    assert match is not None, message
    return int(match.group(1))


def test_gzip_bomb_stops_early_at_the_ratio_cap() -> None:
    bomb = _tar([("zeros", BOMB)], "w:gz")
    limits = ArchiveLimits(max_member_bytes=1 << 40, max_total_bytes=1 << 40)
    with pytest.raises(LimitExceeded, match="expands more than 200:1") as caught:
        open_archive(BytesSource("bomb", bomb), limits=limits)
    assert _inflated_before_stopping(str(caught.value)) <= 200 * len(bomb) + (1 << 20)


def test_zip_bomb_stops_at_the_ratio_cap() -> None:
    limits = ArchiveLimits(max_member_bytes=1 << 40, max_total_bytes=1 << 40)
    bomb = _zip([("zeros", BOMB)])
    with pytest.raises(LimitExceeded, match="expands more than 200:1") as caught:
        open_archive(BytesSource("bomb", bomb), limits=limits)
    assert _inflated_before_stopping(str(caught.value)) <= 200 * len(bomb) + (1 << 20)


def test_small_archives_may_expand_beyond_the_ratio() -> None:
    assert _open(_tgz([("zeros", bytes(100_000))]))["zeros"] == bytes(100_000)


def test_zip_directory_larger_than_the_member_cap_allows_is_refused() -> None:
    data = _zip([("x" * 10_000 + str(i), b"") for i in range(3)])
    _rejects(LimitExceeded, data, "central directory is .* too large for 3 members", max_members=3)


# --- Truncation and corruption ----------------------------------------------------


@pytest.mark.parametrize("kind", BUILDERS)
@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9])
def test_truncated_archive_is_invalid(kind: str, keep: float) -> None:
    model = [(f"m/1/{n}", d) for n, d in _saved_model("tf2.12")]
    data = BUILDERS[kind](model)
    # A plain tar ends in zero padding whose loss loses nothing: cut into members.
    content = sum(512 + -(-len(d) // 512) * 512 for _, d in model) if kind == "tar" else len(data)
    _rejects(InvalidArtifact, data[: int(content * keep)], "truncated|not a readable|corrupt")


def test_tar_cut_at_a_member_boundary_is_invalid() -> None:
    data = _plain_tar([("a", b"x" * 512), ("b", b"y" * 512)])
    _rejects(InvalidArtifact, data[:2048], "no end-of-archive block")


def test_gzip_with_a_bad_checksum_is_invalid() -> None:
    data = bytearray(_tgz([("a", b"hello")]))
    data[-8] ^= 0xFF  # the CRC32 in the gzip trailer
    _rejects(InvalidArtifact, bytes(data), "corrupt gzip stream")


# --- Strange but valid, and headers that disagree -----------------------------------


@pytest.mark.parametrize("cuts", [[0.5], [0.2, 0.7], [0.0, 1.0]])
def test_tar_gz_of_several_gzip_members_reads_whole(cuts: list[float]) -> None:
    # One tar stream, gzipped in pieces and concatenated (what `gzip -d`, GNU tar and
    # parallel compressors treat as one stream); empty members included.
    model = [(f"model/1/{n}", d) for n, d in _saved_model("tf2.21")]
    tar = _plain_tar(model)
    points = [0, *(int(len(tar) * c) for c in cuts), len(tar)]
    data = b"".join(gzip.compress(tar[a:b]) for a, b in itertools.pairwise(points))
    assert _open(data) == dict(model)


def test_concatenated_gzip_members_still_check_each_trailer() -> None:
    tar = _plain_tar([("a", b"x" * 4000)])
    second = bytearray(gzip.compress(tar[2048:]))
    second[-8] ^= 0xFF
    _rejects(InvalidArtifact, gzip.compress(tar[:2048]) + bytes(second), "corrupt gzip stream")


def _zip_with_local_header(change: Callable[[bytearray], None]) -> bytes:
    data = bytearray(_zip([("model/saved_model.pb", b"graph bytes " * 20)]))
    change(data)  # the first local header starts at offset 0
    return bytes(data)


def _set(offset: int, fmt: str, value: int) -> Callable[[bytearray], None]:
    return lambda data: struct.pack_into(fmt, data, offset, value)


def test_zip_as_written_passes_the_local_header_check() -> None:
    assert list(_open(_zip_with_local_header(lambda _: None))) == ["model/saved_model.pb"]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d.__setitem__(slice(30, 35), b"other"), "local header names it|differ"),
        (_set(8, "<H", zipfile.ZIP_STORED), "compression 0"),
        (_set(18, "<I", 5), "says 5 bytes compressed"),
        (_set(22, "<I", 7), "7 uncompressed"),
        (_set(14, "<I", 0xDEADBEEF), "CRC deadbeef"),
    ],
    ids=["name", "method", "compressed-size", "size", "crc"],
)
def test_zip_whose_local_header_disagrees_with_the_directory_is_invalid(
    change: Callable[[bytearray], None], match: str
) -> None:
    _rejects(InvalidArtifact, _zip_with_local_header(change), match)


# --- Anything in, a tree or our error out ------------------------------------------

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SAMPLES = [
    build([("m/1/saved_model.pb", b"\x08\x01" * 40), ("m/1/v", b"v")])
    for build in BUILDERS.values()
]


def _open_or_our_error(data: bytes) -> None:
    try:
        open_archive(BytesSource("fuzz", data), limits=SMALL)
    except InvalidArtifact as exc:
        assert "\n" not in str(exc)


@FUZZ
@given(st.binary(max_size=2048))
def test_any_bytes_give_a_tree_or_our_error(data: bytes) -> None:
    _open_or_our_error(data)


@FUZZ
@given(st.sampled_from([b"\x1f\x8b\x08", b"PK\x03\x04", b"PK\x05\x06"]), st.binary(max_size=1024))
def test_any_bytes_behind_archive_magic_give_a_tree_or_our_error(magic: bytes, rest: bytes) -> None:
    _open_or_our_error(magic + rest)


@FUZZ
@given(
    st.sampled_from(SAMPLES),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(1, 255)), max_size=6),
    st.integers(0, 1 << 16),
)
def test_damaged_archives_give_a_tree_or_our_error(
    sample: bytes, flips: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(sample)
    for position, mask in flips:
        data[position % len(data)] ^= mask
    _open_or_our_error(bytes(data[: len(data) - cut % len(data)]))
