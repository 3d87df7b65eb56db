"""Where a report lives and what it holds.

One report per artifact version: the `check --json` document of each artifact
in the object plus its metadata, the event that caused it and the tags
written. The content depends only on the object version, the fleet and the
catalog (no wall-clock time), so a redelivered task writes the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from worker.model.events import ObjectEvent

REPORT_FORMAT = "tfcompat-report/1"


def report_key(prefix: str, event: ObjectEvent) -> str:
    """`<prefix><bucket>/<key>/<version or "latest">.json`; unversioned objects keep one."""
    version = event.version_id or "latest"
    return f"{prefix}{event.bucket}/{event.key}/{version}.json"


def encode(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode()
