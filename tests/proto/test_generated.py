"""The committed generated modules are exactly what the pinned protoc writes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _gen_proto_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_proto", ROOT / "tools" / "gen_proto.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_proto"] = module
    spec.loader.exec_module(module)
    return module


def test_regenerating_the_proto_modules_changes_nothing(tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools")
    written = _gen_proto_module().generate(tmp_path)
    assert written
    for fresh in written:
        committed = ROOT / "worker" / "proto" / fresh.name
        assert committed.read_text() == fresh.read_text(), (
            f"{committed.name} is stale: run python tools/gen_proto.py"
        )


def test_field_numbers_match_tensorflow() -> None:
    from worker.proto import tensorflow_subset_pb2 as pb

    # A few numbers every reader depends on, from TensorFlow's own .proto files.
    assert pb.GraphDef.DESCRIPTOR.fields_by_name["versions"].number == 4
    assert pb.GraphDef.DESCRIPTOR.fields_by_name["library"].number == 2
    assert pb.NodeDef.DESCRIPTOR.fields_by_name["attr"].number == 5
    assert (
        pb.MetaGraphDef.MetaInfoDef.DESCRIPTOR.fields_by_name["stripped_default_attrs"].number == 7
    )
    assert pb.OpDef.DESCRIPTOR.fields_by_name["deprecation"].number == 8
    assert pb.BundleHeaderProto.DESCRIPTOR.fields_by_name["version"].number == 3
    assert pb.DataType.Value("DT_BFLOAT16") == 14
    assert pb.DataType.Value("DT_INT64_REF") == 109
