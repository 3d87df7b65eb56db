"""Node-level rules: what TensorFlow's node validation does with one node kind.

Reproduces, against the consumer's OpDef, the checks TensorFlow runs while it
turns a GraphDef into a Graph: the SavedModel loaders' removal of unknown
attrs that hold the producer's default (`RemoveNewDefaultAttrsFromGraphDef`),
adding the consumer's defaults (`AddDefaultAttrsToGraphDef`), `ValidateNodeDef`
(unknown attrs, missing attrs, attr types, allowed values, minimums, input
count) and `CheckOpDeprecation`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from worker.compat.memo import identity, remembered
from worker.compat.signatures import arg_count, effective_attrs, signature
from worker.model.artifact import AttrDef, AttrJSON, NodeKind, OpDef
from worker.model.attrs import attr_kind, describe_attr
from worker.model.effects import AttrEffect, Effect
from worker.model.findings import Code, Finding, Fix, FixKind, error, info, warning


@dataclass(frozen=True)
class NodeContext:
    drops_producer_defaults: bool  # SavedModel loaders do; a bare graph import does not
    rejects_unknown_attrs: bool
    producer_version: int | None  # the GraphDef version deprecations are judged at
    stripped_default_attrs: bool  # the export already stripped defaults
    # An attr's default where the model carries no op list (frozen GraphDefs).
    default_of: Callable[[str, str], AttrJSON | None] = field(
        default=lambda op, attr: None, compare=False
    )
    # What an attr does to results, measured (catalog/data/attr_effects.json); None:
    # not measured, which is never read as "no effect".
    effect_of: Callable[[str, str], AttrEffect | None] = field(
        default=lambda op, attr: None, compare=False
    )


def _allowed(attr: AttrDef, value: AttrJSON) -> Finding | None:
    allowed = (attr.allowed_values or {}).get("list", {})
    if not allowed:
        return None
    if attr.type in ("type", "list(type)"):
        pool, key = allowed.get("type", []), "type"
    elif attr.type in ("string", "list(string)"):
        pool, key = allowed.get("s", []), "s"
    else:
        return None
    values = [value[key]] if key in value else value.get("list", {}).get(key, [])
    for item in values:
        if item not in pool:
            shown = describe_attr({key: item})
            options = ", ".join(describe_attr({key: p}) for p in pool)
            return error(
                Code.ATTR_NOT_ALLOWED,
                f"Value for attr '{attr.name}' of {shown} is not in the list of allowed "
                f"values: {options}",
                attr=attr.name,
            )
    return None


def _minimum(attr: AttrDef, value: AttrJSON) -> Finding | None:
    if not attr.has_minimum:
        return None
    if attr.type == "int" and "i" in value and int(value["i"]) < attr.minimum:
        return error(
            Code.ATTR_BELOW_MINIMUM,
            f"Value for attr '{attr.name}' of {value['i']} must be at least minimum {attr.minimum}",
            attr=attr.name,
        )
    if attr.type.startswith("list(") and "list" in value:
        length = sum(len(v) for v in value["list"].values())
        if length < attr.minimum:
            return error(
                Code.ATTR_BELOW_MINIMUM,
                f"Length for attr '{attr.name}' of {length} must be at least minimum "
                f"{attr.minimum}",
                attr=attr.name,
            )
    return None


def where_of(kind: NodeKind) -> str:
    return kind.where


def _unknown_attr(
    kind: NodeKind,
    name: str,
    value: AttrJSON,
    op: OpDef,
    producer_op: OpDef | None,
    ctx: NodeContext,
) -> Finding | None:
    """An attr the consumer's OpDef lacks: dropped, rejected or ignored.

    Whether its value is the default comes from the model's own op list, else
    (a frozen graph has none) from the newest release that has the attr; when
    neither knows, nothing is said about defaults."""
    producer_attr = producer_op.attr(name) if producer_op else None
    default = producer_attr.default if producer_attr else ctx.default_of(kind.op, name)
    is_default = default is not None and default == value
    shown = describe_attr(value)
    where = where_of(kind)
    if is_default and not ctx.rejects_unknown_attrs:
        return None  # ignored, and the consumer's behaviour is the producer's default
    if is_default and ctx.drops_producer_defaults and producer_attr is not None:
        return info(
            Code.ATTR_DEFAULT_DROPPED,
            f"{kind.op} attr '{name}' ({where}) is unknown to this release but holds the "
            "producer's default, so the SavedModel loader drops it (a direct graph import "
            "of the same graph would fail).",
            op=kind.op,
            attr=name,
            fix=Fix(FixKind.STRIP_DEFAULT_ATTRS),
        )
    effect = ctx.effect_of(kind.op, name)
    if ctx.rejects_unknown_attrs:
        if is_default:
            state, fix = f"value {shown}, its default", Fix(FixKind.STRIP_DEFAULT_ATTRS)
        elif effect is not None and effect.effect == Effect.NO_EFFECT:
            state = f"value {shown}, measured to change no results"
            fix = Fix(FixKind.DROP_ATTR, op=kind.op, attr=name)
        else:
            state = f"value {shown}" + (", not its default" if default is not None else "")
            fix = Fix(FixKind.UPGRADE_TO, op=kind.op, attr=name)
        return error(
            Code.ATTR_UNKNOWN,
            f"NodeDef mentions attr '{name}' not in {signature(op)} ({where}, {state}).",
            op=kind.op,
            attr=name,
            fix=fix,
        )
    text = (
        f"{kind.op} attr '{name}' ({where}) is set to {shown}"
        + (f", not its default {describe_attr(default)}" if default is not None else "")
        + "; this release does not know the attr and ignores it"
    )
    if effect is not None and effect.effect == Effect.NO_EFFECT:
        return info(
            Code.ATTR_IGNORED,
            f"{text}. Measured ({effect.source}): {effect.how}.",
            op=kind.op,
            attr=name,
        )
    if effect is not None and effect.effect == Effect.CHANGES_RESULTS and effect.refuses_only:
        return info(
            Code.ATTR_IGNORED,
            f"{text}. The value only makes the op refuse inputs the default accepts, so "
            "this release answers wherever the producer answers, and also where it would "
            f"refuse. Measured ({effect.source}): {effect.evidence}.",
            op=kind.op,
            attr=name,
        )
    changes = effect is not None and effect.effect == Effect.CHANGES_RESULTS
    return warning(
        Code.ATTR_IGNORED if changes else Code.ATTR_UNVERIFIED,
        f"{text}, so requests get what the op computes at the default: "
        + _risk(name, effect, default is None),
        op=kind.op,
        attr=name,
        fix=Fix(FixKind.UPGRADE_TO, op=kind.op, attr=name),
    )


def _risk(name: str, effect: AttrEffect | None, default_unknown: bool) -> str:
    """Why ignoring the attr is a risk: the measured difference, or that none was measured."""
    unknown = " (the graph carries no op list, so whether the value is the default is not known)"
    if effect is not None and effect.effect == Effect.CHANGES_RESULTS:
        return f"the results differ. Measured ({effect.source}): {effect.evidence}." + (
            unknown if default_unknown else ""
        )
    why = effect.how if effect is not None else "the attr is not in the measured table"
    return f"whether that changes results is not verified ({why})." + (
        unknown if default_unknown else ""
    )


# A template's node and function names: characters no TensorFlow node or function name
# holds (names match [A-Za-z0-9.][A-Za-z0-9_./>-]*), so they stand for nothing else.
_NODE_MARK = "\x00node\x00"
_FUNCTION_MARK = "\x00function\x00"

_FINDINGS: dict[tuple[object, ...], tuple[Finding, ...]] = remembered({})
_FINDINGS_LIMIT = 200_000


def check_node_kind(
    kind: NodeKind, op: OpDef, producer_op: OpDef | None, ctx: NodeContext
) -> list[Finding]:
    """Every validation finding for one node kind against the consumer's OpDef.

    Kinds repeat across models (Const, Identity, VarHandleOp with the same attrs, and
    the same failing op in many exports), so each distinct kind is validated once per
    OpDef and context: the findings are kept as a template naming a placeholder node,
    and each model's kind gets them with its own node and function names (the only
    part of a message that differs between equal keys). The producer's OpDef and the
    catalog's defaults and attr effects count only for an attr the consumer lacks, so
    they are part of the memo only then.
    """
    deprecated = (
        op.deprecation_version is not None
        and ctx.producer_version is not None
        and ctx.producer_version >= op.deprecation_version
    )
    known = op.attr_map
    lacks = any(name not in known for name in kind.attrs)
    defaults = getattr(ctx.default_of, "__self__", ctx.default_of) if lacks else None
    effects = getattr(ctx.effect_of, "__self__", ctx.effect_of) if lacks else None
    memo = (
        identity(op),
        kind.key,
        ctx.drops_producer_defaults,
        ctx.rejects_unknown_attrs,
        ctx.producer_version if deprecated else None,
        identity(producer_op) if lacks else None,
        identity(defaults) if lacks else None,
        identity(effects) if lacks else None,
        bool(kind.function),
    )
    found = _FINDINGS.get(memo)
    if found is None:
        marked = NodeKind(
            kind.op,
            kind.attrs,
            kind.inputs,
            kind.count,
            _NODE_MARK,
            kind.function and _FUNCTION_MARK,
        )
        if len(_FINDINGS) >= _FINDINGS_LIMIT:
            _FINDINGS.clear()
        found = _FINDINGS[memo] = tuple(_validate(marked, op, producer_op, ctx))
    if not found:
        return []
    template = f"node {_NODE_MARK}" + (f" in function {_FUNCTION_MARK}" if kind.function else "")
    where = where_of(kind)
    return [
        Finding(
            f.code, f.severity, f.message.replace(template, where), f.op, f.attr, f.fix, f.stage
        )
        for f in found
    ]


def _validate(
    kind: NodeKind, op: OpDef, producer_op: OpDef | None, ctx: NodeContext
) -> list[Finding]:
    """What ValidateNodeDef and CheckOpDeprecation say, in TensorFlow's order."""
    return [
        *_deprecation(kind, op, ctx),
        *_attr_values(kind, op, producer_op, ctx),
        *_missing_attrs(kind, op),
        *_input_count(kind, op),
    ]


