"""A model's copy as a list of files: the original's, with model files rewritten.

`copy_tree` decides, for every file of a model tree (a SavedModel directory, a
TF Serving base path, a single frozen graph or `.meta`), whether the copy takes
it unchanged (variables, assets, anything we do not read), rewritten (the
protobuf holding the graph) or fresh (`fingerprint.pb`). Nothing is written
here: `local.write_copy` and the pipeline's object-store hook write the list.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from worker.catalog.catalog import Catalog
from worker.errors import UnsupportedArtifact
from worker.fix.fingerprint import fresh_fingerprint
from worker.fix.plan import OUTPUT_SHAPES, FixPlan, plan_fix
from worker.fix.rewrite import Piece, render, rewrite_message
from worker.fix.text import rewrite_text
from worker.formats.read import (
    discover,
    kind_of_file,
    read_file_artifact,
    read_saved_model_dir,
)
from worker.formats.savedmodel import looks_like_text
from worker.formats.source import BytesSource, Source, Tree
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer

FINGERPRINT = "fingerprint.pb"


@dataclass(frozen=True)
class CopyFile:
    """One file of the copy: `source` whole, or `pieces` over it, or `data`."""

    name: str  # relative, '/'-separated
    source: Source
    pieces: tuple[Piece, ...] | None = None
    data: bytes | None = None

    @property
    def changed(self) -> bool:
        return self.pieces is not None or self.data is not None


@dataclass(frozen=True)
class ModelCopy:
    plans: tuple[FixPlan, ...]
    files: tuple[CopyFile, ...]  # an archive's copy lists only the members it replaces
    archive: Source | None = None  # the original archive, streamed again by the writer

    @property
    def writable(self) -> bool:
        return all(p.writable for p in self.plans)

    @property
    def rewritten(self) -> list[str]:
        return [f.name for f in self.files if f.changed]


def _saved_model_file(root: str, names: list[str]) -> str:
    binary = posixpath.join(root, "saved_model.pb") if root else "saved_model.pb"
    return binary if binary in names else binary + "txt"


def _kind_of(artifact: Artifact) -> str:
    if artifact.format == "savedmodel":
        return "saved_model"
    if artifact.format == "metagraph":
        return "meta_graph"
    return "graph"


def _rewritten(
    source: Source, kind: str, plan: FixPlan
) -> tuple[tuple[Piece, ...] | bytes | None, int]:
    """The rewritten file (None: unchanged), and how many nodes lost `_output_shapes`."""
    drops = list(plan.drops)
    if not drops:
        return None, 0
    if looks_like_text(source):
        return rewrite_text(source, kind, drops)
    edit = rewrite_message(source, kind, drops)
    if edit is None:
        return None, 0
    stripped = sum(1 for _, attr, _ in edit.removed if attr == OUTPUT_SHAPES)
    return tuple(edit.pieces), stripped


def copy_tree(
    tree: Tree,
    display_root: str,
    consumers: Sequence[Consumer],
    catalog: Catalog,
    plan: Callable[[Artifact, Sequence[Consumer], Catalog], FixPlan] = plan_fix,
) -> ModelCopy:
    """Every file of `tree` as the copy holds it, and the plan of each artifact."""
    names = tree.names()
    found = discover(names)
    if not found and len(names) == 1 and kind_of_file(names[0]) in ("metagraph", "graphdef"):
        # one file named on its own, read as `read_path` reads it: a hidden name too (the
        # `.meta` of a checkpoint saved with the prefix `dir/`)
        found = [(str(kind_of_file(names[0])), names[0])]
    if not found:
        raise UnsupportedArtifact(f"{display_root}: no TensorFlow model found")
    plans: list[FixPlan] = []
    replaced: dict[str, CopyFile] = {}
    for kind, name in found:
        display = posixpath.join(display_root, name) if name else display_root
        if kind == "tflite":
            raise UnsupportedArtifact(
                f"{display}: tfcompat fix rewrites TensorFlow graphs, not TFLite flatbuffers; "
                "convert the model again (`tfcompat check` names the converter or runtime)"
            )
        if kind == "savedmodel":
            artifact = read_saved_model_dir(tree, name, display)
            model_file = _saved_model_file(name, names)
        else:
            artifact = read_file_artifact(tree.open(name), display, kind)
            model_file = name
        fix = plan(artifact, consumers, catalog)
        if kind == "checkpoint":
            plans.append(fix)
            continue
        source = tree.open(model_file)
        result, stripped = _rewritten(source, _kind_of(artifact), fix)
        if any(d.strips_shapes for d in fix.drops):
            fix = replace(fix, shapes_stripped=stripped)
        plans.append(fix)
        if result is None:
            continue
        if isinstance(result, bytes):
            replaced[model_file] = CopyFile(model_file, source, data=result)
        else:
            replaced[model_file] = CopyFile(model_file, source, pieces=result)
        fingerprint = posixpath.join(name, FINGERPRINT) if name else FINGERPRINT
        if kind == "savedmodel" and fingerprint in names:
            data = result if isinstance(result, bytes) else render(source, list(result))
            old = tree.open(fingerprint)
            program_changed = any(r.graph_nodes for r in fix.rewrites)
            rewrite = ";".join(f"{d.op}.{d.attr}={d.default}" for d in fix.drops)
            replaced[fingerprint] = CopyFile(
                fingerprint,
                old,
                data=fresh_fingerprint(
                    old, BytesSource(model_file, data), program_changed, rewrite
                ),
            )
    files = tuple(replaced.get(n) or CopyFile(n, tree.open(n)) for n in names)
    return ModelCopy(tuple(plans), files)


def _kind_counts(artifact: Artifact) -> Counter[tuple[object, ...]]:
    counts: Counter[tuple[object, ...]] = Counter()
    for index, graph in enumerate(artifact.graphs()):
        for kind in graph.kinds:
            counts[(index, *kind.key, kind.function)] += kind.count
    return counts


def reads_as_planned(written: Artifact, planned: Artifact) -> bool:
    """Whether a copy read back has exactly the node kinds, counts, versions and
    producer OpDefs the plan said it would (names of example nodes aside)."""
    if _kind_counts(written) != _kind_counts(planned):
        return False
    graphs = zip(written.graphs(), planned.graphs(), strict=False)
    if any(a.versions != b.versions or a.edges != b.edges for a, b in graphs):
        return False
    return [m.producer_ops for m in written.meta_graphs] == [
        m.producer_ops for m in planned.meta_graphs
    ]
