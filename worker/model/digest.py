"""A short content digest of JSON-shaped data: equal data, equal digest.

Used to key verdicts on what they depend on (a consumer, a fleet) and to name
messages; stable across processes and runs (sorted keys, no wall-clock).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]
