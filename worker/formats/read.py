"""Find the TensorFlow artifacts in a path, tree or blob, and read each one.

This is the one entry point the CLI and the pipeline call. A path may be a
file (GraphDef `.pb`/`.pbtxt`, `saved_model.pb`, `.meta`, checkpoint `.index`
or a checkpoint prefix, an archive), or a directory holding any of those; an
archive or directory may hold several artifacts (TF Serving's
`<name>/<version>/saved_model.pb` layout) and each is reported.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from worker.errors import InvalidArtifact, NotFound, UnsupportedArtifact
from worker.formats.graph import read_graph_def
from worker.formats.savedmodel import (
    looks_like_text,
    read_graph_def_text,
    read_meta_graph_file,
    read_saved_model,
    read_saved_model_text,
)
from worker.formats.source import DirectoryTree, FileSource, MappingTree, Source, Tree, sha256_of
from worker.formats.wire import Cursor
from worker.model.artifact import Artifact, Checkpoint, Graph

SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
GRAPH_SUFFIXES = (".pb", ".pbtxt", ".graphdef", ".pbtx")
# Files that live inside a SavedModel directory but are not graphs.
SAVED_MODEL_SIDE_FILES = frozenset({"fingerprint.pb", "keras_metadata.pb"})


def _checkpoint(source: Source) -> Checkpoint:
    from worker.formats.checkpoint import read_checkpoint_index

    return read_checkpoint_index(source)


def read_graph_source(source: Source) -> Graph:
    """A frozen GraphDef, binary or text."""
    if source.size == 0:
        raise InvalidArtifact(f"{source.name}: empty file")
    if looks_like_text(source):
        graph = read_graph_def_text(source)
    else:
        graph = read_graph_def(Cursor(source))
    if graph.node_count == 0 and not graph.functions:
        raise InvalidArtifact(f"{source.name}: not a GraphDef (no nodes)")
    return graph


def read_saved_model_dir(tree: Tree, root: str, display: str) -> Artifact:
    names = set(tree.names())
    prefix = f"{root}/" if root else ""
    notes: list[str] = []
    if f"{prefix}saved_model.pb" in names:
        source = tree.open(f"{prefix}saved_model.pb")
        schema, meta_graphs = read_saved_model(source)
    else:
        source = tree.open(f"{prefix}saved_model.pbtxt")
        schema, meta_graphs = read_saved_model_text(source)
    checkpoint = None
    variables = f"{prefix}variables/variables.index"
    if variables in names:
        checkpoint = _checkpoint(tree.open(variables))
    elif any(n.startswith(f"{prefix}variables/") for n in names):
        notes.append("variables/ has no variables.index")
    return Artifact(
        path=display,
        format="savedmodel",
        size=source.size,
        sha256=sha256_of(source),
        meta_graphs=tuple(meta_graphs),
        checkpoint=checkpoint,
        saved_model_schema_version=schema,
        notes=tuple(notes),
    )


def read_file_artifact(source: Source, display: str, kind: str) -> Artifact:
    """Read one file whose kind ('graphdef', 'metagraph', 'checkpoint') is known."""
    # Read, then hash: a streamed source (S3) hashes what the reader passed over.
    if kind == "checkpoint":
        ckpt = _checkpoint(source)
        return Artifact(display, "checkpoint", source.size, sha256_of(source), checkpoint=ckpt)
    if kind == "metagraph":
        meta_graph = read_meta_graph_file(source)
        return Artifact(
            display, "metagraph", source.size, sha256_of(source), meta_graphs=(meta_graph,)
        )
    graph = read_graph_source(source)
    return Artifact(display, "graphdef", source.size, sha256_of(source), graph=graph)


def discover(names: list[str]) -> list[tuple[str, str]]:
    """(kind, name) of every artifact among a tree's file names.

    kind is 'savedmodel' (name is the directory), 'graphdef', 'metagraph' or
    'checkpoint' (name is the file). Files inside a SavedModel directory belong
    to it and are not reported on their own.
    """
    found: list[tuple[str, str]] = []
    saved_model_roots = sorted(
        {posixpath.dirname(n) for n in names if posixpath.basename(n) in SAVED_MODEL_FILES}
    )

    def inside_saved_model(name: str) -> bool:
        return any(root == "" or name.startswith(root + "/") for root in saved_model_roots)

    found += [("savedmodel", root) for root in saved_model_roots]
    for name in names:
        base = posixpath.basename(name)
        if inside_saved_model(name) or base.startswith("."):
            continue
        if base.endswith(".index"):
            found.append(("checkpoint", name))
        elif base.endswith(".meta"):
            found.append(("metagraph", name))
        elif base.endswith(GRAPH_SUFFIXES) and base not in SAVED_MODEL_SIDE_FILES:
            found.append(("graphdef", name))
    return found


def read_tree(tree: Tree, display_root: str) -> list[Artifact]:
    """Every artifact in a tree, in a stable order; raises if there is none."""
    artifacts = []
    for kind, name in discover(tree.names()):
        display = posixpath.join(display_root, name) if name else display_root
        if kind == "savedmodel":
            artifacts.append(read_saved_model_dir(tree, name, display))
        else:
            artifacts.append(read_file_artifact(tree.open(name), display, kind))
    if not artifacts:
        raise UnsupportedArtifact(f"{display_root}: no TensorFlow model found")
    return artifacts


def kind_of_file(name: str) -> str | None:
    base = posixpath.basename(name)
    if base in SAVED_MODEL_FILES:
        return "savedmodel"
    if base.endswith(".index"):
        return "checkpoint"
    if base.endswith(".meta"):
        return "metagraph"
    if base.endswith(GRAPH_SUFFIXES):
        return "graphdef"
    return None


def is_model_file(name: str) -> bool:
    """Whether a reader may read this file (archives keep only these in memory)."""
    return kind_of_file(name) is not None


def read_source(source: Source, display: str) -> list[Artifact]:
    """One blob: an archive (each artifact inside) or a single model file."""
    from worker.formats.archive import is_archive, open_archive

    if source.size == 0:
        raise InvalidArtifact(f"{display}: empty file")
    if is_archive(source):
        return read_tree(open_archive(source, wanted=is_model_file), display)
    kind = kind_of_file(display)
    if kind == "savedmodel":
        name = posixpath.basename(display)
        tree = MappingTree(display, {name: source})
        return [read_saved_model_dir(tree, "", posixpath.dirname(display) or display)]
    return [read_file_artifact(source, display, kind or "graphdef")]


def read_path(path: str) -> list[Artifact]:
    """Every artifact at a local path (file, directory or checkpoint prefix)."""
    p = Path(path)
    if p.is_dir():
        return read_tree(DirectoryTree(p), str(p))
    if p.is_file():
        if p.name in SAVED_MODEL_FILES:
            return [read_saved_model_dir(DirectoryTree(p.parent), "", str(p.parent))]
        return read_source(FileSource(p), str(p))
    index = Path(f"{path}.index")
    if index.is_file():  # a checkpoint prefix, as tf.train.load_checkpoint takes it
        return [read_file_artifact(FileSource(index), str(index), "checkpoint")]
    raise NotFound(f"{path}: no such file or directory")
