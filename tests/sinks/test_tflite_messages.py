"""TFLite findings in the few words of a message, and their fixes in one sentence."""

from __future__ import annotations

import pytest

from worker.notify.fixes import fix_text, plain
from worker.notify.messages import reason


def test_wrong_values_read_as_failing_requests() -> None:
    finding = {"code": "tflite.wrong-values", "op": "FULLY_CONNECTED", "severity": "error"}
    assert reason({**finding, "stage": "request"}) == (
        "`FULLY_CONNECTED` answers wrong values (requests fail)"
    )


# Each TFLite fix kind, rendered from its data.
@pytest.mark.parametrize(
    ("fix", "text"),
    [
        (
            {"kind": "upgrade_runtime", "release": "2.11.0", "runtime": "tflite-runtime"},
            "Upgrade phone to tflite-runtime >= 2.11.0",
        ),
        (
            {"kind": "upgrade_runtime", "runtime": "ai-edge-litert"},
            "No measured newer ai-edge-litert release runs it as converted",
        ),
        (
            {"kind": "convert_with", "release": "2.15.1"},
            "Convert it with TensorFlow 2.15.1's converter, or upgrade phone",
        ),
        (
            {
                "kind": "convert_without",
                "value": "_experimental_use_buffer_offset",
                "release": "2.14.0",
                "runtime": "tflite-runtime",
            },
            "Convert it without _experimental_use_buffer_offset = True (a model under 2 GB "
            "needs none), or upgrade phone to tflite-runtime >= 2.14.0",
        ),
        (
            {"kind": "add_flex_delegate", "op": "FlexMatrixDeterminant", "release": "2.4.4"},
            "Link the Flex delegate into phone, or convert without Select TF op "
            "FlexMatrixDeterminant (TensorFlow 2.4.4's tf.lite.Interpreter has it)",
        ),
        (
            {"kind": "link_custom_op", "op": "MatrixDeterminant"},
            "Register custom op MatrixDeterminant's kernel with phone's op resolver",
        ),
        (
            {
                "kind": "link_custom_op",
                "op": "Convolution2DTransposeBias",
                "release": "2.1.0",
                "runtime": "ai-edge-litert",
            },
            "Register custom op Convolution2DTransposeBias's kernel with phone's op resolver, "
            "or upgrade it to ai-edge-litert >= 2.1.0, which runs it by default",
        ),
        (
            {"kind": "measure_tflite_runtime", "runtime": "tflite-runtime", "release": "2.15"},
            "Measure phone's TFLite op table with tools/tflite/build_table.py",
        ),
    ],
)
def test_tflite_fixes_are_one_sentence(fix: dict[str, str], text: str) -> None:
    assert fix_text(fix, "phone", plain) == text
