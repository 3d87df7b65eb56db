"""The cases tools/shapes/measure.py asks every release about, besides its sweep.

The sweep (tools/shapes/probe.py --sweep) builds every op it can build generically
(all inputs of one shape); ops whose inputs need shapes of their own are written out
here. First among them the fused batch norms: their reserve-space outputs changed
shape between releases, and their gradients are in every TF1 training graph that
used `tf.layers.batch_normalization(fused=True)`, each node with the `_output_shapes`
its producer recorded. Standard library only.
"""

from __future__ import annotations

from typing import Any

FLOAT = {"type": "DT_FLOAT"}
LAYOUTS = {
    "NHWC": ["N", "H", "W", "C"],
    "NCHW": ["N", "C", "H", "W"],
    "NDHWC": ["N", "D", "H", "W", "C"],
    "NCDHW": ["N", "C", "D", "H", "W"],
}
# op -> (its type attrs, whether it has reserve_space_3, whether it is a gradient)
BATCH_NORMS = {
    "FusedBatchNorm": (("T",), False, False),
    "FusedBatchNormV2": (("T", "U"), False, False),
    "FusedBatchNormV3": (("T", "U"), True, False),
    "FusedBatchNormGrad": (("T",), False, True),
    "FusedBatchNormGradV2": (("T", "U"), False, True),
    "FusedBatchNormGradV3": (("T", "U"), True, True),
}


def _tensor(dims: list[str | int] | None) -> dict[str, Any]:
    return {"dtype": "DT_FLOAT", "dims": dims}


def batch_norm_cases() -> list[dict[str, Any]]:
    """Every fused batch norm op, trained and not, in every layout: x (and y_backprop)
    in the layout, per-channel vectors of C, reserve_space_3 of unknown shape."""
    cases = []
    for op, (type_attrs, has_third, grad) in BATCH_NORMS.items():
        for layout, dims in LAYOUTS.items():
            for training in (True, False):
                channel: list[str | int] = ["C"]
                inputs = [_tensor(list(dims))]
                if grad:
                    inputs = [_tensor(list(dims)), _tensor(list(dims)), _tensor(channel)]
                    inputs += [_tensor(channel), _tensor(channel)]
                else:
                    inputs += [_tensor(channel) for _ in range(4)]
                if grad and has_third:
                    inputs.append(_tensor(None))
                attrs: dict[str, Any] = {name: FLOAT for name in type_attrs}
                attrs["is_training"] = {"b": training}
                attrs["data_format"] = {"s": _b64(layout)}
                cases.append(
                    {
                        "id": f"{op}/{layout}/{'training' if training else 'inference'}",
                        "op": op,
                        "attrs": attrs,
                        "inputs": inputs,
                    }
                )
    return cases


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


def unique_cases() -> list[dict[str, Any]]:
    """UniqueV2 and UniqueWithCountsV2 along one axis (a 1-element axis input, as
    `tf.unique` with `axis=` builds it): the sweep's inputs of one shape never match
    that. Added after the held-out fixtures (tests/fixtures/tf-shapes) showed imports
    failing on UniqueV2's output ranks, which no case measured."""
    cases = []
    for op in ("UniqueV2", "UniqueWithCountsV2"):
        for rank in (1, 2, 3):
            dims: list[str | int] = [f"d{i}" for i in range(rank)]
            cases.append(
                {
                    "id": f"{op}/axis/rank{rank}",
                    "op": op,
                    "attrs": {"T": FLOAT, "Taxis": {"type": "DT_INT64"}},
                    "inputs": [_tensor(dims), {"dtype": "DT_INT64", "dims": [1]}],
                }
            )
    return cases


def all_cases() -> list[dict[str, Any]]:
    return batch_norm_cases() + unique_cases()
