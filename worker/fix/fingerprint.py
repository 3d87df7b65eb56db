"""A fresh `fingerprint.pb` for a rewritten SavedModel.

TensorFlow (2.12+) writes a FingerprintDef beside `saved_model.pb`: hashes of
the SavedModel, of its regularized graph, signatures, object graph and
checkpoint index, a version and (2.15+) a uuid. A copy must not claim the
original's identity, so:
- `signature_def_hash`, `saved_object_graph_hash`, `checkpoint_hash` and
  `version` are kept: the rewrite never touches what they hash;
- `graph_def_program_hash` is kept when only function bodies changed (its
  regularization clears the function library) and replaced otherwise;
- `saved_model_checksum` is replaced, and `uuid` (when present) is new.
TensorFlow's own values cannot be reproduced without its full schema (it hashes
its own re-serialization), so replaced values are tfcompat's: 64 bits of the
SHA-256 of the copy's `saved_model.pb` (and of the original value with the
rewrite, for the program hash), stable for the same copy. Fields this code does
not know are kept byte for byte. TensorFlow only reads the file for metrics
and `tf.saved_model.experimental.read_fingerprint`; loading never checks it.
"""

from __future__ import annotations

import hashlib

from worker.errors import InvalidArtifact
from worker.fix.rewrite import Cursor, spans, varint
from worker.formats import wire
from worker.formats.digest import sha256_of
from worker.formats.source import Source

_CHECKSUM, _PROGRAM_HASH, _UUID = 1, 2, 7
MAX_FINGERPRINT_BYTES = 1 << 20


def _u64(digest: bytes) -> int:
    return int.from_bytes(digest[:8], "little")


def fresh_fingerprint(old: Source, new_model: Source, program_changed: bool, rewrite: str) -> bytes:
    """The copy's fingerprint.pb, from the original's and the copy's saved_model.pb."""
    if old.size > MAX_FINGERPRINT_BYTES:
        raise InvalidArtifact(f"{old.name}: a fingerprint of {old.size} bytes")
    model_digest = bytes.fromhex(sha256_of(new_model))
    out = bytearray()
    for span in spans(Cursor(old)):
        if span.number == _CHECKSUM and span.wire_type == wire.VARINT:
            out += varint(_CHECKSUM << 3) + varint(_u64(model_digest))
        elif span.number == _PROGRAM_HASH and span.wire_type == wire.VARINT and program_changed:
            value = Cursor(old, span.start, span.end)
            value.varint()
            original = value.varint()
            seed = original.to_bytes(8, "little") + rewrite.encode()
            new = _u64(hashlib.sha256(seed).digest())
            out += varint(_PROGRAM_HASH << 3) + varint(new)
        elif span.number == _UUID and span.wire_type == wire.LENGTH_DELIMITED:
            uuid = str(int.from_bytes(model_digest[8:24], "little")).encode()
            out += varint((_UUID << 3) | wire.LENGTH_DELIMITED) + varint(len(uuid)) + uuid
        else:
            out += old.read_at(span.start, span.end - span.start)
    return bytes(out)
