"""Where a report lives and what it holds.

One report per object version: the `check --json` document of each artifact
in the object plus its metadata, the object version it is about and the tags
we mean to write. Its bytes depend only on the object version and the verdict
(the fleet and catalog that made it): not on which delivery of which event
caused it, nor on the clock. A duplicate delivery thus makes the same bytes,
and the store skips writing them again.

The tag `tfcompat:report` holds the report's key, and must lead to it: a tag
value allows only letters, digits, spaces and `+ - = . _ : / @`, at most 256
characters. A key that yields such a report key keeps the readable name
`<prefix><bucket>/<key>/<version or "latest">.json`; any other (parentheses,
commas, `%`, `..` segments, a long key) is named by the digest of the key,
`<prefix><bucket>/<sha256 of key>.<version or "latest">.json`, and the report
says which object it is about (`object.key`). The two forms cannot collide:
a readable name always has a '/' after the bucket's, a digest name never.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

from worker.model.events import ObjectEvent
from worker.sinks.tags import MAX_VALUE

REPORT_FORMAT = "tfcompat-report/2"
# The ASCII part of what S3 allows in a tag value: what every S3-compatible store takes.
_TAG_SAFE = re.compile(r"[A-Za-z0-9 +\-=._:/@]*")


def tag_safe_key(key: str) -> bool:
    """Whether a key can be a tag value as it is, and names one object unambiguously
    (no empty, '.' or '..' path segment that a proxy or SDK might normalise away)."""
    return (
        len(key) <= MAX_VALUE
        and _TAG_SAFE.fullmatch(key) is not None
        and not any(part in ("", ".", "..") for part in key.split("/"))
    )


def report_key(prefix: str, event: ObjectEvent) -> str:
    """The readable `<prefix><bucket>/<key>/<version>.json` when it can be a tag value,
    else `<prefix><bucket>/<sha256(key)>.<version>.json`."""
    version = event.version_id or "latest"
    readable = f"{prefix}{event.bucket}/{event.key}/{version}.json"
    if tag_safe_key(readable):
        return readable
    digest = hashlib.sha256(event.key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{prefix}{event.bucket}/{digest}.{version}.json"


def report_tag(key: str) -> str | None:
    """The `tfcompat:report` value for a report key: the key itself, or None when even
    the digest name cannot be one (a report prefix or version id outside the tag
    alphabet): no tag is better than one that leads nowhere."""
    return key if tag_safe_key(key) else None


def encode(document: dict[str, Any]) -> bytes:
    """Canonical bytes (sorted keys, indented): equal documents, equal bytes."""
    options = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    return orjson.dumps(document, option=options) + b"\n"
