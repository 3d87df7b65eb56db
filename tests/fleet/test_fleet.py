"""Fleet files: consumers resolved through the catalog or manifests; errors point at lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.truth import OWN
from worker.catalog.catalog import load_catalog
from worker.errors import ConfigError, UnknownRelease
from worker.fleet.fleet import load_fleet
from worker.model.consumer import Loader


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return path


def test_fleet_resolves_releases_and_loaders(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
consumers:
  - name: serving-prod
    environment: prod
    owners: [ranking]
    tensorflow: "2.15"
  - name: batch
    serving: "2.12.1"
    loader: saved-model-v2
policy:
  bad_consumers:
    - tensorflow: "2.12.1"
      reason: "leaks memory"
""",
    )
    fleet = load_fleet(path, load_catalog())
    serving, batch = fleet.consumers
    assert (serving.tensorflow, serving.graph_def_version, serving.owners) == (
        "2.15.1",
        1645,
        ("ranking",),
    )
    assert batch.loader == Loader.SAVED_MODEL_V2
    assert fleet.policy.banned(1395) is not None


def test_manifest_consumer(tmp_path: Path) -> None:
    manifest = tmp_path / "m.json"
    manifest.write_text(
        json.dumps(
            {
                "format": "tfcompat-manifest/1",
                "tensorflow": {"version": "2.12.1"},
                "graph_def_version": {"producer": 1395, "min_consumer": 0, "min_producer": 0},
                "checkpoint_version": {"producer": 1},
                "ops": [{"name": "Const"}],
            }
        )
    )
    path = write(tmp_path, "consumers:\n  - name: custom\n    manifest: m.json\n")
    (consumer,) = load_fleet(path, load_catalog()).consumers
    assert consumer.registry is not None and set(consumer.registry.ops) == {"Const"}


ERRORS = [
    # unknown release, with the line of its entry
    ("consumers:\n  - name: a\n    tensorflow: '2.99'\n", UnknownRelease, r"fleet.yaml:2: .*2\.99"),
    # duplicate names
    (
        "consumers:\n  - name: a\n    tensorflow: '2.12'\n  - name: a\n    tensorflow: '2.15'\n",
        ConfigError,
        r"fleet.yaml:4: duplicate consumer name a \(first at .*fleet.yaml:2\)",
    ),
    # missing manifest
    (
        "consumers:\n  - name: a\n    manifest: nope.json\n",
        ConfigError,
        r"fleet.yaml:2: .*manifest not found",
    ),
    # no source, two sources
    ("consumers:\n  - name: a\n", ConfigError, r"fleet.yaml:2: .*exactly one of"),
    (
        "consumers:\n  - {name: a, tensorflow: '2.12', manifest: x.json}\n",
        ConfigError,
        "exactly one of",
    ),
    # unknown loader
    (
        "consumers:\n  - name: a\n    tensorflow: '2.12'\n    loader: onnx\n",
        ConfigError,
        r"fleet.yaml:2: unknown loader 'onnx'",
    ),
    # a ban without a reason
    (
        "consumers:\n  - {name: a, tensorflow: '2.12'}\npolicy:\n  bad_consumers:\n"
        "    - tensorflow: '2.4'\n",
        ConfigError,
        r"fleet.yaml:5: a banned release needs a reason",
    ),
    # not YAML, empty
    ("consumers: [\n", ConfigError, "not valid YAML"),
    ("", ConfigError, "no consumers"),
]


@pytest.mark.parametrize(("text", "error", "pattern"), ERRORS)
def test_fleet_errors_point_at_the_line(
    tmp_path: Path, text: str, error: type[Exception], pattern: str
) -> None:
    with pytest.raises(error, match=pattern):
        load_fleet(write(tmp_path, text), load_catalog())


def test_the_example_fleet_in_config_is_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    fleet = load_fleet(root / "config" / "fleet.yaml", load_catalog())
    assert len(fleet.consumers) >= 3
    assert OWN.parent.exists()


def test_a_consumer_declares_the_keras_objects_it_registers(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "consumers:\n  - name: a\n    tensorflow: '2.15'\n"
        "    custom_objects: [MyLayer, 'Tfc>Scale2', my_loss]\n",
    )
    (consumer,) = load_fleet(path, load_catalog()).consumers
    assert consumer.custom_objects == ("MyLayer", "Tfc>Scale2", "my_loss")


def test_custom_objects_must_be_a_list_of_names(tmp_path: Path) -> None:
    path = write(
        tmp_path, "consumers:\n  - name: a\n    tensorflow: '2.15'\n    custom_objects: x\n"
    )
    with pytest.raises(ConfigError, match="custom_objects must be a list"):
        load_fleet(path, load_catalog())


# same_answer: strict, per consumer and for the whole fleet
def test_same_answer_strict_is_read_per_consumer_and_for_the_fleet(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "consumers:\n  - {name: a, tensorflow: '2.15', same_answer: strict}\n"
        "  - {name: b, tensorflow: '2.15'}\n",
    )
    fleet = load_fleet(path, load_catalog())
    assert [c.same_answer_strict for c in fleet.consumers] == [True, False]
    assert fleet.policy.same_answer_strict is False
    path = write(
        tmp_path, "consumers:\n  - {name: a, tensorflow: '2.15'}\npolicy:\n  same_answer: strict\n"
    )
    assert load_fleet(path, load_catalog()).policy.same_answer_strict is True


def test_same_answer_takes_warn_or_strict_only(tmp_path: Path) -> None:
    path = write(tmp_path, "consumers:\n  - {name: a, tensorflow: '2.15', same_answer: error}\n")
    with pytest.raises(ConfigError, match=r"fleet.yaml:2: same_answer is warn or strict"):
        load_fleet(path, load_catalog())
