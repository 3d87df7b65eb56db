"""What each release's shape functions infer, where they changed (`data/output_shapes.json`).

Written by tools/shapes/measure.py (format `tfcompat-output-shapes/1`): cases of an op,
attrs and input shapes (with symbolic dims), and for each measured release what its
shape function inferred, as templates over the input symbols (or the error it
raised). Kept are the cases whose templates differ between releases, and the fused
batch norms'. A release is matched by its minor: the patch releases of a minor share
the measured one's shape functions as far as the catalog knows. An op or release
the file does not hold has no answer (None), never a guessed one.
"""

from __future__ import annotations

import json
from typing import Any

from worker.model.shapes import ShapeCase

OUTPUT_SHAPES_FORMAT = "tfcompat-output-shapes/1"


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _dims(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class ShippedOutputShapes:
    """(op, minor) -> the cases measured in that minor's release."""

    def __init__(self, data: bytes) -> None:
        doc = json.loads(data)
        if doc.get("format") != OUTPUT_SHAPES_FORMAT:
            raise ValueError(f"output shapes: unknown format {doc.get('format')!r}")
        self.releases: list[str] = doc["releases"]
        self.measured_by: str = doc["measured_by"]
        self._by_key: dict[tuple[str, str], list[ShapeCase]] = {}
        for row in doc["cases"]:
            attrs = {k: v for k, v in row["attrs"].items() if "type" not in v}
            inputs = tuple(_dims(dims) for dims in row["inputs"])
            for answer in row["answers"]:
                outputs = answer.get("outputs")
                for release in answer["releases"]:
                    case = ShapeCase(
                        case_id=row["id"],
                        op=row["op"],
                        attrs=attrs,
                        inputs=inputs,
                        release=release,
                        outputs=None if outputs is None else tuple(_dims(o) for o in outputs),
                        error=answer.get("error", ""),
                    )
                    self._by_key.setdefault((row["op"], _minor(release)), []).append(case)

    def ops(self) -> set[str]:
        return {op for op, _ in self._by_key}

    def cases(self, op: str, release: str) -> tuple[ShapeCase, ...] | None:
        """The measured cases of `op` in `release`'s minor; None: not measured there."""
        found = self._by_key.get((op, _minor(release)))
        return tuple(found) if found is not None else None
