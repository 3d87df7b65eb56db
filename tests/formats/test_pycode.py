"""Which Python wrote marshalled bytecode: the code-object layout, on real Lambda layers."""

from __future__ import annotations

import marshal
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.formats.pycode import code_layout
from worker.formats.read import read_path
from worker.model.keras import layout_admits

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "models"
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_lambda_bytecode_layout_names_the_python_that_wrote_it() -> None:
    # 1.15.5 and 2.8.4 ran on Python 3.7, 2.12.1 and later on 3.11 (the fixtures' README)
    for producer, layout in (("tf1.15", "3.0-3.7"), ("tf2.8", "3.0-3.7"), ("tf2.21", "3.11+")):
        (artifact,) = read_path(str(MODELS / producer / "lambda.h5"))
        assert artifact.keras is not None
        (layer,) = artifact.keras.lambdas
        assert layer.code is not None and layer.code.layout == layout


def test_this_pythons_own_bytecode_has_its_layout() -> None:
    code = marshal.dumps((lambda t, k=2: [v * k for v in t]).__code__)
    assert code_layout(code) == "3.11+"
    assert layout_admits("3.11+", "3.12") and not layout_admits("3.11+", "3.10")
    assert layout_admits("3.0-3.7", "3.7.16") and not layout_admits("3.8-3.10", "3.7")


@FAST
@given(st.binary(max_size=4096))
def test_any_bytes_have_a_layout_or_none(data: bytes) -> None:
    assert code_layout(data) in (None, "3.0-3.7", "3.8-3.10", "3.11+")
    assert code_layout(b"\xe3" + data) in (None, "3.0-3.7", "3.8-3.10", "3.11+")
