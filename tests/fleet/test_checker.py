"""The fleet digest: a worker re-checks the index when, and only when, a verdict could move."""

from __future__ import annotations

import json
from pathlib import Path

from worker.catalog.catalog import load_catalog
from worker.fleet.checker import Checker
from worker.fleet.fleet import load_fleet

CATALOG = load_catalog()
MANIFEST = {
    "format": "tfcompat-manifest/1",
    "tensorflow": {"version": "2.12.1"},
    "graph_def_version": {"producer": 1395, "min_consumer": 0, "min_producer": 0},
    "checkpoint_version": {"producer": 1},
    "ops": [{"name": "Const"}],
}


def fleet_digest(tmp_path: Path, text: str) -> str:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    fleet = load_fleet(path, CATALOG)
    return Checker(fleet.consumers, fleet.policy, CATALOG, str(path)).fleet_digest


BASE = "consumers:\n  - {name: a, tensorflow: '2.12'}\n"


def test_the_same_fleet_gives_the_same_digest(tmp_path: Path) -> None:
    assert fleet_digest(tmp_path, BASE) == fleet_digest(tmp_path, BASE)


def test_a_policy_only_edit_changes_the_digest(tmp_path: Path) -> None:
    banned = BASE + "policy:\n  bad_consumers:\n    - {tensorflow: '2.12.1', reason: leaks}\n"
    assert fleet_digest(tmp_path, banned) != fleet_digest(tmp_path, BASE)


def test_a_manifest_redumped_at_the_same_path_changes_the_digest(tmp_path: Path) -> None:
    fleet = "consumers:\n  - {name: custom, manifest: m.json}\n"
    (tmp_path / "m.json").write_text(json.dumps(MANIFEST))
    before = fleet_digest(tmp_path, fleet)
    redumped = {**MANIFEST, "ops": [{"name": "Const"}, {"name": "MyCustomOp"}]}
    (tmp_path / "m.json").write_text(json.dumps(redumped))
    assert fleet_digest(tmp_path, fleet) != before


def test_a_loader_change_changes_the_digest(tmp_path: Path) -> None:
    v2 = "consumers:\n  - {name: a, tensorflow: '2.12', loader: saved-model-v2}\n"
    assert fleet_digest(tmp_path, v2) != fleet_digest(tmp_path, BASE)
