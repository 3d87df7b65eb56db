"""What the pages show, shaped from the index, the reports and the catalog: plain data for
the templates, nothing about HTTP."""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from worker.catalog.catalog import Catalog
from worker.compat.check import check_artifact
from worker.compat.policy import Policy
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer, Loader
from worker.notify.fixes import fix_text, plain
from worker.sinks.matrix import Row

# How each state reads: a symbol and a word, never a colour alone.
CELL_LOOK = {
    "serves": ("✓", "serves"),
    "at-risk": ("⚠", "at risk"),
    "unknown": ("?", "unknown"),
    "requests-fail": ("✗", "requests fail"),
    "fails": ("✗", "fails"),
}
STATUS_LOOK = {
    "compatible": ("✓", "compatible"),
    "at-risk": ("⚠", "at risk"),
    "unknown": ("?", "unknown"),
    "incompatible": ("✗", "incompatible"),
    "invalid": ("⊘", "invalid"),
}
# A failure's cause, by the family of its finding's code (`worker.model.findings.Code`).
CAUSES = {
    "op": "op missing or changed",
    "attr": "attr",
    "kernel": "kernel missing",
    "resource": "resource never filled",
    "version": "GraphDef version",
    "checkpoint": "checkpoint version",
    "edge": "edge types",
    "node": "node inputs",
    "restore": "restore step",
    "init": "init op",
    "request": "request",
    "saved-model": "MetaGraph tags",
    "object": "object not revived",
    "keras": "Keras",
    "tflite": "TFLite",
    "unsafe": "unsafe op",
    "policy": "fleet policy",
    "function": "function",
    "registry": "no op registry",
}


@functools.lru_cache(maxsize=8192)
def cell_html(consumer: str, state: str, message: str | None) -> Markup:
    """A matrix cell: a symbol and a word, the finding in its tooltip, and a label that says
    it all to a screen reader. Built once per distinct cell: a page holds a thousand cells,
    mostly alike, and a template macro per cell was most of a page's time
    (bench/ui_matrix.py)."""
    symbol, word = CELL_LOOK[state]
    tip = f"{word}: {message}" if message else word
    return Markup(
        '<span class="cell st-{0}" title="{1}" aria-label="{2}: {1}">'
        '<span aria-hidden="true">{3}</span> {4}</span>'
    ).format(state, tip, consumer, symbol, word)


def cells_html(row: Row, consumers: Sequence[str]) -> Markup:
    """A matrix row's cells, one per consumer in order (a dash where none was checked)."""
    parts = []
    for consumer in consumers:
        cell = row.cells.get(consumer)
        parts.append(
            cell_html(consumer, cell.state, cell.message)
            if cell is not None
            else _NOT_CHECKED.format(consumer)
        )
    return Markup("<td>") + Markup("</td><td>").join(parts) + Markup("</td>")


_NOT_CHECKED = Markup('<span class="cell st-none" aria-label="{0}: not checked">&ndash;</span>')


def cause_of(code: str | None) -> str:
    if not code:
        return "not recorded (checked before findings were indexed)"
    family = code.split(".", 1)[0]
    return CAUSES.get(family, family)


@dataclass(frozen=True)
class ConsumerFinding:
    severity: str
    code: str
    message: str
    fix: str


@dataclass(frozen=True)
class ConsumerReport:
    """One consumer's verdict on a model: over every artifact of the object."""

    name: str
    tensorflow: str | None
    loader: str
    loads: bool | None
    serves: bool | None
    findings: tuple[ConsumerFinding, ...]


