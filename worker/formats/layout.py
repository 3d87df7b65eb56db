"""Which files make up the model an object key belongs to: the one place that knows.

An object store hands the pipeline one key at a time. A frozen graph, a `.meta`
or an archive is a model by itself; a `saved_model.pb` (or `.pbtxt`) or a
`variables/variables.index` belongs to a SavedModel directory, read whole. Stores
only list and open files under a prefix (a `Tree`); this module says which
prefix to open and what to read in it, so no adapter needs to know a layout.
"""

from __future__ import annotations

import posixpath

from worker.formats.read import (
    SAVED_MODEL_FILES,
    SAVED_MODEL_SIDE_FILES,
    read_saved_model_dir,
    read_source,
)
from worker.formats.source import Tree
from worker.model.artifact import Artifact

VARIABLES_INDEX = "variables/variables.index"
ASSET_DIRS = ("assets", "assets.extra")


def in_saved_model(key: str) -> bool:
    """A key a SavedModel directory is read for: its graph or its variables index."""
    return posixpath.basename(key) in SAVED_MODEL_FILES or (
        key == VARIABLES_INDEX or key.endswith("/" + VARIABLES_INDEX)
    )


def model_folder(key: str) -> str:
    """The folder (no trailing '/'; '' for the top) to open a Tree at for `key`:
    a SavedModel's own directory for its graph or variables index, else the key's folder."""
    if key == VARIABLES_INDEX or key.endswith("/" + VARIABLES_INDEX):
        return key[: -len(VARIABLES_INDEX)].rstrip("/")
    return posixpath.dirname(key)


def is_saved_model_part(key: str) -> bool:
    """A file that belongs to a SavedModel but is no model itself: its fingerprint,
    Keras metadata, or anything under assets/ (vocabularies may well end in .pb)."""
    parts = key.split("/")
    return parts[-1] in SAVED_MODEL_SIDE_FILES or any(p in ASSET_DIRS for p in parts[:-1])


def read_object(tree: Tree, name: str, display: str) -> list[Artifact]:
    """The artifacts of object `name` in `tree`, a tree opened at `model_folder` of its key.

    A SavedModel file brings its whole directory (the tree is listed); any other
    object is read alone, without listing the tree. `display` names the tree's
    folder (`s3://bucket/folder`) and prefixes every artifact path.
    """
    if in_saved_model(name):
        return [read_saved_model_dir(tree, "", display)]
    return read_source(tree.open(name), posixpath.join(display, name))
