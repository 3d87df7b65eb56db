"""Nodes pinned to a device the consumer does not have (an export that kept devices).

A SavedModel exported without `clear_devices=True` keeps each node's `device`
(`tf.device("/device:GPU:0")` around the model, or a training graph's placements).
A Session places every node of the top-level graph at its first run (the restore,
else the init op, else the first request; `worker.compat.runs`) and honours a node's
device as a hard constraint unless the session allows soft placement
(`ConfigProto.allow_soft_placement`, false by default; TF Serving's session and
`tf.compat.v1.Session()` leave it off): the placer fails "Cannot assign a device for
operation X: ... explicitly assigned to /device:GPU:0 but available devices are
[ /job:localhost/replica:0/task:0/device:CPU:0 ]"
(`core/common_runtime/placer.cc`, `colocation_graph.cc`). `tf.saved_model.load`
places softly (eager's soft device placement is on) and loads it. A pin inside a
function body is not judged: the function runtime places a called function's body
softly (measured: a `tf.device("/device:GPU:0")` inside a tf.function, saved by
2.15.1's `tf.saved_model.save` with or without SAVE_VARIABLE_DEVICES, loads and
serves under the v1 loader of 2.12.1, 2.15.1 and 2.21.0 on a CPU-only machine).

What a consumer has: the CPU of `/job:localhost/replica:0/task:0`, and a GPU when its
fleet entry says `gpu: true`; a node naming another job (a parameter server's
`/job:ps/task:0`), a TPU, or a GPU on a consumer without one, is not placeable.
XLA devices are not judged (which releases create them is not measured here).
"""

from __future__ import annotations

import re

from worker.compat.subject import Subject
from worker.model.artifact import PinnedDevice
from worker.model.consumer import Loader
from worker.model.findings import Code, Finding, Fix, FixKind, Stage, error

_JOB = re.compile(r"(?:^|/)job:([^/]+)")
_DEVICE = re.compile(r"(?:^|/)device:([A-Za-z_]+)(?::|$)")
_LEGACY = re.compile(r"(?:^|/)(cpu|gpu|tpu)(?::|$)", re.IGNORECASE)
LOCAL_JOB = "localhost"


def device_type(device: str) -> str | None:
    """'GPU' of '/job:localhost/replica:0/task:0/device:GPU:0' or '/gpu:0'; None: no type."""
    found = _DEVICE.search(device) or _LEGACY.search(device)
    return found.group(1).upper() if found else None


def unplaceable(device: str, gpu: bool) -> str | None:
    """Why a node pinned to `device` cannot be placed on the consumer; None if it can."""
    job = _JOB.search(device)
    if job and job.group(1) != LOCAL_JOB:
        return f"its job '{job.group(1)}' is not the session's ({LOCAL_JOB})"
    kind = device_type(device)
    if kind is None or kind == "CPU" or kind.startswith("XLA_"):
        return None
    if kind == "GPU" and gpu:
        return None
    return f"this consumer has no {kind} (fleet entry: gpu: {str(gpu).lower()})"


def _first_run(s: Subject) -> tuple[Stage, str]:
    """The run that places the graph, as the loader runs them (`worker.compat.runs`)."""
    plan = s.meta_graph.serve_plan if s.meta_graph is not None else None
    if plan is not None:
        if plan.restore is not None and not s.artifact.restore_skipped:
            return Stage.LOAD, "the restore run"
        if plan.init is not None and s.consumer.loader != Loader.GRAPH_IMPORT:
            return Stage.LOAD, "the init run"
    return Stage.REQUEST, "the first request"


def device_findings(s: Subject) -> list[Finding]:
    """The first pinned node a Session cannot place (one finding: the placer stops there)."""
    graph = s.graph
    if graph is None or not graph.devices or s.consumer.loader == Loader.SAVED_MODEL_V2:
        return []
    for pinned in graph.devices:
        if pinned.function is not None:
            continue  # placed softly by the function runtime
        why = unplaceable(pinned.device, s.consumer.gpu)
        if why is not None:
            return [_finding(s, pinned, why)]
    return []


def _finding(s: Subject, pinned: PinnedDevice, why: str) -> Finding:
    stage, run = _first_run(s)
    where = f"node {pinned.example}" + (
        f" in function {pinned.function}" if pinned.function else ""
    )
    outcome = "the load fails" if stage == Stage.LOAD else "every request fails"
    return error(
        Code.DEVICE_UNAVAILABLE,
        f"Cannot assign a device for operation {pinned.op} ({where}, and {pinned.count - 1} "
        f"more like it): it is explicitly assigned to {pinned.device}, and {why}. The "
        f"{s.loader} session does not place it elsewhere (no soft placement): {run} places "
        f"the whole graph and {outcome}. Re-export with clear_devices=True, or load it with "
        "tf.saved_model.load, which places it softly.",
        op=pinned.op,
        fix=Fix(FixKind.CLEAR_DEVICES),
        stage=stage,
    )
