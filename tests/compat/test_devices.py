"""Nodes pinned to a device the consumer's session cannot place (worker.compat.devices)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.devices import device_type, unplaceable
from worker.formats.read import read_path
from worker.model.artifact import Artifact, Edge, Graph, NodeKind, PinnedDevice, VersionDef
from worker.model.consumer import Loader
from worker.model.findings import Code, FixKind, Stage
from worker.notify.fixes import fix_text


# How TensorFlow's device names read (DeviceNameUtils: full names and the legacy form).
@pytest.mark.parametrize(
    ("device", "kind"),
    [
        ("/device:GPU:0", "GPU"),
        ("/job:localhost/replica:0/task:0/device:GPU:1", "GPU"),
        ("/gpu:0", "GPU"),
        ("/cpu:0", "CPU"),
        ("/device:CPU:0", "CPU"),
        ("/job:worker/task:1", None),
        ("/device:TPU:0", "TPU"),
    ],
)
def test_device_type_reads_full_and_legacy_names(device: str, kind: str | None) -> None:
    assert device_type(device) == kind


# Which pins a consumer with or without a GPU can place.
@pytest.mark.parametrize(
    ("device", "gpu", "placeable"),
    [
        ("/device:GPU:0", False, False),
        ("/device:GPU:0", True, True),
        ("/device:CPU:0", False, True),
        ("/job:localhost/replica:0/task:0/device:CPU:0", False, True),
        ("/job:ps/task:0/device:CPU:0", True, False),  # another job: no such device here
        ("/device:TPU:0", True, False),
        ("/device:XLA_CPU:0", False, True),  # not judged
    ],
)
def test_a_pin_is_placeable_only_on_a_device_the_consumer_has(
    device: str, gpu: bool, placeable: bool
) -> None:
    assert (unplaceable(device, gpu) is None) is placeable


def _artifact(device: str) -> Artifact:
    kinds = (
        NodeKind("Placeholder", {"dtype": {"type": "DT_FLOAT"}}, 0, 1, "x"),
        NodeKind("Identity", {"T": {"type": "DT_FLOAT"}}, 1, 1, "y"),
    )
    graph = Graph(
        VersionDef(producer=1500),
        2,
        kinds,
        (Edge(0, 0, 1, 0),),
        devices=(PinnedDevice(device, "Identity", "y"),),
    )
    return Artifact("m.pb", "graphdef", 1, "0" * 64, graph=graph)


def test_a_gpu_pin_fails_a_cpu_only_graph_import_at_its_first_run() -> None:
    catalog = load_catalog()
    verdict = check_artifact(
        _artifact("/device:GPU:0"), catalog.consumer("2.15", Loader.GRAPH_IMPORT)
    )
    (finding,) = [f for f in verdict.findings if f.code == Code.DEVICE_UNAVAILABLE]
    assert finding.stage == Stage.REQUEST  # a frozen graph: nothing runs before the request
    assert finding.fix is not None and finding.fix.kind == FixKind.CLEAR_DEVICES
    assert verdict.loads is True and verdict.serves is False


def test_a_consumer_with_a_gpu_places_the_gpu_pin() -> None:
    catalog = load_catalog()
    consumer = replace(catalog.consumer("2.15", Loader.GRAPH_IMPORT), gpu=True)
    verdict = check_artifact(_artifact("/device:GPU:0"), consumer)
    assert not [f for f in verdict.findings if f.code == Code.DEVICE_UNAVAILABLE]


def test_a_cpu_pin_is_placed() -> None:
    catalog = load_catalog()
    verdict = check_artifact(_artifact("/cpu:0"), catalog.consumer("2.15", Loader.GRAPH_IMPORT))
    assert not [f for f in verdict.findings if f.code == Code.DEVICE_UNAVAILABLE]


# The reader keeps what real exports wrote (tests/fixtures/tf-devices, 1.15.5's Builder).
DEVICES = Path(__file__).resolve().parents[1] / "fixtures" / "tf-devices" / "artifacts"


def _pins(case: str) -> set[str]:
    (artifact,) = read_path(str(DEVICES / "tf1.15" / case))
    return {p.device for g in artifact.graphs() for p in g.devices}


def test_the_reader_keeps_the_devices_an_export_wrote() -> None:
    assert "/device:GPU:0" in _pins("gpu_model_ops")
    assert "/job:localhost/replica:0/task:0/device:GPU:0" in _pins("gpu_full_name")


def test_an_export_with_clear_devices_keeps_no_gpu_pin() -> None:
    assert not {d for d in _pins("gpu_cleared") if "GPU" in d.upper()}


def test_a_pin_inside_a_function_body_is_placed_softly() -> None:
    kinds = (NodeKind("Identity", {"T": {"type": "DT_FLOAT"}}, 1, 1, "y", "f"),)
    graph = Graph(
        VersionDef(producer=1500),
        0,
        kinds,
        (),
        functions=("f",),
        devices=(PinnedDevice("/device:GPU:0", "Identity", "y", "f"),),
    )
    artifact = Artifact("m.pb", "graphdef", 1, "0" * 64, graph=graph)
    verdict = check_artifact(artifact, load_catalog().consumer("2.15", Loader.GRAPH_IMPORT))
    assert not [f for f in verdict.findings if f.code == Code.DEVICE_UNAVAILABLE]


def test_the_fix_tells_to_re_export_with_devices_cleared() -> None:
    text = fix_text({"kind": "clear_devices"}, "tf-2.15")
    assert "clear_devices=True" in text and "tf-2.15" in text
