"""at-risk on the kernel sweep's held-out models: the figures held_out.json records.

tests/fixtures/kernels-heldout holds models made after the sweep's table was committed
(tools/kernels/heldout.py: ops picked at random from the table's changes and from the
fixtures' ops, feeds drawn apart from the sweep's inputs), each run by the releases
(tools/attrs/outcomes.py). tools/attrs/precision.py scores `tfcompat check`'s status
for every cell; the figures must be the ones recorded, so a rule change that moves
them is seen and recorded as tuning, never silently."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.held_out import held_out_set

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "tests" / "fixtures" / "kernels-heldout"


def _precision() -> ModuleType:
    spec = importlib.util.spec_from_file_location("precision", ROOT / "tools/attrs/precision.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _figures(
    root: Path,
    reference: str | None,
    ulps: float | None = None,
    ordinary: int | tuple[int, ...] = 0,
) -> dict[str, list[int]]:
    """[true, predicted] and [true, real] for at-risk on every feed and on the ordinary
    feed(s) alone, and for any warning (at-risk or results-extremes) on every feed."""
    precision = _precision()
    found: dict[str, list[int]] = {}
    for name, feed in (("", None), ("_ordinary_feed", ordinary)):
        score = precision.score(
            precision.cells(root, rounding=True, feed=feed, reference=reference, ulps=ulps)
        )
        tp, fp, fn = score["true_positive"], score["false_positive"], score["false_negative"]
        found[f"precision{name}"] = [tp, tp + fp]
        found[f"recall{name}"] = [tp, tp + fn]
        if feed is None:
            warned = score["any_warning"]
            tp, fp, fn = warned["true_positive"], warned["false_positive"], warned["false_negative"]
            found["any_warning_precision"] = [tp, tp + fp]
            found["any_warning_recall"] = [tp, tp + fn]
    return found


def _recorded(root: Path, held_out_after: str) -> dict[str, list[int]]:
    record = held_out_set(root, held_out_after=held_out_after)
    assert record is not None
    return dict((record.after_tuning or record.first_measured)["figures"])


@pytest.mark.skipif(not SET.exists(), reason="no kernel held-out set yet")
def test_the_held_out_figures_are_the_recorded_ones() -> None:
    """Cases made by 2.21.0, scored against their producer's answers."""
    expected = _recorded(SET, "b49bee3")
    found = _figures(SET, reference=None)
    assert {k: found[k] for k in expected} == expected


SECOND = ROOT / "tests" / "fixtures" / "kernels-heldout-2"


@pytest.mark.skipif(not SECOND.exists(), reason="no second kernel held-out set yet")
def test_the_second_held_out_figures_are_the_recorded_ones() -> None:
    """Cases made by three producers, scored against the newest release's answers (the
    table compares every release with it); on every feed and on the ordinary one."""
    expected = _recorded(SECOND, "756cd1d")
    found = _figures(SECOND, reference="2.21.0")
    assert {k: found[k] for k in expected} == expected


THIRD = ROOT / "tests" / "fixtures" / "kernels-heldout-3"


@pytest.mark.skipif(not THIRD.exists(), reason="no third kernel held-out set yet")
def test_the_third_held_out_figures_are_the_recorded_ones() -> None:
    """Cases picked after the nondeterminism filter and the pole rule, most of them
    from changes met on ordinary inputs, made by three producers, scored against the
    newest release's answers."""
    expected = _recorded(THIRD, "526454f")
    found = _figures(THIRD, reference="2.21.0")
    assert {k: found[k] for k in expected} == expected


# the truth's notion of the same answer: 1e-6 (default) or ULPs of the output's dtype
@pytest.mark.parametrize(
    ("dtype", "mine", "theirs", "ulps", "same"),
    [
        ("float16", "1.02734375", "1.0263671875", None, False),  # one half ULP: > 1e-6
        ("float16", "1.02734375", "1.0263671875", 4.0, True),  # within 4 ULPs of a half
        ("float64", "0.010918852530445658", "0.010918852530445685", None, True),  # < 1e-6
        ("float64", "0.010918852530445658", "0.010918852530445685", 4.0, False),  # 11 ULPs
        ("int32", 3, 4, 4.0, False),  # an integer is never rounding
    ],
)
def test_the_truth_counts_rounding_by_1e6_or_by_ulps_of_the_dtype(
    dtype: str, mine: object, theirs: object, ulps: float | None, same: bool
) -> None:
    precision = _precision()

    def output(value: object) -> list[dict[str, object]]:
        return [{"dtype": dtype, "shape": [1], "values": [value]}]

    assert precision._close(output(mine), output(theirs), ulps) is same


def test_the_truth_on_several_feeds_is_a_difference_on_any_of_them() -> None:
    precision = _precision()

    def answer(*values: str) -> dict[str, object]:
        outputs = [[{"dtype": "float32", "shape": [1], "values": [v]}] for v in values]
        return {"loads": True, "same": False, "outputs": outputs}

    producer, real = answer("1.0", "nan", "2.0"), answer("1.0", "inf", "3.0")
    assert not precision._differs(real, producer, True, 0)
    assert precision._differs(real, producer, True, (0, 2))
    assert not precision._differs(real, producer, True, (0,))


# Rounds fed ordinary, edge and integer values (the sweep's `indices` class drawn
# again), scored in ULPs of the output's dtype (the table's 4), the ordinary truth on the
# Gaussian and the integer feeds: (set, the table commit it was drawn against, how).
INTEGER_FEED_ROUNDS = [
    ("kernels-heldout-4", "8d0beaa", "every unused pair met on ordinary inputs"),
    ("kernels-heldout-5", "588f373", "drawn after binary ops met two ordinary operands"),
    (
        "kernels-heldout-6",
        "49f8e24",
        "drawn after ops that combine elements were measured at the output's scale: new "
        "models (another shape, feed seed and producers) of every pair met on ordinary "
        "inputs, and unused pairs",
    ),
]


@pytest.mark.parametrize(
    ("name", "against", "how"), INTEGER_FEED_ROUNDS, ids=[r[0] for r in INTEGER_FEED_ROUNDS]
)
def test_an_integer_feed_round_gives_its_recorded_figures(
    name: str, against: str, how: str
) -> None:
    root = ROOT / "tests" / "fixtures" / name
    if not root.exists():
        pytest.skip(f"no {name} set yet")
    expected = _recorded(root, against)
    found = _figures(root, reference="2.21.0", ulps=4.0, ordinary=(0, 2))
    assert {k: found[k] for k in expected} == expected, how
