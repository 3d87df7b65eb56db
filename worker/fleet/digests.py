"""A consumer's digest: what a verdict depends on besides the model."""

from __future__ import annotations

from worker.catalog.keras import keras_of_release
from worker.model.consumer import Consumer
from worker.model.digest import digest

_DIGESTS: dict[int, tuple[Consumer, str]] = {}


def consumer_digest(consumer: Consumer) -> str:
    """What a verdict depends on besides the model: equal digests, equal verdicts.
    Remembered per consumer object: a digest hashes the whole op registry (about a
    millisecond), and a fleet change asks for each consumer's once per share."""
    hit = _DIGESTS.get(id(consumer))
    if hit is not None and hit[0] is consumer:
        return hit[1]
    if len(_DIGESTS) >= 4096:
        _DIGESTS.clear()
    found = _digest(consumer)
    _DIGESTS[id(consumer)] = (consumer, found)
    return found


def _digest(consumer: Consumer) -> str:
    registry = consumer.registry
    # Keras files: what a consumer declares beyond its release (none: digests as before)
    keras: list[object] = (
        [consumer.keras, consumer.python, consumer.tf_serving]
        if consumer.keras != keras_of_release(consumer.tensorflow)
        or consumer.python
        or consumer.tf_serving
        else []
    )
    if consumer.custom_objects:
        keras.append(sorted(consumer.custom_objects))
    return digest(
        [
            consumer.tensorflow,
            consumer.graph_def_version,
            consumer.graph_def_min_producer,
            consumer.checkpoint_version,
            consumer.checkpoint_min_producer,
            str(consumer.loader),
            consumer.rejects_unknown_attrs,
            consumer.validates_library,
            *(["lifted-reads-empty"] if consumer.lifted_reads_empty else []),
            registry.source if registry else None,
            registry.fingerprint if registry else None,
            sorted(registry.ops) if registry else None,
            *_tflite_digest(consumer),
            *keras,
            *_kernel_digest(consumer),
        ]
    )


def _kernel_digest(consumer: Consumer) -> list[object]:
    """What kernel verdicts depend on: which ops the measured table has kernels for, and
    whether the consumer runs on a GPU (left out where no table was measured)."""
    registry = consumer.registry
    if registry is None or registry.kernels is None:
        return ["gpu"] if consumer.gpu else []
    return ["kernels", len(registry.kernels), sorted(registry.kernels), consumer.gpu]


def _tflite_digest(consumer: Consumer) -> list[object]:
    """What a .tflite verdict depends on: the interpreter and its measured table. Left out
    for a TensorFlow release without a measured table (its .tflite verdicts are unknown),
    so the digests recorded before TFLite was read stay valid for those."""
    interpreter = consumer.tflite
    if interpreter is None or (interpreter.table is None and not interpreter.standalone):
        return []
    table = interpreter.table
    return [interpreter.family, interpreter.version, table.fingerprint if table else None]
