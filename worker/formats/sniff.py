"""Name the model formats tfcompat does not read, from their first bytes.

A user who points tfcompat at an ONNX file or a
PyTorch checkpoint should hear in one line what the file is and what tfcompat
reads, not what the protobuf walker tripped over ("unsupported wire type 4 for
field 1181"). `sniff` looks at the first `HEAD_BYTES` only (an object store
answers them with one ranged GET) and answers only when it is sure: every
TensorFlow artifact tfcompat reads, and anything it cannot place, gets None,
so the readers keep their own precise errors. It never raises. Keras files
(an HDF5 file, a zip holding `metadata.json` and `config.json`) are read, not
named: `keras_container` tells the readers which one a file is.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from worker.errors import TfcompatError
from worker.formats.archive_members import SNIFF_BYTES, archive_kind
from worker.formats.source import Source, Tree
from worker.formats.tflite import is_tflite

HEAD_BYTES = 64 << 10
# A folder without a model: the files whose names suggest one are looked at, at most this
# many (on an object store each costs a ranged GET).
TREE_FILES_SNIFFED = 10
FOREIGN_SUFFIXES = (
    ".h5",
    ".hdf5",
    ".keras",
    ".lite",
    ".onnx",
    ".json",
    ".pt",
    ".pth",
    ".bin",
    ".pkl",
    ".pickle",
    ".safetensors",
    ".gguf",
)

READ_FORMATS = (
    "tfcompat reads SavedModels, frozen GraphDefs (.pb, .pbtxt), MetaGraphDefs (.meta), "
    "checkpoints (.index), Keras models (.keras, .h5), TFLite flatbuffers (.tflite) and "
    ".tar/.tar.gz/.zip archives of them"
)

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
# An HDF5 superblock sits at 0 or, after a user block, at 512, 1024, 2048, ...
HDF5_OFFSETS = (0, 512, 1024, 2048, 4096, 8192, 16384, 32768)
ZIP_LOCAL = b"PK\x03\x04"
# Suffixes of files tfcompat reads; a zip holding one is an archive for the readers.
TF_SUFFIXES = (".pb", ".pbtxt", ".pbtx", ".graphdef", ".meta", ".index", ".tflite")

# ONNX ModelProto's top-level fields and their wire types (onnx/onnx.proto): ir_version,
# producer_name, producer_version, domain, model_version, doc_string, graph, opset_import,
# metadata_props, training_info, functions, configuration.
ONNX_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}
ONNX_MAX_IR_VERSION = 64


@dataclass(frozen=True)
class Foreign:
    """A model format tfcompat recognises but does not read."""

    format: str  # short name: "hdf5", "onnx", "gguf", ...
    what: str  # what the file is, for a person
    hint: str = ""  # how to get something tfcompat reads, when there is a way

    def message(self) -> str:
        """One line: what the file is, what tfcompat reads, and the way out if any."""
        hint = f"; {self.hint}" if self.hint else ""
        return f"{self.what}; {READ_FORMATS}{hint}"


ONNX = Foreign("onnx", "an ONNX model (.onnx)")
TFJS = Foreign(
    "tfjs",
    "a TensorFlow.js model (model.json)",
    "check the SavedModel it was converted from instead",
)
KERAS_JSON = Foreign("keras-json", "a Keras model architecture (JSON, no weights)")
JSON = Foreign("json", "a JSON document")
PYTORCH_ZIP = Foreign("pytorch", "a PyTorch model (torch.save zip archive, .pt/.pth)")
PICKLE = Foreign("pickle", "a Python pickle (a PyTorch .pt/.pth before 1.6, scikit-learn, ...)")
SAFETENSORS = Foreign("safetensors", "a safetensors weights file (.safetensors)")
GGUF = Foreign("gguf", "a GGUF model (llama.cpp / GGML)")


def _varint(data: bytes, pos: int) -> tuple[int, int] | None:
    """(value, next position), or None when the varint runs off the data or past 64 bits."""
    value = shift = 0
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None


def _is_onnx(head: bytes) -> bool:
    """A ModelProto: ir_version first (serializers write fields in number order), then only
    ModelProto fields, up to its graph (7) or opset_import (8).

    TensorFlow's own protobufs never pass: a GraphDef and a MetaGraphDef start with a
    length-delimited field 1, and a SavedModel (field 1 varint, like ir_version) has
    nothing after its meta_graphs (2)."""
    if not head.startswith(b"\x08"):
        return False
    pos, first = 0, True
    while pos < len(head):
        tag = _varint(head, pos)
        if tag is None:
            return False
        field, wire_type = tag[0] >> 3, tag[0] & 7
        if ONNX_FIELDS.get(field) != wire_type:
            return False
        value = _varint(head, tag[1])
        if value is None:
            return False
        if first and not (field == 1 and 1 <= value[0] <= ONNX_MAX_IR_VERSION):
            return False
        if field in (7, 8):
            return True
        first = False
        pos = value[1] + (value[0] if wire_type == 2 else 0)
    return False


def _is_safetensors(head: bytes, size: int) -> bool:
    """An 8-byte little-endian header length, then the JSON header itself."""
    if len(head) < 10 or head[8:10] != b'{"':
        return False
    length = int.from_bytes(head[0:8], "little")
    return 2 <= length <= size - 8


def _zip_names(head: bytes) -> list[str]:
    """Member names from the local file headers found in the first bytes.

    Only the start of the archive is read: torch.save writes `<name>/data.pkl` first,
    Keras 3 writes `metadata.json` then `config.json` first."""
    names = []
    for match in re.finditer(re.escape(ZIP_LOCAL), head):
        start = match.start()
        if start + 30 > len(head):
            break
        length = int.from_bytes(head[start + 26 : start + 28], "little")
        raw = head[start + 30 : start + 30 + length]
        if len(raw) == length:
            names.append(raw.decode("utf-8", "replace"))
    return names


def _is_keras_zip(names: list[str]) -> bool:
    return (
        "metadata.json" in names
        and "config.json" in names
        and not any(n.endswith(TF_SUFFIXES) for n in names)
    )


def keras_container(head: bytes) -> str | None:
    """ "hdf5" or "keras-zip" when the first bytes are a Keras file's container, else None.
    A zip that also holds TensorFlow files is an archive for the archive reader."""
    if any(head[offset : offset + 8] == HDF5_MAGIC for offset in HDF5_OFFSETS):
        return "hdf5"
    if head.startswith(ZIP_LOCAL) and _is_keras_zip(_zip_names(head)):
        return "keras-zip"
    return None


def _sniff_zip(head: bytes) -> Foreign | None:
    names = _zip_names(head)
    if any(n.endswith(TF_SUFFIXES) for n in names) or _is_keras_zip(names):
        return None  # an archive the readers open, or a Keras archive
    if any(posixpath.basename(n) == "data.pkl" and n.count("/") == 1 for n in names):
        return PYTORCH_ZIP
    return None


def _sniff_json(head: bytes) -> Foreign | None:
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not text.startswith((b"{", b"[")):
        return None
    try:
        decoded = text[:4096].decode("utf-8")
    except UnicodeDecodeError as exc:
        # a multi-byte character cut by the 4 KB window is fine; anything else is binary
        if exc.start < 4090:
            return None
        decoded = text[: exc.start].decode("utf-8")
    if any(ord(c) < 32 and c not in "\t\r\n" for c in decoded):
        return None
    if b'"modelTopology"' in text or b'"weightsManifest"' in text:
        return TFJS
    # model.to_json(): the first class_name is the model's own (Keras 3 puts "module" first)
    first_class = re.search(r'"class_name"\s*:\s*"(\w+)"', decoded)
    if first_class and first_class.group(1) in ("Sequential", "Functional", "Model"):
        return KERAS_JSON
    return JSON


def sniff(head: bytes, size: int | None = None) -> Foreign | None:
    """The foreign model format the first bytes of a file show, or None.

    `head` is the start of the file (`HEAD_BYTES` are enough), `size` its whole size
    (default: `len(head)`). Never raises, whatever the bytes."""
    size = len(head) if size is None else size
    if keras_container(head) is not None:
        return None  # read by worker.formats.keras
    if (
        head.startswith(b"GGUF")
        and len(head) >= 8
        and 1 <= int.from_bytes(head[4:8], "little") < 256
    ):
        return GGUF
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return PICKLE
    if head.startswith(ZIP_LOCAL):
        return _sniff_zip(head)
    if is_tflite(head, size):
        return None  # read by worker.formats.tflite
    if _is_safetensors(head, size):
        return SAFETENSORS
    if _is_onnx(head):
        return ONNX
    return _sniff_json(head)


@dataclass(frozen=True)
class Blob:
    """What a blob's first bytes say it is, decided once: `keras` (`container` says
    hdf5 or keras-zip), `foreign` (`foreign` names it), `archive`, `tflite`, or `file`
    (a protobuf or checkpoint file, placed by its name)."""

    kind: str
    container: str | None = None
    foreign: Foreign | None = None


def sniff_blob(head: bytes, size: int) -> Blob:
    """The one decision the readers dispatch on (`formats.read.read_source`)."""
    container = keras_container(head)
    if container is not None:
        return Blob("keras", container=container)
    foreign = sniff(head, size)
    if foreign is not None:
        return Blob("foreign", foreign=foreign)
    if archive_kind(head[:SNIFF_BYTES]) is not None:
        return Blob("archive")
    if is_tflite(head[:8], size):  # the identifier, whatever the file is named
        return Blob("tflite")
    return Blob("file")


def blob_of(source: Source) -> Blob:
    """`sniff_blob` over one read of the source's first bytes."""
    return sniff_blob(source.read_at(0, min(source.size, HEAD_BYTES)), source.size)


def _head(source: Source) -> bytes | None:
    try:
        return source.read_at(0, min(source.size, HEAD_BYTES))
    except TfcompatError:
        return None


def sniff_source(source: Source) -> Foreign | None:
    """`sniff` over a source's first bytes; a source that cannot be read is not placed."""
    head = _head(source)
    return None if head is None else sniff(head, source.size)


def no_model_message(tree: Tree, display: str) -> str:
    """Why a folder or archive holds nothing to read, naming the first foreign models in it."""
    found = []
    candidates = [n for n in tree.names() if n.lower().endswith(FOREIGN_SUFFIXES)]
    for name in candidates[:TREE_FILES_SNIFFED]:
        try:
            foreign = sniff_source(tree.open(name))
        except TfcompatError:
            continue
        if foreign is not None and foreign is not JSON:
            found.append(f"{name}: {foreign.what}")
    if not found:
        return f"{display}: no TensorFlow model found ({READ_FORMATS})"
    return f"{display}: no TensorFlow model found, only {'; '.join(found)}. {READ_FORMATS}"
