"""OpDefs in manifest JSON (TensorFlow's own OpList, as protobuf JSON) to plain OpDefs.

Manifests and the built-in registries store OpDefs exactly as TensorFlow's
`json_format.MessageToDict` wrote them. `op_def_from_json` converts that JSON
straight to the plain values the readers produce (`proto.convert`), about ten
times faster than going through protobuf, which matters when a range check
touches every release's registry. `op_def_via_protobuf` is the reference path;
a test holds the two equal over every op of every shipped registry.
"""

from __future__ import annotations

import struct
from typing import Any

import orjson

from worker.errors import ConfigError
from worker.model.artifact import ArgDef, AttrDef, AttrJSON, OpDef

_SCALARS = {"s", "i", "f", "b", "type", "placeholder"}


def _float(value: Any) -> float:
    """AttrValue floats are 32-bit: round as protobuf does, so values compare equal.

    MessageToDict writes NaN/Infinity as strings; float() reads both."""
    return float(struct.unpack("<f", struct.pack("<f", float(value)))[0])


def _shape(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("unknown_rank"):
        return {"unknown_rank": True}
    return {"dim": [int(d.get("size", 0)) for d in data.get("dim", [])]}


def _via_protobuf(data: dict[str, Any]) -> AttrJSON:
    # Imported here: protobuf's json_format is only needed for rare values, and
    # importing it costs more than a whole check of a small model.
    from google.protobuf import json_format

    from worker.proto import tensorflow_subset_pb2 as pb
    from worker.proto.convert import attr_json

    message = pb.AttrValue()
    try:
        json_format.ParseDict(data, message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise ValueError(str(exc)) from None
    return attr_json(message)


def attr_from_json(data: dict[str, Any]) -> AttrJSON:
    """An AttrValue in MessageToDict form -> the readers' attr_json form."""
    if not data:
        return {}
    if len(data) != 1:
        return _via_protobuf(data)
    ((key, value),) = data.items()
    if key == "i":
        return {"i": int(value)}
    if key == "f":
        return {"f": _float(value)}
    if key in _SCALARS:
        return {key: value}
    if key == "shape":
        return {"shape": _shape(value)}
    if key == "list":
        out: dict[str, Any] = {}
        for sub, items in value.items():
            if not items:
                continue
            if sub == "i":
                out["i"] = [int(i) for i in items]
            elif sub == "f":
                out["f"] = [_float(f) for f in items]
            elif sub in ("s", "b", "type"):
                out[sub] = list(items)
            elif sub == "shape":
                out["shape"] = [_shape(s) for s in items]
            else:
                return _via_protobuf(data)
        return {"list": out}
    return _via_protobuf(data)  # tensor and func values: rare, take the exact path


def _arg(data: dict[str, Any]) -> ArgDef:
    return ArgDef(
        name=data.get("name", ""),
        type=data.get("type", "") if data.get("type") != "DT_INVALID" else "",
        type_attr=data.get("type_attr", ""),
        number_attr=data.get("number_attr", ""),
        type_list_attr=data.get("type_list_attr", ""),
        is_ref=bool(data.get("is_ref", False)),
    )


def op_def_from_json(data: dict[str, Any], where: str = "manifest") -> OpDef:
    try:
        deprecation = data.get("deprecation")
        return OpDef(
            name=data["name"],
            inputs=tuple(_arg(a) for a in data.get("input_arg", [])),
            outputs=tuple(_arg(a) for a in data.get("output_arg", [])),
            attrs=tuple(
                AttrDef(
                    name=a["name"],
                    type=a.get("type", ""),
                    default=attr_from_json(a["default_value"]) if "default_value" in a else None,
                    allowed_values=(
                        attr_from_json(a["allowed_values"]) if "allowed_values" in a else None
                    ),
                    has_minimum=bool(a.get("has_minimum", False)),
                    minimum=int(a.get("minimum", 0)),
                )
                for a in data.get("attr", [])
            ),
            deprecation_version=int(deprecation.get("version", 0)) if deprecation else None,
            deprecation_explanation=deprecation.get("explanation", "") if deprecation else "",
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        name = data.get("name", "?") if isinstance(data, dict) else "?"
        raise ConfigError(f"{where}: OpDef {name} is not valid: {exc}") from None


def op_def_via_protobuf(data: dict[str, Any]) -> OpDef:
    from google.protobuf import json_format

    from worker.proto import tensorflow_subset_pb2 as pb
    from worker.proto.convert import op_def

    message = pb.OpDef()
    json_format.ParseDict(data, message, ignore_unknown_fields=True)
    return op_def(message)


class OpDefCache:
    """Converts each distinct OpDef JSON once; manifests of many consumers share most ops."""

    def __init__(self) -> None:
        self._parsed: dict[bytes, OpDef] = {}

    def get(self, data: dict[str, Any], where: str = "registry") -> OpDef:
        # orjson writes the canonical key ~10x faster than json.dumps(sort_keys=True).
        try:
            key = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
        except TypeError as exc:
            raise ConfigError(f"{where}: OpDef is not JSON data: {exc}") from None
        found = self._parsed.get(key)
        if found is None:
            found = self._parsed[key] = op_def_from_json(data, where)
        return found
