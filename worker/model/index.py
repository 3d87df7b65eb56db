"""One model version as the model index keeps it: enough to re-judge it.

The stored metadata plus each consumer's state and the digest of the consumer
at check time, so a fleet change re-checks only what it could move.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from worker.model.artifact import Artifact


@dataclass(frozen=True)
class ReleaseVerdicts:
    """What every catalog release (its default loader) did with the object when it was
    checked: a fleet change that adds such a consumer takes its verdict from here.

    `digest` names the releases judged (their definitions, in order): the record
    holds only while the catalog's are the same. `runs`: (state, index into `errors`
    or None, how many releases) over the releases in ascending order; `errors`: the
    first error messages (at most five) of a failing release, each distinct list
    once."""

    digest: str
    runs: tuple[tuple[str, int | None, int], ...]
    errors: tuple[tuple[str, ...], ...] = ()
    # beside each of `errors`, its first error finding's code and fix (`Fix.to_json`'s
    # items, sorted; () without a fix), as `fleet plan` groups failures; empty in records
    # written before they were kept
    causes: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()

    def at(self, position: int) -> tuple[str, tuple[str, ...]] | None:
        """(state, error messages) of the release at `position`; None past the end."""
        for state, error, count in self.runs:
            if position < count:
                return state, self.errors[error] if error is not None else ()
            position -= count
        return None

    def cause_at(self, position: int) -> tuple[str, tuple[tuple[str, str], ...]] | None:
        """(code, fix) of the first error of the release at `position`; None when it has
        none or the record does not keep causes."""
        for _, error, count in self.runs:
            if position < count:
                if error is None or len(self.causes) != len(self.errors):
                    return None
                return self.causes[error]
            position -= count
        return None


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
    releases: ReleaseVerdicts | None = None  # None: not recorded (an older report)
    # Each consumer's cell as its report showed it, for the fleet page's matrix:
    # (consumer, state, code, message) (`worker.sinks.matrix`). Read from a report, never
    # stored in the entry: a model decoded from the index has none.
    cells: tuple[tuple[str, str, str | None, str | None], ...] = field(default=(), compare=False)

    @property
    def location(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    @property
    def invalid(self) -> bool:
        return self.status == "invalid"
