"""Compare one release's probe runs with the newest release's (pure; standard library).

A run is one node (op, dtype, input class, layout) as tools/kernels/probe.py wrote
it. Two runs of the same node compare as:
- "same": bitwise equal outputs (same dtype, shape and bytes), or both refused
  (an error either way: a request fails in both);
- a distance in ULPs (units in the last place of the output's dtype, relative to
  the larger magnitude, or to the output's largest one: see below): float outputs
  that differ only in value, every value finite on both sides (-0.0 against 0.0
  is 0 ULPs; NaN against NaN is equal);
- "differs": anything else, i.e. another dtype or shape, an integer, bool or string
  value changed, NaN or an infinity on one side only, or an error on one side only.
Runs that either release could not build (its shape function refused the inputs)
or that are nondeterministic (two runs of the node in one release answered
differently) are not compared.

The scale of a ULP depends on what the kernel computes (`combines_elements`). An op
whose output element is a function of its own input elements alone (a cwise op:
Sigmoid, Log1p, Igamma) is measured per element: its rounding is relative to the
element's own magnitude, so a small answer that moved (Sigmoid(-7) in 2.3: 221 ULPs
per element) is a change a served model meets, and the held-out models meet it. An
op that combines elements (a normalisation, a reduction along an axis, a
decomposition: Softmax, LogSoftmax, Qr, a batch norm) rounds at the scale of the
values it combines: an element that cancels to near zero carries an absolute error
of a few ULPs of that scale, which per element reads as tens or hundreds of ULPs
(LogSoftmax bfloat16 in 1.14 to 2.2: -0.0383 against -0.0459, 21 ULPs of the
element and 0.19 of the output's largest magnitude, 5.09; Qr half's R: 19.6 ULPs of
0.0195 and 0.004 of its largest entry, 100; Softmax bfloat16 in 1.14: -5.8e-34
against 0.0, 128 ULPs of the element), while the held-out models fed other values
answered within 1 to 2 bits. Such an op is measured in ULPs of each output's largest
finite magnitude over both sides (`largest_magnitude`), as TensorFlow's own tests judge it
(assertAllClose: |a - b| <= atol + rtol * |b|, atol at the output's scale) and as
tools/tflite/kernel_sweep.py judges every builtin. What tells the two apart is
measured, not listed: the sweep's `scalar` class (one rank-0 value) is answered
with rank-0 outputs by an op that computes each element alone (every cwise op
broadcasts a scalar), and refused, or answered with another shape, by one that needs
an axis or a matrix; an op only the structured builders run (tools/kernels/
structured.py: matrix products, convolutions, pools, batch norms) combines too.
The largest magnitude is taken over the values kept (the first 64 of each output):
on a larger output it can only be smaller than the true one, so it never hides more.

A change is `finite` (`finite_change`) when some value beyond the tolerance is a
number on at least one side, or the shape, dtype, an integer or an error changed.
One where every such value is NaN or an infinity on both sides (Digamma at a pole:
inf in 1.13, NaN in 2.21) only renames "no finite answer": where the sweep meets it
on integer inputs (its `indices` class: 0 and negative integers, a pole's isolated
points), it counts with the extremes (tools/kernels/sweep.py POLE_CLASSES).
`finite_change(..., both_sides=True)` asks more: some value beyond the tolerance is
a number on both sides. On integer inputs a NaN or an infinity against a number is
met at a pole or a domain bound (SqrtGrad at 0: NaN in 1.13, 0 in 2.21; Zeta) or
where the function overflows at 100 (BesselI0 float: 9.6e36 in 2.3, inf in 2.21):
isolated points and magnitudes that ordinary values do not reach.
"""

from __future__ import annotations

import math
from typing import Any

