"""What one GitHub event does: check the models a commit touches, as ONE check run.

`check_commit` finds the files that matter at the head commit, checks them
against the fleet, and writes the `tf-compat` check run: `in_progress` first,
then `completed` with its conclusion, the models x consumers matrix and the
annotations, 50 per request (GitHub's limit; later requests append).

Files that matter:
- model files in the repository, by the same globs as uploads
  (TFCOMPAT_MODEL_PATTERNS: `*.pb`, `saved_model.pb`, archives, ...), read
  from the contents API (Git LFS pointers are reported as not checked);
- model pointers: `*.tfmodel` text files naming an object in the store, read
  with the worker's S3 credentials. The format: one `s3://bucket/key` line
  (a key ending in `/` is a prefix, e.g. a SavedModel directory); blank lines
  and lines starting with `#` are ignored;
- the fleet file (TFCOMPAT_GITHUB_FLEET_PATH, `config/fleet.yaml`): when the
  change edits it, the new fleet is loaded from the head commit (manifests it
  names too), the repository's own models are checked against it file by file,
  and the impact analysis re-checks every model in the index: a model that
  would become unloadable fails the check. A fleet file that does not load
  fails the check on its line.

Without a pull request (a check suite re-run on a branch), every model and
pointer in the repository at that commit is checked.

A run left `in_progress` by a task that died is reused by its retry; a re-run
requested on GitHub gets a new run, as GitHub expects.
"""

from __future__ import annotations

import contextlib
import fnmatch
import posixpath
import re
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
import yaml

from worker.compat.report import artifact_report
from worker.errors import (
    ConfigError,
    InvalidArtifact,
    NotFound,
    SourceRefused,
    TfcompatError,
    TransientError,
)
from worker.fleet.checker import Checker
from worker.fleet.fleet import load_fleet, load_yaml
from worker.fleet.impact import Impact
from worker.formats.read import read_source
from worker.formats.source import BytesSource
from worker.github.checkrun import CheckedFile, CheckOutput, check_output, config_error_output
from worker.github.ports import ChecksClient
from worker.model.artifact import Artifact
from worker.model.github import GithubJob

log = structlog.get_logger(__name__)

CHECK_NAME = "tf-compat"
POINTER_SUFFIX = ".tfmodel"
ANNOTATIONS_PER_REQUEST = 50
LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"

ReadPointer = Callable[[str], list[Artifact]]
"""Artifacts of the s3:// object or prefix a pointer names."""


def pointer_target(text: bytes, path: str) -> str:
    """The s3:// URL in a pointer file; InvalidArtifact if it holds anything else."""
    try:
        lines = [line.strip() for line in text.decode().splitlines()]
    except UnicodeDecodeError:
        raise InvalidArtifact(f"{path}: a model pointer is UTF-8 text") from None
    urls = [line for line in lines if line and not line.startswith("#")]
    if len(urls) != 1 or not re.fullmatch(r"s3://[^/\s]+/\S*", urls[0]):
        raise InvalidArtifact(f"{path}: a model pointer holds one s3://bucket/key line")
    return urls[0]


