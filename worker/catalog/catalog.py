"""The built-in catalog of TensorFlow releases: version numbers and op registries.

Two data files ship with the package, both built from real TensorFlow:
- `data/releases.json`: every release on PyPI with the numbers from its
  wheel's `version.h` (`tools/scan_release_versions.py`);
- `data/registries.json.gz`: the op registry of each release installed and
  dumped with `dump_manifest.py` (`tools/build_registries.py`), delta-encoded
  release to release.

A release without its own registry borrows the registry of the closest
release of the same minor version, and says so; a minor with no registry at
all gets none, and checks then report that only version numbers applied.
"""

from __future__ import annotations

import datetime as dt
import functools
import gzip
import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from packaging.version import InvalidVersion, Version

from worker.catalog.behaviour import (
    looks_up_op_list_first,
    rejects_unknown_attrs,
    validates_library_at_load,
)
from worker.catalog.opdefs import OpDefCache
from worker.errors import UnknownRelease
from worker.model.artifact import AttrJSON, OpDef, VersionDef
from worker.model.consumer import Consumer, Loader, Registry

DAILY_SINCE = dt.date(2019, 5, 9)


@dataclass(frozen=True)
class Release:
    version: str
    graph_def_version: int
    graph_def_min_consumer: int = 0
    graph_def_min_producer: int = 0
    checkpoint_version: int = 1
    checkpoint_min_consumer: int = 0
    checkpoint_min_producer: int = 0
    registry_version: str | None = None  # whose op registry stands in for this release

    @property
    def key(self) -> Version:
        return Version(self.version)

    @property
    def minor(self) -> str:
        return f"{self.key.major}.{self.key.minor}"


def _read_data(name: str) -> bytes | None:
    try:
        return resources.files("worker.catalog").joinpath("data", name).read_bytes()
    except FileNotFoundError:
        return None


class Catalog:
    """Releases, their registries (parsed lazily) and the history of every op."""

    def __init__(
        self, releases_doc: dict[str, Any] | None, registries_doc: dict[str, Any] | None
    ) -> None:
        self._deltas: list[dict[str, Any]] = list((registries_doc or {}).get("releases", []))
        self._deltas.sort(key=lambda r: Version(r["version"]))
        self._cache = OpDefCache()
        self._registries: dict[str, Registry] = {}
        self._anchor: tuple[dt.date, int] | None = None
        self._range_consumers: list[Consumer] | None = None
        by_version: dict[str, Release] = {}
        for row in (releases_doc or {}).get("releases", []):
            release = _release(row)
            if release is not None:  # None: a wheel without version.h, nothing to go on
                by_version[row["version"]] = release
        for row in self._deltas:  # registries carry their release's numbers too
            release = _release(row)
            if release is not None:
                by_version.setdefault(row["version"], release)
        anchor = (releases_doc or {}).get("graph_def_daily_anchor")
        if anchor:
            self._anchor = (dt.date.fromisoformat(anchor["date"]), int(anchor["graph_def_version"]))
        with_registry = [r["version"] for r in self._deltas]
        releases = []
        for release in sorted(by_version.values(), key=lambda r: r.key):
            stand_in = _closest_same_minor(release.version, with_registry)
            releases.append(Release(**{**release.__dict__, "registry_version": stand_in}))
        self.releases: tuple[Release, ...] = tuple(releases)

    # --- releases ------------------------------------------------------------------------

    def resolve(self, spec: str) -> Release:
        """'2.12' -> the newest 2.12.x; '2.12.1' -> exactly that; else UnknownRelease."""
        text = spec.strip().removeprefix("v")
        try:
            wanted = Version(text)
        except InvalidVersion:
            raise UnknownRelease(f"'{spec}' is not a TensorFlow version number") from None
        parts = text.split(".")
        if len(parts) >= 3:
            for release in self.releases:
                if release.key == wanted:
                    return release
        elif len(parts) == 2:
            matching = [
                r
                for r in self.releases
                if (r.key.major, r.key.minor) == (wanted.major, wanted.minor)
            ]
            if matching:
                return matching[-1]
        known = ", ".join(sorted({r.minor for r in self.releases}, key=Version))
        raise UnknownRelease(
            f"TensorFlow {spec} is not in the catalog (known minors: {known}); "
            "give a manifest from `tfcompat fleet dump-manifest` instead"
        )

    def registry(self, release: Release) -> Registry | None:
        if release.registry_version is None:
            return None
        found = self._registries.get(release.registry_version)
        if found is None:
            ops = self._ops_at(release.registry_version)
            source = f"catalog {release.registry_version}"
            if release.registry_version != release.version:
                source += f" (standing in for {release.version})"
            found = self._registries[release.registry_version] = Registry(ops, source)
        return found

    def _ops_at(self, version: str) -> dict[str, OpDef]:
        current: dict[str, dict[str, Any]] = {}
        for delta in self._deltas:
            for name in delta["removed"]:
                current.pop(name, None)
            current.update(delta["set"])
            if delta["version"] == version:
                break
        return {name: self._cache.get(op) for name, op in current.items()}

    def consumer(
        self, spec: str, loader: Loader = Loader.SAVED_MODEL_V1, name: str | None = None
    ) -> Consumer:
        release = self.resolve(spec)
        return consumer_for_release(self, release, loader, name)

    # --- history (worker.compat.check.History) --------------------------------------------

    @functools.cached_property
    def _op_history(self) -> dict[str, tuple[str, str]]:
        """op -> (first release with a registry that has it, last such release)."""
        history: dict[str, tuple[str, str]] = {}
        current: set[str] = set()
        for delta in self._deltas:
            current -= set(delta["removed"])
            current |= set(delta["set"])
            for op in current:
                first = history.get(op, (delta["version"], delta["version"]))[0]
                history[op] = (first, delta["version"])
        return history

    @functools.cached_property
    def _attr_history(self) -> dict[tuple[str, str], str]:
        first: dict[tuple[str, str], str] = {}
        for delta in self._deltas:
            for op, data in delta["set"].items():
                for attr in data.get("attr", []):
                    first.setdefault((op, attr["name"]), delta["version"])
        return first

    def op_introduced(self, op: str) -> str | None:
        found = self._op_history.get(op)
        return found[0] if found else None

    def op_last_release(self, op: str) -> str | None:
        found = self._op_history.get(op)
        return found[1] if found else None

    def attr_introduced(self, op: str, attr: str) -> str | None:
        return self._attr_history.get((op, attr))

    def attr_default(self, op: str, attr: str) -> AttrJSON | None:
        """The attr's default in the newest registry that has the op (frozen graphs carry
        no op list of their own to say it)."""
        last = self.op_last_release(op)
        release = next((r for r in self.releases if r.registry_version == last), None)
        registry = self.registry(release) if release is not None else None
        found = registry.ops.get(op) if registry is not None else None
        attr_def = found.attr(attr) if found is not None else None
        return attr_def.default if attr_def is not None else None

    def producer_date(self, graph_def_version: int) -> dt.date | None:
        """The day a binary with this TF_GRAPH_DEF_VERSION was built (bumped daily since
        2019-05-09); None before that."""
        if self._anchor is None:
            return None
        day, version = self._anchor
        date = day + dt.timedelta(days=graph_def_version - version)
        return date if date >= DAILY_SINCE else None

    def upgrade_target(self, versions: VersionDef, current: int) -> str | None:
        return self._upgrade_target(versions.min_consumer, versions.bad_consumers, current)

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one catalog per process
    def _upgrade_target(self, min_consumer: int, bad: tuple[int, ...], current: int) -> str | None:
        for release in self.releases:
            gd = release.graph_def_version
            if gd > current and gd >= min_consumer and gd not in bad:
                return release.version
        return None

    def range_consumers(self) -> list[Consumer]:
        """One default-loader consumer per release with an op registry, ascending:
        what `compatible_releases` is computed over."""
        if self._range_consumers is None:
            self._range_consumers = [
                consumer_for_release(self, r, Loader.SAVED_MODEL_V1)
                for r in self.releases
                if r.registry_version is not None
            ]
        return list(self._range_consumers)

    def registry_releases(self) -> list[str]:
        return [d["version"] for d in self._deltas]


