"""What tools/attrs/measure.py runs for each attr: inputs chosen to reach its effect.

Each builder returns the probe cases (tools/attrs/probe.py) of one (op, attr): the
node's other attrs, the inputs (edge cases first: out-of-range indices, singular
matrices, partial windows, empty inputs) and the values to try, the default first.
An attr with no builder here is measured as `unverified`, with the reason in
UNRUNNABLE when there is a known one. Standard library only.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

Json = dict[str, Any]
Case = Json


def t(dtype: str, value: Any) -> Json:
    return {"tensor": {"dtype": dtype, "value": value}}


def typ(name: str) -> Json:
    return {"type": name}


def types(*names: str) -> Json:
    return {"list": {"type": list(names)}}


def shapes(*dims: list[int]) -> Json:
    return {"list": {"shape": [{"dim": [{"size": str(d)} for d in s]} if s else {} for s in dims]}}


def b(value: bool) -> Json:
    return {"b": value}


def i(value: int) -> Json:
    return {"i": str(value)}


def s(text: str | bytes) -> Json:
    raw = text.encode() if isinstance(text, str) else text
    return {"s": base64.b64encode(raw).decode()}


def f(value: float) -> Json:
    return {"f": value}


def func(name: str) -> Json:
    return {"func": {"name": name}}


# A tf.data Metadata proto naming the dataset "probe" (field 1, `name`): what
# `tf.data.Dataset.range(3, name="probe")` writes into the `metadata` attr.
METADATA = s(b"\n\x05probe")

SCALAR_INT64 = shapes([])
INT64 = types("DT_INT64")


def case(
    op: str,
    attr: str,
    values: list[Json],
    inputs: list[Any],
    attrs: Json | None = None,
    **extra: Any,
) -> Case:
    return {
        "op": op,
        "attr": attr,
        "values": values,
        "inputs": inputs,
        "attrs": attrs or {},
        **extra,
    }


Builder = Callable[[str, str, Json], list[Case]]


def _bools(default: Json) -> list[Json]:
    return [default, b(not default.get("b", False))]


# --- indexing: out-of-range indices are where a policy shows --------------------------------

POLICIES = [s(""), s("DEFAULT"), s("ERROR"), s("IGNORE")]
IN_RANGE = t("int32", [[0], [2]])
OUT_OF_RANGE = t("int32", [[0], [7]])
NEGATIVE = t("int32", [[1], [-1]])


def gather_nd(op: str, attr: str, default: Json) -> list[Case]:
    params = t("float32", [10.0, 20.0, 30.0])
    attrs = {"Tparams": typ("DT_FLOAT"), "Tindices": typ("DT_INT32")}
    return [
        case(op, attr, POLICIES, [params, idx], attrs) for idx in (OUT_OF_RANGE, NEGATIVE, IN_RANGE)
    ]


def scatter_nd(op: str, attr: str, default: Json) -> list[Case]:
    attrs = {"T": typ("DT_FLOAT"), "Tindices": typ("DT_INT32")}
    updates = t("float32", [5.0, 6.0])
    return [
        case(op, attr, POLICIES, [idx, updates, t("int32", [3])], attrs)
        for idx in (OUT_OF_RANGE, NEGATIVE, IN_RANGE)
    ]


def tensor_scatter(op: str, attr: str, default: Json) -> list[Case]:
    attrs = {"T": typ("DT_FLOAT"), "Tindices": typ("DT_INT32")}
    base = t("float32", [1.0, 2.0, 3.0])
    updates = t("float32", [5.0, 6.0])
    return [
        case(op, attr, POLICIES, [base, idx, updates], attrs)
        for idx in (OUT_OF_RANGE, NEGATIVE, IN_RANGE)
    ]


def scatter_nd_ref(op: str, attr: str, default: Json) -> list[Case]:
    """ScatterNd{Add,Sub,...} on a reference variable (ScatterNdNonAliasingAdd: a tensor)."""
    attrs = {"T": typ("DT_FLOAT"), "Tindices": typ("DT_INT32")}
    updates = t("float32", [5.0, 6.0])
    base: Json = (
        t("float32", [1.0, 2.0, 3.0])
        if op == "ScatterNdNonAliasingAdd"
        else {"ref": {"dtype": "float32", "value": [1.0, 2.0, 3.0]}}
    )
    return [
        case(op, attr, POLICIES, [base, idx, updates], attrs)
        for idx in (OUT_OF_RANGE, NEGATIVE, IN_RANGE)
    ]


def resource_scatter_nd(op: str, attr: str, default: Json) -> list[Case]:
    attrs = {"T": typ("DT_FLOAT"), "Tindices": typ("DT_INT32")}
    updates = t("float32", [5.0, 6.0])
    var = {"variable": {"dtype": "float32", "value": [1.0, 2.0, 3.0]}}
    return [
        case(op, attr, POLICIES, [var, idx, updates], attrs)
        for idx in (OUT_OF_RANGE, NEGATIVE, IN_RANGE)
    ]


# --- math ---------------------------------------------------------------------------------


def ctc_greedy_decoder(op: str, attr: str, default: Json) -> list[Case]:
    # 4 steps, batch 1, 3 classes; the argmax path is 0, 1, 2, 0: which class is the
    # blank decides which labels survive.
    logits = [[[0.9, 0.05, 0.05]], [[0.1, 0.8, 0.1]], [[0.1, 0.1, 0.8]], [[0.7, 0.2, 0.1]]]
    inputs = [t("float32", logits), t("int32", [4])]
    return [
        case(op, attr, [default, i(0), i(1), i(2)], inputs, {"merge_repeated": b(merge)})
        for merge in (False, True)
    ]


def tridiagonal_solve(op: str, attr: str, default: Json) -> list[Case]:
    singular = [[1.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]]  # rows 1, 2 equal
    regular = [[1.0, 1.0, 0.0], [4.0, 4.0, 4.0], [0.0, 1.0, 1.0]]
    rhs = t("float32", [[1.0], [2.0], [3.0]])
    return [
        case(op, attr, _bools(default), [t("float32", diags), rhs], {"T": typ("DT_FLOAT")})
        for diags in (singular, regular)
    ]


def matmul_hint(op: str, attr: str, default: Json) -> list[Case]:
    a = t("float32", [[1.0, 2.0], [3.0, 4.0]])
    bb = t("float32", [[5.0, -6.0], [0.5, 8.0]])
    empty = t("float32", [[], []])
    if op in ("MatMul", "_MklMatMul"):
        attrs: Json = {"T": typ("DT_FLOAT")}
        flips = ("transpose_a", "transpose_b")
    elif op == "BatchMatMulV3":
        attrs = {"Ta": typ("DT_FLOAT"), "Tb": typ("DT_FLOAT"), "Tout": typ("DT_FLOAT")}
        flips = ("adj_x", "adj_y")
    else:
        attrs = {"T": typ("DT_FLOAT")}
        flips = ("adj_x", "adj_y")
    cases = [case(op, attr, _bools(default), [a, bb], attrs)]
    cases.append(case(op, attr, _bools(default), [a, bb], {**attrs, flips[0]: b(True)}))
    cases.append(case(op, attr, _bools(default), [a, bb], {**attrs, flips[1]: b(True)}))
    cases.append(case(op, attr, _bools(default), [empty, t("float32", [[1.0], [2.0]][:0])], attrs))
    return cases


def sparse_segment(op: str, attr: str, default: Json) -> list[Case]:
    data = t("float32", [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    attrs = {"T": typ("DT_FLOAT"), "Tidx": typ("DT_INT32"), "Tsegmentids": typ("DT_INT32")}
    with_num = op.endswith("WithNumSegments")
    if with_num:
        attrs["Tnumsegments"] = typ("DT_INT32")
    cases = []
    for indices, segments in (([0, 1, 2], [0, 0, 2]), ([2, 0], [0, 1]), ([], [])):
        inputs = [data, t("int32", indices), t("int32", segments)]
        if with_num:
            inputs.append(t("int32", 4))
        cases.append(case(op, attr, _bools(default), inputs, attrs))
    return cases


def fused_matmul(op: str, attr: str, default: Json) -> list[Case]:
    attrs = {
        "T": typ("DT_FLOAT"),
        "num_args": i(1),
        "fused_ops": {"list": {"s": [s("BiasAdd")["s"], s("LeakyRelu")["s"]]}},
    }
    a = t("float32", [[1.0, -2.0], [-3.0, 4.0]])
    bb = t("float32", [[1.0, 0.0], [0.0, 1.0]])
    return [case(op, attr, [default, f(0.5), f(0.0)], [a, bb, [t("float32", [0.0, -1.0])]], attrs)]


def random_index_shuffle(op: str, attr: str, default: Json) -> list[Case]:
    attrs = {"dtype": typ("DT_INT64"), "Tseed": typ("DT_INT64")}
    inputs = [t("int64", [0, 1, 2, 3, 4, 5, 6, 7]), t("int64", [1, 2, 3]), t("int64", 99)]
    return [case(op, attr, [default, i(8), i(1)], inputs, attrs)]


def top_k(op: str, attr: str, default: Json) -> list[Case]:
    x = t("float32", [3.0, 1.0, 2.0, 5.0])
    attrs = {"T": typ("DT_FLOAT")}
    other = [typ(n) for n in ("DT_INT32", "DT_INT64", "DT_INT16")]
    values = [default] + [v for v in other if v != default]
    if attr == "Tk":  # types the `k` input: each value needs its own
        per = [
            [x, t({"DT_INT32": "int32", "DT_INT64": "int64", "DT_INT16": "int16"}[v["type"]], 2)]
            for v in values
        ]
        return [case(op, attr, values, per[0], attrs, inputs_per_value=per)]
    return [case(op, attr, values, [x, t("int32", 2)], attrs)]


def concat_offset(op: str, attr: str, default: Json) -> list[Case]:
    values = [default, typ("DT_INT64")]
    per = [[t("int32", 1), [t(dt, [2, 3]), t(dt, [2, 5])]] for dt in ("int32", "int64")]
    return [case(op, attr, values, per[0], {"N": i(2)}, inputs_per_value=per)]


def tensor_list_get_item(op: str, attr: str, default: Json) -> list[Case]:
    values = [default, typ("DT_INT64")]
    rows = {"tensor_list": {"dtype": "float32", "value": [[1.0, 2.0], [3.0, 4.0]]}}
    per = [[rows, t("int32", 1), t(dt, [2])] for dt in ("int32", "int64")]
    return [
        case(op, attr, values, per[0], {"element_dtype": typ("DT_FLOAT")}, inputs_per_value=per)
    ]


def tensor_list_set_item(op: str, attr: str, default: Json) -> list[Case]:
    rows = {"tensor_list": {"dtype": "float32", "value": [[1.0, 2.0], [3.0, 4.0]]}}
    attrs = {"element_dtype": typ("DT_FLOAT")}
    return [
        case(
            op,
            attr,
            _bools(default),
            [rows, t("int32", index), t("float32", [9.0, 9.0])],
            attrs,
            list_output="float32",
        )
        for index in (4, 1)
    ]


def custom_aggregator(op: str, attr: str, default: Json) -> list[Case]:
    x = t("float32", [[-1.0, 0.5, 2.0, 7.0]])
    values = {
        "calibration_method": [default, i(1), i(2), i(3)],
        "num_bins": [default, i(16), i(256)],
        "min_percentile": [default, f(0.1), f(50.0)],
        "max_percentile": [default, f(50.0), f(99.9)],
        "initial_num_bins": [default, i(16), i(256)],
    }[attr]
    return [case(op, attr, values, [x], {"id": s("probe")})]


def assign_variable(op: str, attr: str, default: Json) -> list[Case]:
    var = {"variable": {"dtype": "float32", "value": [1.0, 2.0, 3.0]}}
    return [
        case(
            op,
            attr,
            _bools(default),
            [var, {"fed": {"dtype": "float32", "value": value}}],
            {"dtype": typ("DT_FLOAT")},
        )
        for value in ([4.0, 5.0], [4.0, 5.0, 6.0])
    ]


def var_handle(op: str, attr: str, default: Json) -> list[Case]:
    attrs = {"dtype": typ("DT_FLOAT"), "shape": {"shape": {"dim": [{"size": "2"}]}}}
    cases = []
    for shared in ("", "v"):
        cases.append(
            case(
                op,
                attr,
                [default, s("v"), s("other:0")],
                [],
                {**attrs, "shared_name": s(shared)},
                assign_read={"dtype": "float32", "value": [1.5, -2.0]},
            )
        )
    return cases


def initialize_table_from_text_file(op: str, attr: str, default: Json) -> list[Case]:
    lines = ["alpha", "beta", "gamma"]
    attrs = {"key_index": i(-2), "value_index": i(-1)}
    return [
        case(
            op,
            attr,
            [default, i(1), i(3)],
            [{"table": ["string", "int64"]}, {"file": lines}],
            attrs,
        )
    ]


def initialize_table_v1(op: str, attr: str, default: Json) -> list[Case]:
    lines = ["alpha", "beta", "gamma"]
    attrs = {"key_index": i(-2), "value_index": i(-1)}
    inputs = [{"ref_table": ["string", "int64"]}, {"file": lines}]
    return [case(op, attr, [default, i(1), i(3)], inputs, attrs)]


def merge_checkpoints(op: str, attr: str, default: Json) -> list[Case]:
    inputs = [t("string", ["{tmp}/missing"]), t("string", "{tmp}/merged")]
    return [case(op, attr, _bools(default), inputs, {"delete_old_dirs": b(False)})]


# --- tf.data: datasets are iterated to the end (at most 64 elements) ------------------------


def _dataset_case(
    op: str, attr: str, values: list[Json], inputs: list[Any], attrs: Json, out: list[Any]
) -> Case:
    return case(op, attr, values, inputs, attrs, dataset_output=out)


def _elements(dtype: str = "DT_INT64", shape: list[int] | None = None) -> Json:
    return {"output_types": types(dtype), "output_shapes": shapes(shape or [])}


SCALARS = [["int64", []]]
VECTORS = [["int64", [None]]]


def _values_for(attr: str, default: Json) -> list[Json]:
    if attr == "metadata":
        return [default, METADATA]
    if "b" in default:
        return _bools(default)
    raise KeyError(attr)


def dataset(op: str, attr: str, default: Json) -> list[Case]:
    """One dataset op over small ranges: element for element, what a request's pipeline
    would read."""
    values = _values_for(attr, default)
    r5: Json = {"dataset": {"range": 5}}
    r0: Json = {"dataset": {"empty": True}}
    one = _elements()
    vec = _elements(shape=[-1])
    fn = {"Targuments": {"list": {}}}

    def scalar_pipe(inputs: list[Any], extra: Json | None = None) -> Case:
        return _dataset_case(op, attr, values, inputs, {**one, **(extra or {})}, SCALARS)

    table: dict[str, Callable[[], list[Case]]] = {
        "RangeDataset": lambda: [
            scalar_pipe([t("int64", 0), t("int64", 5), t("int64", 2)]),
            scalar_pipe([t("int64", 3), t("int64", 0), t("int64", 1)]),
        ],
        "TensorDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [[t("int64", 7)]],
                {"Toutput_types": INT64, "output_shapes": SCALAR_INT64},
                SCALARS,
            )
        ],
        "TensorSliceDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [[t("int64", [4, 5, 6])]],
                {"Toutput_types": INT64, "output_shapes": SCALAR_INT64},
                SCALARS,
            ),
            _dataset_case(
                op,
                attr,
                values,
                [[t("string", ["a", "b"])]],
                {"Toutput_types": types("DT_STRING"), "output_shapes": SCALAR_INT64},
                [["string", []]],
            ),
        ],
        "BatchDataset": lambda: [
            _dataset_case(op, attr, values, [r5, t("int64", 2)], vec, VECTORS)
        ],
        "BatchDatasetV2": lambda: [
            _dataset_case(op, attr, values, [src, t("int64", 2), t("bool", drop)], vec, VECTORS)
            for src in (r5, r0)
            for drop in (False, True)
        ],
        "ParallelBatchDataset": lambda: [
            _dataset_case(
                op, attr, values, [src, t("int64", 2), t("int64", 2), t("bool", drop)], vec, VECTORS
            )
            for src in (r5, r0)
            for drop in (False, True)
        ],
        "PaddedBatchDatasetV2": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [
                    {"dataset": {"batch": [{"range": 5}, 2]}},
                    t("int64", 2),
                    [t("int64", [3])],
                    [t("int64", -1)],
                    t("bool", drop),
                ],
                {"Toutput_types": INT64, "output_shapes": shapes([-1, 3]), "N": i(1)},
                [["int64", [None, 3]]],
            )
            for drop in (False, True)
        ],
        "CacheDataset": lambda: [scalar_pipe([r5, t("string", "")])],
        "ConcatenateDataset": lambda: [scalar_pipe([r5, {"dataset": {"range": 2}}])],
        "DatasetToSingleElement": lambda: [
            case(op, attr, values, [{"dataset": {"range": 1}}], one)
        ],
        "FilterDataset": lambda: [scalar_pipe([r5, []], {"predicate": func("is_even"), **fn})],
        "MapDataset": lambda: [
            scalar_pipe([src, []], {"f": func("double"), **fn}) for src in (r5, r0)
        ],
        "ExperimentalMapDataset": lambda: [scalar_pipe([r5, []], {"f": func("double"), **fn})],
        "ParallelMapDataset": lambda: [
            scalar_pipe([r5, [], t("int32", 2)], {"f": func("double"), **fn})
        ],
        "ParallelMapDatasetV2": lambda: [
            scalar_pipe([r5, [], t("int64", n)], {"f": func("double"), **fn}) for n in (2, -1)
        ],
        "MapAndBatchDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [r5, [], t("int64", 2), t("int64", 2), t("bool", False)],
                {**vec, "f": func("double"), **fn},
                VECTORS,
            )
        ],
        "PrefetchDataset": lambda: [scalar_pipe([r5, t("int64", 2)])],
        "RepeatDataset": lambda: [scalar_pipe([src, t("int64", 2)]) for src in (r5, r0)],
        "ShardDataset": lambda: [scalar_pipe([r5, t("int64", 2), t("int64", 1)])],
        "ShuffleDataset": lambda: [scalar_pipe([r5, t("int64", 3), t("int64", 1), t("int64", 2)])],
        "ShuffleDatasetV2": lambda: [],
        "SkipDataset": lambda: [scalar_pipe([r5, t("int64", 2)])],
        "TakeDataset": lambda: [scalar_pipe([r5, t("int64", 2)])],
        "TakeWhileDataset": lambda: [
            scalar_pipe([r5, []], {"predicate": func("below_five"), **fn})
        ],
        "ScanDataset": lambda: [
            scalar_pipe(
                [r5, [t("int64", 0)], []], {"f": func("running_sum"), "Tstate": INT64, **fn}
            )
        ],
        "UnbatchDataset": lambda: [scalar_pipe([{"dataset": {"batch": [{"range": 5}, 2]}}])],
        "UniqueDataset": lambda: [
            scalar_pipe([{"dataset": {"slices": {"dtype": "int64", "value": [1, 1, 2, 1, 3]}}}])
        ],
        "ZipDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [[r5, {"dataset": {"range": 3}}]],
                {
                    "output_types": types("DT_INT64", "DT_INT64"),
                    "output_shapes": shapes([], []),
                    "N": i(2),
                },
                [["int64", []], ["int64", []]],
            )
        ],
        "TextLineDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [{"file": ["x", "", "y"]}, t("string", ""), t("int64", 256)],
                {},
                [["string", []]],
            )
        ],
        "RandomDataset": lambda: [
            case(op, attr, values, [t("int64", 1), t("int64", 2)], one, dataset_output=SCALARS)
        ],
        "SlidingWindowDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [src, t("int64", 3), t("int64", shift), t("int64", 1)],
                vec,
                VECTORS,
            )
            for src in (r5, r0)
            for shift in (2, 1)
        ],
        "DirectedInterleaveDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [
                    {"dataset": {"slices": {"dtype": "int64", "value": [0, 1, 1, 1, 0]}}},
                    [{"dataset": {"range": 2}}, {"dataset": {"range": 10}}],
                ],
                {**one, "N": i(2)},
                SCALARS,
            )
        ],
        "OptionsDataset": lambda: [scalar_pipe([r5], {"serialized_options": s(b"")})],
        "PaddedBatchDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [
                    {"dataset": {"batch": [{"range": 5}, 2]}},
                    t("int64", 2),
                    [t("int64", [3])],
                    [t("int64", -1)],
                ],
                {"Toutput_types": INT64, "output_shapes": shapes([-1, 3]), "N": i(1)},
                [["int64", [None, 3]]],
            )
        ],
        "ShuffleAndRepeatDataset": lambda: [
            scalar_pipe([r5, t("int64", 3), t("int64", 1), t("int64", 2), t("int64", 2)])
        ],
        "FlatMapDataset": lambda: [scalar_pipe([r5, []], {"f": func("to_range"), **fn})],
        "InterleaveDataset": lambda: [
            scalar_pipe([r5, [], t("int64", 2), t("int64", 1)], {"f": func("to_range"), **fn})
        ],
        "ParallelInterleaveDatasetV2": lambda: [
            scalar_pipe(
                [r5, [], t("int64", 2), t("int64", 1), t("int64", 2)],
                {"f": func("to_range"), **fn},
            )
        ],
        "ParallelInterleaveDatasetV3": lambda: [
            scalar_pipe(
                [r5, [], t("int64", 2), t("int64", 1), t("int64", 2)],
                {"f": func("to_range"), "deterministic": s("true"), **fn},
            )
        ],
        "ParallelInterleaveDatasetV4": lambda: [
            scalar_pipe(
                [r5, [], t("int64", 2), t("int64", 1), t("int64", 2), t("int64", 2), t("int64", 2)],
                {"f": func("to_range"), "deterministic": s("true"), **fn},
            )
        ],
        "ParallelInterleaveDataset": lambda: [
            scalar_pipe(
                [
                    r5,
                    [],
                    t("int64", 2),
                    t("int64", 1),
                    t("bool", False),
                    t("int64", 2),
                    t("int64", 2),
                ],
                {"f": func("to_range"), **fn},
            )
        ],
        "LegacyParallelInterleaveDatasetV2": lambda: [
            scalar_pipe(
                [r5, [], t("int64", 2), t("int64", 1), t("int64", 2), t("int64", 2)],
                {"f": func("to_range"), "deterministic": s("true"), **fn},
            )
        ],
        "ReduceDataset": lambda: [
            case(
                op,
                attr,
                values,
                [src, [t("int64", 0)], []],
                {**one, "f": func("add"), "Tstate": INT64, **fn},
            )
            for src in (r5, r0)
        ],
        "TFRecordDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [{"tfrecord_file": ["a", "bc", ""]}, t("string", ""), t("int64", 256)],
                {},
                [["string", []]],
            )
        ],
        "FixedLengthRecordDataset": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [
                    {"file": ["abc", "def"]},
                    t("int64", 1),
                    t("int64", 2),
                    t("int64", 1),
                    t("int64", 64),
                ],
                {},
                [["string", []]],
            )
        ],
        "FixedLengthRecordDatasetV2": lambda: [
            _dataset_case(
                op,
                attr,
                values,
                [
                    {"file": ["abc", "def"]},
                    t("int64", 1),
                    t("int64", 2),
                    t("int64", 1),
                    t("int64", 64),
                    t("string", ""),
                ],
                {},
                [["string", []]],
            )
        ],
    }
    build = table.get(op)
    if build is None:
        return []
    return build()


def dataset_cardinality(op: str, attr: str, default: Json) -> list[Case]:
    # CardinalityOptions.compute_level (field 1): 1 = MODERATE, 2 = LOW
    return [
        case(op, attr, [default, s(b"\x08\x01"), s(b"\x08\x02")], [src], {})
        for src in ({"dataset": {"range": 5}}, {"dataset": {"batch": [{"range": 5}, 2]}})
    ]


BUILDERS: dict[tuple[str, str] | str, Builder] = {
    ("CTCGreedyDecoder", "blank_index"): ctc_greedy_decoder,
    ("TridiagonalSolve", "perturb_singular"): tridiagonal_solve,
    ("GatherNd", "bad_indices_policy"): gather_nd,
    ("ScatterNd", "bad_indices_policy"): scatter_nd,
    ("RandomIndexShuffle", "rounds"): random_index_shuffle,
    ("TopKV2", "Tk"): top_k,
    ("TopKV2", "index_type"): top_k,
    ("ConcatOffset", "shape_type"): concat_offset,
    ("TensorListGetItem", "Tshape"): tensor_list_get_item,
    ("TensorListSetItem", "resize_if_index_out_of_bounds"): tensor_list_set_item,
    ("AssignVariableOp", "validate_shape"): assign_variable,
    ("VarHandleOp", "debug_name"): var_handle,
    ("_XlaAotOnlyVarHandleOp", "debug_name"): var_handle,
    ("InitializeTableFromTextFileV2", "offset"): initialize_table_from_text_file,
    ("InitializeTableFromTextFile", "offset"): initialize_table_v1,
    ("MergeV2Checkpoints", "allow_missing_files"): merge_checkpoints,
    ("_FusedMatMul", "leakyrelu_alpha"): fused_matmul,
    ("DatasetCardinality", "cardinality_options"): dataset_cardinality,
    "CustomAggregator": custom_aggregator,
}
for _op in (
    "TensorScatterAdd",
    "TensorScatterMax",
    "TensorScatterMin",
    "TensorScatterSub",
    "TensorScatterUpdate",
):
    BUILDERS[(_op, "bad_indices_policy")] = tensor_scatter
for _op in (
    "ScatterNdAdd",
    "ScatterNdMax",
    "ScatterNdMin",
    "ScatterNdSub",
    "ScatterNdUpdate",
    "ScatterNdNonAliasingAdd",
):
    BUILDERS[(_op, "bad_indices_policy")] = scatter_nd_ref
for _op in (
    "ResourceScatterNdAdd",
    "ResourceScatterNdMax",
    "ResourceScatterNdMin",
    "ResourceScatterNdSub",
    "ResourceScatterNdUpdate",
):
    BUILDERS[(_op, "bad_indices_policy")] = resource_scatter_nd
for _op in ("MatMul", "_MklMatMul"):
    BUILDERS[(_op, "grad_a")] = BUILDERS[(_op, "grad_b")] = matmul_hint
for _op in (
    "BatchMatMul",
    "BatchMatMulV2",
    "BatchMatMulV3",
    "_MklBatchMatMul",
    "_MklBatchMatMulV2",
):
    BUILDERS[(_op, "grad_x")] = BUILDERS[(_op, "grad_y")] = matmul_hint
for _op in (
    "SparseSegmentMean",
    "SparseSegmentMeanWithNumSegments",
    "SparseSegmentSqrtN",
    "SparseSegmentSqrtNWithNumSegments",
    "SparseSegmentSum",
    "SparseSegmentSumWithNumSegments",
):
    BUILDERS[(_op, "sparse_gradient")] = sparse_segment
for _attr in (
    "metadata",
    "force_synchronous",
    "use_unbounded_threadpool",
    "parallel_copy",
    "is_files",
    "replicate_on_split",
    "drop_remainder",
    "stop_on_empty_dataset",
):
    BUILDERS[("*Dataset", _attr)] = dataset


# Why an attr without a builder cannot be measured on a CPU-only TensorFlow in one process.
UNRUNNABLE: list[tuple[str, str]] = [
    ("TPU", "runs only on a TPU system (its kernels need a TPU device or TPU runtime)"),
    ("XlaSparse", "a TPU SparseCore op: no kernel without a TPU"),
    ("Xla", "an XLA op: compiled by XLA for a device, no standalone CPU kernel to run"),
    ("_Xla", "an XLA host-transfer op: runs only between an XLA device and its host"),
    ("Collective", "a collective: needs a group of devices or workers to run"),
    ("DataService", "needs a running tf.data service (dispatcher and workers)"),
    ("RegisterDataset", "needs a running tf.data service (dispatcher and workers)"),
    ("DedupData", "a TPU embedding op: no kernel without a TPU"),
    ("CopyToMesh", "a DTensor op: needs a DTensor mesh"),
    (
        "BatchFunction",
        "batches requests across sessions: its effect is on scheduling "
        "and padding of concurrent calls, which one probe process does not reproduce",
    ),
    ("_Mkl", "a oneDNN graph-rewrite op: exists only after the MKL rewrite pass"),
    (
        "_FusedConv",
        "a grappler-fused convolution: its attrs are set by the remapper, "
        "not by exports; no builder yet",
    ),
    (
        "SnapshotDataset",
        "writes and reads a snapshot directory through two functions; no builder yet",
    ),
]


def unrunnable_reason(op: str) -> str | None:
    for prefix, reason in UNRUNNABLE:
        if op.startswith(prefix) or prefix in op:
            return reason
    return None


def cases_for(op: str, attr: str, default: Json) -> list[Case]:
    build = BUILDERS.get((op, attr)) or BUILDERS.get(op)
    if build is None and "Dataset" in op:
        build = BUILDERS.get(("*Dataset", attr))
    if build is None:
        return []
    try:
        return build(op, attr, default)
    except KeyError:
        return []
