"""Fleet entries say which Keras and Python a consumer runs, and the unsafe-ops policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.errors import ConfigError
from worker.fleet.digests import consumer_digest
from worker.fleet.fleet import load_fleet
from worker.model.findings import Severity


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return path


def test_keras_and_python_are_declared_or_derived_from_the_release(tmp_path: Path) -> None:
    fleet = load_fleet(
        write(
            tmp_path,
            """
consumers:
  - {name: keras3, tensorflow: "2.18", keras: "3.6", python: "3.11"}
  - {name: keras2, tensorflow: "2.15"}
  - {name: tfs, serving: "2.15"}
policy:
  unsafe_ops: error
""",
        ),
        load_catalog(),
    )
    declared, derived, serving = fleet.consumers
    assert (declared.keras, declared.python, declared.tf_serving) == ("3.6", "3.11", False)
    assert (derived.keras, derived.python) == ("2.15", None)
    assert serving.tf_serving and not derived.tf_serving
    assert fleet.policy.unsafe_ops == Severity.ERROR


def test_a_declared_keras_changes_the_consumer_digest_and_a_derived_one_does_not() -> None:
    from dataclasses import replace

    consumer = load_catalog().consumer("2.18")
    assert consumer_digest(consumer) == consumer_digest(replace(consumer, keras="3.5"))
    assert consumer_digest(consumer) != consumer_digest(replace(consumer, keras="3.6"))
    assert consumer_digest(consumer) != consumer_digest(replace(consumer, python="3.11"))


# What the entry gets wrong, and where.
@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("consumers:\n  - {name: a, tensorflow: '2.18', python: 3.10}\n", "python as a string"),
        ("consumers:\n  - {name: a, tensorflow: '2.18', keras: three}\n", "keras must be a"),
        ("consumers:\n  - {name: a, tensorflow: '2.18'}\npolicy:\n  unsafe_ops: loud\n",
         "unsafe_ops is warning or error"),
    ],
)  # fmt: skip
def test_bad_keras_entries_are_config_errors(tmp_path: Path, text: str, pattern: str) -> None:
    with pytest.raises(ConfigError, match=pattern):
        load_fleet(write(tmp_path, text), load_catalog())


def test_a_gpu_consumer_runs_ops_whose_kernels_are_gpu_only(tmp_path: Path) -> None:
    """`gpu: true` reaches the kernel rule: an op a table has GPU kernels for only is a
    `kernel.missing` error for the CPU build, and no error for the GPU consumer."""
    from dataclasses import replace

    from worker.compat.kernels import kernel_gap
    from worker.model.artifact import NodeKind

    fleet = load_fleet(
        write(
            tmp_path,
            "consumers:\n  - {name: gpu, tensorflow: '2.21', gpu: true}\n"
            "  - {name: cpu, tensorflow: '2.21'}\n",
        ),
        load_catalog(),
    )
    gpu, cpu = fleet.consumers
    assert (gpu.gpu, cpu.gpu) == (True, False)
    assert consumer_digest(gpu) != consumer_digest(cpu)
    kind = NodeKind("GpuOnly", {}, 0, 1, "g")
    table = {"GpuOnly": {"GPU": ((),)}}
    assert kernel_gap(kind, None, table, cpu.gpu) is not None
    assert kernel_gap(kind, None, table, gpu.gpu) is None
    with pytest.raises(ConfigError, match="gpu must be true or false"):
        load_fleet(
            write(tmp_path, "consumers:\n  - {name: a, tensorflow: '2.21', gpu: 1}\n"),
            load_catalog(),
        )
    assert replace(cpu, gpu=True).gpu
