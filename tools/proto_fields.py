#!/usr/bin/env python3
"""List every field of TensorFlow's own protos reachable from SavedModel and GraphDef.

Run with a TensorFlow venv's interpreter; prints JSON `{message full name: {field
name: its message type's full name, or "" for a scalar}}` on stdout. The text-format
reader uses the union over releases (`worker/proto/text_fields.json`) to tell a
field TensorFlow knows (and our proto
subset leaves out) from one no TensorFlow knows, which TensorFlow's own text parser
refuses:

    $TFENVS/2.21.0/bin/python tools/proto_fields.py > /tmp/2.21.json
    python3 tools/proto_fields.py --merge /tmp/*.json > worker/proto/text_fields.json
"""

from __future__ import annotations

import json
import sys


def walk(descriptor, seen):  # type: ignore[no-untyped-def]
    if descriptor.full_name in seen:
        return
    seen[descriptor.full_name] = {
        field.name: field.message_type.full_name if field.message_type else ""
        for field in descriptor.fields
    }
    for field in descriptor.fields:
        if field.message_type is not None:
            walk(field.message_type, seen)


def dump() -> dict[str, dict[str, str]]:
    from tensorflow.core.framework import graph_pb2
    from tensorflow.core.protobuf import saved_model_pb2

    seen: dict[str, dict[str, str]] = {}
    for root in (saved_model_pb2.SavedModel, graph_pb2.GraphDef):
        walk(root.DESCRIPTOR, seen)
    return seen


def merge(paths: list[str]) -> dict[str, dict[str, str]]:
    """The union over releases: TensorFlow reserves a removed field's number and name,
    so a field one release knows is never another field elsewhere."""
    union: dict[str, dict[str, str]] = {}
    for path in paths:
        with open(path) as handle:
            for name, fields in json.load(handle).items():
                union.setdefault(name, {}).update(fields)
    return {name: dict(sorted(fields.items())) for name, fields in sorted(union.items())}


if __name__ == "__main__":
    result = merge(sys.argv[2:]) if sys.argv[1:2] == ["--merge"] else dump()
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
