"""Text-format and version edge cases: a clear error or TensorFlow's reading, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.truth import OWN, SHARED
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.errors import InvalidArtifact, LimitExceeded
from worker.formats.read import read_path
from worker.formats.text_fields import check_field_names


def _nested(depth: int) -> str:
    """A Const whose attr nests `depth` func-valued attrs (three messages a level)."""
    body = 'func { name: "f" attr { key: "k" value { ' * depth + "i: 1" + " } } }" * depth
    return f'node {{ name: "n" op: "Const" attr {{ key: "k" value {{ {body} }} }} }}\n'


def test_a_text_graph_nested_past_protobufs_limit_is_refused_by_name(tmp_path: Path) -> None:
    # Python's text parser takes it; the binary form exceeds protobuf's depth of 100,
    # where TensorFlow's own parser refuses it too.
    path = tmp_path / "deep.pbtxt"
    path.write_text(_nested(50))
    with pytest.raises(LimitExceeded, match=r"deep\.pbtxt: graph nested more deeply"):
        read_path(str(path))


def test_a_text_graph_within_the_limit_reads(tmp_path: Path) -> None:
    path = tmp_path / "shallow.pbtxt"
    path.write_text(_nested(20))
    (artifact,) = read_path(str(path))
    assert artifact.graph is not None and artifact.graph.node_count == 1


def test_the_largest_producer_is_checked_without_a_date(tmp_path: Path) -> None:
    path = tmp_path / "big.pbtxt"
    path.write_text('versions { producer: 2147483647 }\nnode { name: "a" op: "NoOp" }\n')
    (artifact,) = read_path(str(path))
    catalog = load_catalog()
    assert catalog.producer_date(2**31 - 1) is None
    verdict = check_artifact(artifact, catalog.consumer("2.15"), catalog)
    assert verdict.serves  # TensorFlow accepts any producer; the forward window is info
    assert [f.code for f in verdict.findings] == ["version.forward-window"]


def test_the_deprecated_version_field_is_ignored_as_tensorflow_ignores_it(
    tmp_path: Path,
) -> None:
    # graph.proto: "this field is entirely ignored"; without `versions` the producer is 0
    path = tmp_path / "old.pbtxt"
    path.write_text('version: 21\nnode { name: "a" op: "NoOp" }\n')
    (artifact,) = read_path(str(path))
    assert artifact.graph is not None and artifact.graph.versions is not None
    assert artifact.graph.versions.producer == 0


# Field names: TensorFlow 2.5's loader refused a saved_model.pbtxt whose NodeDef held
# `nmae` ('Message type "tensorflow.NodeDef" has no field named "nmae"') and loaded the
# same file holding `experimental_debug_info`, a field our proto subset leaves out.
@pytest.mark.parametrize(
    ("field", "refused"),
    [
        ('nmae: "x"', True),
        ('experimental_debug_info { original_node_names: "x" }', False),
        ("experimental_debug_info { no_such_field: 1 }", True),
    ],
)
def test_a_field_no_tensorflow_has_is_refused_as_tensorflow_refuses_it(
    tmp_path: Path, field: str, refused: bool
) -> None:
    path = tmp_path / "graph.pbtxt"
    path.write_text(f'node {{ name: "a" op: "NoOp" {field} }}\nversions {{ producer: 1882 }}\n')
    if refused:
        with pytest.raises(InvalidArtifact, match="TensorFlow's text parser refuses it"):
            read_path(str(path))
    else:
        (artifact,) = read_path(str(path))
        assert artifact.graph is not None and artifact.graph.node_count == 1


def test_every_text_fixture_names_only_fields_tensorflow_has() -> None:
    texts = sorted([*SHARED.rglob("*.pbtxt"), *OWN.rglob("*.pbtxt")])
    assert texts
    for path in texts:
        root = "SavedModel" if path.name == "saved_model.pbtxt" else "GraphDef"
        check_field_names(path.read_text(), root, str(path))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \n{}<>[]:;,-\"'abnode_xyz0123456789.", max_size=200))
def test_the_field_name_walk_ends_on_any_text(text: str) -> None:
    try:
        check_field_names(text, "GraphDef", "any.pbtxt")
    except InvalidArtifact as exc:
        assert "has no field named" in str(exc)
