"""TensorFlow's VersionDef rule, table-driven."""

from __future__ import annotations

import pytest

from worker.compat.versions import check_versions
from worker.model.artifact import VersionDef
from worker.model.findings import Code

CASES = [
    # (producer, min_consumer, bad_consumers), consumer, min_producer -> expected codes
    # accepted: the usual case, and the edges of each condition
    ((1395, 0, ()), 2474, 0, []),
    ((2474, 0, ()), 1395, 0, []),  # forward in time: versions alone allow it
    ((1395, 1395, ()), 1395, 0, []),  # min_consumer equal to the consumer
    ((21, 0, ()), 1395, 21, []),  # producer equal to min_producer
    # min_consumer above the consumer
    ((2474, 1396, ()), 1395, 0, [Code.MIN_CONSUMER]),
    ((2474, 12, ()), 11, 0, [Code.MIN_CONSUMER]),
    # producer below the consumer's min_producer
    ((20, 0, ()), 1395, 21, [Code.MIN_PRODUCER]),
    # the consumer is banned
    ((2474, 0, (1645,)), 1645, 0, [Code.BAD_CONSUMER]),
    ((2474, 0, (1644, 1646)), 1645, 0, []),
    # all three at once: every condition reported, none hides another
    ((5, 2000, (1395,)), 1395, 21, [Code.MIN_CONSUMER, Code.MIN_PRODUCER, Code.BAD_CONSUMER]),
]


@pytest.mark.parametrize(("data", "consumer", "min_producer", "expected"), CASES)
def test_graph_version_rule(
    data: tuple[int, int, tuple[int, ...]], consumer: int, min_producer: int, expected: list[Code]
) -> None:
    findings = check_versions(VersionDef(*data), consumer, min_producer)
    assert [f.code for f in findings] == expected


def test_checkpoint_versions_use_the_checkpoint_code() -> None:
    findings = check_versions(VersionDef(2, 2, ()), 1, 0, what="Checkpoint")
    assert [f.code for f in findings] == [Code.CHECKPOINT_VERSION]
    assert "Checkpoint min consumer version 2 above current version 1" in findings[0].message


def test_messages_read_like_tensorflows() -> None:
    (finding,) = check_versions(VersionDef(2474, 1500, ()), 1395, 0)
    assert finding.message.startswith(
        "GraphDef min consumer version 1500 above current version 1395"
    )
