"""Release behaviour that op registries do not record, measured on real TensorFlow.

Unknown attrs: up to 2.4 TensorFlow's graph construction rejects a node that
carries an attr its OpDef lacks ("NodeDef mentions attr 'X' not in Op<...>");
from 2.5 on it logs and ignores the attr. Measured by importing the shared
fixture `tf2.21/frozen_graph/frozen_graph.pb` (MatMul with `grad_a`/`grad_b`,
unknown before 2.18) with `tf.import_graph_def` in each release's own install:
2.4.4 rejects it; 2.5.3, 2.6.5, 2.7.4 and 2.8.4 import it. The fixture matrices
agree: every "mentions attr" failure in them comes from 1.13-2.4 consumers.

Function libraries: 1.13 imports a graph whose library functions use ops it
does not register (they fail only when called); 1.14 and later refuse it at
load ("Op type not registered"). Measured with the fixture matrix: the
`function_op` and `savedmodel_v2` models load in 1.13.2 and fail in 1.14.0,
1.15.5, 2.0.4 and 2.1.4 (tests/fixtures/tf-real/matrix.jsonl).


Stripped op list: the v1 SavedModel loader of 1.13 and 1.14 looks up every op
of the MetaGraph's stripped op list before importing anything and fails with a
bare `KeyError: '<op>'` on one it does not register (the fixture matrix: every
1.13/1.14 v1_loader row of `custom_op`, `new_op`, `new_allowed_value`); from 1.15
the import meets the graph's own errors first.
"""

from __future__ import annotations

import functools

from packaging.version import Version


@functools.lru_cache(maxsize=1024)
def release_version(release: str) -> Version:
    """A release number, parsed once per process: the catalog asks for the same hundred
    numbers on every check, and parsing one costs more than checking a small model."""
    return Version(release)


IGNORES_UNKNOWN_ATTRS_FROM = Version("2.5.0")


VALIDATES_LIBRARY_AT_LOAD_FROM = Version("1.14.0")


def rejects_unknown_attrs(release: str) -> bool:
    return release_version(release) < IGNORES_UNKNOWN_ATTRS_FROM


def validates_library_at_load(release: str) -> bool:
    return release_version(release) >= VALIDATES_LIBRARY_AT_LOAD_FROM


LOOKS_UP_OP_LIST_FIRST_BEFORE = Version("1.15.0")

# tf.saved_model.load of a TF1 SavedModel lifts its variables; from 2.8 a read of one
# nothing filled gives an empty tensor, before it an error ("Could not find variable").
# Measured (tests/fixtures/tf-serve `init_reads_unrestored_variable`, and load.py --path
# on every release between): 2.4.4 to 2.7.4 fail the init run, 2.8.4 to 2.21.0 load it.
LIFTED_READS_EMPTY_FROM = Version("2.8.0")


def lifted_reads_empty(release: str) -> bool:
    return release_version(release) >= LIFTED_READS_EMPTY_FROM


def looks_up_op_list_first(release: str) -> bool:
    return release_version(release) < LOOKS_UP_OP_LIST_FIRST_BEFORE
