"""What `tf.saved_model.load` must rebuild of a TF2 SavedModel's object graph.

`load.py` (Loader) revives each user object through the types registered for its
identifier (`revived_types.deserialize`: the first registration whose versions
accept the object's `SavedUserObject.version`); an identifier nobody registered
becomes a plain `_UserObject`. It then restores slot variables by calling the
revived optimizer's `add_slot`. A plain `_UserObject` has none, and the load
fails: "'_UserObject' object has no attribute 'add_slot'" (a Keras 2 optimizer,
identifier `optimizer`, in 2.16 and later, whose Keras 3 registers no such type;
measured from each release by `tools/build_kernels.py`, and seen on a real
model, basic-pitch 0.4.0's `nmp`, in 2.21).
"""

from __future__ import annotations

from worker.compat.subject import Subject
from worker.model.artifact import MetaGraph, RevivedObject
from worker.model.consumer import RevivedTypes
from worker.model.findings import Code, Finding, Fix, FixKind, error

SLOT_METHOD = "add_slot"


def revival_gaps(meta_graph: MetaGraph, revived: RevivedTypes) -> list[tuple[RevivedObject, str]]:
    """Each object (one per identifier) the consumer cannot revive with `add_slot`, and
    why: no registration accepts it, or the one that does has no add_slot."""
    gaps: list[tuple[RevivedObject, str]] = []
    seen: set[str] = set()
    for obj in meta_graph.revived_objects:
        if obj.identifier in seen:
            continue
        version = obj.version
        revived_as = next(
            (
                r
                for r in revived.get(obj.identifier, ())
                if r.should_load(version.producer, version.min_consumer, version.bad_consumers)
            ),
            None,
        )
        if revived_as is not None and SLOT_METHOD in revived_as.methods:
            continue
        seen.add(obj.identifier)
        why = (
            "registers no type for it"
            if revived_as is None
            else "revives it as a type without add_slot"
        )
        gaps.append((obj, why))
    return gaps


def object_findings(s: Subject) -> list[Finding]:
    """One finding per identifier the consumer cannot revive with `add_slot`; nothing
    when the consumer's revived types were not measured."""
    meta_graph = s.meta_graph
    registry = s.consumer.registry
    if not s.tf2_load or meta_graph is None or registry is None or registry.revived is None:
        return []
    return [
        error(
            Code.OBJECT_NOT_REVIVED,
            f"'_UserObject' object has no attribute 'add_slot': object {obj.node} of the "
            f"object graph ('{obj.identifier}', {obj.slots} slot variables: an optimizer's "
            f"state) must be revived as an optimizer, and the consumer's TensorFlow {why}. "
            "tf.saved_model.load fails.",
            fix=Fix(FixKind.EXPORT_WITHOUT_OPTIMIZER),
        )
        for obj, why in revival_gaps(meta_graph, registry.revived)
    ]
