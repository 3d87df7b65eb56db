"""One fleet-change preview, or the fleet's upgrade plan, assessed in a process of its
own (`python -m worker.cli.preview_run`), which the preview task starts under a memory
limit.

Reads the job on stdin: a change (`{"add": [[name|null, spec]], "remove": [name]}`, as
`worker.ui.preview_form.change_of` makes it), or `{"kind": "plan"}` for `tfcompat
fleet plan` over the settings' fleet file. Writes the page's view on stdout as JSON
(`{"result": {...}}` or `{"error": "..."}`), and nothing else (logs go to stderr), and
exits 0, or 1 with an error. Reading
only: the index is read, nothing is written anywhere.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import orjson

LISTED = 200  # changed models a preview lists on the page (the CLI's --json has all)


def view(impact: Any, elapsed_s: float) -> dict[str, Any]:
    """What the page shows: the summary, models counted once and changed only when a
    verdict changes in a way that matters (not a new consumer that serves it), and the
    first LISTED of them, those that newly fail first."""
    document: dict[str, Any] = impact.to_json()
    document.pop("changed")
    mattering = impact.changed_models
    changed = sorted(mattering, key=lambda m: not m.newly_broken)[:LISTED]
    document.update(
        elapsed_s=round(elapsed_s, 3),
        models_changed=len(mattering),
        models_newly_failing=len(impact.breaking),
        changed_total=len(mattering),
        changed=[
            {
                "bucket": m.model.bucket,
                "key": m.model.key,
                "status_before": m.model.status,
                "status_after": str(m.status_after),
                "changes": [
                    {
                        "consumer": c.consumer,
                        "before": c.before,
                        "after": c.after,
                        "breaks": c.breaks,
                        "reasons": list(c.reasons[:2]),
                    }
                    for c in m.changes_that_matter
                ],
            }
            for m in changed
        ],
    )
    return document


def assess_change(settings: Any, change: dict[str, Any]) -> dict[str, Any]:
    """The page's view of the change's impact on every indexed model."""
    from worker.catalog.catalog import load_catalog
    from worker.fleet.fleet import load_fleet
    from worker.pipeline.services import build_index
    from worker.sinks.s3 import S3ObjectStore, s3_client

    catalog = load_catalog()
    current = load_fleet(settings.fleet, catalog)
    index = build_index(settings, S3ObjectStore(s3_client(settings), settings))
    return change_view(index, current, catalog, change)


def change_view(index: Any, current: Any, catalog: Any, change: dict[str, Any]) -> dict[str, Any]:
    """`view` of the change (`{"add": [[name|null, spec]], "remove": [name]}`) to the
    fleet `current`, assessed over `index`."""
    from dataclasses import replace

    from worker.catalog.opdefs import OpDefCache
    from worker.cli.models import parse_consumer_spec
    from worker.fleet.changes import edited_fleet
    from worker.pipeline.impact_run import assess_index
    from worker.ui.preview_form import release_or_consumer

    by_name = {c.name: c for c in current.consumers}
    cache = OpDefCache()
    added = []
    for name, spec in change.get("add") or []:
        spec = release_or_consumer(str(spec), list(by_name))  # again: never a manifest
        consumer = by_name[spec] if spec in by_name else parse_consumer_spec(spec, catalog, cache)
        added.append(replace(consumer, name=name) if name else consumer)
    target = edited_fleet(current, None, added, [str(n) for n in change.get("remove") or []])
    started = time.perf_counter()
    impact = assess_index(
        index,
        target.consumers,
        history=catalog,
        policy=target.policy,
        with_artifacts=False,
        jobs=1,
    )
    return view(impact, time.perf_counter() - started)


def assess_plan(settings: Any) -> dict[str, Any]:
    """`plan_view` of the settings' fleet file over the index `tfcompat fleet plan` reads."""
    from worker.catalog.catalog import load_catalog
    from worker.fleet.candidates import upgrade_ranges
    from worker.fleet.fleet import load_fleet
    from worker.pipeline.services import build_index
    from worker.sinks.s3 import S3ObjectStore, s3_client

    catalog = load_catalog()
    fleet = load_fleet(settings.fleet, catalog)
    index = build_index(settings, S3ObjectStore(s3_client(settings), settings))
    return plan_view(index, fleet, catalog, upgrade_ranges(settings.fleet))


def plan_view(index: Any, fleet: Any, catalog: Any, ranges: Any) -> dict[str, Any]:
    """The plan as `tfcompat fleet plan` computes it over `index`: its `--json` document
    (`plan`) and its `--csv` text (`csv`), which the page shows and serves as they are."""
    from worker.cli.plan_render import render_plan_csv
    from worker.fleet.plan import build_plan
    from worker.fleet.plan_advice import plan_json
    from worker.sinks.index import gc_paused

    started = time.perf_counter()
    with gc_paused():
        plan = build_plan(index.models(), fleet, catalog, ranges)
    return {
        "plan": plan_json(plan),
        "csv": render_plan_csv(plan),
        "elapsed_s": round(time.perf_counter() - started, 3),
    }


def _answer_channel() -> Any:
    """The process's stdout, kept for the answer alone; whatever else writes to stdout
    from now on (a log line, such as the index's "index.rebuilt") goes to stderr, where it
    cannot make the answer unreadable."""
    import os

    sys.stdout.flush()
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answer


def main() -> int:
    from worker.errors import TfcompatError
    from worker.settings import load_settings

    out = _answer_channel()
    try:
        job = orjson.loads(sys.stdin.buffer.read())
        if not isinstance(job, dict):
            raise ValueError("the job is not a JSON object")
        settings = load_settings()
        result = (
            assess_plan(settings) if job.get("kind") == "plan" else assess_change(settings, job)
        )
    except (TfcompatError, ValueError) as exc:
        out.write(orjson.dumps({"error": str(exc)}))
        out.close()
        return 1
    out.write(orjson.dumps({"result": result}))
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
