"""The GitHub port: what the checks feature needs of GitHub, and an in-memory adapter.

The real adapter (PyGithub) is `sinks.github.GitHubChecks`; `MemoryChecks` serves
unit tests of the checks logic without HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from worker.errors import NotFound


@dataclass(frozen=True)
class ChangedFile:
    path: str
    status: str  # added | modified | removed | renamed | copied | changed | unchanged


@dataclass(frozen=True)
class CheckRunRef:
    id: int
    status: str  # queued | in_progress | completed


class ChecksClient(Protocol):
    def changed_files(self, repo: str, pull_number: int) -> list[ChangedFile]: ...

    def tree(self, repo: str, sha: str) -> list[str]:
        """Every file path in the commit."""
        ...

    def read_file(self, repo: str, path: str, ref: str) -> bytes:
        """A file's bytes at a commit; NotFound if it is not there."""
        ...

    def find_check_run(self, repo: str, head_sha: str, name: str) -> CheckRunRef | None:
        """The newest check run of that name on the commit, if any."""
        ...

    def create_check_run(self, repo: str, head_sha: str, name: str, started_at: datetime) -> int:
        """A new run, `in_progress`; its id."""
        ...

    def update_check_run(self, repo: str, run_id: int, **fields: Any) -> None:
        """PATCH the run (status, conclusion, completed_at, output with annotations)."""
        ...


@dataclass
class MemoryChecks:
    """A ChecksClient over dicts, for unit tests of the orchestration."""

    files: dict[str, bytes] = field(default_factory=dict)  # path -> content at head
    changed: list[ChangedFile] = field(default_factory=list)
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    updates: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    def changed_files(self, repo: str, pull_number: int) -> list[ChangedFile]:
        return list(self.changed)

    def tree(self, repo: str, sha: str) -> list[str]:
        return sorted(self.files)

    def read_file(self, repo: str, path: str, ref: str) -> bytes:
        if path not in self.files:
            raise NotFound(f"{repo}/{path}@{ref}: not found")
        return self.files[path]

    def find_check_run(self, repo: str, head_sha: str, name: str) -> CheckRunRef | None:
        for run_id in sorted(self.runs, reverse=True):
            run = self.runs[run_id]
            if run["head_sha"] == head_sha and run["name"] == name:
                return CheckRunRef(run_id, run["status"])
        return None

    def create_check_run(self, repo: str, head_sha: str, name: str, started_at: datetime) -> int:
        run_id = len(self.runs) + 1
        self.runs[run_id] = {"name": name, "head_sha": head_sha, "status": "in_progress"}
        return run_id

    def update_check_run(self, repo: str, run_id: int, **fields: Any) -> None:
        self.runs[run_id].update({k: v for k, v in fields.items() if k != "output"})
        self.updates.append((run_id, fields))
