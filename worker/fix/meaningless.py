"""Attrs that carry no meaning for computation, each with the evidence for it.

An entry here lets `tfcompat fix` drop the attr from a copy whatever its value,
for a consumer whose OpDef lacks it. The bar is high: the attr must not change
what any kernel computes nor how a node is wired, in any release that knows it,
and dropping it must have been checked on real TensorFlow (the fixture matrix
records the copies, see tools/fixtures/verify_fixes.py). An attr that only
*usually* does not matter does not belong here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Meaningless:
    op: str
    attr: str
    since: str  # the first release whose OpDef has the attr
    evidence: str


MEANINGLESS: dict[tuple[str, str], Meaningless] = {
    (m.op, m.attr): m
    for m in (
        Meaningless(
            op="VarHandleOp",
            attr="debug_name",
            since="2.15.0",
            evidence=(
                "VarHandleOp's kernel (core/kernels/resource_variable_ops.cc) reads "
                "debug_name only to label the Var of an anonymous variable in debug "
                "strings; a named variable's handle, the one every SavedModel uses, is "
                "made from container and shared_name alone. tf.Variable sets it to the "
                "variable's name from 2.15 on, so strip_default_attrs never drops it and "
                "every SavedModel with variables from 2.15+ fails in 1.x-2.4 "
                "('NodeDef mentions attr debug_name not in Op<name=VarHandleOp>'). "
                "Measured: copies without it load, run and return the producer's "
                "outputs on 1.15.5 and 2.4.4 (tests/fixtures/tf-real, fixed copies)."
            ),
        ),
    )
}


def meaningless(op: str, attr: str) -> Meaningless | None:
    return MEANINGLESS.get((op, attr))
