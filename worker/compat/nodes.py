"""Node-level rules: what TensorFlow's node validation does with one node kind.

Reproduces, against the consumer's OpDef, the checks TensorFlow runs while it
turns a GraphDef into a Graph: the SavedModel loaders' removal of unknown
attrs that hold the producer's default (`RemoveNewDefaultAttrsFromGraphDef`),
adding the consumer's defaults (`AddDefaultAttrsToGraphDef`), `ValidateNodeDef`
(unknown attrs, missing attrs, attr types, allowed values, minimums, input
count) and `CheckOpDeprecation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from worker.model.artifact import ArgDef, AttrDef, AttrJSON, NodeKind, OpDef
from worker.model.attrs import attr_kind, describe_attr, short_dtype
from worker.model.findings import Code, Finding, error, warning

STRIP_FIX = (
    "Re-export with strip_default_attrs=True (tf.compat.v1 SavedModelBuilder."
    "add_meta_graph_and_variables) or load it as a SavedModel, so default-valued "
    "attrs are dropped before this consumer sees them."
)


@dataclass(frozen=True)
class NodeContext:
    consumer_label: str
    drops_producer_defaults: bool  # SavedModel loaders do; a bare graph import does not
    rejects_unknown_attrs: bool
    producer_version: int | None  # the graph's VersionDef.producer
    stripped_default_attrs: bool  # the export already stripped defaults


def ref_type(dtype: str) -> str:
    return dtype if dtype.endswith("_REF") else f"{dtype}_REF"


def base_type(dtype: str) -> str:
    return dtype.removesuffix("_REF")


def effective_attrs(op: OpDef, attrs: Mapping[str, AttrJSON]) -> dict[str, AttrJSON]:
    """The attrs the consumer works with: its own attrs only, defaults filled in."""
    result = {}
    for attr in op.attrs:
        if attr.name in attrs:
            result[attr.name] = attrs[attr.name]
        elif attr.default is not None:
            result[attr.name] = attr.default
    return result


def arg_count(args: tuple[ArgDef, ...], attrs: Mapping[str, AttrJSON]) -> int | None:
    total = 0
    for arg in args:
        if arg.type_list_attr:
            value = attrs.get(arg.type_list_attr, {})
            total += len(value.get("list", {}).get("type", [])) if "list" in value else 0
            if "list" not in value:
                return None
        elif arg.number_attr:
            value = attrs.get(arg.number_attr, {})
            if "i" not in value:
                return None
            total += int(value["i"])
        else:
            total += 1
    return total


def arg_types(args: tuple[ArgDef, ...], attrs: Mapping[str, AttrJSON]) -> list[str] | None:
    """The flat list of tensor types the args stand for, or None if undecidable."""
    types: list[str] = []
    for arg in args:
        if arg.type_list_attr:
            value = attrs.get(arg.type_list_attr, {})
            if "list" not in value:
                return None
            expanded = list(value["list"].get("type", []))
        else:
            if arg.type:
                dtype = arg.type
            else:
                value = attrs.get(arg.type_attr, {})
                if "type" not in value:
                    return None
                dtype = value["type"]
            count = 1
            if arg.number_attr:
                number = attrs.get(arg.number_attr, {})
                if "i" not in number:
                    return None
                count = int(number["i"])
            expanded = [dtype] * count
        if arg.is_ref:
            expanded = [ref_type(t) for t in expanded]
        types += expanded
    return types


_SIGNATURES: dict[int, tuple[OpDef, str]] = {}


def signature(op: OpDef) -> str:
    """TensorFlow's short OpDef rendering used in its error messages (once per OpDef)."""
    hit = _SIGNATURES.get(id(op))
    if hit is not None and hit[0] is op:
        return hit[1]
    if len(_SIGNATURES) > 50_000:
        _SIGNATURES.clear()
    text = _render_signature(op)
    _SIGNATURES[id(op)] = (op, text)
    return text


def _render_signature(op: OpDef) -> str:
    inputs = ", ".join(
        f"{a.name}:{a.type_attr or short_dtype(a.type) or a.type_list_attr}" for a in op.inputs
    )
    outputs = ", ".join(
        f"{a.name}:{a.type_attr or short_dtype(a.type) or a.type_list_attr}" for a in op.outputs
    )
    return f"Op<name={op.name}; signature={inputs} -> {outputs}>"


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


