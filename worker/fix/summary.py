""" "Fixable" for reports: per consumer, and over the catalog's releases.

A consumer is fixable when it cannot serve the model as it is and `tfcompat
fix` would write a copy it serves; `None` when there is nothing to fix (it
serves the model) or nothing can be known (no op registry).
"""

from __future__ import annotations

from collections.abc import Sequence

from worker.catalog.catalog import Catalog
from worker.compat.ranges import compress
from worker.fix.plan import plan_fix
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer


def fixable(artifact: Artifact, consumer: Consumer, catalog: Catalog) -> bool | None:
    if artifact.format == "tflite":
        return None  # `tfcompat fix` rewrites graphs; a .tflite is converted again instead
    if artifact.keras is not None:
        return None  # `tfcompat fix` rewrites graphs; a Keras file's fixes are its findings'
    (fix,) = plan_fix(artifact, [consumer], catalog, advise=False).consumers
    return {"fixed": True, "unfixable": False}.get(fix.state)


def fixable_by_consumer(
    artifact: Artifact, consumers: Sequence[Consumer], catalog: Catalog
) -> dict[str, bool | None]:
    return {c.name: fixable(artifact, c, catalog) for c in consumers}


def fixable_releases(artifact: Artifact, catalog: Catalog) -> list[str]:
    """The catalog releases (default loader) that fail the model and serve a fixed copy."""
    if artifact.format == "tflite":
        return []
    outcomes = []
    for consumer in catalog.range_consumers():
        assert consumer.tensorflow is not None
        outcomes.append((consumer.tensorflow, fixable(artifact, consumer, catalog) is True))
    return compress(outcomes)
