"""The organisation's own bad_consumers policy, applied like TensorFlow's.

TensorFlow lets a producer ban consumer versions known to be buggy
(`VersionDef.bad_consumers`). A fleet can do the same for releases it knows
are bad: consumers running one are flagged in every check (their owners are
told to upgrade), and with `require_models_to_ban` a model that does not list
those versions in its own bad_consumers is at risk. `unsafe_ops: error` makes
models that read or write files or run Python (`worker.compat.unsafe`)
unservable for every consumer instead of at risk. `same_answer: strict` (for the
fleet, or one consumer's entry) makes a measured change of results an error for
the consumers it covers, so a registry can block on it: `kernel.changed` (a graph's
kernel or a .tflite builtin) and an `attr.ignored` measured to change results,
warnings otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from worker.model.artifact import VersionDef
from worker.model.consumer import Consumer
from worker.model.findings import Code, Finding, Fix, FixKind, Severity, Stage, warning


@dataclass(frozen=True)
class BannedRelease:
    graph_def_version: int
    label: str  # "TensorFlow 2.4.4" or "GraphDef version 561"
    reason: str


@dataclass(frozen=True)
class Policy:
    bad_consumers: tuple[BannedRelease, ...] = ()
    require_models_to_ban: bool = False
    # ops that should never be served (`worker.compat.unsafe`): a warning, or an error
    unsafe_ops: Severity = Severity.WARNING
    # a measured change of results (kernel.changed, attr.ignored)
    # is an error for every consumer
    same_answer_strict: bool = False

    def banned(self, graph_def_version: int) -> BannedRelease | None:
        for ban in self.bad_consumers:
            if ban.graph_def_version == graph_def_version:
                return ban
        return None


def policy_findings(
    consumer: Consumer, versions: VersionDef | None, policy: Policy
) -> list[Finding]:
    findings = []
    ban = policy.banned(consumer.graph_def_version)
    if ban is not None:
        findings.append(
            warning(
                Code.POLICY_BAD_CONSUMER,
                f"{consumer.name} runs {ban.label}, which this fleet bans: {ban.reason}. "
                "Upgrade it as soon as possible.",
                fix=Fix(FixKind.LEAVE_BANNED_RELEASE),
            )
        )
    if policy.require_models_to_ban and versions is not None:
        missing = [
            b for b in policy.bad_consumers if b.graph_def_version not in versions.bad_consumers
        ]
        if missing:
            listed = ", ".join(f"{b.graph_def_version} ({b.label})" for b in missing)
            findings.append(
                warning(
                    Code.POLICY_NOT_BANNED,
                    f"The model's VersionDef does not list the fleet's banned versions in "
                    f"bad_consumers: {listed}. Add them at export (graph_def.versions."
                    "bad_consumers) so those binaries refuse it.",
                    fix=Fix(FixKind.LIST_BANNED_RELEASES),
                )
            )
    return findings


# Warnings that name a measured change of results (not "not verified", not "no effect")
SAME_ANSWER_CODES = frozenset({Code.KERNEL_CHANGED, Code.ATTR_IGNORED})
STRICT_NOTE = (
    " Under same_answer: strict a measured change of results is an error for this consumer."
)


def same_answer_strict(consumer: Consumer, policy: Policy) -> bool:
    return policy.same_answer_strict or consumer.same_answer_strict


def apply_same_answer(findings: list[Finding], consumer: Consumer, policy: Policy) -> list[Finding]:
    """The findings, with every measured change of results an error (stage `policy`: the
    model loads and answers, the fleet refuses the other answer) when strict applies."""
    if not same_answer_strict(consumer, policy):
        return findings
    return [
        replace(f, severity=Severity.ERROR, stage=Stage.POLICY, message=f.message + STRICT_NOTE)
        if f.code in SAME_ANSWER_CODES and f.severity == Severity.WARNING
        else f
        for f in findings
    ]
