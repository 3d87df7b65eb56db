"""Compatible ranges, table-driven."""

from __future__ import annotations

import pytest

from worker.compat.ranges import compress, tag_value

CASES = [
    # nothing loads
    ([("2.4.4", False), ("2.12.1", False)], []),
    # a suffix loads: open-ended at the newest release
    ([("2.4.4", False), ("2.16.0", True), ("2.21.0", True)], ["2.16.0-2.21.x"]),
    # only the newest loads
    ([("2.12.1", False), ("2.21.0", True)], ["2.21.0-2.21.x"]),
    # a hole (bad_consumers, a deprecation) splits the range
    (
        [("2.12.1", True), ("2.15.1", False), ("2.18.1", True), ("2.21.0", True)],
        ["2.12.1", "2.18.1-2.21.x"],
    ),
    # a closed range: removed ops stop loading in new releases
    ([("1.15.5", True), ("2.4.4", True), ("2.12.1", False)], ["1.15.5-2.4.4"]),
    ([], []),
]


@pytest.mark.parametrize(("outcomes", "expected"), CASES)
def test_compress(outcomes: list[tuple[str, bool]], expected: list[str]) -> None:
    assert compress(outcomes) == expected


def test_tag_value_uses_only_characters_s3_allows() -> None:
    import re

    value = tag_value(["2.12.1", "2.18.1-2.21.x"])
    assert value == "2.12.1+2.18.1-2.21.x"
    assert re.fullmatch(r"[\w .:/=+\-@]*", value)
    assert tag_value([]) == "none"
