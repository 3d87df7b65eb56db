"""Find the TensorFlow artifacts in a path, tree or blob, and read each one.

This is the one entry point the CLI and the pipeline call. A path may be a
file (GraphDef `.pb`/`.pbtxt`, `saved_model.pb`, `.meta`, checkpoint `.index`
or a checkpoint prefix, a Keras `.keras` or `.h5` model, TFLite `.tflite`, an
archive), or a directory holding any of those; an archive or directory may hold
several artifacts (TF Serving's
`<name>/<version>/saved_model.pb` layout) and each is reported.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from worker.errors import InvalidArtifact, NotFound, UnsupportedArtifact
from worker.formats.archive import open_archive
from worker.formats.digest import Sha256
from worker.formats.graph import read_graph_def
from worker.formats.savedmodel import (
    looks_like_text,
    read_graph_def_text,
    read_meta_graph_file,
    read_saved_model,
    read_saved_model_text,
)
from worker.formats.sniff import READ_FORMATS, blob_of, no_model_message
from worker.formats.source import (
    FILE_NAMES,
    DirectoryTree,
    FileSource,
    MappingTree,
    Source,
    Tree,
)
from worker.formats.tflite import read_tflite
from worker.model.artifact import Artifact, Checkpoint, Graph

SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
GRAPH_SUFFIXES = (".pb", ".pbtxt", ".graphdef", ".pbtx")
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")
TEXT_SUFFIXES = (".pbtxt", ".pbtx")
BINARY_SUFFIXES = (".pb", ".graphdef")  # TensorFlow parses these as binary only
TFLITE_SUFFIX = ".tflite"
# Files that live inside a SavedModel directory but are not graphs.
SAVED_MODEL_SIDE_FILES = frozenset({"fingerprint.pb", "keras_metadata.pb"})


def _checkpoint(source: Source) -> Checkpoint:
    from worker.formats.checkpoint import read_checkpoint_index

    return read_checkpoint_index(source)


def read_graph_source(source: Source) -> Graph:
    """A frozen GraphDef: text when named `.pbtxt`, binary when named `.pb`
    (as TensorFlow reads them), by content when the name does not say."""
    if source.size == 0:
        raise InvalidArtifact(f"{source.name}: empty file")
    name = source.name.lower()
    if name.endswith(TEXT_SUFFIXES):
        return read_graph_def_text(source)
    if not name.endswith(BINARY_SUFFIXES) and looks_like_text(source):
        try:
            return read_graph_def_text(source)
        except InvalidArtifact as exc:
            if name.endswith((*GRAPH_SUFFIXES, ".meta")):
                raise
            # a text file no name marks as a graph (README.md): say what is read, not
            # only why the text-format parser stopped
            why = str(exc).split(": not a valid text-format protobuf: ", 1)[-1]
            raise InvalidArtifact(
                f"{source.name}: not a model: a text file that is no text-format GraphDef "
                f"({why}); {READ_FORMATS}"
            ) from None
    try:
        return read_graph_def(source)
    except InvalidArtifact:
        if looks_like_text(source):
            raise InvalidArtifact(
                f"{source.name}: text-format protobuf in a binary GraphDef file; TensorFlow "
                "reads this name as binary (name a text graph .pbtxt)"
            ) from None
        raise


def _check_saved_model_shape(names: set[str], prefix: str, display: str) -> None:
    """Refuse layouts TensorFlow's loader refuses, or reads differently than it looks."""
    for name in ("saved_model.pb", "saved_model.pbtxt", "variables/variables.index"):
        if any(n.startswith(f"{prefix}{name}/") for n in names):
            raise InvalidArtifact(f"{display}: {name} is a directory, not a file")
    if f"{prefix}variables" in names:
        raise InvalidArtifact(
            f"{display}: variables is a file; a SavedModel's variables/ is a directory"
        )


