"""The releases that load an artifact, as compact ranges.

Pure over a list of (release, loads) in release order: consecutive loading
releases merge into one range, a release that does not load (a bad_consumers
entry, a deprecation, a removed op) splits it. A range that runs to the newest
release known is open-ended (`2.16.0-2.21.x`): later patches of that minor
keep its GraphDef version and op registry.
"""

from __future__ import annotations

from collections.abc import Sequence

from worker.model.consumer import minor


def compress(outcomes: Sequence[tuple[str, bool]]) -> list[str]:
    """[(version, loads)] in ascending order -> ['2.16.0-2.21.x', ...]."""
    ranges: list[str] = []
    start: str | None = None
    previous: str | None = None
    for version, loads in outcomes:
        if loads and start is None:
            start = version
        if not loads and start is not None:
            ranges.append(_render(start, previous or start, open_end=False))
            start = None
        previous = version
    if start is not None and previous is not None:
        ranges.append(_render(start, previous, open_end=True))
    return ranges


def _render(start: str, end: str, *, open_end: bool) -> str:
    last = f"{minor(end)}.x" if open_end else end
    return start if start == end and not open_end else f"{start}-{last}"


def tag_value(ranges: Sequence[str]) -> str:
    """The S3 tag form: ranges joined by '+', or 'none' (S3 allows +, -, . and letters)."""
    return "+".join(ranges) if ranges else "none"