def consumer_for_release(
    catalog: Catalog, release: Release, loader: Loader, name: str | None = None
) -> Consumer:
    return Consumer(
        name=name or f"tf-{release.version}",
        tensorflow=release.version,
        graph_def_version=release.graph_def_version,
        graph_def_min_producer=release.graph_def_min_producer,
        checkpoint_version=release.checkpoint_version,
        checkpoint_min_producer=release.checkpoint_min_producer,
        registry=catalog.registry(release),
        loader=loader,
        rejects_unknown_attrs=rejects_unknown_attrs(release.version),
        validates_library=validates_library_at_load(release.version),
        looks_up_op_list_first=looks_up_op_list_first(release.version),
    )


def _release(row: dict[str, Any]) -> Release | None:
    """A release from a data row (releases.json or a registry delta)."""
    gd = row.get("graph_def_version") or {}
    ck = row.get("checkpoint_version") or {}
    if gd.get("producer") is None:
        return None
    return Release(
        row["version"],
        gd["producer"],
        gd.get("min_consumer") or 0,
        gd.get("min_producer") or 0,
        ck.get("producer") or 1,
        ck.get("min_consumer") or 0,
        ck.get("min_producer") or 0,
    )


def _closest_same_minor(version: str, candidates: Iterable[str]) -> str | None:
    target = Version(version)
    same = [
        Version(c)
        for c in candidates
        if (Version(c).major, Version(c).minor) == (target.major, target.minor)
    ]
    if not same:
        return None
    best = min(same, key=lambda v: (abs(v.micro - target.micro), -v.micro))
    return str(best)


@functools.cache
def load_catalog() -> Catalog:
    """The catalog shipped with the package, read once per process."""
    releases = _read_data("releases.json")
    registries = _read_data("registries.json.gz")
    return Catalog(
        json.loads(releases) if releases else None,
        json.loads(gzip.decompress(registries)) if registries else None,
    )
