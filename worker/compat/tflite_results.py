"""Builtins of a `.tflite` file whose kernel in the consumer's runtime answers otherwise
than the newest runtime's, as measured (catalog `tflite_kernel_changes`).

A TFLite file that loads and serves can still answer differently: a kernel that
rounds another way, a quantised kernel with another requantisation. The kernel
sweep (tools/tflite/kernel_sweep.py) wrote one single-op file per builtin and type
variant (float32, int8, int16x8, dynamic-range and float16 weights), ran each in
every measured runtime on the same inputs, and compared every output with the
reference runtime's (the newest LiteRT). An operator of a (builtin, variant) whose
runtime differs beyond the stated tolerance (16 ULPs of the output's largest magnitude
for float32 outputs, 1 quantised step for int8/int16 ones, none for unscaled integers;
chosen from the measured distribution, docs/verdicts/same-answer.md) is a named
hazard: `kernel.changed` (at-risk, an error under `same_answer: strict`) when an
input class a served model meets differs,
`kernel.results-extremes` (information) when only NaN, infinities, overflowing or
tiny inputs do, as the graph rule does (worker.compat.kernel_changes). A pair
the sweep never ran in a runtime it measured is listed, once per verdict, as not
verified (`kernel.results-unmeasured`); a runtime the sweep never ran gets nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from worker.model.findings import Code, Finding, Fix, FixKind, info, warning
from worker.model.tflite import TENSORFLOW, ResultChange, TfliteModel, TfliteRuntime, variant_of


def result_findings(
    model: TfliteModel, table: TfliteRuntime, upgrades: Sequence[TfliteRuntime] = ()
) -> list[Finding]:
    """One finding per (builtin, variant) of the model the runtime was measured to answer
    otherwise, in the order the runtime prepares the operators; then, where the sweep
    ran in this runtime, one listing the pairs it never ran there (not verified).
    `upgrades`, the family's newer measured runtimes, oldest first, name the fix: the
    first that ran the pair and answers as the newest."""
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    unmeasured: list[tuple[str, str]] = []
    for kind in model.operator_kinds:
        opcode = model.operator_codes[kind.opcode_index]
        if opcode.is_custom:
            continue
        key = (opcode.name, variant_of(kind, opcode.name))
        if key in seen:
            continue
        seen.add(key)
        change = table.result_changes.get(key)
        if change is not None:
            fix = _upgrade(key, table, upgrades)
            findings.append(_finding(change, table, kind.subgraph, kind.position, fix))
        elif table.results_measured and key not in table.results_measured:
            unmeasured.append(key)
    if unmeasured:
        findings.append(_unmeasured(unmeasured, table))
    return findings


LISTED = 12  # pairs named in the unmeasured finding; the rest are counted


def _upgrade(
    key: tuple[str, str], table: TfliteRuntime, upgrades: Sequence[TfliteRuntime]
) -> Fix | None:
    same = next(
        (r for r in upgrades if key in r.results_measured and key not in r.result_changes),
        None,
    )
    if same is None:
        return None
    if table.family == TENSORFLOW:
        return Fix(FixKind.UPGRADE_TO, release=same.version)
    return Fix(FixKind.UPGRADE_RUNTIME, release=same.version, runtime=same.family)


def _unmeasured(pairs: list[tuple[str, str]], table: TfliteRuntime) -> Finding:
    named = ", ".join(f"{op} ({variant})" for op, variant in pairs[:LISTED])
    more = f" and {len(pairs) - LISTED} more" if len(pairs) > LISTED else ""
    return info(
        Code.KERNEL_RESULTS_UNMEASURED,
        f"{len(pairs)} builtin(s) of the model, with their tensors' types, were never run "
        f"in {table.label()} and compared with the newest runtime, so whether it gives "
        f"the newest runtime's answers for them is not verified: {named}{more}. Measure "
        "them with tools/tflite/kernel_sweep.py (a builtin it lacks needs a case in "
        "tools/tflite/kernel_models.py).",
    )


def _finding(
    change: ResultChange, table: TfliteRuntime, subgraph: int, position: int, fix: Fix | None
) -> Finding:
    where = f"subgraph {subgraph}, operator {position}"
    evidence = (
        f"on the {change.evidence_class} inputs {table.label()} returned {change.got} where "
        f"{change.reference} returned {change.expected} ({change.distance}; the tolerance "
        f"is {change.tolerance}: within it is rounding), in a single-op file written by "
        f"the TensorFlow {change.producer} converter, run by {change.runtimes} runtimes. "
        f"Re-measure: {change.remeasure}."
    )
    classes = ", ".join(change.classes)
    if change.extremes_only:
        return info(
            Code.KERNEL_RESULTS_EXTREMES,
            f"{change.op} ({change.variant}, {where}) computes other results in "
            f"{table.label()} than in {change.reference} only on extreme or special inputs "
            f"({classes}); on the ordinary inputs measured the two agree within "
            f"{change.tolerance}, so this is no hazard for a model fed ordinary values. "
            f"Measured: {evidence}",
            op=change.op,
        )
    return warning(
        Code.KERNEL_CHANGED,
        f"{change.op} ({change.variant}, {where}) computes other results in {table.label()} "
        f"than in {change.reference} on the same file and inputs, ordinary ones among them "
        f"(input classes differing beyond {change.tolerance}: {classes}). Measured: {evidence}",
        op=change.op,
        fix=fix,
    )
