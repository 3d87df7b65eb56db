"""Read a TFLite flatbuffer's version facts, without TensorFlow or the flatbuffers package.

The schema subset is small (`worker.formats.tflite_schema`): the model's schema
version, its `operator_codes`, each subgraph's operators with the type, rank
and quantization scales of the tensors they read and write, the metadata
entry `min_runtime_version`, and the file features a runtime may not read
(`FEATURES` below: buffers after the flatbuffer, SignatureDefs, sparse tensors,
tensor types, ...). Tensor data (`buffers`) is never read, only the first
Buffer tables, up to the first that holds data, so a 2 GB model costs a few
hundred kilobytes of reads, wherever its tables sit in the file, through
any `Source` (a local file, an archive member, an S3 object read with ranged
GETs).

Nothing in the file is trusted. A flatbuffer is offsets into itself: every
offset, vtable, vector length and string is checked against the file before it
is followed, offsets to tables and vectors only point forward (an unsigned
offset from where it is written), the schema has no recursion, and the caps
below bound the work and the memory a hostile file can cause. What fails a
check is our own `InvalidArtifact` (or `LimitExceeded`), never another
exception. The checks are those of the FlatBuffers verifier a TFLite runtime
runs before building an interpreter, so a file that fails here fails there.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Iterator

from worker.errors import InvalidArtifact, LimitExceeded
from worker.formats import tflite_schema as S
from worker.formats.source import Source
from worker.model.tflite import (
    CUSTOM,
    TensorSig,
    TfliteModel,
    TfliteOpCode,
    TfliteOperatorKind,
)

MAX_OPERATOR_CODES = 65_536
MAX_SUBGRAPHS = 65_536
MAX_OPERATORS = 2_000_000
"""Operators over all subgraphs; the largest real models have tens of thousands."""
MAX_OPERATOR_IO = 100_000
"""Inputs or outputs of one operator."""
MAX_TENSOR_REFS = 20_000_000
"""Tensor indices read over all operators: bounds a file whose operators share one
huge input list."""
MAX_KINDS = 100_000
"""Distinct (opcode, tensor signature) kinds kept in the artifact."""
MAX_METADATA = 65_536
MAX_SIGNATURES = 65_536
MAX_STRING_BYTES = 64 << 10
"""A custom op's name or a metadata entry's name."""
DESCRIPTION_BYTES = 1024
"""The description is kept up to this long (it is the converter's note)."""
MIN_RUNTIME_BYTES = 256
"""`min_runtime_version` is a short version string (TFLite writes 16 bytes)."""
MAX_BUFFERS = 20_000_000
"""The length of the buffers vector; only its first tables are read."""

# FEATURES: file features a runtime may not read (names of catalog/data/tflite_features.json).
BUFFER_OFFSET = "buffer-offset"  # a Buffer's bytes after the flatbuffer (schema 3c, > 2 GB)
LARGE_CUSTOM_OPTIONS = "large-custom-options"  # an Operator's custom options there too
SIGNATURE_DEFS = "signature-defs"
SPARSE_TENSOR = "sparse-tensor"  # Tensor.sparsity
SHAPE_SIGNATURE = "shape-signature"  # Tensor.shape_signature
VARIANT_SUBTYPES = "variant-subtypes"  # Tensor.variant_tensors
TENSOR_TYPE = "tensor-type-"  # + the TensorType's name, for each type a tensor has

SLOTS_READ = 16
"""Field slots read of a vtable: the schema subset reads none past slot 7."""

PAGE = 64 << 10
PAGES_CACHED = 64


class _Pages:
    """Reads served from a few cached pages: a flatbuffer is read in many small pieces
    close together, which on a local file would each be a system call."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._pages: OrderedDict[int, bytes] = OrderedDict()

    def read(self, offset: int, length: int) -> bytes:
        if length > PAGE:
            return self._source.read_at(offset, length)
        first, last = offset // PAGE, (offset + length - 1) // PAGE
        if first == last:
            page = self._page(first)
            start = offset - first * PAGE
            return page[start : start + length]
        joined = self._page(first) + self._page(last)
        start = offset - first * PAGE
        return joined[start : start + length]

    def _page(self, index: int) -> bytes:
        page = self._pages.get(index)
        if page is not None:
            self._pages.move_to_end(index)
            return page
        start = index * PAGE
        page = self._source.read_at(start, min(PAGE, self._source.size - start))
        self._pages[index] = page
        if len(self._pages) > PAGES_CACHED:
            self._pages.popitem(last=False)
        return page


class _Table:
    """One table: where it is, its inline size and its vtable's field offsets."""

    __slots__ = ("fields", "pos", "size")

    def __init__(self, pos: int, size: int, fields: tuple[int, ...]) -> None:
        self.pos, self.size, self.fields = pos, size, fields

    def slot(self, index: int) -> int:
        return self.fields[index] if index < len(self.fields) else 0


class _Flat:
    """Checked reads of flatbuffer primitives over a source."""

    def __init__(self, source: Source) -> None:
        self.name = source.name
        self.size = source.size
        self._pages = _Pages(source)

    def error(self, what: str) -> InvalidArtifact:
        return InvalidArtifact(f"{self.name}: not a valid TFLite flatbuffer: {what}")

    def read(self, pos: int, length: int) -> bytes:
        if pos < 0 or length < 0 or pos + length > self.size:
            raise self.error(f"{length} bytes at offset {pos} run past the end ({self.size})")
        return self._pages.read(pos, length)

    def u16(self, pos: int) -> int:
        value: int = struct.unpack("<H", self.read(pos, 2))[0]
        return value

    def i32(self, pos: int) -> int:
        value: int = struct.unpack("<i", self.read(pos, 4))[0]
        return value

    def u32(self, pos: int) -> int:
        value: int = struct.unpack("<I", self.read(pos, 4))[0]
        return value

    def table(self, pos: int) -> _Table:
        vtable = pos - self.i32(pos)
        if vtable < 0 or vtable + 4 > self.size:
            raise self.error(f"table at {pos} has its vtable outside the file")
        vsize, tsize = self.u16(vtable), self.u16(vtable + 2)
        if vsize < 4 or vsize % 2 or tsize < 4:
            raise self.error(f"table at {pos} has a malformed vtable")
        if pos + tsize > self.size:
            raise self.error(f"table at {pos} runs past the end of the file")
        count = min((vsize - 4) // 2, SLOTS_READ)  # a vtable may be 64 KB; we need a few
        fields = struct.unpack(f"<{count}H", self.read(vtable + 4, 2 * count))
        return _Table(pos, tsize, fields)

    def _field(self, table: _Table, slot: int, width: int) -> int:
        """Where a present field is (0: absent); refused when it sits outside its table."""
        offset = table.slot(slot)
        if offset and offset + width > table.size:
            raise self.error(f"field {slot} of the table at {table.pos} lies outside it")
        return table.pos + offset if offset else 0

    def scalar(self, table: _Table, slot: int, fmt: str, default: int) -> int:
        width = struct.calcsize(fmt)
        at = self._field(table, slot, width)
        if not at:
            return default
        value: int = struct.unpack(fmt, self.read(at, width))[0]
        return value

    def target(self, table: _Table, slot: int) -> int | None:
        """Where an offset field points (a table, vector or string), or None when absent."""
        at = self._field(table, slot, 4)
        if not at:
            return None
        target = at + self.u32(at)
        if target + 4 > self.size:
            raise self.error(f"field {slot} of the table at {table.pos} points past the end")
        return target

    def vector(self, table: _Table, slot: int, element: int) -> tuple[int, int]:
        """(start of the elements, length) of a vector field; (0, 0) when absent."""
        at = self.target(table, slot)
        if at is None:
            return 0, 0
        length = self.u32(at)
        if at + 4 + length * element > self.size:
            raise self.error(f"a vector of {length} elements at {at} runs past the end")
        return at + 4, length

    def tables(self, table: _Table, slot: int, cap: int, what: str) -> Iterator[_Table]:
        start, length = self.vector(table, slot, 4)
        if length > cap:
            raise LimitExceeded(f"{self.name}: more than {cap} {what}")
        for i in range(length):
            at = start + 4 * i
            yield self.table(at + self.u32(at))

    def length(self, table: _Table, slot: int, element: int) -> int:
        return self.vector(table, slot, element)[1]

    def ints(self, table: _Table, slot: int, cap: int, what: str) -> tuple[int, ...]:
        start, length = self.vector(table, slot, 4)
        if length > cap:
            raise LimitExceeded(f"{self.name}: {what} lists more than {cap} entries")
        return struct.unpack(f"<{length}i", self.read(start, 4 * length)) if length else ()

    def string(self, table: _Table, slot: int, cap: int, *, truncate: bool = False) -> str | None:
        at = self.target(table, slot)
        if at is None:
            return None
        length = self.u32(at)
        if at + 4 + length + 1 > self.size:  # strings end in a NUL the verifier checks for
            raise self.error(f"a string of {length} bytes at {at} runs past the end")
        if length > cap and not truncate:
            raise LimitExceeded(f"{self.name}: a string of {length} bytes (more than {cap})")
        return self.read(at + 4, min(length, cap)).decode("utf-8", "replace")


def is_tflite(head: bytes, size: int) -> bool:
    """The flatbuffer file identifier TFL3 at 4, after a 4-byte-aligned root offset.
    A binary GraphDef starts with byte 0x0a, so its would-be offset is never aligned."""
    if len(head) < 8 or head[4:8] != S.IDENTIFIER:
        return False
    root = int.from_bytes(head[0:4], "little")
    return root % 4 == 0 and 8 <= root < size


def read_tflite(source: Source) -> TfliteModel:
    """The version facts of a `.tflite` file; InvalidArtifact when it is not one."""
    if source.size < 8:
        raise InvalidArtifact(f"{source.name}: too short for a TFLite flatbuffer")
    flat = _Flat(source)
    if flat.read(4, 4) != S.IDENTIFIER:
        raise InvalidArtifact(
            f"{source.name}: not a TFLite flatbuffer (no {S.IDENTIFIER.decode()} identifier)"
        )
    model = flat.table(flat.u32(0))
    codes = tuple(
        _operator_code(flat, t)
        for t in flat.tables(model, S.MODEL_OPERATOR_CODES, MAX_OPERATOR_CODES, "operator codes")
    )
    reading = _Operators(flat, len(codes))
    kinds, subgraphs, operators, tensors = reading.read(model)
    metadata = _metadata(flat, model)
    signatures = _signatures(flat, model)
    features = set(reading.features)
    if signatures:
        features.add(SIGNATURE_DEFS)
    if _has_buffer_offset(flat, model):
        features.add(BUFFER_OFFSET)
    return TfliteModel(
        schema_version=flat.scalar(model, S.MODEL_VERSION, "<I", 0),
        description=flat.string(model, S.MODEL_DESCRIPTION, DESCRIPTION_BYTES, truncate=True) or "",
        min_runtime_version=_min_runtime_version(flat, model, metadata),
        operator_codes=codes,
        operator_kinds=kinds,
        subgraphs=subgraphs,
        operators=operators,
        tensors=tensors,
        buffers=flat.length(model, S.MODEL_BUFFERS, 4),
        metadata=tuple(name for name, _ in metadata),
        signatures=signatures,
        features=tuple(sorted(features)),
    )


def _operator_code(flat: _Flat, table: _Table) -> TfliteOpCode:
    deprecated = flat.scalar(table, S.OPCODE_DEPRECATED_BUILTIN_CODE, "<b", 0)
    builtin = flat.scalar(table, S.OPCODE_BUILTIN_CODE, "<i", 0)
    custom = flat.string(table, S.OPCODE_CUSTOM_CODE, MAX_STRING_BYTES)
    code = max(builtin, deprecated)
    return TfliteOpCode(
        deprecated_builtin_code=deprecated,
        builtin_code=builtin,
        version=flat.scalar(table, S.OPCODE_VERSION, "<i", 1),
        custom_code=custom,
        name=(custom or "") if code == CUSTOM else S.builtin_name(code),
    )


_Sigs = tuple[TensorSig | None, ...]
_Key = tuple[int, _Sigs, _Sigs]  # opcode index, input and output signatures


class _Operators:
    """Every subgraph's operators, collapsed into kinds; tensors read once, when used."""

    def __init__(self, flat: _Flat, codes: int) -> None:
        self.flat = flat
        self.codes = codes
        self.refs = 0
        self.sigs: dict[TensorSig, TensorSig] = {}  # one object per distinct signature
        self.features: set[str] = set()  # of the tensors operators use, and the operators

    def read(self, model: _Table) -> tuple[tuple[TfliteOperatorKind, ...], int, int, int]:
        flat = self.flat
        kinds: dict[_Key, list[int]] = {}  # key -> [count, subgraph, position]
        subgraphs = operators = tensors = 0
        for index, subgraph in enumerate(
            flat.tables(model, S.MODEL_SUBGRAPHS, MAX_SUBGRAPHS, "subgraphs")
        ):
            subgraphs += 1
            start, count = flat.vector(subgraph, S.SUBGRAPH_TENSORS, 4)
            tensors += count
            seen: dict[int, TensorSig | None] = {}
            for position, op in enumerate(
                flat.tables(subgraph, S.SUBGRAPH_OPERATORS, MAX_OPERATORS, "operators")
            ):
                operators += 1
                if operators > MAX_OPERATORS:
                    raise LimitExceeded(f"{flat.name}: more than {MAX_OPERATORS} operators")
                key = self._operator(op, start, count, seen)
                entry = kinds.get(key)
                if entry is None:
                    if len(kinds) >= MAX_KINDS:
                        raise LimitExceeded(f"{flat.name}: more than {MAX_KINDS} operator kinds")
                    kinds[key] = [1, index, position]
                else:
                    entry[0] += 1
        return (
            tuple(
                TfliteOperatorKind(key[0], key[1], key[2], n, sub, pos)
                for key, (n, sub, pos) in kinds.items()
            ),
            subgraphs,
            operators,
            tensors,
        )

    def _operator(
        self, op: _Table, start: int, count: int, seen: dict[int, TensorSig | None]
    ) -> _Key:
        flat = self.flat
        opcode = flat.scalar(op, S.OPERATOR_OPCODE_INDEX, "<I", 0)
        if opcode >= self.codes:
            raise flat.error(f"an operator uses opcode {opcode} of {self.codes}")
        inputs = flat.ints(op, S.OPERATOR_INPUTS, MAX_OPERATOR_IO, "an operator's inputs")
        outputs = flat.ints(op, S.OPERATOR_OUTPUTS, MAX_OPERATOR_IO, "an operator's outputs")
        self.refs += len(inputs) + len(outputs)
        if flat.scalar(op, S.OPERATOR_LARGE_CUSTOM_OPTIONS_OFFSET, "<Q", 0) > 1:
            self.features.add(LARGE_CUSTOM_OPTIONS)
        if self.refs > MAX_TENSOR_REFS:
            raise LimitExceeded(f"{flat.name}: more than {MAX_TENSOR_REFS} tensor references")
        return (
            opcode,
            tuple(self._tensor(i, start, count, seen) for i in inputs),
            tuple(self._tensor(i, start, count, seen) for i in outputs),
        )

    def _tensor(
        self, index: int, start: int, count: int, seen: dict[int, TensorSig | None]
    ) -> TensorSig | None:
        if index == -1:  # an optional input left out
            return None
        if not 0 <= index < count:
            raise self.flat.error(f"an operator uses tensor {index} of {count}")
        if index in seen:
            return seen[index]
        flat = self.flat
        at = start + 4 * index
        tensor = flat.table(at + flat.u32(at))
        scales = 0
        quantization = flat.target(tensor, S.TENSOR_QUANTIZATION)
        if quantization is not None:
            scales = flat.length(flat.table(quantization), S.QUANTIZATION_SCALE, 4)
        kind = S.tensor_type_name(flat.scalar(tensor, S.TENSOR_TYPE, "<b", 0))
        rank = flat.length(tensor, S.TENSOR_SHAPE, 4)
        pointwise = False
        if kind == "INT8" and rank == 4:  # [out, 1, 1, in]: 1x1 convolution weights
            shape = flat.ints(tensor, S.TENSOR_SHAPE, 4, "shape entries")
            pointwise = shape[1] == 1 and shape[2] == 1
        sig = TensorSig(type=kind, rank=rank, scales=scales, pointwise=pointwise)
        self.features.add(TENSOR_TYPE + sig.type)
        if flat.target(tensor, S.TENSOR_SPARSITY) is not None:
            self.features.add(SPARSE_TENSOR)
        if flat.target(tensor, S.TENSOR_SHAPE_SIGNATURE) is not None:
            self.features.add(SHAPE_SIGNATURE)
        if flat.length(tensor, S.TENSOR_VARIANT_TENSORS, 4):
            self.features.add(VARIANT_SUBTYPES)
        sig = self.sigs.setdefault(sig, sig)
        seen[index] = sig
        return sig


def _metadata(flat: _Flat, model: _Table) -> list[tuple[str, int]]:
    """(name, buffer index) of each metadata entry."""
    return [
        (
            flat.string(entry, S.METADATA_NAME, MAX_STRING_BYTES) or "",
            flat.scalar(entry, S.METADATA_BUFFER, "<I", 0),
        )
        for entry in flat.tables(model, S.MODEL_METADATA, MAX_METADATA, "metadata entries")
    ]


def _min_runtime_version(flat: _Flat, model: _Table, metadata: list[tuple[str, int]]) -> str | None:
    """The converter's `min_runtime_version` metadata: the buffer's bytes up to the first
    NUL, of the last entry when there are several (as TensorFlow's generated reader
    gives it); None when absent or not readable as one."""
    found = [b for name, b in metadata if name == S.MIN_RUNTIME_VERSION]
    if not found:
        return None
    index = found[-1]  # converters that quantize write it twice; the last one is current
    start, count = flat.vector(model, S.MODEL_BUFFERS, 4)
    if index >= count:
        return None
    at = start + 4 * index
    buffer = flat.table(at + flat.u32(at))
    data_start, length = flat.vector(buffer, S.BUFFER_DATA, 1)
    if not length:  # over 2 GB, a buffer's bytes may sit after the flatbuffer (schema 3c)
        offset = flat.scalar(buffer, S.BUFFER_OFFSET, "<Q", 0)
        if offset <= 1:
            return ""
        data_start, length = offset, flat.scalar(buffer, S.BUFFER_SIZE, "<Q", 0)
    if length > MIN_RUNTIME_BYTES:
        return None
    raw = flat.read(data_start, length)
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _has_buffer_offset(flat: _Flat, model: _Table) -> bool:
    """Whether the Buffers keep their bytes after the flatbuffer (offset > 1, as TFLite's
    builder tests it), from the first Buffer that holds anything: the converter writes
    every constant outside or none (flatbuffer_export.cc, `use_buffer_offset`, which
    it turns on for a model over 2 GB), constants before metadata. A Buffer table sits
    beside its data, so reading them all would page through the whole file; the bytes
    themselves are never read. A file that mixes the two (no converter writes one) is
    judged by its first Buffer with data."""
    for buffer in flat.tables(model, S.MODEL_BUFFERS, MAX_BUFFERS, "buffers"):
        if flat.scalar(buffer, S.BUFFER_OFFSET, "<Q", 0) > 1:
            return True
        if flat.length(buffer, S.BUFFER_DATA, 1):
            return False
    return False


def _signatures(flat: _Flat, model: _Table) -> tuple[str, ...]:
    keys = []
    for signature in flat.tables(model, S.MODEL_SIGNATURE_DEFS, MAX_SIGNATURES, "signatures"):
        key = flat.string(signature, S.SIGNATURE_KEY, MAX_STRING_BYTES)
        if key is None:
            key = flat.string(signature, S.SIGNATURE_OLD_KEY, MAX_STRING_BYTES)
        keys.append(key or "")
    return tuple(keys)
