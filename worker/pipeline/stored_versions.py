"""A registered version's stored report as the input of its next check.

A fleet change re-tags S3 objects from the metadata the index holds; a registered
MLflow version or SageMaker package has no index entry, but its report holds the
same metadata (each artifact's `metadata`, `inspect_json` of what was read), and
its place is known before anything is read (`pipeline.registered.report_place`).
`stored_model` turns such a report back into the artifacts and where they were
found, so the check judges them against the new fleet without reading the model
again, and writes the very report and tags a re-read would (the report's bytes
depend only on the version and the verdict).

A report stands for a re-read only when nothing it was made from can have changed:
it is of the current format, about this registry, server, name and version, made
from the source the registry names now (a version deleted and registered again
under the same number has another source), and every artifact in it was read
(an invalid or unreadable model is read again: its error may have been transient,
and its report holds no metadata). Anything else is None: the caller reads the
model, as a webhook's check does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from worker.model.artifact import Artifact, artifact_from_json
from worker.model.registry import RegistryJob
from worker.redact import strip_userinfo
from worker.registries.mlmodel import Target
from worker.sinks.reports import REPORT_FORMAT

log = structlog.get_logger(__name__)


def stored_model(
    document: Mapping[str, Any] | None,
    job: RegistryJob,
    server: str,
    uri: str,
    extra: Mapping[str, Any] | None = None,
) -> tuple[list[Artifact], Target] | None:
    """The artifacts and target the stored report `document` of `job` holds, or None
    when it cannot stand for reading the model at `uri` again (missing, of another
    format or version, from another source, or with an artifact not read).
    `extra`: further `model_version` fields that must match (a SageMaker package's
    `image`)."""
    reason = _unusable(document, job, server, uri, extra or {})
    if reason is not None:
        log.info("registry.report_not_reused", registry=job.registry, reason=reason)
        return None
    assert document is not None
    described = document["model_version"]
    try:
        artifacts = [artifact_from_json(a["metadata"]) for a in document["artifacts"]]
    except (KeyError, TypeError, ValueError, AssertionError, AttributeError) as exc:
        log.info("registry.report_not_reused", registry=job.registry, reason=f"metadata: {exc}")
        return None
    target = Target(str(described["artifact"]), False, str(described["found_by"]))
    return artifacts, target


def _unusable(
    document: Mapping[str, Any] | None,
    job: RegistryJob,
    server: str,
    uri: str,
    extra: Mapping[str, Any],
) -> str | None:
    """Why `document` cannot stand for a re-read; None when it can."""
    if not isinstance(document, Mapping):
        return "no report stored"
    if document.get("format") != REPORT_FORMAT:
        return f"report format {document.get('format')!r}, not {REPORT_FORMAT}"
    described = document.get("model_version")
    if not isinstance(described, Mapping):
        return "not a registered version's report"
    expected = {
        "registry": job.registry,
        "server": server,
        "name": job.name,
        "version": job.version,
        "artifact_uri": strip_userinfo(uri),
        **extra,
    }
    for name, value in expected.items():
        if described.get(name) != value:
            return f"model_version.{name} differs"
    if not isinstance(described.get("artifact"), str) or not isinstance(
        described.get("found_by"), str
    ):
        return "no artifact recorded"
    artifacts = document.get("artifacts")
    if not isinstance(artifacts, list) or not artifacts:
        return "no artifacts"
    for artifact in artifacts:
        if not isinstance(artifact, Mapping) or not isinstance(artifact.get("metadata"), dict):
            return "an artifact without metadata"
        if artifact.get("error") is not None or artifact.get("status") == "invalid":
            return "an artifact not read"
    return None
