"""One model version as the model index keeps it: enough to re-judge it.

The stored metadata plus each consumer's state and the digest of the consumer
at check time, so a fleet change re-checks only what it could move.
"""

from __future__ import annotations

from dataclasses import dataclass

from worker.model.artifact import Artifact


@dataclass(frozen=True)
class IndexedModel:
    """One object version as the index keeps it."""

    bucket: str
    key: str
    version_id: str | None
    report_bucket: str
    report_key: str
    status: str
    artifacts: tuple[Artifact, ...]
    verdicts: dict[str, str]  # consumer name -> loads | at-risk | fails
    consumer_digests: dict[str, str]  # consumer name -> digest at check time
    compatible_releases: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()

    @property
    def location(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    @property
    def invalid(self) -> bool:
        return self.status == "invalid"
