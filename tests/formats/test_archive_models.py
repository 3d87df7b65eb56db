"""Models inside archives: every SavedModel version reported, data shards never kept."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

from tests.truth import SHARED
from worker.formats.archive import open_archive
from worker.formats.read import is_model_file, read_source
from worker.formats.source import BytesSource

MODEL = SHARED / "artifacts/tf2.21/savedmodel_v2"


def _tar(layout: dict[str, Path], extra: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for prefix, root in layout.items():
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    tar.add(path, arcname=f"{prefix}/{path.relative_to(root).as_posix()}")
        for name, data in (extra or {}).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_tf_serving_layout_reports_each_version() -> None:
    blob = _tar({"mymodel/1": MODEL, "mymodel/2": SHARED / "artifacts/tf2.12/savedmodel_v2"})
    artifacts = read_source(BytesSource("model.tar.gz", blob), "model.tar.gz")
    assert [a.path for a in artifacts] == ["model.tar.gz/mymodel/1", "model.tar.gz/mymodel/2"]
    assert [a.meta_graphs[0].tensorflow_version for a in artifacts] == ["2.21.0", "2.12.1"]
    assert all(a.checkpoint is not None for a in artifacts)


def test_data_shards_are_counted_but_not_kept() -> None:
    shard = os.urandom(8 << 20)  # stands in for a large variables.data shard (incompressible)
    blob = _tar({"model/1": MODEL}, {"model/1/variables/variables.data-00001-of-00002": shard})
    tree = open_archive(BytesSource("m.tgz", blob), wanted=is_model_file)
    kept = {n: tree.open(n) for n in tree.names()}
    big = kept["model/1/variables/variables.data-00001-of-00002"]
    assert big.size == len(shard)
    assert not isinstance(big, BytesSource)
    assert isinstance(kept["model/1/saved_model.pb"], BytesSource)
    (artifact,) = read_source(BytesSource("m.tgz", blob), "m.tgz")
    assert artifact.format == "savedmodel"


def test_zip_holding_a_savedmodel() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(MODEL.rglob("*")):
            if path.is_file():
                archive.write(path, f"export/{path.relative_to(MODEL).as_posix()}")
    (artifact,) = read_source(BytesSource("m.zip", buffer.getvalue()), "m.zip")
    assert artifact.path == "m.zip/export"
    assert artifact.meta_graphs[0].has_object_graph