def read_saved_model_dir(tree: Tree, root: str, display: str) -> Artifact:
    names = set(tree.names())
    prefix = f"{root}/" if root else ""
    notes: list[str] = []
    _check_saved_model_shape(names, prefix, display)
    if f"{prefix}saved_model.pb" in names:
        source = tree.open(f"{prefix}saved_model.pb")
        (schema, meta_graphs), sha256 = _with_digest(source, read_saved_model)
    else:
        source = tree.open(f"{prefix}saved_model.pbtxt")
        (schema, meta_graphs), sha256 = _with_digest(source, read_saved_model_text)
    checkpoint = None
    restore_skipped = False
    variables = f"{prefix}variables/variables.index"
    if variables in names:
        checkpoint = _checkpoint(tree.open(variables))
    elif any(n.startswith(f"{prefix}variables/") for n in names):
        notes.append("variables/ has no variables.index: the loader skips the restore")
        restore_skipped = True
    # A listing that holds a file under the SavedModel's directories, or one known to
    # list everything (a local directory, an archive), says what assets/ holds.
    seen_whole = getattr(tree, "complete_listing", False) or any(
        n.startswith(prefix) and n[len(prefix) :].count("/") > 0 for n in names
    )
    assets = f"{prefix}assets/"
    asset_files = (
        tuple(sorted(n[len(assets) :] for n in names if n.startswith(assets)))
        if seen_whole
        else None
    )
    return Artifact(
        path=display,
        format="savedmodel",
        size=source.size,
        sha256=sha256,
        meta_graphs=tuple(meta_graphs),
        checkpoint=checkpoint,
        saved_model_schema_version=schema,
        notes=tuple(notes),
        restore_skipped=restore_skipped,
        asset_files=asset_files,
    )


T = TypeVar("T")


def _with_digest(source: Source, read: Callable[[Source], T]) -> tuple[T, str]:
    """`read(source)` and the source's sha256, computed side by side where possible."""
    digest = Sha256(source)
    try:
        result = read(source)
    except BaseException:
        digest.cancel()
        raise
    return result, digest.result()


def read_keras_file(source: Source, display: str, container: str | None = None) -> Artifact:
    """A Keras model file, by its content: a `.keras` zip or a legacy H5 model
    (`container`, when the caller has sniffed it already)."""
    from worker.formats.keras import read_keras_archive, read_keras_h5

    if container is None:
        container = blob_of(source).container
    if container == "keras-zip":
        model, sha256 = _with_digest(source, read_keras_archive)
        return Artifact(display, "keras", source.size, sha256, keras=model)
    if container == "hdf5":
        model, sha256 = _with_digest(source, read_keras_h5)
        return Artifact(display, "keras-h5", source.size, sha256, keras=model)
    raise InvalidArtifact(
        f"{display}: named like a Keras model but neither a .keras zip (metadata.json, "
        "config.json) nor an HDF5 file"
    )


def read_file_artifact(source: Source, display: str, kind: str) -> Artifact:
    """Read one file whose kind ('graphdef', 'metagraph', 'checkpoint', 'keras') is known."""
    # Read, then hash: a streamed source (S3) hashes what the reader passed over.
    if kind == "keras":
        return read_keras_file(source, display)
    if kind == "tflite":
        model, sha256 = _with_digest(source, read_tflite)
        return Artifact(display, "tflite", source.size, sha256, tflite=model)
    if kind == "checkpoint":
        checkpoint, sha256 = _with_digest(source, _checkpoint)
        return Artifact(display, "checkpoint", source.size, sha256, checkpoint=checkpoint)
    if kind == "metagraph":
        meta_graph, sha256 = _with_digest(source, read_meta_graph_file)
        return Artifact(display, "metagraph", source.size, sha256, meta_graphs=(meta_graph,))
    graph, sha256 = _with_digest(source, read_graph_source)
    return Artifact(display, "graphdef", source.size, sha256, graph=graph)