def _deprecation(kind: NodeKind, op: OpDef, ctx: NodeContext) -> list[Finding]:
    if (
        op.deprecation_version is None
        or ctx.producer_version is None
        or ctx.producer_version < op.deprecation_version
    ):
        return []
    return [
        error(
            Code.OP_DEPRECATED,
            f"Op {op.name} is not available in GraphDef version {ctx.producer_version}. "
            f"It has been removed in version {op.deprecation_version}. "
            f"{op.deprecation_explanation}".strip()
            + f" ({where_of(kind)})",
            op=op.name,
            fix=Fix(FixKind.REEXPORT_WITHOUT_OP, op=op.name),
        )
    ]


def _attr_values(
    kind: NodeKind, op: OpDef, producer_op: OpDef | None, ctx: NodeContext
) -> list[Finding]:
    """Each attr the node sets: unknown to the consumer, of the wrong type, not allowed,
    below its minimum."""
    findings: list[Finding] = []
    known = op.attr_map
    upgrade = Fix(FixKind.UPGRADE_TO, op=op.name)
    for name, value in sorted(kind.attrs.items()):  # map order varies between processes
        attr = known.get(name)
        if attr is None:
            unknown = _unknown_attr(kind, name, value, op, producer_op, ctx)
            if unknown is not None:
                findings.append(unknown)
            continue
        if "placeholder" in value:
            continue  # bound when the function is instantiated
        kind_name = attr_kind(value)
        if (
            kind_name
            and kind_name != attr.type
            and not (kind_name == "list" and attr.type.startswith("list("))
        ):
            findings.append(
                error(
                    Code.ATTR_TYPE,
                    f"AttrValue had value with type '{kind_name}' when '{attr.type}' expected for "
                    f"attr '{name}' of {op.name} ({where_of(kind)})",
                    op=op.name,
                    attr=name,
                    fix=upgrade,
                )
            )
            continue
        for check in (_allowed, _minimum):
            found = check(attr, value)
            if found is not None:
                findings.append(
                    error(
                        found.code,
                        f"{found.message}; {where_of(kind)}; {signature(op)}",
                        op.name,
                        name,
                        fix=Fix(FixKind.UPGRADE_TO, op=op.name, attr=name),
                    )
                )
    return findings


