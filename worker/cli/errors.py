"""What the command line says when it is used wrongly."""

from __future__ import annotations

import sys

from worker.errors import TfcompatError


class UsageError(TfcompatError):
    """Bad command-line arguments."""


def _fail(message: str) -> int:
    print(f"tfcompat: error: {message}", file=sys.stderr)
    return 2
