"""Release behaviour that op registries do not record, measured on real TensorFlow.

Unknown attrs: up to some release TensorFlow's graph construction rejected a
node carrying an attr its OpDef lacks ("NodeDef mentions attr 'X' not in
Op<...>"); later releases log it and ignore the attr. The boundary below comes
from loading new-attr fixtures with every installed release (see
tests/fixtures/tf-real/README.md); the shared fixtures show 1.15 and 2.4
rejecting and 2.11 ignoring.
"""

from __future__ import annotations

from packaging.version import Version

IGNORES_UNKNOWN_ATTRS_FROM = Version("2.5.0")


def rejects_unknown_attrs(release: str) -> bool:
    return Version(release) < IGNORES_UNKNOWN_ATTRS_FROM
