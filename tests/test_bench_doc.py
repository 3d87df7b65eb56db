"""The benchmarks page (docs/benchmarks.md) is rendered by tools/bench_doc.py from the
results `make bench RESULTS=...` writes (tools/run_bench.py): the committed page must be
what the committed results give, with the run's date, machine and load."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def a_run(load: str, cores: int = 2) -> dict[str, object]:
    return {
        "date": "2026-12-04 20:00 UTC",
        "machine": {"cpu": "Some CPU", "cores": cores, "system": "Linux 6.1", "python": "3.11.2"},
        "load_before": load,
        "load_after": load,
        "only": ["check_cost"],
        "scripts": [
            {
                "script": "check_cost.py",
                "ended": "exit 0 after 40 s",
                "rows": [
                    {
                        "work": "check, 3 consumers",
                        "figure": "0.41 s",
                        "reference": "inspect 0.30 s",
                        "goal": "<= inspect + 0.15 s",
                        "met": True,
                    }
                ],
            },
            {"script": "read_speed.py", "ended": "exit 1 after 2 s", "rows": []},
        ],
    }


def test_committed_page_is_what_the_committed_results_give() -> None:
    doc = tool("bench_doc")
    results = json.loads((ROOT / "bench" / "results.json").read_text())
    assert (ROOT / "docs" / "benchmarks.md").read_text() == doc.page(results), (
        "stale: run python tools/bench_doc.py --write"
    )


def test_the_page_says_when_and_where_it_was_measured() -> None:
    page = tool("bench_doc").page(a_run("0.50 0.40 0.30"))
    assert "**Run of 2026-12-04 20:00 UTC** on Some CPU, 2 cores, Linux 6.1, Python 3.11.2" in page
    assert "load average 0.50 0.40 0.30 before" in page
    assert "| `check_cost.py` | check, 3 consumers | 0.41 s | inspect 0.30 s |" in page
    assert "| `read_speed.py` | (no rows) | exit 1 after 2 s |" in page
    assert "make bench BENCH=check_cost,read_speed RESULTS=bench/results.json" in page


def test_a_busy_machine_is_said_on_the_page() -> None:
    doc = tool("bench_doc")
    assert "A busy machine" in doc.page(a_run("9.10 8.00 7.00"))
    assert "A busy machine" not in doc.page(a_run("0.50 0.40 0.30"))


def test_run_bench_writes_its_run_as_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = tool("run_bench")
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "tiny.py").write_text(
        "import json\n"
        'if __name__ == "__main__":\n'
        '    print("bench-row " + json.dumps({"work": "w", "figure": "1 s", "met": None}))\n'
    )
    monkeypatch.setattr(runner, "BENCH", bench)
    monkeypatch.setattr(runner, "ROOT", tmp_path)
    results = tmp_path / "results.json"
    assert runner.main(["--results", str(results), "--python", sys.executable]) == 0
    run = json.loads(results.read_text())
    assert run["format"] == "tfcompat-bench/1" and run["date"].endswith(" UTC")
    assert run["machine"]["cores"] and run["load_before"]
    assert run["scripts"] == [
        {
            "script": "tiny.py",
            "ended": run["scripts"][0]["ended"],
            "rows": [{"work": "w", "figure": "1 s", "met": None}],
        }
    ]
    assert run["scripts"][0]["ended"].startswith("exit 0")
