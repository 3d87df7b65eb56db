#!/usr/bin/env python3
"""Measure what each attr added after a catalogued release does to an op's results.

    python3 tools/attrs/measure.py [--envs $TFENVS] [--output FILE] [--only OP[.ATTR]]

1. From the packed registries (worker/catalog/data/registries.jsonl), every attr that
   an op's OpDef gains in some release (present there, absent in the op's OpDef of the
   release before): the attrs an older consumer ignores (2.5+) or rejects (up to 2.4).
2. For each, the cases of tools/attrs/cases.py (inputs chosen to reach the attr's
   effect), run by tools/attrs/probe.py in the newest READY venv (made by
   tools/build_registries.py) whose release knows the attr, at the default and at the
   non-default values tried.
3. Classified by comparing what a request would see (outputs, variables written,
   dataset elements, or the error) at each value with the default's:
   - `changes-results`: some input gives other results at some value; the first such
     input, value and both results are the evidence, and `difference` says whether
     any value gave other outputs (`values`) or only made the op refuse inputs the
     default accepts (`refuses`: a stricter check);
   - `no-effect-on-results`: the default ran on at least one input, and every value
     tried gave the default's results on every input; the evidence says how many;
   - `unverified`: no case (and why, when known), or the op did not run.

Writes `worker/catalog/data/attr_effects.json` (format `tfcompat-attr-effects/1`,
sorted, no timestamps: the same installs give the same bytes). Standard library only.
"""

from __future__ import annotations

import os
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cases import cases_for, unrunnable_reason  # noqa: E402
from provenance import cpu_wheels, source_record  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("probe.py")
REGISTRIES = REPO / "worker" / "catalog" / "data" / "registries.jsonl"
DEFAULT_OUTPUT = REPO / "worker" / "catalog" / "data" / "attr_effects.json"
FORMAT = "tfcompat-attr-effects/1"
CHANGES, NO_EFFECT, UNVERIFIED = "changes-results", "no-effect-on-results", "unverified"


def key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