def _unknown_attr(
    kind: NodeKind,
    name: str,
    value: AttrJSON,
    op: OpDef,
    producer_op: OpDef | None,
    ctx: NodeContext,
) -> Finding | None:
    producer_attr = producer_op.attr(name) if producer_op else None
    is_default = producer_attr is not None and producer_attr.default == value
    where = f"node {kind.example}" + (f" in function {kind.function}" if kind.function else "")
    if is_default and not ctx.rejects_unknown_attrs:
        return None  # ignored, and the consumer's behaviour is the producer's default
    if is_default and ctx.drops_producer_defaults:
        return warning(
            Code.ATTR_DEFAULT_DROPPED,
            f"{kind.op} attr '{name}' ({where}) is unknown to {ctx.consumer_label} but holds "
            f"the producer's default, so the SavedModel loader drops it; a direct graph import "
            f"would {'fail' if ctx.rejects_unknown_attrs else 'ignore it'}. {STRIP_FIX}",
            op=kind.op,
            attr=name,
        )
    if ctx.rejects_unknown_attrs:
        fix = (
            STRIP_FIX
            if is_default
            else (f"Set '{name}' back to its default or upgrade the consumer.")
        )
        return error(
            Code.ATTR_UNKNOWN,
            f"NodeDef mentions attr '{name}' not in {signature(op)} ({where}, "
            f"value {describe_attr(value)}) for {ctx.consumer_label}. {fix}",
            op=kind.op,
            attr=name,
        )
    return warning(
        Code.ATTR_IGNORED,
        f"{kind.op} attr '{name}' ({where}, non-default value {describe_attr(value)}) is "
        f"unknown to {ctx.consumer_label}, which ignores it: the node runs with the "
        "consumer's behaviour, which may differ from the producer's.",
        op=kind.op,
        attr=name,
    )


_CLEAN: dict[tuple[object, ...], OpDef] = {}
_CLEAN_LIMIT = 200_000


def check_node_kind(
    kind: NodeKind, op: OpDef, producer_op: OpDef | None, ctx: NodeContext
) -> list[Finding]:
    """Every validation finding for one node kind against the consumer's OpDef.

    Kinds repeat across models (Const, Identity, VarHandleOp with the same attrs),
    so a kind found clean for an OpDef and context is remembered: re-checking a
    fleet of thousands of models validates each distinct kind once. Only clean
    results are kept (messages name the model's own nodes, so findings are always
    recomputed), and never for a kind carrying an attr the consumer lacks: whether
    that is clean depends on the model's own producer OpDef. The cached OpDef is
    held so the identity-keyed entry cannot match a different OpDef.
    """
    deprecated = (
        op.deprecation_version is not None
        and ctx.producer_version is not None
        and ctx.producer_version >= op.deprecation_version
    )
    memo = (id(op), kind.key, ctx.drops_producer_defaults, ctx.rejects_unknown_attrs, deprecated)
    if _CLEAN.get(memo) is op:
        return []
    findings = _validate(kind, op, producer_op, ctx)
    if not findings and all(name in op.attr_map for name in kind.attrs):
        if len(_CLEAN) >= _CLEAN_LIMIT:
            _CLEAN.clear()
        _CLEAN[memo] = op
    return findings


def _validate(
    kind: NodeKind, op: OpDef, producer_op: OpDef | None, ctx: NodeContext
) -> list[Finding]:
    findings: list[Finding] = []
    where = f"node {kind.example}" + (f" in function {kind.function}" if kind.function else "")
    if (
        op.deprecation_version is not None
        and ctx.producer_version is not None
        and ctx.producer_version >= op.deprecation_version
    ):
        findings.append(
            error(
                Code.OP_DEPRECATED,
                f"Op {op.name} is not available in GraphDef version {ctx.producer_version}. "
                f"It has been removed in version {op.deprecation_version}. "
                f"{op.deprecation_explanation}".strip()
                + f" ({where})",
                op=op.name,
            )
        )
    known = op.attr_map
    for name, value in kind.attrs.items():
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
                    f"attr '{name}' of {op.name} ({where})",
                    op=op.name,
                    attr=name,
                )
            )
            continue
        for check in (_allowed, _minimum):
            found = check(attr, value)
            if found is not None:
                findings.append(
                    Finding(
                        found.code,
                        found.severity,
                        f"{found.message}; {where}; {signature(op)}",
                        op.name,
                        name,
                    )
                )
    for attr in op.attrs:
        if attr.name not in kind.attrs and attr.default is None:
            findings.append(
                error(
                    Code.ATTR_MISSING,
                    f"NodeDef missing attr '{attr.name}' from {signature(op)} ({where}): "
                    f"{ctx.consumer_label} requires it and has no default for it",
                    op=op.name,
                    attr=attr.name,
                )
            )
    if kind.function is None:
        expected = arg_count(op.inputs, effective_attrs(op, kind.attrs))
        if expected is not None and expected != kind.inputs:
            findings.append(
                error(
                    Code.INPUTS_MISMATCH,
                    f"NodeDef expected {expected} inputs but {kind.inputs} are specified "
                    f"({where}); {signature(op)} in {ctx.consumer_label}",
                    op=op.name,
                )
            )
    return findings
