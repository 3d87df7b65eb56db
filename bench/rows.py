"""The one line a bench script prints per result, so `make bench` can put every script's
results in one table without knowing anything else about the script.

    bench-row {"work": ..., "figure": ..., "reference": ..., "goal": ..., "met": ...}

`figure` and `reference` are short texts measured in the same run (ratios where
absolute times vary with load); `met` is true, false, or null when the script
could not tell (a skipped row says why in `figure`). Scripts print whatever else
they like; `tools/run_bench.py` passes it through and gathers these lines.
Importing this module is optional: printing the same line is the whole contract.
"""

from __future__ import annotations

import json

PREFIX = "bench-row "


def row(
    work: str, figure: str, reference: str = "", goal: str = "", met: bool | None = None
) -> None:
    """Print one result row (and flush: the runner streams output as it comes)."""
    document = {"work": work, "figure": figure, "reference": reference, "goal": goal, "met": met}
    print(PREFIX + json.dumps(document), flush=True)
