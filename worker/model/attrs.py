"""How attr values read to people and to OpDef type checks (pure, no protobuf).

Attr values travel in protobuf's JSON shape (`AttrJSON`); these helpers name
their kind as an AttrDef type string and print them the way TensorFlow's own
error messages do, so findings quote what a user would see in a load error.
"""

from __future__ import annotations

import base64

from worker.model.artifact import AttrJSON


def short_dtype(name: str) -> str:
    """'DT_INT64' -> 'int64', as TensorFlow prints types in its errors."""
    base = name.removeprefix("DT_").lower()
    return base.removesuffix("_ref") + ("_ref" if base.endswith("_ref") else "")


def attr_kind(value: AttrJSON) -> str:
    """The AttrDef type string a value has ('list(type)', 'int', ...), or '' if unset."""
    if not value:
        return ""
    (key,) = value
    if key == "list":
        items = value["list"]
        if not items:
            return "list"  # an empty list matches any list(...) type
        inner = next(iter(items))
        return f"list({_KIND_NAMES[inner]})"
    return _KIND_NAMES.get(key, key)


_KIND_NAMES = {
    "s": "string",
    "i": "int",
    "f": "float",
    "b": "bool",
    "type": "type",
    "shape": "shape",
    "tensor": "tensor",
    "func": "func",
    "placeholder": "placeholder",
}


def describe_attr(value: AttrJSON) -> str:
    """A short human form of an attr value, as TensorFlow would print it."""
    if not value:
        return "<unset>"
    (key,) = value
    inner = value[key]
    if key == "type":
        return short_dtype(inner)
    if key == "s":
        return repr(base64.b64decode(inner).decode("utf-8", "replace"))
    if key == "list":
        parts = []
        for sub, items in inner.items():
            if sub == "type":
                parts.append("[" + ", ".join(short_dtype(t) for t in items) + "]")
            elif sub == "s":
                parts.append(
                    "["
                    + ", ".join(repr(base64.b64decode(s).decode("utf-8", "replace")) for s in items)
                    + "]"
                )
            else:
                parts.append(str(items))
        return ", ".join(parts) or "[]"
    if key == "tensor":
        return f"tensor<{short_dtype(inner['dtype'])}>"
    if key == "func":
        return f"func {inner['name']}"
    return str(inner)
