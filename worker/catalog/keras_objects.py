"""The objects each Keras version deserializes by name (data measured in each Keras).

`data/keras_objects.json.gz` is built by `tools/keras/build_objects.py` (dump, then
pack): in each Keras runtime (the `tf.keras` of TensorFlow 1.13 to 2.15, tf-keras 2.16 to
2.21 in the TensorFlow of its minor with TF_USE_LEGACY_KERAS=1, Keras 3.0 to the newest
Keras 3 from its wheel) every candidate name of each kind (layers,
activations, initializers, regularizers, constraints, losses, metrics, optimizers) was
passed to that Keras's own lookup, and kept when it resolved; a class keeps its
constructor's parameters. Each version also keeps the error its Keras raised for a
name it does not know, with `{name}` in its place (`unknown_message`; for Keras 3 also
the one a `.keras` config's module-qualified entry meets, `unknown_message_archive`),
and says where it was measured (`measured_in`).

A table is found by the Keras a consumer runs: its major.minor ("3.6.0" and "3.6"
read the table of 3.6; "2.17" is tf-keras 2.17, the only Keras 2.16+), or for the Keras
bundled in TensorFlow 1.13 to 2.5, the release's ("tf-2.1"). A Keras no table was
measured for is None: whether it resolves a name is unknown, never "yes".
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Mapping
from pathlib import Path

from worker.catalog.keras import keras_of_release
from worker.model.keras import KerasClass, KerasObjects, KindTable

DATA = Path(__file__).resolve().parent / "data" / "keras_objects.json.gz"
KINDS = (
    "layers",
    "activations",
    "initializers",
    "regularizers",
    "constraints",
    "losses",
    "metrics",
    "optimizers",
)


def table_key(keras: str) -> str:
    """The key a Keras package version is filed under: its major.minor."""
    return ".".join(keras.split(".")[:2])


def _parse(version: Mapping[str, object]) -> KerasObjects:
    kinds: dict[str, KindTable] = {}
    raw_kinds = version["kinds"]
    assert isinstance(raw_kinds, dict)
    for kind, table in raw_kinds.items():
        objects = {
            name: KerasClass(
                tuple(entry["args"]) if "args" in entry else None,
                bool(entry.get("kwargs")),
                tuple(entry["chain_args"]) if "chain_args" in entry else None,
            )
            for name, entry in table["objects"].items()
        }
        kinds[kind] = KindTable(
            objects,
            table["unknown_message"],
            table.get("unknown_message_archive", ""),
            table.get("deserialize_fails"),
        )
    return KerasObjects(str(version["keras"]), str(version["measured_in"]), kinds)


@functools.cache
def _tables(path: Path = DATA) -> dict[str, KerasObjects]:
    document = json.loads(gzip.decompress(path.read_bytes()))
    return {key: _parse(version) for key, version in document["versions"].items()}


def measured_versions() -> list[str]:
    """The table keys, in the order the data holds them."""
    return list(_tables())


def keras_objects(keras: str | None, tensorflow: str | None = None) -> KerasObjects | None:
    """The table of the Keras a consumer runs; None when that Keras was not measured.

    The Keras bundled in TensorFlow 1.13 to 2.5 is filed by the release ("tf-2.1"):
    its version string ("2.2.4-tf" in 1.13 to 2.0) does not say which it is. A consumer
    that runs its release's own Keras reads that table; one that declares another Keras
    reads the Keras package's ("3.6")."""
    if not keras:
        return None
    tables = _tables()
    if tensorflow is not None and keras == keras_of_release(tensorflow):
        bundled = tables.get("tf-" + ".".join(tensorflow.split(".")[:2]))
        if bundled is not None:
            return bundled
    if keras.endswith("-tf"):
        return None
    return tables.get(table_key(keras))


def _version(key: str) -> tuple[int, ...]:
    return tuple(int(p) for p in key.split(".") if p.isdigit())


def keras_tables(keras: str | None, tensorflow: str | None = None) -> list[KerasObjects]:
    """Every measured table the consumer may run. A TensorFlow 2.16+ release that the
    consumer did not pin a Keras for runs the newest Keras 3 at or above the minimum its
    wheel names (pip picks it at install), so every measured Keras 3 from that minimum
    on; otherwise the one table (none when not measured)."""
    if not keras:
        return []
    if (
        tensorflow is not None
        and keras == keras_of_release(tensorflow)
        and not keras.endswith("-tf")
        and _version(table_key(keras))[:1] >= (3,)
    ):
        low = _version(table_key(keras))
        return [
            table
            for key, table in sorted(_tables().items(), key=lambda kv: _version(kv[0]))
            if not key.startswith("tf-") and _version(key)[:1] == (3,) and _version(key) >= low
        ]
    one = keras_objects(keras, tensorflow)
    return [one] if one is not None else []