def _worse(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


def consumer_reports(report: Mapping[str, Any]) -> list[ConsumerReport]:
    """Each consumer of the report's fleet with its findings (and their fixes, in words)."""
    merged: dict[str, ConsumerReport] = {}
    for artifact in report.get("artifacts") or ():
        for c in artifact.get("consumers") or ():
            found = tuple(
                ConsumerFinding(
                    str(f.get("severity")),
                    str(f.get("code")),
                    str(f.get("message")),
                    fix_text(f.get("fix"), c.get("name"), plain),
                )
                for f in c.get("findings") or ()
            )
            before = merged.get(c["name"])
            loads, serves = c.get("loads"), c.get("serves", c.get("loads"))
            if before is not None:
                loads, serves = _worse(before.loads, loads), _worse(before.serves, serves)
                found = before.findings + found
            merged[c["name"]] = ConsumerReport(
                c["name"], c.get("tensorflow"), str(c.get("loader")), loads, serves, found
            )
    return list(merged.values())


@dataclass(frozen=True)
class GridCell:
    loads: bool | None
    serves: bool | None

    @property
    def state(self) -> str:
        if self.loads is False:
            return "fails"
        if self.serves is False:
            return "requests-fail"
        if self.loads is None or self.serves is None:
            return "unknown"
        return "serves"


LOADERS = tuple(Loader)


def newest_patches(catalog: Catalog) -> list[str]:
    """The newest patch release of every minor that has an op registry, newest first."""
    newest: dict[str, str] = {}
    for consumer in catalog.range_consumers():
        version = consumer.tensorflow
        if version is None:
            continue
        minor = ".".join(version.split(".")[:2])
        newest[minor] = version  # ascending: the last one seen is the newest
    return list(reversed(newest.values()))


def release_grid(
    artifacts: Sequence[Artifact], catalog: Catalog, policy: Policy | None = None
) -> list[tuple[str, dict[str, GridCell]]]:
    """Which releases load and serve the object with each loader: (release, loader ->
    cell) per minor's newest patch, newest first. Checked now from the stored metadata."""
    grid = []
    for release in newest_patches(catalog):
        cells = {}
        for loader in LOADERS:
            consumer = catalog.consumer(release, loader)
            loads: bool | None = True
            serves: bool | None = True
            for artifact in artifacts:
                verdict = check_artifact(artifact, consumer, catalog, policy)
                loads, serves = _worse(loads, verdict.loads), _worse(serves, verdict.serves)
            cells[str(loader)] = GridCell(loads, serves)
        grid.append((release, cells))
    return grid


@dataclass
class CauseGroup:
    cause: str
    count: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    examples: list[tuple[Row, str]] = field(default_factory=list)  # (row, message)


def failures_by_cause(rows: Iterable[Row], consumer: str, examples: int = 5) -> list[CauseGroup]:
    """The models a consumer cannot serve, grouped by what stops it, biggest group first."""
    groups: dict[str, CauseGroup] = defaultdict(lambda: CauseGroup(""))
    for row in rows:
        cell = row.cells.get(consumer)
        if cell is None:
            continue
        cause = cause_of(cell.code)
        group = groups[cause]
        group.cause = cause
        group.count += 1
        group.codes[cell.code or "-"] += 1
        if len(group.examples) < examples:
            group.examples.append((row, cell.message or ""))
    return sorted(groups.values(), key=lambda g: (-g.count, g.cause))


# How a consumer loads a model, in words (the loader's name stays beside it).
LOADER_WORDS = {
    Loader.SAVED_MODEL_V1: "the v1 SavedModel loader (TF Serving's)",
    Loader.SAVED_MODEL_V2: "tf.saved_model.load",
    Loader.GRAPH_IMPORT: "a GraphDef import",
}


def consumer_release(consumers: Sequence[Consumer], name: str) -> str | None:
    """What the consumer runs, as its page says it: its TensorFlow release (or its
    build's GraphDef version) and its loader; None when the fleet has no such consumer."""
    consumer = next((c for c in consumers if c.name == name), None)
    if consumer is None:
        return None
    release = (
        f"TensorFlow {consumer.tensorflow}"
        if consumer.tensorflow
        else f"a custom build (GraphDef version {consumer.graph_def_version})"
    )
    loader = consumer.loader
    return f"{release}, {LOADER_WORDS.get(loader, str(loader))} ({loader})"


def version_line(row: Row, versions: Sequence[Mapping[str, Any]]) -> str:
    """The model page's version line, in agreement with its versions table: the version
    the upload event named, else the one the bucket lists as current, else that the
    bucket keeps no versions."""
    if row.version_id:
        return row.version_id
    current = next((v["version_id"] for v in versions if v.get("latest")), None)
    if current:
        return f"{current} (the bucket's current version; the upload event named none)"
    return "none: the bucket keeps no versions of this object"
