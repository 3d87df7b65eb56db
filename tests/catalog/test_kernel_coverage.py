"""Every op the fixtures' models use is in the kernel table, or the table says why not.

tests/fixtures/kernel-sweep/fixture_ops.json (tools/kernels/fixture_ops.py) counts the
ops of every model under tests/fixtures; an op the sweep could not build is listed
here as an expected failure with the sweep's reason (`pytest -rx` shows them), an op
the table does not mention at all fails."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from worker.catalog.catalog import DATA
from worker.compat.kernel_changes import COMPUTES_NO_VALUES

FIXTURE_OPS = Path(__file__).resolve().parents[1] / "fixtures" / "kernel-sweep" / "fixture_ops.json"
USED: dict[str, int] = json.loads(FIXTURE_OPS.read_text())["ops"]
DOC = json.loads(gzip.decompress((DATA / "kernel_changes.json.gz").read_bytes()))
HAND_OPS = {c.split(":")[1] for c in DOC["hand"]["compared"]}
OPS = [op for op in USED if op not in COMPUTES_NO_VALUES]


@pytest.mark.parametrize("op", OPS, ids=[f"{op} ({USED[op]} models)" for op in OPS])
def test_a_fixture_op_is_compared_or_its_reason_is_recorded(op: str) -> None:
    if (op in DOC["ops"] and DOC["ops"][op]["dtypes"]) or op in HAND_OPS:
        return
    reason = DOC["unbuildable"].get(op) or DOC["ops"].get(op, {}).get("not_compared")
    assert reason, f"{op}: neither compared nor given a reason"
    pytest.xfail(f"{op}: {reason}")
