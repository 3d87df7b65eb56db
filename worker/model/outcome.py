"""What processing one object event did, for tasks, metrics and notifications."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from worker.model.artifact import Artifact


@dataclass(frozen=True)
class Outcome:
    action: str  # "checked" | "stale" | "gone" | "removed"
    status: str | None = None
    report: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    dropped_tags: tuple[str, ...] = ()
    document: dict[str, Any] | None = None
    tags_changed: bool = False
    report_written: bool = False  # False: the same report was stored already
    object_tags: dict[str, str] = field(default_factory=dict)  # the object's tags, ours merged
    current: bool | None = None  # the version read is the object's current one; None: unknown
    object_metadata: dict[str, str] | None = None  # its user metadata, read with it; None: unknown
    # what was checked, as read (the report's metadata describes the same); None: not held
    artifacts: tuple[Artifact, ...] | None = None
