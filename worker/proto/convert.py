"""Protobuf messages to plain metadata values.

Node attrs, producer OpDefs and consumer registries all pass through these same
functions, so an attr value read from a model and a default read from an OpDef
compare equal exactly when TensorFlow's `AreAttrValuesEqual` would say so
(tensor values compare by dtype, shape and content digest).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from worker.model.artifact import ArgDef, AttrDef, AttrJSON, OpDef, VersionDef
from worker.proto import tensorflow_subset_pb2 as pb

_DTYPE_NAMES = dict(pb.DataType.items())
DTYPE_BY_NUMBER = {number: name for name, number in _DTYPE_NAMES.items()}


def dtype_name(number: int) -> str:
    return DTYPE_BY_NUMBER.get(number, f"DT_UNKNOWN_{number}")


def shape_json(shape: pb.TensorShapeProto) -> dict[str, Any]:
    if shape.unknown_rank:
        return {"unknown_rank": True}
    return {"dim": [d.size for d in shape.dim]}


def tensor_json(tensor: pb.TensorProto) -> dict[str, Any]:
    """A tensor by dtype, shape and a digest of its serialized value.

    Readers strip large contents before this is called and mark that with
    `content_bytes`; two stripped tensors never compare equal by accident
    because the digest then covers only the header.
    """
    return {
        "dtype": dtype_name(tensor.dtype),
        "shape": shape_json(tensor.tensor_shape),
        "sha256": hashlib.sha256(tensor.SerializeToString(deterministic=True)).hexdigest(),
    }


def _bytes(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def name_attr_list_json(func: pb.NameAttrList) -> dict[str, Any]:
    return {"name": func.name, "attr": {k: attr_json(v) for k, v in sorted(func.attr.items())}}


def attr_json(value: pb.AttrValue) -> AttrJSON:
    """An AttrValue in protobuf's JSON shape; bytes base64, ints as ints."""
    kind = value.WhichOneof("value")
    if kind is None:
        return {}
    if kind == "s":
        return {"s": _bytes(value.s)}
    if kind == "i":
        return {"i": value.i}
    if kind == "f":
        return {"f": value.f}
    if kind == "b":
        return {"b": value.b}
    if kind == "type":
        return {"type": dtype_name(value.type)}
    if kind == "shape":
        return {"shape": shape_json(value.shape)}
    if kind == "tensor":
        return {"tensor": tensor_json(value.tensor)}
    if kind == "func":
        return {"func": name_attr_list_json(value.func)}
    if kind == "placeholder":
        return {"placeholder": value.placeholder}
    lst = value.list
    out: dict[str, Any] = {}
    if lst.s:
        out["s"] = [_bytes(s) for s in lst.s]
    if lst.i:
        out["i"] = list(lst.i)
    if lst.f:
        out["f"] = list(lst.f)
    if lst.b:
        out["b"] = list(lst.b)
    if lst.type:
        out["type"] = [dtype_name(t) for t in lst.type]
    if lst.shape:
        out["shape"] = [shape_json(s) for s in lst.shape]
    if lst.tensor:
        out["tensor"] = [tensor_json(t) for t in lst.tensor]
    if lst.func:
        out["func"] = [name_attr_list_json(f) for f in lst.func]
    return {"list": out}


def arg_def(arg: pb.OpDef.ArgDef) -> ArgDef:
    return ArgDef(
        name=arg.name,
        type=dtype_name(arg.type) if arg.type else "",
        type_attr=arg.type_attr,
        number_attr=arg.number_attr,
        type_list_attr=arg.type_list_attr,
        is_ref=arg.is_ref,
    )


def op_def(op: pb.OpDef) -> OpDef:
    return OpDef(
        name=op.name,
        inputs=tuple(arg_def(a) for a in op.input_arg),
        outputs=tuple(arg_def(a) for a in op.output_arg),
        attrs=tuple(
            AttrDef(
                name=a.name,
                type=a.type,
                default=attr_json(a.default_value) if a.HasField("default_value") else None,
                allowed_values=(
                    attr_json(a.allowed_values) if a.HasField("allowed_values") else None
                ),
                has_minimum=a.has_minimum,
                minimum=a.minimum,
            )
            for a in op.attr
        ),
        deprecation_version=op.deprecation.version if op.HasField("deprecation") else None,
        deprecation_explanation=op.deprecation.explanation if op.HasField("deprecation") else "",
    )


def version_def(versions: pb.VersionDef) -> VersionDef:
    return VersionDef(
        producer=versions.producer,
        min_consumer=versions.min_consumer,
        bad_consumers=tuple(versions.bad_consumers),
    )
