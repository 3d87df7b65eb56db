"""XLA modules in a graph (`XlaCallModule`), as plain data.

jax's native serialization (jax2tf, `jax.export`) puts a whole program into one
`XlaCallModule` node: a StableHLO portable artifact in its `module` attr, the calling
convention's `version`, the `platforms` it was lowered for and the `disabled_checks`.
TensorFlow reads none of it at load: the kernel deserializes and checks the module
when it first runs (`XlaCallModuleLoader::LoadModule` and `SetPlatformIndex` in
`compiler/tf2xla/kernels/xla_call_module_loader.cc`), so a request fails where the
load succeeded.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

BYTECODE_MAGIC = b"ML\xefR"
STAMP_PREFIX = "StableHLO_v"
HEADER_BYTES = 64
"""How much of a module the reader keeps: the bytecode header holds the stamp."""


def version_key(text: str) -> tuple[int, ...]:
    """'1.8.5' -> (1, 8, 5); a part that is not a number counts as 0."""
    return tuple(int(p) if p.isdigit() else 0 for p in text.split("."))


def _varint_end(data: bytes, at: int) -> int:
    """Where MLIR's prefix varint at `at` ends: the first byte's trailing zeros count
    the bytes that follow it (none set: eight)."""
    if at >= len(data):
        return -1
    first = data[at]
    extra = 8 if first == 0 else (first & -first).bit_length() - 1
    return at + 1 + extra


def stablehlo_stamp(module: bytes) -> str | None:
    """The StableHLO version a portable artifact was written for ('1.8.5'); None when
    the module is not MLIR bytecode (MLIR text, as versions 1-3 carried) or has no stamp.

    The header is the magic, the bytecode version (a varint) and the producer string up
    to its NUL: `serializePortableArtifact` writes "StableHLO_v<target>" there."""
    if not module.startswith(BYTECODE_MAGIC):
        return None
    start = _varint_end(module, len(BYTECODE_MAGIC))
    if start < 0:
        return None
    end = module.find(b"\x00", start)
    producer = module[start : end if end >= 0 else len(module)].decode("ascii", "replace")
    if not producer.startswith(STAMP_PREFIX):
        return None
    stamp = producer.removeprefix(STAMP_PREFIX)
    return stamp if stamp and all(p.isdigit() for p in stamp.split(".")) else None


def module_header(module: bytes) -> bytes:
    """What of a `module` attr the summary keeps: the bytecode header, or, for MLIR
    text, its first bytes (the rest never decides whether a release runs it)."""
    if not module.startswith(BYTECODE_MAGIC):
        return module[:HEADER_BYTES]
    start = _varint_end(module, len(BYTECODE_MAGIC))
    end = module.find(b"\x00", max(start, 0))
    return module[: end + 1] if 0 <= end < 256 else module[:HEADER_BYTES]


@dataclass(frozen=True)
class XlaModule:
    """One XlaCallModule node's attrs that decide whether a release runs it."""

    version: int | None  # None: the attr is absent
    platforms: tuple[str, ...]
    disabled_checks: tuple[str, ...]
    stamp: str | None  # the module's StableHLO version (None: not bytecode, or unknown)


def xla_module(attrs: dict[str, dict[str, object]]) -> XlaModule:
    """An XlaCallModule kind's attrs (protobuf JSON) as an `XlaModule`."""

    def strings(name: str) -> tuple[str, ...]:
        listed = attrs.get(name, {}).get("list")
        items = listed.get("s", []) if isinstance(listed, dict) else []
        return tuple(base64.b64decode(str(s)).decode("utf-8", "replace") for s in items)

    raw_version = attrs.get("version", {}).get("i")
    raw_module = attrs.get("module", {}).get("s")
    try:
        module = base64.b64decode(str(raw_module)) if raw_module is not None else b""
    except ValueError:
        module = b""
    return XlaModule(
        version=int(str(raw_version)) if raw_version is not None else None,
        platforms=strings("platforms"),
        disabled_checks=strings("disabled_checks"),
        stamp=stablehlo_stamp(module),
    )


@dataclass(frozen=True)
class XlaCallModuleSupport:
    """What one release's XlaCallModule runs on the CPU, as measured
    (`tools/xla/build_table.py`, `worker/catalog/data/xla_call_module.json`)."""

    release: str
    attrs: frozenset[str]  # the release's OpDef attrs (others are ignored at load)
    versions: tuple[int, ...]  # `version` values a run accepts
    version_below_error: str
    version_above_error: str
    platform_error: str  # what a run says when 'CPU' is not among the platforms ('' unchecked)
    disabled_checks_honoured: bool  # disabled_checks=['platform'] lifts the platform check
    empty_platforms_fail_at: tuple[int, ...]  # measured versions where platforms=[] fails
    stablehlo_refused: str | None  # the oldest stamp it refused (None: read every one tried)
    stablehlo_newest: str | None  # the newest stamp it read
    stablehlo_error: str
    # The same for a module of the math ops jax lowers to (sine, exponential, ...), whose
    # encodings changed (StableHLO 1.9 gave them result_accuracy): a release reads
    # stamps of bare modules it cannot read of real ones.
    rich_refused: str | None = None
    rich_newest: str | None = None
    # Which check fails first when several would: "version", "module" (deserializing)
    # and "platform", first to last, as measured (TensorFlow's own order where not)
    check_order: tuple[str, ...] = ("version", "module", "platform")

    def refused_from(self) -> tuple[str, bool] | None:
        """The oldest stamp it fails to read and whether that holds for bare modules too
        (False: measured on modules of jax's usual math ops only); None: none refused."""
        found = [
            (version_key(s), not bare, s)  # at the same stamp, the bare module's evidence
            for s, bare in ((self.stablehlo_refused, True), (self.rich_refused, False))
            if s is not None
        ]
        if not found:
            return None
        _, rich_only, stamp = min(found)
        return stamp, not rich_only

    def reads_stamp(self, stamp: str) -> bool | None:
        """Whether it deserializes a module of jax's usual ops stamped `stamp`; None: not
        measured that far."""
        refused = self.refused_from()
        if refused is not None and version_key(stamp) >= version_key(refused[0]):
            return False
        newest = [s for s in (self.stablehlo_newest, self.rich_newest) if s is not None]
        if newest and version_key(stamp) <= min(version_key(s) for s in newest):
            return True
        return None