def _missing_attrs(kind: NodeKind, op: OpDef) -> list[Finding]:
    return [
        error(
            Code.ATTR_MISSING,
            f"NodeDef missing attr '{attr.name}' from {signature(op)} ({where_of(kind)}): "
            "this release requires it and has no default for it",
            op=op.name,
            attr=attr.name,
            fix=Fix(FixKind.REEXPORT_WITH),
        )
        for attr in op.attrs
        if attr.name not in kind.attrs and attr.default is None
    ]


def _input_count(kind: NodeKind, op: OpDef) -> list[Finding]:
    expected = arg_count(op.inputs, effective_attrs(op, kind.attrs))
    if expected is None or expected == kind.inputs:
        return []
    if kind.function is not None:
        # Instantiating the body (InstantiateNode, core/framework/function.cc) matches the
        # inputs to the OpDef's args, then requires every input left over to be a control
        # input. A body's input can stand for several tensors (a list-typed argument of the
        # function), so only more inputs than the OpDef takes are certain to fail.
        if kind.inputs < expected:
            return []
        return [
            error(
                Code.INPUTS_MISMATCH,
                f"Expected input[{expected}] to be a control input ({where_of(kind)}): the node "
                f"has {kind.inputs} inputs and this release's {op.name} takes {expected}; "
                f"{signature(op)}",
                op=op.name,
                fix=Fix(FixKind.UPGRADE_TO, op=op.name),
            )
        ]
    return [
        error(
            Code.INPUTS_MISMATCH,
            f"NodeDef expected {expected} inputs but {kind.inputs} are specified "
            f"({where_of(kind)}); {signature(op)}",
            op=op.name,
            fix=Fix(FixKind.UPGRADE_TO, op=op.name),
        )
    ]
