"""The op registries shipped with the package, read lazily.

`data/registries.jsonl` (format `tfcompat-registries/2`, written by
`tools/build_registries.py`) is one header line, then every distinct OpDef of
every release once, one per line, as canonical JSON. The header lists the
releases in order; each names the pool lines it sets since the previous
release (op name -> line) and the ops that went away.

Opening the file costs a read, a split into lines and the header parse (a few
milliseconds), whatever the number of releases; it is stored uncompressed
because inflating it cost more than all the rest. A release's name -> line index is replayed
when that release is first asked for, and an OpDef is converted only when a
check looks it up, once per process and shared by every release registering
the same definition: a check of a small model against all 79 releases touches
a few dozen OpDefs, not the 42,000 entries of 25 registries. Shared OpDefs are
also the same objects, which the per-OpDef caches of `compat` key on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from worker.catalog.opdefs import op_def_from_json
from worker.model.artifact import OpDef

REGISTRY_FORMAT = "tfcompat-registries/2"


class OpPool:
    """The distinct OpDefs of every shipped release, each converted on first use."""

    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines
        self._ops: list[OpDef | None] = [None] * len(lines)

    def __len__(self) -> int:
        return len(self._lines)

    def converted(self) -> int:
        """How many OpDefs have been converted so far."""
        return sum(op is not None for op in self._ops)

    def op(self, line: int) -> OpDef:
        found = self._ops[line]
        if found is None:
            found = self._ops[line] = op_def_from_json(json.loads(self._lines[line]), "catalog")
        return found


class RegistryOps(Mapping[str, OpDef]):
    """One release's ops by name. Membership and iteration never convert an OpDef;
    a lookup converts only the one asked for."""

    # a __dict__ only for the token the checks' memos key it by (`compat.memo.identity`),
    # kept on it: looked up for every model and release a fleet change checks
    __slots__ = ("__dict__", "_found", "_index", "_pool")

    def __init__(self, index: Mapping[str, int], pool: OpPool) -> None:
        self._index = index
        self._pool = pool
        self._found: dict[str, OpDef] = {}  # looked up before: one dict hit (checks' hot path)

    def __getitem__(self, name: str) -> OpDef:
        found = self._found.get(name)
        if found is None:
            found = self._found[name] = self._pool.op(self._index[name])
        return found

    def get(self, name: str, default: Any = None) -> Any:
        found = self._found.get(name)
        if found is not None:
            return found
        line = self._index.get(name)
        if line is None:
            return default
        found = self._found[name] = self._pool.op(line)
        return found

    def get_many(self, names: Iterable[str]) -> tuple[OpDef | None, ...]:
        """`get` of each name (None: not registered), in one pass over the looked-up ones."""
        names = tuple(names)
        found = tuple(map(self._found.get, names))
        if not all(found):  # an OpDef is true (`None in` would call OpDef.__eq__ each)
            found = tuple(
                f if f is not None else self.get(n) for f, n in zip(found, names, strict=True)
            )
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def differing(self, other: object) -> frozenset[str] | None:
        """The op names `other` defines otherwise: registered in one of the two only, or
        with another OpDef (releases share an OpDef object where they define it alike);
        None when `other` is no registry of the same pool (nothing known)."""
        if not isinstance(other, RegistryOps) or other._pool is not self._pool:
            return None
        mine, theirs = self._index, other._index
        return frozenset(
            [n for n, line in mine.items() if theirs.get(n) != line]
            + [n for n in theirs if n not in mine]
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RegistryOps) and other._pool is self._pool:
            return self._index == other._index
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping, as dict

    def __repr__(self) -> str:
        return f"<RegistryOps: {len(self)} ops>"


class ShippedRegistries:
    """The releases of the packed file, with their numbers and lazily built registries."""

    def __init__(self, text: bytes) -> None:
        lines = text.split(b"\n")
        header = json.loads(lines.pop(0))
        if header.get("format") != REGISTRY_FORMAT:
            raise ValueError(f"registries: format {header.get('format')!r}, not {REGISTRY_FORMAT}")
        if len(lines) != header["pool_size"]:
            raise ValueError(f"registries: {len(lines)} OpDefs, header says {header['pool_size']}")
        self.pool = OpPool(lines)
        self.releases: list[dict[str, Any]] = header["releases"]  # in version order
        self._indexes: dict[str, dict[str, int]] = {}
        self._history: dict[str, tuple[str, str]] | None = None
        self._attr_first: dict[tuple[str, str], str | None] = {}

    def versions(self) -> list[str]:
        return [r["version"] for r in self.releases]

    def ops(self, version: str) -> RegistryOps:
        """The registry of a shipped release; KeyError for another version."""
        return RegistryOps(self._index(version), self.pool)

    def _index(self, version: str) -> dict[str, int]:
        found = self._indexes.get(version)
        if found is not None:
            return found
        current: dict[str, int] = {}
        for release in self.releases:  # replay from the newest index already built
            name = release["version"]
            if name in self._indexes:
                current = self._indexes[name]
            else:
                current = dict(current)  # a C-level copy: far cheaper than filtering
                for removed in release["removed"]:
                    del current[removed]
                current.update(release["set"])
                self._indexes[name] = current
            if name == version:
                return current
        raise KeyError(version)

    def _op_history(self) -> dict[str, tuple[str, str]]:
        """op -> (first release that registers it, last release that does)."""
        if self._history is None:
            first: dict[str, str] = {}
            last: dict[str, str] = {}
            previous = ""
            for release in self.releases:
                version = release["version"]
                for name in release["removed"]:
                    last[name] = previous
                for name in release["set"]:
                    first.setdefault(name, version)
                previous = version
            for name in self._index(previous):
                last[name] = previous
            self._history = {name: (first[name], last[name]) for name in first}
        return self._history

    def op_introduced(self, op: str) -> str | None:
        found = self._op_history().get(op)
        return found[0] if found else None

    def op_last_release(self, op: str) -> str | None:
        found = self._op_history().get(op)
        return found[1] if found else None

    def attr_introduced(self, op: str, attr: str) -> str | None:
        """The first release whose OpDef of `op` has `attr`."""
        key = (op, attr)
        if key not in self._attr_first:
            self._attr_first[key] = None
            for release in self.releases:
                line = self._index(release["version"]).get(op)
                if line is not None and self.pool.op(line).attr(attr) is not None:
                    self._attr_first[key] = release["version"]
                    break
        return self._attr_first[key]