# ULP of 1.0 (machine epsilon) of each float dtype as numpy names it
EPSILON = {
    "float32": 2.0**-23,
    "float64": 2.0**-52,
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
    "complex64": 2.0**-23,
    "complex128": 2.0**-52,
}
SMALLEST_NORMAL = {
    "float32": 2.0**-126,
    "float64": 2.0**-1022,
    "float16": 2.0**-14,
    "bfloat16": 2.0**-126,
    "complex64": 2.0**-126,
    "complex128": 2.0**-1022,
}
DIFFERS = math.inf


def run_key(run: dict[str, Any]) -> tuple[str, str, str]:
    return run["dtype"], run["class"], run["layout"]


def comparable(run: dict[str, Any] | None) -> bool:
    return run is not None and "build_error" not in run and not run.get("nondeterministic")


def _number(text: Any) -> complex | None:
    try:
        return complex(text) if isinstance(text, str) and "j" in text else float(text)
    except (TypeError, ValueError):
        return None


def ulps(u: Any, v: Any, dtype: str, top: float = 0.0) -> float:
    """The distance between two values of a float output, in ULPs of `dtype` at the
    larger of their magnitudes and `top` (0: per element; an output's largest
    magnitude: at the output's scale); DIFFERS (infinite) where NaN or an infinity is
    on one side only."""
    a, b = _number(u), _number(v)
    if a is None or b is None:
        return DIFFERS
    if isinstance(a, complex) or isinstance(b, complex):
        return max(
            ulps(repr(complex(a).real), repr(complex(b).real), dtype, top),
            ulps(repr(complex(a).imag), repr(complex(b).imag), dtype, top),
        )
    if math.isnan(a) and math.isnan(b):
        return 0.0
    if a == b:
        return 0.0
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return DIFFERS
    eps = EPSILON[dtype]
    scale = max(abs(a), abs(b), top, SMALLEST_NORMAL[dtype])
    return abs(a - b) / (scale * eps)


def _magnitude(text: Any) -> float:
    x = _number(text)
    if x is None:
        return 0.0
    m = abs(x)
    return m if math.isfinite(m) else 0.0


def largest_magnitude(x: dict[str, Any], y: dict[str, Any]) -> float:
    """The largest finite magnitude among the kept values of two runs' output."""
    return max((_magnitude(v) for v in [*x["values"], *y["values"]]), default=0.0)


def combines_elements(runs: list[dict[str, Any]]) -> bool:
    """Whether an (op, dtype), as the newest release ran it (`runs`: its nodes of that
    dtype), combines elements, so its differences are measured at each output's scale:
    only the structured builders' nodes (`s:` layouts) answered (the generic probe's
    shapes were refused: a batch norm needs 4-D inputs), or a generic node answered
    while the `scalar` class's was refused or answered with an output of rank 1 or
    more. False (per element) when the scalar node answered rank-0 outputs, or when
    nothing was measured to tell: nothing is judged at a coarser scale without a
    measurement."""
    generic = [r for r in runs if not r["layout"].startswith(("s:", "m:"))]
    if not any("outputs" in r for r in generic):
        return any("outputs" in r for r in runs if r["layout"].startswith("s:"))
    scalar = [r for r in generic if r["class"] == "scalar"]
    if not scalar:
        return False
    return not any("outputs" in r and all(o["shape"] == [] for o in r["outputs"]) for r in scalar)


