"""Consumer manifests: what `tfcompat fleet dump-manifest` recorded about one binary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from worker.catalog.behaviour import (
    lifted_reads_empty,
    looks_up_op_list_first,
    rejects_unknown_attrs,
    validates_library_at_load,
)
from worker.catalog.kernels import revived_types_from_json
from worker.catalog.opdefs import OpDefCache
from worker.errors import ConfigError
from worker.model.consumer import Consumer, DataTypes, KernelDefs, Loader, Registry
from worker.model.digest import digest

MANIFEST_FORMAT = "tfcompat-manifest/1"
DUMPER = Path(__file__).with_name("dump_manifest.py")


def load_manifest_doc(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        doc = json.loads(p.read_bytes())
    except FileNotFoundError:
        raise ConfigError(f"{p}: manifest not found") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{p}: not a readable JSON manifest ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise ConfigError(
            f'{p}: not a tfcompat manifest (expected "format": "{MANIFEST_FORMAT}"); '
            "write one with `tfcompat fleet dump-manifest`"
        )
    if not isinstance(doc.get("ops"), list):
        raise ConfigError(f"{p}: manifest has no op list")
    return doc


def doc_fingerprint(doc: dict[str, Any]) -> str:
    """What a manifest says, digested: the same file re-dumped from another build differs."""
    return "sha256:" + digest(doc)


def consumer_from_manifest(
    name: str,
    path: str | Path,
    loader: Loader = Loader.SAVED_MODEL_V1,
    cache: OpDefCache | None = None,
) -> Consumer:
    doc = load_manifest_doc(path)
    cache = cache or OpDefCache()
    where = str(path)
    ops = {op["name"]: cache.get(op, where) for op in doc["ops"]}
    version = (doc.get("tensorflow") or {}).get("version")
    graph = doc.get("graph_def_version") or {}
    ckpt = doc.get("checkpoint_version") or {}
    if graph.get("producer") is None:
        raise ConfigError(f"{path}: manifest lacks graph_def_version.producer")
    try:
        rejects = rejects_unknown_attrs(version) if version else False
        library = validates_library_at_load(version) if version else True
        op_list_first = looks_up_op_list_first(version) if version else False
        lifted_empty = lifted_reads_empty(version) if version else False
    except ValueError:
        rejects, library, op_list_first, lifted_empty = False, True, False, False
    return Consumer(
        name=name,
        tensorflow=version,
        graph_def_version=int(graph["producer"]),
        graph_def_min_producer=int(graph.get("min_producer") or 0),
        checkpoint_version=int(ckpt.get("producer") or 1),
        checkpoint_min_producer=int(ckpt.get("min_producer") or 0),
        registry=Registry(
            ops,
            f"manifest {path}",
            doc_fingerprint(doc),
            kernels=_kernels(doc.get("kernels")),
            revived=revived_types_from_json(doc.get("revived_types")),
            data_types=_data_types(doc.get("data_types"), path),
        ),
        loader=loader,
        rejects_unknown_attrs=rejects,
        validates_library=library,
        looks_up_op_list_first=op_list_first,
        lifted_reads_empty=lifted_empty,
    )


def _data_types(raw: Any, path: object) -> DataTypes | None:
    """A manifest's DataType enum, exactly what the binary holds (manifests dumped
    before it was recorded: None, not measured)."""
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        return None
    names = frozenset(raw)
    return DataTypes(names, names, f"manifest {path}", {})


def _kernels(raw: Any) -> KernelDefs | None:
    """A manifest's kernel table (manifests dumped before kernels were recorded: None)."""
    if not isinstance(raw, dict):
        return None
    try:
        return {
            str(op): {
                str(device): tuple(
                    tuple((str(attr), tuple(str(t) for t in types)) for attr, types in kernel)
                    for kernel in kernels
                )
                for device, kernels in devices.items()
            }
            for op, devices in raw.items()
        }
    except (AttributeError, TypeError, ValueError):
        raise ConfigError("manifest: malformed kernels table") from None


def run_dumper(python: str | None, args: list[str]) -> int:
    """Run dump_manifest.py with another interpreter (the consumer's environment)."""
    command = [python or sys.executable, str(DUMPER), *args]
    try:
        return subprocess.call(command)
    except FileNotFoundError:
        raise ConfigError(f"{python}: no such Python interpreter") from None
