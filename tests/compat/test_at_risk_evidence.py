"""`at-risk` means a hazard real TensorFlow shows: every at-risk cell of the fixture
matrices has evidence that the consumer answers otherwise than the model's producer
(it fails to load or serve, returns other outputs on the matrix's input, or on an
input chosen to exercise the hazard: `tools/fixtures/probe_hazards.py`).

Security hazards (`unsafe.*`: an op that reads files or runs Python, flagged wherever
it sits, reached or not) are at-risk by what the graph holds, not by what a release
computes: their evidence is the op itself, and they are left out here. So are two
warnings whose evidence lives in the catalog, not in the matrices' inputs: an ignored
attr no one measured (`attr.ignored-unverified`: at-risk because it is not verified,
never because it was shown) and a kernel measured to differ on edge-case inputs the
model's own input may not reach (`kernel.changed`: tests/catalog/test_kernel_changes.py
holds each row to its evidence), and a kernel measured to answer otherwise on a second
run of one node (`kernel.nondeterministic`: the sweep's two runs in one session are its
evidence; a matrix cell runs the model once, and 31 cells of batch-norm graphs that
read the reserve spaces or batch statistics, in 1.15 and 2.2, answered as their
producer did)."""

from __future__ import annotations

from tests.truth import hazard_confirmed, predict, rows

CATALOG_EVIDENCE = frozenset(
    {"attr.ignored-unverified", "kernel.changed", "kernel.nondeterministic"}
)


def test_every_at_risk_cell_has_evidence_from_real_tensorflow() -> None:
    at_risk = []
    unconfirmed = []
    for row in rows():
        p = predict(row)
        if "at-risk" not in p.statuses or all(
            w.startswith("unsafe.") or w in CATALOG_EVIDENCE for w in p.warnings
        ):
            continue
        at_risk.append(row.id)
        if row.serves and not hazard_confirmed(row.artifact, row.consumer_version, row.loader):
            unconfirmed.append(row.id)
    assert at_risk, "the matrices hold at-risk cells (the ignored-attr hazard)"
    assert unconfirmed == []
