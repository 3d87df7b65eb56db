"""TensorFlow's VersionDef rule, for graphs and checkpoints.

A consumer accepts data iff `consumer >= data.min_consumer`,
`data.producer >= consumer.min_producer` and `consumer not in
data.bad_consumers` (TensorFlow's `CheckVersions`). The messages follow
TensorFlow's own so people recognise them; the fix is data (`Fix`).
"""

from __future__ import annotations

from worker.model.artifact import VersionDef
from worker.model.findings import Code, Finding, Fix, FixKind, error


def check_versions(
    data: VersionDef,
    consumer_version: int,
    min_producer: int,
    *,
    what: str = "GraphDef",
    upgrade_target: str | None = None,
) -> list[Finding]:
    """Every VersionDef condition the consumer fails (empty: it accepts).

    `upgrade_target`: the oldest known release that accepts the data (the report
    replaces it by the oldest that also serves the model)."""
    refused = (
        consumer_version < data.min_consumer
        or data.producer < min_producer
        or consumer_version in data.bad_consumers
    )
    if not refused:
        return []  # the common answer, asked for every (model, consumer) of a fleet
    graph = what == "GraphDef"
    upgrade = Fix(FixKind.UPGRADE_TO, release=upgrade_target)
    findings = []
    if consumer_version < data.min_consumer:
        findings.append(
            error(
                Code.MIN_CONSUMER if graph else Code.CHECKPOINT_VERSION,
                f"{what} min consumer version {data.min_consumer} above current version "
                f"{consumer_version}",
                fix=upgrade,
            )
        )
    if data.producer < min_producer:
        findings.append(
            error(
                Code.MIN_PRODUCER if graph else Code.CHECKPOINT_VERSION,
                f"{what} producer version {data.producer} below min producer {min_producer} "
                "supported by this consumer",
                fix=Fix(FixKind.REEXPORT_WITH),
            )
        )
    if consumer_version in data.bad_consumers:
        findings.append(
            error(
                Code.BAD_CONSUMER if graph else Code.CHECKPOINT_VERSION,
                f"{what} disallows consumer version {consumer_version}: the producer marked "
                "this version as likely buggy",
                fix=upgrade,
            )
        )
    return findings
