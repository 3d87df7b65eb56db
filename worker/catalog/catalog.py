"""The built-in catalog of TensorFlow releases: version numbers and op registries.

Two data files ship with the package, both built from real TensorFlow:
- `data/releases.json`: every release on PyPI with the numbers from its
  wheel's `version.h` (`tools/scan_release_versions.py`);
- `data/registries.jsonl`: the op registry of each release installed and
  dumped with `dump_manifest.py` (`tools/build_registries.py`), each distinct
  OpDef once; read lazily (`registries.ShippedRegistries`), so a check pays
  for the OpDefs it looks up, not for 25 registries;
- `data/attr_effects.json`: what each attr a release added does to results,
  measured by running the op (`tools/attrs/measure.py`, `attr_effects`);
- `data/kernel_changes.json.gz`: every op the sweep could build, run on edge-case
  inputs in every release and compared with the newest, plus the hand cases
  (`tools/kernels/sweep.py`, `tools/attrs/kernels.py`, `kernel_changes`); parsed
  on first use;
- `data/output_shapes.json`: what each release's shape functions infer, for the ops
  whose inferred shapes changed between releases (`tools/shapes/measure.py`,
  `output_shapes`).
- `data/data_types.json`: each release's DataType enum, read from its own
  `types_pb2` (`tools/build_data_types.py`, `data_types`).
- `data/xla_call_module.json`: what each release's XlaCallModule runs (versions,
  platforms, StableHLO stamps), measured by running it (`tools/xla/build_table.py`,
  `xla`).

A release without its own registry borrows the registry of the closest
release of the same minor version, and says so; a minor with no registry at
all gets none, and checks then report that only version numbers applied.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from worker.catalog.attr_effects import ShippedAttrEffects
from worker.catalog.behaviour import (
    lifted_reads_empty,
    looks_up_op_list_first,
    rejects_unknown_attrs,
    release_version,
    validates_library_at_load,
)
from worker.catalog.data_types import ShippedDataTypes
from worker.catalog.keras import keras_of_release, pythons_of_release
from worker.catalog.keras_layer_configs import layer_config_tables
from worker.catalog.keras_objects import keras_tables
from worker.catalog.kernel_changes import ShippedKernelChanges
from worker.catalog.kernels import ShippedKernels, ShippedRevivedTypes
from worker.catalog.output_shapes import ShippedOutputShapes
from worker.catalog.registries import ShippedRegistries
from worker.catalog.tflite import load_tflite_catalog
from worker.catalog.xla import ShippedXlaCallModule
from worker.errors import UnknownRelease
from worker.model.artifact import AttrJSON, VersionDef
from worker.model.consumer import Consumer, Loader, Registry
from worker.model.effects import AttrEffect, KernelChange, KernelNondeterminism
from worker.model.keras import KerasObjects, LayerConfigTable
from worker.model.shapes import ShapeCase
from worker.model.tflite import TENSORFLOW
from worker.model.xla import XlaCallModuleSupport

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
        return release_version(self.version)

    @property
    def minor(self) -> str:
        return f"{self.key.major}.{self.key.minor}"


DATA = Path(__file__).with_name("data")


def _read_data(name: str) -> bytes | None:
    # A plain path, not importlib.resources: the package is always installed as files,
    # and importing resources costs a fifth of a small check.
    try:
        return (DATA / name).read_bytes()
    except FileNotFoundError:
        return None


class Catalog:
    """Releases, their registries (read lazily) and the history of every op."""

    def __init__(
        self,
        releases_doc: dict[str, Any] | None,
        registries: ShippedRegistries | None,
        kernels: ShippedKernels | None = None,
        revived: ShippedRevivedTypes | None = None,
        attr_effects: ShippedAttrEffects | None = None,
        kernel_changes: ShippedKernelChanges | None = None,
        output_shapes: ShippedOutputShapes | None = None,
        xla: ShippedXlaCallModule | None = None,
        data_types: ShippedDataTypes | None = None,
    ) -> None:
        self._shipped = registries
        self.attr_effects = attr_effects
        self.kernel_changes = kernel_changes
        self.output_shapes = output_shapes
        self.xla = xla
        self._kernels = kernels
        self._revived = revived
        self._data_types = data_types
        self._registries: dict[str, Registry] = {}
        # One ops mapping per registry: the patch releases of a minor share it, and
        # checks recognise consumers with the same ops by it (compat.check).
        self._registry_ops: dict[str, Any] = {}
        self._anchor: tuple[dt.date, int] | None = None
        self._range_consumers: list[Consumer] | None = None
        by_version: dict[str, Release] = {}
        for row in (releases_doc or {}).get("releases", []):
            release = _release(row)
            if release is not None:  # None: a wheel without version.h, nothing to go on
                by_version[row["version"]] = release
        shipped_rows = registries.releases if registries else []
        for row in shipped_rows:  # registries carry their release's numbers too
            release = _release(row)
            if release is not None:
                by_version.setdefault(row["version"], release)
        anchor = (releases_doc or {}).get("graph_def_daily_anchor")
        if anchor:
            self._anchor = (dt.date.fromisoformat(anchor["date"]), int(anchor["graph_def_version"]))
        with_registry: dict[tuple[int, int], list[Version]] = {}
        for row in shipped_rows:
            shipped = release_version(row["version"])
            with_registry.setdefault((shipped.major, shipped.minor), []).append(shipped)
        keyed = sorted(((r.key, r) for r in by_version.values()), key=lambda kr: kr[0])
        self.releases: tuple[Release, ...] = tuple(
            replace(release, registry_version=_closest_same_minor(key, with_registry))
            for key, release in keyed
        )
        # (major, minor, key) per release, parsed once: Version's properties are slow.
        self._keys = [(k.major, k.minor, k) for k, _ in keyed]

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
            for (_, _, key), release in zip(self._keys, self.releases, strict=True):
                if key == wanted:
                    return release
        elif len(parts) == 2:
            matching = [
                release
                for (major, minor, _), release in zip(self._keys, self.releases, strict=True)
                if (major, minor) == (wanted.major, wanted.minor)
            ]
            if matching:
                return matching[-1]
        known = ", ".join(sorted({r.minor for r in self.releases}, key=Version))
        raise UnknownRelease(
            f"TensorFlow {spec} is not in the catalog (known minors: {known}); "
            "give a manifest from `tfcompat fleet dump-manifest` instead"
        )

    def registry(self, release: Release) -> Registry | None:
        """The release's op registry (its own or its stand-in's); None without one.

        Cheap: the ops are looked up in the shipped pool only when a check asks."""
        if release.registry_version is None or self._shipped is None:
            return None
        found = self._registries.get(release.version)
        if found is None:
            source = f"catalog {release.registry_version}"
            if release.registry_version != release.version:
                source += f" (standing in for {release.version})"
            ops = self._registry_ops.get(release.registry_version)
            if ops is None:
                ops = self._registry_ops[release.registry_version] = self._shipped.ops(
                    release.registry_version
                )
            kernels = self._kernels.kernels(release.registry_version) if self._kernels else None
            revived = self._revived.revived(release.registry_version) if self._revived else None
            # per minor, as the registry: the release measured for it stands in for it
            types = (
                self._data_types.data_types(release.registry_version) if self._data_types else None
            )
            found = self._registries[release.version] = Registry(
                ops, source, kernels=kernels, revived=revived, data_types=types
            )
        return found

    def consumer(
        self, spec: str, loader: Loader = Loader.SAVED_MODEL_V1, name: str | None = None
    ) -> Consumer:
        release = self.resolve(spec)
        return consumer_for_release(self, release, loader, name)

    # --- history (worker.compat.check.History) --------------------------------------------

    def op_introduced(self, op: str) -> str | None:
        return self._shipped.op_introduced(op) if self._shipped else None

    def op_last_release(self, op: str) -> str | None:
        return self._shipped.op_last_release(op) if self._shipped else None

    def attr_introduced(self, op: str, attr: str) -> str | None:
        return self._shipped.attr_introduced(op, attr) if self._shipped else None

    def attr_default(self, op: str, attr: str) -> AttrJSON | None:
        """The attr's default in the newest registry that has the op (frozen graphs carry
        no op list of their own to say it)."""
        last = self.op_last_release(op)
        release = next((r for r in self.releases if r.registry_version == last), None)
        registry = self.registry(release) if release is not None else None
        found = registry.ops.get(op) if registry is not None else None
        attr_def = found.attr(attr) if found is not None else None
        return attr_def.default if attr_def is not None else None

    def attr_effect(self, op: str, attr: str) -> AttrEffect | None:
        """What the attr does to the op's results, as measured (None: not in the table)."""
        return self.attr_effects.effect(op, attr) if self.attr_effects else None

    def kernel_change(self, op: str, dtype: str, release: str) -> KernelChange | None:
        """How the op's kernel for `dtype` in `release` differs from the newest release's,
        as measured; None: no difference measured (or the op was not compared)."""
        return self.kernel_changes.change(op, dtype, release) if self.kernel_changes else None

    def kernel_nondeterminism(
        self, op: str, dtype: str, release: str
    ) -> KernelNondeterminism | None:
        """Whether two runs of (op, dtype) in one session of `release` answered otherwise,
        as measured; None: not seen (or no table)."""
        if not self.kernel_changes:
            return None
        return self.kernel_changes.nondeterminism(op, dtype, release)

    def kernel_changed_ops(self) -> frozenset[str]:
        """Every op with a measured kernel change or measured nondeterministic, in some
        release and dtype."""
        return self.kernel_changes.ops if self.kernel_changes else frozenset()

    def kernel_dtypes(self, op: str, attrs: Mapping[str, AttrJSON]) -> list[str]:
        """The keys a node of `op` with `attrs` is measured under (none: no table)."""
        return self.kernel_changes.dtype_keys(op, attrs) if self.kernel_changes else []

    def kernel_measured(self, op: str, dtype: str) -> bool | None:
        """Whether (op, dtype) was run and compared across releases; None: no table."""
        return self.kernel_changes.measured(op, dtype) if self.kernel_changes else None

    def kernel_unbuildable(self, op: str) -> str | None:
        """Why the kernel sweep could not run `op` (None: it ran, or no table)."""
        return self.kernel_changes.unbuildable(op) if self.kernel_changes else None

    def kernel_release_measured(self, release: str) -> bool | None:
        """Whether the kernel sweep ran in the release's minor; None: no table."""
        return self.kernel_changes.release_measured(release) if self.kernel_changes else None

    def shape_cases(self, op: str, release: str) -> tuple[ShapeCase, ...] | None:
        """What `release`'s shape function of `op` infers, as measured; None: not measured."""
        return self.output_shapes.cases(op, release) if self.output_shapes else None

    def xla_call_module(self, release: str) -> XlaCallModuleSupport | None:
        """What `release`'s XlaCallModule runs, as measured; None: not measured."""
        return self.xla.support(release) if self.xla else None

    def xla_call_module_releases(self) -> tuple[XlaCallModuleSupport, ...]:
        """Every release whose XlaCallModule was measured, oldest first."""
        return self.xla.releases() if self.xla else ()

    def producer_date(self, graph_def_version: int) -> dt.date | None:
        """The day a binary with this TF_GRAPH_DEF_VERSION was built (bumped daily since
        2019-05-09); None before that."""
        if self._anchor is None:
            return None
        day, version = self._anchor
        try:
            date = day + dt.timedelta(days=graph_def_version - version)
        except OverflowError:  # a producer no binary was built with (2**31 - 1): no date
            return None
        return date if date >= DAILY_SINCE else None

    def keras_tables(self, keras: str | None, tensorflow: str | None) -> list[KerasObjects]:
        """The measured Keras object tables the consumer may run (catalog.keras_objects)."""
        return keras_tables(keras, tensorflow)

    def keras_layer_configs(
        self, keras: str | None, tensorflow: str | None
    ) -> list[LayerConfigTable]:
        """The measured Keras 3 layer-config tables the consumer may run
        (catalog.keras_layer_configs)."""
        return layer_config_tables(keras, tensorflow)

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
        return self._shipped.versions() if self._shipped else []


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
        keras=keras_of_release(release.version),
        python_range=pythons_of_release(release.version),
        rejects_unknown_attrs=rejects_unknown_attrs(release.version),
        validates_library=validates_library_at_load(release.version),
        looks_up_op_list_first=looks_up_op_list_first(release.version),
        lifted_reads_empty=lifted_reads_empty(release.version),
        tflite=load_tflite_catalog().interpreter(TENSORFLOW, release.version),
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


