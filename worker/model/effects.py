"""What an attr does to an op's results, as measured on real TensorFlow.

A release that ignores an attr computes what the op computes at the attr's default.
Whether that differs from what the model asked for is a fact about the attr, kept
in the catalog (`catalog/data/attr_effects.json`, measured by tools/attrs/measure.py)
and carried to findings as this type: never a guess, and "not measured" is a value
of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Effect(StrEnum):
    CHANGES_RESULTS = "changes-results"  # some input gives other results at some value
    NO_EFFECT = "no-effect-on-results"  # every value tried gave the default's results
    UNVERIFIED = "unverified"  # not measured (no builder, or the op did not run)


@dataclass(frozen=True)
class AttrEffect:
    op: str
    attr: str
    effect: Effect
    how: str  # how it was established, or why it could not be
    measured_in: str | None = None  # the release the probe ran in
    evidence: str = ""  # for changes-results: the input, value and both results, shortened
    # changes-results only by refusing inputs the default accepts (a stricter check): a
    # release that ignores it answers wherever the producer answers.
    refuses_only: bool = False

    @property
    def source(self) -> str:
        where = f" in TensorFlow {self.measured_in}" if self.measured_in else ""
        return f"tools/attrs/measure.py{where}"


@dataclass(frozen=True)
class KernelChange:
    """An op whose kernel gives other results in `release` than in the newest release
    measured, on the same inputs and attrs (tools/kernels/sweep.py, or the hand cases of
    tools/attrs/kernels.py)."""

    op: str
    dtype: str  # the case's type attr: 'DT_FLOAT', or 'DT_FLOAT->DT_INT32' for a Cast
    release: str  # the measured release standing for the consumer's minor
    newest: str
    evidence: str  # where the results first differ, and on what input
    same_from: str | None = None  # the oldest newer release measured equal to the newest
    measured_by: str = "tools/attrs/kernels.py"  # the tool whose run shows it
    remeasure: str = ""  # the command that measures it again
    # "ordinary": some input a served model meets differs (a hazard); "extremes": only
    # overflowing, NaN or infinite, tiny, empty or mixed special inputs do (information)
    met_on: str = "ordinary"
    classes: tuple[str, ...] = ()  # the input classes that differ, where measured per class
    # the output positions whose results differ; None: any (a raise, a hand case, unknown)
    outputs: tuple[int, ...] | None = None

    @property
    def extremes_only(self) -> bool:
        return self.met_on == "extremes"


@dataclass(frozen=True)
class KernelNondeterminism:
    """An op whose kernel in `release` answered otherwise on a second run of the same node
    in one session (tools/kernels/sweep.py runs every node twice): memory the kernel never
    wrote, a seedless random op. A request to a model with such a node may get another
    answer than the last request with the same inputs."""

    op: str
    dtype: str  # the sweep's type attr value: 'DT_INT32'
    release: str  # the measured release standing for the consumer's minor
    evidence: str  # the input class and values, both runs' outputs, where measured
    measured_by: str = "tools/kernels/sweep.py"
    remeasure: str = ""  # the command that measures it again
    # "ordinary": some input a served model meets answered twice otherwise (a hazard);
    # "extremes": only NaN, overflowing, tiny, empty or mixed special inputs did
    met_on: str = "ordinary"
    classes: tuple[str, ...] = ()  # the input classes with such a node; () not recorded
    steady_from: str | None = None  # the oldest newer release measured whose runs agreed
    # the output positions whose two runs differ; None: any (not recorded)
    outputs: tuple[int, ...] | None = None

    @property
    def extremes_only(self) -> bool:
        return self.met_on == "extremes"