def distance(
    newest: dict[str, Any], other: dict[str, Any], scaled: bool = False
) -> tuple[float, str]:
    """(0: the same; >0: ULPs apart; DIFFERS), and where the largest difference is;
    `scaled`: in ULPs of each output's largest magnitude (`combines_elements`)."""
    if "outputs" not in newest or "outputs" not in other:
        if "outputs" not in newest and "outputs" not in other:
            return 0.0, ""
        side = "the newest" if "outputs" not in newest else "this release"
        error = newest.get("error") or other.get("error")
        return DIFFERS, f"{side} raises {error}, the other answers"
    a, b = newest["outputs"], other["outputs"]
    if len(a) != len(b):
        return DIFFERS, f"{len(b)} outputs, the newest {len(a)}"
    worst, where = 0.0, ""
    for n, (x, y) in enumerate(zip(a, b, strict=True)):
        if x["dtype"] != y["dtype"] or x["shape"] != y["shape"]:
            return (
                DIFFERS,
                f"output {n}: {y['dtype']}{y['shape']}, the newest {x['dtype']}{x['shape']}",
            )
        if x["sha"] == y["sha"]:
            continue
        if x["values"] == y["values"] and x["n"] > len(x["values"]):
            return DIFFERS, f"output {n}: beyond the first {len(x['values'])} values"
        scale = largest_magnitude(x, y) if scaled else 0.0
        for m, (u, v) in enumerate(zip(x["values"], y["values"], strict=True)):
            if u == v:
                continue
            d = ulps(u, v, x["dtype"], scale) if x["dtype"] in EPSILON else DIFFERS
            if d > worst or not where:  # -0.0 against 0.0: 0 ULPs, yet not bitwise equal
                worst, where = max(d, worst), f"output {n} value {m}: {v}, the newest {u}"
            if d == DIFFERS:
                return worst, where
    return worst, where


def outputs_beyond(
    newest: dict[str, Any], other: dict[str, Any], tolerance: float, scaled: bool = False
) -> list[int] | None:
    """The output positions of one node whose results differ beyond the tolerance (in
    ULPs); None when a side raises or the two give different numbers of outputs."""
    if "outputs" not in newest or "outputs" not in other:
        return None
    a, b = newest["outputs"], other["outputs"]
    if len(a) != len(b):
        return None
    found = []
    for n, (x, y) in enumerate(zip(a, b, strict=True)):
        d, where = distance({"outputs": [x]}, {"outputs": [y]}, scaled)
        if d > tolerance:
            found.append(n)
    return found


def _finite(text: Any) -> bool:
    x = _number(text)
    if x is None:
        return True  # an integer, bool or string: a value, not "no answer"
    if isinstance(x, complex):
        return math.isfinite(x.real) and math.isfinite(x.imag)
    return math.isfinite(x)


def finite_change(
    newest: dict[str, Any],
    other: dict[str, Any],
    tolerance: float,
    both_sides: bool = False,
    scaled: bool = False,
) -> bool:
    """Whether the node's difference beyond `tolerance` involves a number on some side:
    False only when every value that differs beyond it is NaN or an infinity on both
    sides (a pole or a point outside the function's domain, named differently). With
    `both_sides`, whether some such value is a number on both sides: False also when
    every one has NaN or an infinity on one side at least."""
    if "outputs" not in newest or "outputs" not in other:
        return True
    a, b = newest["outputs"], other["outputs"]
    if len(a) != len(b):
        return True
    for x, y in zip(a, b, strict=True):
        if x["dtype"] != y["dtype"] or x["shape"] != y["shape"]:
            return True
        if x["sha"] == y["sha"]:
            continue
        if x["values"] == y["values"]:
            return True  # the difference lies beyond the values kept: unknown
        scale = largest_magnitude(x, y) if scaled else 0.0
        for u, v in zip(x["values"], y["values"], strict=True):
            if u == v:
                continue
            d = ulps(u, v, x["dtype"], scale) if x["dtype"] in EPSILON else DIFFERS
            if d > tolerance and (
                (_finite(u) and _finite(v)) if both_sides else (_finite(u) or _finite(v))
            ):
                return True
    return False


def differences(
    newest: list[dict[str, Any]], other: list[dict[str, Any]], scaled: bool = False
) -> list[tuple[dict[str, Any], dict[str, Any], float, str]]:
    """Every comparable node of the two releases that is not bitwise the same:
    (the newest's run, the other's run, distance, where); `scaled` as for distance."""
    theirs = {run_key(r): r for r in other}
    found = []
    for run in newest:
        mine = theirs.get(run_key(run))
        if not comparable(run) or mine is None or not comparable(mine):
            continue
        d, where = distance(run, mine, scaled)
        if d > 0 or where:
            found.append((run, mine, d, where))
    return found
