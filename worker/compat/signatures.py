"""What a node's args are under an OpDef: their count and types, and TensorFlow's
short OpDef rendering (as its error messages print it).

Shared by node validation (input counts) and edge typing: both expand
`number_attr` and `type_list_attr` with the node's attrs, the consumer's
defaults filling the rest.
"""

from __future__ import annotations

from collections.abc import Mapping

from worker.compat.memo import Identity, identity, remembered
from worker.model.artifact import ArgDef, AttrJSON, OpDef
from worker.model.attrs import short_dtype


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


_SIGNATURES: dict[Identity, str] = remembered({})


def signature(op: OpDef) -> str:
    """TensorFlow's short OpDef rendering used in its error messages (once per OpDef)."""
    key = identity(op)
    text = _SIGNATURES.get(key)
    if text is None:
        if len(_SIGNATURES) > 50_000:
            _SIGNATURES.clear()
        text = _SIGNATURES[key] = _render_signature(op)
    return text


def _render_signature(op: OpDef) -> str:
    inputs = ", ".join(
        f"{a.name}:{a.type_attr or short_dtype(a.type) or a.type_list_attr}" for a in op.inputs
    )
    outputs = ", ".join(
        f"{a.name}:{a.type_attr or short_dtype(a.type) or a.type_list_attr}" for a in op.outputs
    )
    return f"Op<name={op.name}; signature={inputs} -> {outputs}>"
