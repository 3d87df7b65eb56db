"""Field names in a text-format model, checked as TensorFlow's own parser checks them.

Our proto subset leaves out fields the checks never need, so the text reader parses
with unknown fields allowed. TensorFlow's parser refuses a field its messages do not
have ("Message type "tensorflow.NodeDef" has no field named "nmae""), and so the
model does not load. This walk refuses exactly those: every field name is looked up
in TensorFlow's own messages (`worker/proto/text_fields.json`, the union over
releases, written by `tools/proto_fields.py` from each release's protos). Values are
skipped, not checked: the parse that follows reads the ones we use.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from google.protobuf import text_format

from worker.errors import InvalidArtifact

ROOTS = {
    "SavedModel": "tensorflow.SavedModel",
    "MetaGraphDef": "tensorflow.MetaGraphDef",
    "GraphDef": "tensorflow.GraphDef",
}
"""Our message name -> TensorFlow's, for the messages a text-format model holds."""


@functools.cache
def tensorflow_fields() -> dict[str, dict[str, str]]:
    """{message: {field: message type of the field, or "" for a scalar}}."""
    text = resources.files("worker.proto").joinpath("text_fields.json").read_text()
    table: dict[str, dict[str, str]] = json.loads(text)
    return table


def check_field_names(text: str, root: str, name: str) -> None:
    """InvalidArtifact naming the first field no TensorFlow release has, as TensorFlow
    reports it; returns when every field name is one of TensorFlow's. Malformed text is
    left for the parser to report."""
    try:
        tokenizer = text_format.Tokenizer(text.splitlines())
        _message(tokenizer, ROOTS[root], tensorflow_fields(), end=None)
    except text_format.ParseError:
        return  # not well formed: the parser that follows says where
    except _Refused as exc:
        raise InvalidArtifact(f"{name}: TensorFlow's text parser refuses it: {exc}") from None


class _Refused(Exception):
    """A field name no TensorFlow message has (raised deep in the walk)."""


def _message(
    tokenizer: text_format.Tokenizer,
    message: str,
    table: dict[str, dict[str, str]],
    end: str | None,
) -> None:
    fields = table.get(message)
    while not (tokenizer.AtEnd() if end is None else tokenizer.TryConsume(end)):
        if tokenizer.TryConsume("["):  # an extension or an expanded Any: not ours to judge
            while not tokenizer.TryConsume("]"):
                _next(tokenizer)
            tokenizer.TryConsume(":")
            _skip_value(tokenizer)
            continue
        field = tokenizer.ConsumeIdentifierOrNumber()
        if fields is not None and field not in fields:
            raise _Refused(f'Message type "{message}" has no field named "{field}"')
        inner = fields.get(field, "") if fields is not None else ""
        colon = tokenizer.TryConsume(":")
        if tokenizer.token in ("{", "<"):
            _nested(tokenizer, inner or None, table)
        elif tokenizer.TryConsume("["):
            while not tokenizer.TryConsume("]"):
                if tokenizer.AtEnd():
                    raise text_format.ParseError("unterminated list")
                if tokenizer.token in ("{", "<"):
                    _nested(tokenizer, inner or None, table)
                else:
                    _scalar(tokenizer)
                tokenizer.TryConsume(",")
        elif colon:
            _scalar(tokenizer)
        else:
            raise text_format.ParseError("expected a value")
        if not tokenizer.TryConsume(","):
            tokenizer.TryConsume(";")


def _nested(
    tokenizer: text_format.Tokenizer, message: str | None, table: dict[str, dict[str, str]]
) -> None:
    end = "}"
    if not tokenizer.TryConsume("{"):
        tokenizer.Consume("<")
        end = ">"
    _message(tokenizer, message or "", table, end)


def _skip_value(tokenizer: text_format.Tokenizer) -> None:
    if tokenizer.token in ("{", "<"):
        _nested(tokenizer, None, {})
    else:
        _scalar(tokenizer)


def _scalar(tokenizer: text_format.Tokenizer) -> None:
    if tokenizer.token.startswith(("'", '"')):
        while tokenizer.token.startswith(("'", '"')):
            _next(tokenizer)  # adjacent string literals are one value
        return
    tokenizer.TryConsume("-")
    _next(tokenizer)


def _next(tokenizer: text_format.Tokenizer) -> None:
    if tokenizer.AtEnd():
        raise text_format.ParseError("unexpected end of text")
    tokenizer.NextToken()
