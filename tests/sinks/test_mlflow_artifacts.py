"""The artifact proxy as a Tree: listed recursively, read in aligned ranged blocks, and a
server that ignores Range sends the file once, never again per read."""

from __future__ import annotations

import pytest

from worker.errors import InvalidArtifact, NotFound
from worker.sinks.mlflow import BLOCK, ProxiedTree, proxied_path

DATA = bytes(range(256)) * (3 * BLOCK // 256 + 17)


class FakeProxy:
    """The two artifact calls, over an in-memory directory; counts what it sends."""

    def __init__(self, honours_range: bool = True) -> None:
        self.files = {"root/MLmodel": b"flavors: {}\n", "root/m/saved_model.pb": DATA}
        self.honours_range = honours_range
        self.gets: list[tuple[str, int, int]] = []
        self.lists: list[str] = []

    def list_artifacts(self, path: str) -> list[tuple[str, bool, int]]:
        self.lists.append(path)
        prefix = path.rstrip("/") + "/"
        children: dict[str, tuple[bool, int]] = {}
        for name, data in self.files.items():
            if name.startswith(prefix):
                head, _, rest = name[len(prefix) :].partition("/")
                children[head] = (bool(rest), 0 if rest else len(data))
        return [(name, is_dir, size) for name, (is_dir, size) in sorted(children.items())]

    def read_artifact(self, path: str, offset: int, length: int) -> tuple[bytes, bool]:
        self.gets.append((path, offset, length))
        data = self.files[path]
        if not self.honours_range:
            return data, False
        return data[offset : offset + length], True


def test_the_tree_lists_every_file_below_its_root() -> None:
    tree = ProxiedTree(FakeProxy(), "root")
    assert tree.names() == ["MLmodel", "m/saved_model.pb"]
    with pytest.raises(NotFound):
        tree.open("m/variables/variables.index")


def test_reads_fetch_aligned_blocks_and_reuse_them() -> None:
    proxy = FakeProxy()
    source = ProxiedTree(proxy, "root").open("m/saved_model.pb")
    assert source.read_at(BLOCK - 10, 20) == DATA[BLOCK - 10 : BLOCK + 10]
    assert source.read_at(BLOCK, 5) == DATA[BLOCK : BLOCK + 5]
    assert [offset for _, offset, _ in proxy.gets] == [0, BLOCK]


def test_a_server_without_ranges_sends_the_file_once() -> None:
    proxy = FakeProxy(honours_range=False)
    source = ProxiedTree(proxy, "root").open("m/saved_model.pb")
    assert source.read_at(2 * BLOCK + 3, 7) == DATA[2 * BLOCK + 3 : 2 * BLOCK + 10]
    assert source.read_at(0, 4) == DATA[:4]
    assert len(proxy.gets) == 1


def test_a_read_past_the_end_is_invalid() -> None:
    source = ProxiedTree(FakeProxy(), "root").open("MLmodel")
    with pytest.raises(InvalidArtifact):
        source.read_at(5, 100)


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("mlflow-artifacts:/0/abc/artifacts/model", "0/abc/artifacts/model"),
        ("mlflow-artifacts://host:5000/0/abc/artifacts/model", "0/abc/artifacts/model"),
        ("mlflow-artifacts:/1/models/m%20x/artifacts", "1/models/m x/artifacts"),
        ("s3://bucket/model", None),
        ("/mnt/models/model", None),
    ],
)
def test_proxied_paths(uri: str, path: str | None) -> None:
    assert proxied_path(uri) == path