def _closest_same_minor(
    version: Version, candidates: dict[tuple[int, int], list[Version]]
) -> str | None:
    same = candidates.get((version.major, version.minor))
    if not same:
        return None
    best = min(same, key=lambda v: (abs(v.micro - version.micro), -v.micro))
    return str(best)


@functools.cache
def load_catalog() -> Catalog:
    """The catalog shipped with the package, read once per process."""
    releases = _read_data("releases.json")
    registries = _read_data("registries.jsonl")
    kernels = _read_data("kernels.json.gz")
    revived = _read_data("revived_types.json")
    effects = _read_data("attr_effects.json")
    changes = _read_data("kernel_changes.json.gz") or _read_data("kernel_changes.json")
    shapes = _read_data("output_shapes.json")
    xla = _read_data("xla_call_module.json")
    data_types = _read_data("data_types.json")
    return Catalog(
        json.loads(releases) if releases else None,
        ShippedRegistries(registries) if registries else None,
        ShippedKernels(kernels) if kernels else None,
        ShippedRevivedTypes(revived) if revived else None,
        ShippedAttrEffects(effects) if effects else None,
        ShippedKernelChanges(changes) if changes else None,
        ShippedOutputShapes(shapes) if shapes else None,
        ShippedXlaCallModule(xla) if xla else None,
        ShippedDataTypes(data_types) if data_types else None,
    )
