"""Readers against real TensorFlow-written files: what we read is what TF wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.truth import FIXTURE_SETS, read_artifacts
from worker.model.artifact import Artifact, artifact_from_json


def _entries() -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for fixture_set in FIXTURE_SETS:
        for entry in json.loads((fixture_set / "artifacts.json").read_text()):
            found.append((fixture_set, entry))
    return found


ENTRIES = _entries()


def _read(fixture_set: Path, entry: dict[str, Any]) -> list[Artifact]:
    """The entry's artifacts (a real model from the cache, fetched when absent)."""
    return list(read_artifacts(fixture_set, entry["id"]))


@pytest.mark.parametrize(
    ("fixture_set", "entry"), ENTRIES, ids=[f"{s.parent.parent.name}:{e['id']}" for s, e in ENTRIES]
)
def test_reader_agrees_with_what_tensorflow_wrote(fixture_set: Path, entry: dict[str, Any]) -> None:
    artifacts = _read(fixture_set, entry)
    summary = entry.get("summary") or {}
    artifact = artifacts[0]
    if entry["format"] == "checkpoint":
        assert artifact.checkpoint is not None
        assert artifact.checkpoint.versions.producer == 1
        expected = entry.get("variables")
        if expected:
            assert set(artifact.checkpoint.entries) == set(expected)
            for key, shape in expected.items():
                assert list(artifact.checkpoint.entries[key][1]) == shape
        return
    graphs = artifact.graphs()
    assert graphs
    if summary.get("versions"):
        v = graphs[0].versions
        assert v is not None
        assert (v.producer, v.min_consumer, list(v.bad_consumers)) == (
            summary["versions"]["producer"],
            summary["versions"]["min_consumer"],
            summary["versions"]["bad_consumers"],
        )
    if summary.get("ops_used"):
        ours = {k.op for g in graphs for k in g.kinds if k.op not in g.functions}
        assert ours == set(summary["ops_used"])
    if artifact.meta_graphs:
        meta = artifact.meta_graphs[0]
        if summary.get("tensorflow_version"):
            assert meta.tensorflow_version == summary["tensorflow_version"]
        if summary.get("stripped_default_attrs") is not None:
            assert meta.stripped_default_attrs == summary["stripped_default_attrs"]
        for expected_meta in entry.get("meta_graphs", [])[:1]:
            assert meta.graph.node_count == expected_meta["n_nodes"]
            assert len(meta.graph.functions) == expected_meta["n_library_functions"]
            assert meta.has_object_graph == expected_meta["has_object_graph_def"]
            assert set(meta.signatures) == set(expected_meta.get("signature_keys", []))
    elif entry.get("graph"):
        assert graphs[0].node_count == entry["graph"]["n_nodes"]


@pytest.mark.parametrize(
    ("fixture_set", "entry"),
    ENTRIES[:40],
    ids=[f"{s.parent.parent.name}:{e['id']}" for s, e in ENTRIES[:40]],
)
def test_metadata_round_trips_through_json(fixture_set: Path, entry: dict[str, Any]) -> None:
    for artifact in _read(fixture_set, entry):
        text = json.dumps(artifact.to_json())
        assert artifact_from_json(json.loads(text)) == artifact
