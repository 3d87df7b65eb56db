"""Findings: what a check says about one artifact for one consumer, as data."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"  # the consumer's TensorFlow will refuse to load the artifact
    WARNING = "warning"  # it loads, but something can break or change meaning


class Code(StrEnum):
    """Stable finding codes; reports, tags and notifications key on these."""

    MIN_CONSUMER = "version.min-consumer"
    MIN_PRODUCER = "version.min-producer"
    BAD_CONSUMER = "version.bad-consumer"
    FORWARD_WINDOW = "version.forward-window"
    CHECKPOINT_VERSION = "checkpoint.version"
    CHECKPOINT_ENDIANNESS = "checkpoint.endianness"
    OP_NOT_REGISTERED = "op.not-registered"
    OP_REMOVED = "op.removed"
    OP_CUSTOM = "op.custom"
    OP_DEPRECATED = "op.deprecated"
    ATTR_UNKNOWN = "attr.unknown"
    ATTR_IGNORED = "attr.ignored"
    ATTR_DEFAULT_DROPPED = "attr.default-dropped"
    ATTR_MISSING = "attr.missing"
    ATTR_TYPE = "attr.wrong-type"
    ATTR_NOT_ALLOWED = "attr.not-allowed"
    ATTR_BELOW_MINIMUM = "attr.below-minimum"
    INPUTS_MISMATCH = "node.inputs-mismatch"
    EDGE_TYPE = "edge.type-mismatch"
    EDGE_OUTPUT = "edge.invalid-output"
    REGISTRY_UNAVAILABLE = "registry.unavailable"
    POLICY_BAD_CONSUMER = "policy.bad-consumer"
    POLICY_NOT_BANNED = "policy.model-does-not-ban"


@dataclass(frozen=True)
class Finding:
    code: Code
    severity: Severity
    message: str
    op: str | None = None
    attr: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "code": str(self.code),
            "severity": str(self.severity),
            "message": self.message,
            "op": self.op,
            "attr": self.attr,
        }


def error(code: Code, message: str, op: str | None = None, attr: str | None = None) -> Finding:
    return Finding(code, Severity.ERROR, message, op, attr)


def warning(code: Code, message: str, op: str | None = None, attr: str | None = None) -> Finding:
    return Finding(code, Severity.WARNING, message, op, attr)