def discover(names: list[str]) -> list[tuple[str, str]]:
    """(kind, name) of every artifact among a tree's file names.

    kind is 'savedmodel' (name is the directory), 'graphdef', 'metagraph',
    'checkpoint', 'keras' or 'tflite' (name is the file). Files inside a SavedModel
    directory belong to it and are not reported on their own.
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
        elif base.endswith(TFLITE_SUFFIX):
            found.append(("tflite", name))
        elif base.endswith(GRAPH_SUFFIXES) and base not in SAVED_MODEL_SIDE_FILES:
            found.append(("graphdef", name))
        elif base.lower().endswith(KERAS_SUFFIXES):
            found.append(("keras", name))
    return found


def _check_tree_shape(names: list[str], display_root: str) -> None:
    """Refuse layouts where a model file is a directory, or variables/ has no graph.

    A SavedModel's `variables/` without its `saved_model.pb` is no model any
    loader reads, though its index alone would pass for a checkpoint.
    """
    for name in names:
        parts = name.split("/")
        for i, part in enumerate(parts[:-1]):
            if part in FILE_NAMES:
                shown = "/".join(parts[: i + 1])
                raise InvalidArtifact(f"{display_root}: {shown} is a directory, not a file")
    present = set(names)
    for name in names:
        if name == "variables/variables.index" or name.endswith("/variables/variables.index"):
            root = name[: -len("variables/variables.index")]
            if not any(f"{root}{file}" in present for file in SAVED_MODEL_FILES):
                where = posixpath.join(display_root, root.rstrip("/")) if root else display_root
                raise InvalidArtifact(
                    f"{where}: has variables/ but no saved_model.pb; not a SavedModel"
                )


def _check_serving_base(found: list[tuple[str, str]], display_root: str) -> None:
    """A folder whose SavedModels all sit one level down is a TF Serving base path;
    TF Serving loads only numeric version folders there (`<base>/<version>/`)."""
    roots = [name for kind, name in found if kind == "savedmodel"]
    if not roots or "" in roots or any("/" in r for r in roots) or any(r.isdigit() for r in roots):
        return
    raise InvalidArtifact(
        f"{display_root}: no numeric version directory; TF Serving loads "
        f"<base>/<version>/saved_model.pb (found {', '.join(r + '/' for r in roots)}); "
        "point at the SavedModel itself or name its folder with a version number"
    )


def read_tree(tree: Tree, display_root: str, *, serving_base: bool = False) -> list[Artifact]:
    """Every artifact in a tree, in a stable order; raises if there is none.

    With `serving_base`, the tree is a folder TF Serving could be pointed at,
    and SavedModels in non-numeric folders one level down are refused.
    """
    names = tree.names()
    _check_tree_shape(names, display_root)
    found = discover(names)
    if serving_base:
        _check_serving_base(found, display_root)
    artifacts = []
    for kind, name in found:
        display = posixpath.join(display_root, name) if name else display_root
        if kind == "savedmodel":
            artifacts.append(read_saved_model_dir(tree, name, display))
        elif kind == "keras" and len(found) > 1:
            # beside other models, an H5 of weights alone is a part, not a model
            with contextlib.suppress(UnsupportedArtifact):
                artifacts.append(read_file_artifact(tree.open(name), display, kind))
        else:
            artifacts.append(read_file_artifact(tree.open(name), display, kind))
    if not artifacts:
        raise UnsupportedArtifact(no_model_message(tree, display_root))
    return artifacts


def kind_of_file(name: str) -> str | None:
    base = posixpath.basename(name)
    if base in SAVED_MODEL_FILES:
        return "savedmodel"
    if base.endswith(".index"):
        return "checkpoint"
    if base.endswith(".meta"):
        return "metagraph"
    if base.endswith(TFLITE_SUFFIX):
        return "tflite"
    if base.endswith(GRAPH_SUFFIXES):
        return "graphdef"
    if base.lower().endswith(KERAS_SUFFIXES):
        return "keras"
    return None


def is_model_file(name: str) -> bool:
    """Whether a reader may read this file (archives keep only these in memory)."""
    return kind_of_file(name) is not None


def read_source(source: Source, display: str) -> list[Artifact]:
    """One blob: an archive (each artifact inside) or a single model file, as its first
    bytes say (`sniff_blob`, decided once), then its name."""
    if source.size == 0:
        raise InvalidArtifact(f"{display}: empty file")
    blob = blob_of(source)
    if blob.kind == "keras":
        return [read_keras_file(source, display, blob.container)]
    if blob.foreign is not None:
        raise UnsupportedArtifact(f"{display}: {blob.foreign.message()}")
    if blob.kind == "archive":
        return read_tree(open_archive(source, wanted=is_model_file), display)
    if blob.kind == "tflite":
        return [read_file_artifact(source, display, "tflite")]
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
        if p.name in FILE_NAMES:
            raise InvalidArtifact(f"{path}: a directory, where a file of that name belongs")
        return read_tree(DirectoryTree(p), str(p), serving_base=True)
    if p.is_file():
        if p.name in SAVED_MODEL_FILES:
            return [read_saved_model_dir(DirectoryTree(p.parent), "", str(p.parent))]
        return read_source(FileSource(p), str(p))
    index = Path(f"{path}.index")
    if index.is_file():  # a checkpoint prefix, as tf.train.load_checkpoint takes it
        return [read_file_artifact(FileSource(index), str(index), "checkpoint")]
    raise NotFound(f"{path}: no such file or directory")