def added_attrs(path: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """Every (op, attr) some release's OpDef adds to an op an earlier release had, with
    the release that added it and its default there; and each release's op -> line."""
    lines = path.read_bytes().split(b"\n")
    header = json.loads(lines[0])
    pool = lines[1:]
    current: dict[str, int] = {}
    indexes: dict[str, dict[str, int]] = {}
    seen: dict[str, set[str]] = {}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for release in header["releases"]:
        version = release["version"]
        current = dict(current)
        for name in release["removed"]:
            current.pop(name, None)
        current.update(release["set"])
        indexes[version] = current
        for op, line in release["set"].items():
            opdef = json.loads(pool[line])
            attrs = {a["name"]: a for a in opdef.get("attr", [])}
            before = seen.get(op)
            if before is not None:
                for name in sorted(set(attrs) - before):
                    if (op, name) not in found:
                        found[(op, name)] = {
                            "op": op,
                            "attr": name,
                            "since": version,
                            "type": attrs[name]["type"],
                            "default": attrs[name].get("default_value"),
                        }
            seen[op] = set(attrs)
    return sorted(found.values(), key=lambda r: (r["op"], r["attr"])), indexes


_POOL: dict[Path, list[bytes]] = {}


def knows(path: Path, indexes: dict[str, dict[str, int]], version: str, op: str, attr: str) -> bool:
    line = indexes.get(version, {}).get(op)
    if line is None:
        return False
    pool = _POOL.get(path) or _POOL.setdefault(path, path.read_bytes().split(b"\n")[1:])
    opdef = json.loads(pool[line])
    return any(a["name"] == attr for a in opdef.get("attr", []))


def ready_envs(envs: Path) -> dict[str, str]:
    """release -> python of each READY venv."""
    found = {}
    for ready in envs.glob("*/READY"):
        found[ready.parent.name] = ready.read_text().strip().splitlines()[0].strip()
    return dict(sorted(found.items(), key=lambda kv: key(kv[0])))


def probe(python: str, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The probe's results for these cases; a batch that kills the process is split
    until the case that does is alone, and that case's runs say so."""
    if not cases:
        return {}
    done = subprocess.run(
        [python, str(PROBE)],
        input=json.dumps({"cases": cases}),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        doc = json.loads(done.stdout)
        return {r["id"]: r["runs"] for r in doc["results"]}
    if len(cases) == 1:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
        crash = {"build_error": "ProcessDied", "message": f"exit {done.returncode}: {tail}"}
        return {cases[0]["id"]: [crash] * len(cases[0]["values"])}
    half = len(cases) // 2
    return {**probe(python, cases[:half]), **probe(python, cases[half:])}


def _ran(run: dict[str, Any]) -> bool:
    return "outputs" in run


def _comparable(run: dict[str, Any]) -> Any:
    if "error" in run:
        return {"error": run["error"]}  # the class: messages name nodes and shapes
    return {k: run[k] for k in ("outputs", "variables")}


def _shown(run: dict[str, Any]) -> Any:
    if "error" in run or "build_error" in run:
        return {"error": run.get("error") or run.get("build_error"), "message": run["message"]}
    return {k: run[k] for k in ("outputs", "variables") if run[k]}


def classify(
    row: dict[str, Any], cases: list[dict[str, Any]], runs: dict[str, Any], release: str
) -> dict[str, Any]:
    default_ran = 0
    compared = 0
    values_tried: set[str] = set()
    same_values: dict[str, bool] = {}
    changed: dict[str, Any] | None = None
    kinds: set[str] = set()
    for case in cases:
        results = runs.get(case["id"], [])
        if not results or "build_error" in results[0]:
            continue
        default = results[0]
        default_ran += _ran(default)
        for value, result in zip(case["values"][1:], results[1:], strict=True):
            if "build_error" in result:
                continue  # TensorFlow refused the value itself: not a result of it
            shown_value = json.dumps(value, sort_keys=True)
            values_tried.add(shown_value)
            compared += 1
            same = _comparable(result) == _comparable(default)
            same_values[shown_value] = same_values.get(shown_value, True) and same
            refuses = _ran(default) and "error" in result
            if not same and (_ran(default) or _ran(result)):
                kinds.add("refuses" if refuses else "values")
            if (
                not same
                and (_ran(default) or _ran(result))
                and (changed is None or (not refuses and changed["difference"] == "refuses"))
            ):
                changed = {
                    "difference": "refuses" if refuses else "values",
                    **row,
                    "effect": CHANGES,
                    "measured_in": release,
                    "how": (
                        f"{row['op']} run at {row['attr']}={shown_value} and at its default "
                        "on the same inputs gave different results"
                    ),
                    "evidence": {
                        "attrs": case["attrs"],
                        "inputs": case.get("inputs_per_value", [case["inputs"]] * 2)[
                            case["values"].index(value)
                        ]
                        if case.get("inputs_per_value")
                        else case["inputs"],
                        "value": value,
                        "default_result": _shown(default),
                        "value_result": _shown(result),
                    },
                }
    if changed is not None:
        # "refuses": every difference is the value making the op fail where the default
        # ran (a stricter check); a release ignoring it answers wherever the producer does.
        changed["difference"] = "values" if "values" in kinds else "refuses"
        # Values that gave the default's results on these inputs: not a claim about any
        # input (blank_index=2 is the default's blank only with 3 classes), so no
        # verdict reads it; it shows how far the inputs reached.
        changed["same_on_these_inputs"] = [
            json.loads(v) for v in sorted(v for v, same in same_values.items() if same)
        ]
        return changed
    if default_ran and compared:
        return {
            **row,
            "effect": NO_EFFECT,
            "measured_in": release,
            "how": (
                f"{row['op']} run on {len(cases)} input set(s) at its default and at "
                f"{len(values_tried)} other value(s) ({', '.join(sorted(values_tried))}): "
                f"the same results ({compared} comparisons, outputs, variables written and "
                "dataset elements, or the same error class)"
            ),
            "evidence": {"inputs": [c["inputs"] for c in cases], "attrs": cases[0]["attrs"]},
        }
    reason = unrunnable_reason(row["op"])
    if cases:
        first = next(
            (runs[c["id"]][0] for c in cases if runs.get(c["id"])), {"message": "no result"}
        )
        why = f"the op did not run at its default: {_shown(first)}"
    elif not release:
        why = "no release with a READY venv knows the attr"
    else:
        why = reason or "no probe builds this op yet (tools/attrs/cases.py)"
    return {**row, "effect": UNVERIFIED, "measured_in": release if cases else None, "how": why}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--envs", type=Path, default=Path(os.environ.get("TFENVS", ".cache/tfenvs")))
    parser.add_argument("--registries", type=Path, default=REGISTRIES)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--only", help="OP or OP.ATTR: measure just that, print, write nothing")
    args = parser.parse_args()
    started = time.monotonic()
    rows, indexes = added_attrs(args.registries)
    if args.only:
        op, _, attr = args.only.partition(".")
        rows = [r for r in rows if r["op"] == op and (not attr or r["attr"] == attr)]
    envs = ready_envs(args.envs)
    table = []
    pending: list[tuple[dict[str, Any], list[str], list[dict[str, Any]]]] = []
    for row in rows:
        knowing = [
            v for v in reversed(envs) if knows(args.registries, indexes, v, row["op"], row["attr"])
        ]
        cases = cases_for(row["op"], row["attr"], row["default"] or {}) if knowing else []
        for n, case in enumerate(cases):
            case["id"] = f"{row['op']}.{row['attr']}#{n}"
        if not cases:
            table.append(classify(row, [], {}, knowing[0] if knowing else ""))
            continue
        pending.append((row, knowing, cases))
    # Newest release that knows the attr first; an op that does not run there (a kernel
    # that changed how it serializes, say) is tried in the next older one that knows it.
    while pending:
        plans: dict[str, list[tuple[dict[str, Any], list[str], list[dict[str, Any]]]]] = {}
        for row, knowing, cases in pending:
            plans.setdefault(knowing[0], []).append((row, knowing, cases))
        pending = []
        for release, planned in plans.items():
            flat = [c for _, _, cs in planned for c in cs]
            sys.stderr.write(f"{release}: {len(planned)} attrs, {len(flat)} cases\n")
            runs = probe(envs[release], flat)
            for row, knowing, cases in planned:
                found = classify(row, cases, runs, release)
                if found["effect"] == UNVERIFIED and len(knowing) > 1:
                    found["tried"] = [*row.get("tried", []), f"{release}: {found['how']}"]
                    pending.append(({**row, "tried": found["tried"]}, knowing[1:], cases))
                    continue
                table.append(found)
    table.sort(key=lambda r: (r["op"], r["attr"]))
    elapsed = time.monotonic() - started
    counts: dict[str, int] = {}
    for row in table:
        counts[row["effect"]] = counts.get(row["effect"], 0) + 1
    sys.stderr.write(
        f"{len(table)} attrs in {elapsed:.0f}s: {json.dumps(counts, sort_keys=True)}\n"
    )
    if args.only:
        json.dump(table, sys.stdout, indent=1, sort_keys=True)
        return 0
    doc = {
        "format": FORMAT,
        "source": source_record(
            "tools/attrs/measure.py",
            "each attr run by tools/attrs/probe.py in the newest release that knows it (CPU "
            "wheel), at its default and other values, on the inputs of tools/attrs/cases.py",
            cpu_wheels(row["measured_in"] for row in table if row["measured_in"]),
        ),
        "attrs": table,
    }
    args.output.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