def is_model_path(path: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def wanted(paths: Sequence[str], patterns: Sequence[str], fleet_path: str) -> list[str]:
    """Model files and pointers among `paths`, in order; the fleet file is not a model."""
    return [
        p
        for p in paths
        if p != fleet_path and (p.endswith(POINTER_SUFFIX) or is_model_path(p, patterns))
    ]


def changed_paths(job: GithubJob, client: ChecksClient) -> list[str] | None:
    """Files the job's pull requests add or change; None without a pull request."""
    if not job.pull_numbers:
        return None
    paths: list[str] = []
    for number in job.pull_numbers:
        for changed in client.changed_files(job.repository, number):
            if changed.status != "removed" and changed.path not in paths:
                paths.append(changed.path)
    return paths


def models_for_fleet_change(
    job: GithubJob, client: ChecksClient, patterns: Sequence[str], fleet_path: str
) -> list[str]:
    """The repository's own models a fleet change is checked against, file by file.

    Every other model checked so far is covered by the impact analysis
    (`fleet_impact`), which re-checks the whole index from stored metadata."""
    return wanted(client.tree(job.repository, job.head_sha), patterns, fleet_path)


def fleet_from_head(
    job: GithubJob, client: ChecksClient, fleet_path: str, checker: Checker
) -> tuple[Checker, dict[str, tuple[str, int]]]:
    """The fleet file (and the manifests it names) at the head commit, and the line of
    each consumer in it. ConfigError names the repository path and line at fault."""
    text = client.read_file(job.repository, fleet_path, job.head_sha)
    with tempfile.TemporaryDirectory(prefix="tfcompat-fleet-") as tmp:
        local = Path(tmp) / fleet_path
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(text)
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            data = {}
        for entry in (data.get("consumers") if isinstance(data, dict) else None) or []:
            manifest = entry.get("manifest") if isinstance(entry, dict) else None
            if isinstance(manifest, str) and not posixpath.isabs(manifest):
                name = posixpath.normpath(posixpath.join(posixpath.dirname(fleet_path), manifest))
                if name.startswith(".."):
                    raise ConfigError(
                        f"{fleet_path}: manifest {manifest} is outside the repository"
                    )
                target = Path(tmp) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(NotFound):  # load_fleet names the consumer then
                    target.write_bytes(client.read_file(job.repository, name, job.head_sha))
        try:
            fleet = load_fleet(local, checker.catalog)
            raw = load_yaml(local)
        except ConfigError as exc:
            raise ConfigError(
                str(exc).replace(str(local), fleet_path).replace(tmp + "/", "")
            ) from None
    lines = {
        str(e.get("name")): (fleet_path, int(e.get("__line__", 1)))
        for e in raw.get("consumers") or []
        if isinstance(e, dict)
    }
    new = Checker(
        fleet.consumers, fleet.policy, checker.catalog, f"{fleet_path}@{job.head_sha[:7]}"
    )
    return new, lines


def read_target(
    job: GithubJob, client: ChecksClient, path: str, read_pointer: ReadPointer
) -> tuple[list[Artifact], str | None, str | None]:
    """(artifacts, the s3:// URL a pointer names, why it could not be read)."""
    data = client.read_file(job.repository, path, job.head_sha)
    source = None
    try:
        if path.endswith(POINTER_SUFFIX):
            source = pointer_target(data, path)
            return read_pointer(source), source, None
        if data.startswith(LFS_POINTER):
            return [], None, "a Git LFS pointer; commit a .tfmodel pointer to the stored model"
        return read_source(BytesSource(path, data), path), None, None
    except (InvalidArtifact, NotFound, SourceRefused) as exc:
        return [], source, str(exc)


def check_files(
    job: GithubJob,
    client: ChecksClient,
    paths: Sequence[str],
    checker: Checker,
    read_pointer: ReadPointer,
) -> list[CheckedFile]:
    releases = checker.catalog.range_consumers()
    files = []
    for path in paths:
        artifacts, source, error = read_target(job, client, path, read_pointer)
        reports = tuple(
            artifact_report(a, checker.consumers, releases, checker.catalog, checker.policy)
            for a in artifacts
        )
        files.append(CheckedFile(path, reports, source, error))
    return files


FleetImpact = Callable[[Checker], Impact]
"""The impact of a proposed fleet on every indexed model (worker.pipeline.impact_run)."""


def impact_markdown(impact: Impact, limit: int = 20) -> str:
    """The impact section of a fleet-change check run."""
    lines = [
        "",
        "### Impact on every model checked so far",
        f"{impact.examined} indexed model(s) re-checked from stored metadata "
        f"({impact.checks} check(s) for {', '.join(impact.rechecked) or 'no changed consumer'}).",
    ]
    if not impact.models:
        lines.append("No model changes verdict.")
    for changed in impact.models[:limit]:
        moves = ", ".join(
            f"`{c.consumer}` {c.before or 'new'} → {c.after or 'removed'}" for c in changed.changes
        )
        lines.append(
            f"- `{changed.model.location}`: {changed.model.status} → "
            f"{changed.status_after} ({moves})"
        )
    if len(impact.models) > limit:
        lines.append(f"- … and {len(impact.models) - limit} more (`tfcompat fleet impact`).")
    return "\n".join(lines)


def evaluate(
    job: GithubJob,
    client: ChecksClient,
    checker: Checker,
    *,
    fleet_path: str,
    patterns: Sequence[str],
    read_pointer: ReadPointer,
    fleet_impact: FleetImpact | None = None,
) -> CheckOutput:
    changed = changed_paths(job, client)
    fleet_changed = changed is not None and fleet_path in changed
    lines: dict[str, tuple[str, int]] = {}
    if fleet_changed:
        try:
            checker, lines = fleet_from_head(job, client, fleet_path, checker)
        except ConfigError as exc:
            found = re.search(rf"{re.escape(fleet_path)}:(\d+)", str(exc))
            return config_error_output(fleet_path, int(found.group(1)) if found else 1, str(exc))
    direct = wanted(changed, patterns, fleet_path) if changed is not None else []
    others: list[str] = []
    if changed is None:
        others = wanted(client.tree(job.repository, job.head_sha), patterns, fleet_path)
    elif fleet_changed:
        others = [
            p for p in models_for_fleet_change(job, client, patterns, fleet_path) if p not in direct
        ]
    checked = check_files(job, client, direct, checker, read_pointer)
    rest = check_files(job, client, others, checker, read_pointer)
    context = (
        f"Checked at `{job.head_sha[:7]}` against {len(checker.consumers)} consumers of "
        f"`{checker.fleet_source or 'the catalog'}`"
        + (" (the fleet file changed in this pull request)" if fleet_changed else "")
        + "."
    )
    columns = [(c.name, c.tensorflow) for c in checker.consumers]
    output = check_output([*checked, *rest], columns, context)
    # Models this change did not touch are annotated on the fleet file's consumer lines.
    annotations = check_output(checked, columns, context).annotations
    annotations += check_output(rest, columns, context, lines or None).annotations
    conclusion, summary = output.conclusion, output.summary
    if fleet_changed and fleet_impact is not None:
        impact = fleet_impact(checker)
        summary += impact_markdown(impact)
        if impact.breaking:
            conclusion = "failure"  # the new fleet would stop loading models already in use
    return CheckOutput(conclusion, output.title, summary, annotations)


def start_run(job: GithubJob, client: ChecksClient, now: datetime) -> int:
    if not job.rerequested:
        existing = client.find_check_run(job.repository, job.head_sha, CHECK_NAME)
        if existing is not None and existing.status != "completed":
            client.update_check_run(job.repository, existing.id, status="in_progress")
            return existing.id
    return client.create_check_run(job.repository, job.head_sha, CHECK_NAME, now)


def finish_run(
    job: GithubJob, client: ChecksClient, run_id: int, output: CheckOutput, now: datetime
) -> None:
    batches = [
        output.annotations[i : i + ANNOTATIONS_PER_REQUEST]
        for i in range(0, len(output.annotations), ANNOTATIONS_PER_REQUEST)
    ] or [[]]
    client.update_check_run(
        job.repository,
        run_id,
        status="completed",
        conclusion=output.conclusion,
        completed_at=now,
        output=output.output(batches[0]),
    )
    for batch in batches[1:]:
        client.update_check_run(job.repository, run_id, output=output.output(batch))


def check_commit(
    job: GithubJob,
    client: ChecksClient,
    checker: Checker,
    *,
    fleet_path: str,
    patterns: Sequence[str],
    read_pointer: ReadPointer,
    fleet_impact: FleetImpact | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> CheckOutput:
    """Check the commit and record the result as the `tf-compat` check run.

    TransientError propagates (the task retries, and the retry reuses the run
    left in progress); any other failure completes the run as `neutral`
    saying what went wrong, so a pull request never waits on a check forever."""
    run_id = start_run(job, client, now())
    try:
        output = evaluate(
            job,
            client,
            checker,
            fleet_path=fleet_path,
            patterns=patterns,
            read_pointer=read_pointer,
            fleet_impact=fleet_impact,
        )
    except TransientError:
        raise
    except TfcompatError as exc:
        log.error("github.check_failed", repository=job.repository, error=str(exc))
        output = CheckOutput("neutral", "tf-compat could not check this commit", str(exc))
    finish_run(job, client, run_id, output, now())
    log.info(
        "github.checked",
        repository=job.repository,
        head_sha=job.head_sha,
        conclusion=output.conclusion,
        annotations=len(output.annotations),
    )
    return output


def describe(output: CheckOutput) -> dict[str, Any]:
    return {
        "conclusion": output.conclusion,
        "title": output.title,
        "annotations": len(output.annotations),
    }
