"""Ops that should never be served: file I/O, Python, network (a curated list, data).

TensorFlow's security guidance says to treat a model as code: whoever serves it
runs whatever its graph does. Most ops compute on tensors; the ones listed here
reach outside the process's tensors: they read, write or list files named by a
tensor or an attr, run Python, or open connections. A model that holds one is
flagged wherever it sits (graph nodes and every function body, reachable or
not: a later call or a changed signature can reach it; a `.tflite`'s Select TF
ops, `FlexReadFile` and the like, which the Flex delegate runs), and so is a Keras
Lambda that carries marshalled Python (Keras 3 refuses it unless
`safe_mode=False`; Keras 2's H5 loader runs it without asking).

Not listed, by design: the saver's own ops (`SaveV2`, `RestoreV2`,
`MergeV2Checkpoints` and TF 1's `Save`/`Restore`/`SaveSlices`/`RestoreSlice`)
where they belong, in the graph or the saver's functions (they are flagged when
a request runs them: `request.checkpoint-io`, worker.compat.serving); lookup tables initialised from
the model's own asset files (`InitializeTableFromTextFile*`); `Print` (stderr);
dataset caches (`CacheDataset*`, in memory unless given a file name, which is a
tensor we do not read). Checked against `tests/fixtures/unsafe` (SavedModels
written by TF 1.15.5, 2.15.1 and 2.21.0 whose calls read a secret file, wrote
a file, listed /etc and ran Python: every one flagged, the clean ones not; and
`.tflite` files converted with Select TF ops by 2.15.1 and 2.21.0 whose
`tf.lite.Interpreter` run read a secret file or wrote one).

Severity: a warning (at-risk: a named hazard) by default; an error when the fleet
policy says `unsafe_ops: error`, with stage `policy` (TensorFlow would serve it;
the fleet refuses to).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from worker.compat.functions import RESTORE_OPS, SAVE_OPS, scope_of
from worker.compat.memo import graph_facts, kinds_by_op, per_object
from worker.compat.policy import Policy
from worker.model.artifact import Artifact, NodeKind
from worker.model.findings import Code, Finding, Fix, FixKind, Severity, Stage

FILE_IO = Code.UNSAFE_FILE_IO
PYTHON = Code.UNSAFE_PYTHON
NETWORK = Code.UNSAFE_NETWORK

# op -> (code, what it does when served)
UNSAFE_OPS: dict[str, tuple[Code, str]] = {
    "ReadFile": (FILE_IO, "reads any file the serving process can read, named by a tensor"),
    "WriteFile": (FILE_IO, "writes a file named by a tensor"),
    "MatchingFiles": (FILE_IO, "lists the files matching a glob (directory listing)"),
    "MatchingFilesDataset": (FILE_IO, "lists the files matching a glob"),
    "ExperimentalMatchingFilesDataset": (FILE_IO, "lists the files matching a glob"),
    "ImmutableConst": (FILE_IO, "memory-maps a file named by its memory_region_name"),
    "LoadAndRemapMatrix": (FILE_IO, "reads a checkpoint file named by a tensor"),
    "WholeFileReader": (FILE_IO, "reads whole files named in a queue"),
    "WholeFileReaderV2": (FILE_IO, "reads whole files named in a queue"),
    "TextLineReader": (FILE_IO, "reads files named in a queue"),
    "TextLineReaderV2": (FILE_IO, "reads files named in a queue"),
    "FixedLengthRecordReader": (FILE_IO, "reads files named in a queue"),
    "FixedLengthRecordReaderV2": (FILE_IO, "reads files named in a queue"),
    "TFRecordReader": (FILE_IO, "reads files named in a queue"),
    "TFRecordReaderV2": (FILE_IO, "reads files named in a queue"),
    "LMDBReader": (FILE_IO, "reads LMDB files named in a queue"),
    "TextLineDataset": (FILE_IO, "reads files named by a tensor"),
    "TFRecordDataset": (FILE_IO, "reads files named by a tensor"),
    "TFRecordDatasetV2": (FILE_IO, "reads files named by a tensor"),
    "FixedLengthRecordDataset": (FILE_IO, "reads files named by a tensor"),
    "FixedLengthRecordDatasetV2": (FILE_IO, "reads files named by a tensor"),
    "CSVDataset": (FILE_IO, "reads files named by a tensor"),
    "CSVDatasetV2": (FILE_IO, "reads files named by a tensor"),
    "ExperimentalCSVDataset": (FILE_IO, "reads files named by a tensor"),
    "LMDBDataset": (FILE_IO, "reads LMDB files named by a tensor"),
    "ExperimentalLMDBDataset": (FILE_IO, "reads LMDB files named by a tensor"),
    "SqlDataset": (FILE_IO, "opens a SQLite database named by a tensor"),
    "ExperimentalSqlDataset": (FILE_IO, "opens a SQLite database named by a tensor"),
    "LoadDataset": (FILE_IO, "reads a saved dataset from a path"),
    "SnapshotDatasetReader": (FILE_IO, "reads snapshot files from a path"),
    "SnapshotNestedDatasetReader": (FILE_IO, "reads snapshot files from a path"),
    "SnapshotChunkDataset": (FILE_IO, "reads snapshot files from a path"),
    "ListSnapshotChunksDataset": (FILE_IO, "lists snapshot files under a path"),
    "SnapshotDataset": (FILE_IO, "writes and reads snapshot files under a path"),
    "SnapshotDatasetV2": (FILE_IO, "writes and reads snapshot files under a path"),
    "SaveDataset": (FILE_IO, "writes a dataset to a path"),
    "SaveDatasetV2": (FILE_IO, "writes a dataset to a path"),
    "DistributedSave": (FILE_IO, "writes a dataset to a path"),
    "DatasetToTFRecord": (FILE_IO, "writes a TFRecord file named by a tensor"),
    "ExperimentalDatasetToTFRecord": (FILE_IO, "writes a TFRecord file named by a tensor"),
    "CreateSummaryFileWriter": (FILE_IO, "opens an event file in a log directory"),
    "CreateSummaryDbWriter": (FILE_IO, "opens a SQLite summary database"),
    "DebugIdentity": (FILE_IO, "dumps tensors to its debug_urls (files or gRPC)"),
    "DebugIdentityV2": (FILE_IO, "dumps tensors under its dump_root"),
    "DebugIdentityV3": (FILE_IO, "dumps tensors to its debug_urls (files or gRPC)"),
    "FileSystemSetConfiguration": (FILE_IO, "changes a filesystem's configuration"),
    "GcsConfigureCredentials": (FILE_IO, "sets the credentials used for gs:// files"),
    "GcsConfigureBlockCache": (FILE_IO, "configures the gs:// file cache"),
    "PyFunc": (PYTHON, "runs a Python function of the process that built the graph"),
    "PyFuncStateless": (PYTHON, "runs a Python function of the process that built the graph"),
    "EagerPyFunc": (PYTHON, "runs a Python function (tf.py_function)"),
    "Rpc": (NETWORK, "calls an RPC server at an address named by a tensor"),
    "TryRpc": (NETWORK, "calls an RPC server at an address named by a tensor"),
    "RpcClient": (NETWORK, "connects to an RPC server at an address named by a tensor"),
    "RpcServer": (NETWORK, "listens on an address named by a tensor"),
    "RpcServerStart": (NETWORK, "starts an RPC server"),
    "DataServiceDataset": (NETWORK, "reads from a tf.data service at an address"),
    "DataServiceDatasetV2": (NETWORK, "reads from a tf.data service at an address"),
    "DataServiceDatasetV3": (NETWORK, "reads from a tf.data service at an address"),
    "DataServiceDatasetV4": (NETWORK, "reads from a tf.data service at an address"),
    "RegisterDataset": (NETWORK, "registers a dataset with a tf.data service at an address"),
    "RegisterDatasetV2": (NETWORK, "registers a dataset with a tf.data service at an address"),
}
SAVER_OPS = SAVE_OPS | RESTORE_OPS | {"MergeV2Checkpoints"}
FILE_STREAM = "file://"


@dataclass(frozen=True)
class Hazard:
    """One unsafe op (or Keras Lambda) in an artifact, wherever it appears."""

    code: Code
    op: str  # the op, or "Lambda" for a Keras Lambda with marshalled Python
    what: str
    where: str  # one place it sits, for messages
    count: int


def _where(kind: NodeKind) -> str:
    return kind.where


def _print_to_file(kind: NodeKind) -> bool:
    return kind.text_attr("output_stream").startswith(FILE_STREAM)


_WATCHED = frozenset(UNSAFE_OPS) | {"PrintV2"} | SAVER_OPS  # the ops `_find_hazards` looks at


@per_object
def hazards(artifact: Artifact) -> list[Hazard]:
    """Every unsafe op in every graph of the artifact (once per op), and Keras Lambdas;
    remembered on the artifact (a fleet checks one model against many consumers)."""
    found: dict[str, Hazard] = {}

    def add(code: Code, op: str, what: str, kind: NodeKind) -> None:
        seen = found.get(op)
        if seen is None:
            found[op] = Hazard(code, op, what, _where(kind), kind.count)
        else:
            found[op] = Hazard(code, op, what, seen.where, seen.count + kind.count)

    for graph in artifact.graphs():
        watched = graph_facts(graph).ops & _WATCHED
        if not watched:
            continue  # the common case: none of the ops below
        request = scope_of(graph).request if graph.functions else frozenset()
        by_op = kinds_by_op(graph)
        for index in sorted(i for op in watched for i in by_op[op]):  # in graph order
            kind = graph.kinds[index]
            listed = UNSAFE_OPS.get(kind.op)
            if listed is not None:
                add(listed[0], kind.op, listed[1], kind)
            elif kind.op == "PrintV2" and _print_to_file(kind):
                add(FILE_IO, kind.op, "appends to the file its output_stream names", kind)
            elif kind.op in SAVER_OPS and kind.function in request:
                add(FILE_IO, kind.op, "touches checkpoint files on every request", kind)
    for code in artifact.tflite.operator_codes if artifact.tflite is not None else ():
        tf_op = (code.custom_code or "").removeprefix("Flex") if code.is_flex else ""
        listed = UNSAFE_OPS.get(tf_op)
        if listed is not None:  # a Select TF op: the Flex delegate runs the TensorFlow kernel
            found[code.name] = Hazard(
                listed[0], code.name, listed[1], "a Select TF op of the .tflite", 1
            )
    model = artifact.keras
    if model is not None and model.lambdas:
        names = ", ".join(f"'{layer.name}'" for layer in model.lambdas)
        found["Lambda"] = Hazard(
            PYTHON,
            "Lambda",
            "carries a marshalled Python function that loading with safe_mode=False (or "
            "Keras 2's H5 loader, which does not ask) runs",
            f"Lambda layer(s) {names}",
            len(model.lambdas),
        )
    return sorted(found.values(), key=lambda h: (str(h.code), h.op))


def unsafe_findings(artifact: Artifact, policy: Policy) -> list[Finding]:
    """A finding per hazard: a warning, or an error (stage `policy`) when the policy says."""
    refuse = policy.unsafe_ops == Severity.ERROR
    findings = []
    for hazard in hazards(artifact):
        more = f" ({hazard.count} places)" if hazard.count > 1 else ""
        message = (
            f"{hazard.op} ({hazard.where}{more}) {hazard.what}: whoever serves this model runs "
            "it." + (" The fleet's policy refuses to serve such models." if refuse else "")
        )
        fix = (
            Fix(FixKind.REPLACE_LAMBDA)
            if hazard.op == "Lambda"
            else Fix(FixKind.REEXPORT_WITHOUT_OP, op=hazard.op)
        )
        op = None if hazard.op == "Lambda" else hazard.op
        findings.append(
            Finding(
                hazard.code,
                Severity.ERROR if refuse else Severity.WARNING,
                message,
                op=op,
                fix=fix,
                stage=Stage.POLICY if refuse else Stage.LOAD,
            )
        )
    return findings


TAG_LIMIT = 256


def unsafe_tag(artifacts: Sequence[Artifact]) -> str | None:
    """The `tfcompat:unsafe` value: each hazard's kind and ops, e.g.
    `file-io=ReadFile+WriteFile python=EagerPyFunc`; None when there is none. Only
    characters S3 allows in a tag value, at most 256 (a cut list ends in `+more`)."""
    by_kind: dict[str, list[str]] = {}
    for artifact in artifacts:
        for hazard in hazards(artifact):
            ops = by_kind.setdefault(str(hazard.code).removeprefix("unsafe."), [])
            if hazard.op not in ops:
                ops.append(hazard.op)
    if not by_kind:
        return None
    return _fit(" ".join(f"{kind}={'+'.join(ops)}" for kind, ops in sorted(by_kind.items())))


def _fit(value: str) -> str:
    if len(value) <= TAG_LIMIT:
        return value
    cut = value[: TAG_LIMIT - len("+more")]
    cut = cut[: max(cut.rfind("+"), cut.rfind(" "), cut.rfind("="))]
    return cut.rstrip("+ ") + "+more"


def ops_named(findings: Iterable[Finding]) -> list[str]:
    return sorted({f.op for f in findings if f.op})
