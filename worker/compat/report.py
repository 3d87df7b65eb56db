"""The per-artifact result document (`check --json`, the stored report).

Shape fixed by DESIGN.md "Contracts":
{"path", "format", "status", "error", "consumers": [...], "compatible_releases", "min_release"}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from worker.compat.check import History, check_artifact, status_of
from worker.compat.policy import Policy
from worker.compat.ranges import compress
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.verdict import Verdict

INVALID = "invalid"


def release_outcomes(
    artifact: Artifact, releases: Sequence[Consumer], history: History | None
) -> list[tuple[str, bool]]:
    """(release, loads) for every catalog release, ascending."""
    outcomes = []
    for consumer in releases:
        assert consumer.tensorflow is not None
        verdict = check_artifact(artifact, consumer, history)
        outcomes.append((consumer.tensorflow, verdict.loads))
    return outcomes


def artifact_report(
    artifact: Artifact,
    consumers: Sequence[Consumer],
    releases: Sequence[Consumer],
    history: History | None = None,
    policy: Policy | None = None,
) -> dict[str, Any]:
    verdicts: list[Verdict] = [check_artifact(artifact, c, history, policy) for c in consumers]
    outcomes = release_outcomes(artifact, releases, history)
    loading = [version for version, loads in outcomes if loads]
    status = status_of(verdicts)
    if not consumers and not loading:
        status = "incompatible"
    return {
        "path": artifact.path,
        "format": artifact.format,
        "status": status,
        "error": None,
        "consumers": [v.to_json() for v in verdicts],
        "compatible_releases": compress(outcomes),
        "min_release": loading[0] if loading else None,
    }


def invalid_report(path: str, error: str, format: str = "unknown") -> dict[str, Any]:
    return {
        "path": path,
        "format": format,
        "status": INVALID,
        "error": error,
        "consumers": [],
        "compatible_releases": [],
        "min_release": None,
    }


def exit_status(reports: Sequence[dict[str, Any]]) -> int:
    """0: every consumer loads every artifact; 1: some cannot; 2: invalid input."""
    if any(r["status"] == INVALID for r in reports):
        return 2
    if any(r["status"] == "incompatible" for r in reports):
        return 1
    return 0
