"""TensorFlow's VersionDef rule, for graphs and checkpoints.

A consumer accepts data iff `consumer >= data.min_consumer`,
`data.producer >= consumer.min_producer` and `consumer not in
data.bad_consumers` (TensorFlow's `CheckVersions`). The messages follow
TensorFlow's own so people recognise them.
"""

from __future__ import annotations

from worker.model.artifact import VersionDef
from worker.model.findings import Code, Finding, error


def check_versions(
    data: VersionDef,
    consumer_version: int,
    min_producer: int,
    *,
    what: str = "GraphDef",
    consumer_label: str = "",
    upgrade_hint: str = "",
) -> list[Finding]:
    """Every VersionDef condition the consumer fails (empty: it accepts)."""
    label = f" ({consumer_label})" if consumer_label else ""
    hint = f" {upgrade_hint}" if upgrade_hint else ""
    findings = []
    if consumer_version < data.min_consumer:
        findings.append(
            error(
                Code.MIN_CONSUMER if what == "GraphDef" else Code.CHECKPOINT_VERSION,
                f"{what} min consumer version {data.min_consumer} above current version "
                f"{consumer_version}{label}: upgrade TensorFlow.{hint}",
            )
        )
    if data.producer < min_producer:
        findings.append(
            error(
                Code.MIN_PRODUCER if what == "GraphDef" else Code.CHECKPOINT_VERSION,
                f"{what} producer version {data.producer} below min producer {min_producer} "
                f"supported by this consumer{label}: regenerate the {what.lower()} with a newer "
                "TensorFlow.",
            )
        )
    if consumer_version in data.bad_consumers:
        findings.append(
            error(
                Code.BAD_CONSUMER if what == "GraphDef" else Code.CHECKPOINT_VERSION,
                f"{what} disallows consumer version {consumer_version}{label}: the producer "
                f"marked this version as likely buggy; upgrade TensorFlow.{hint}",
            )
        )
    return findings
