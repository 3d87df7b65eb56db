#!/usr/bin/env python3
"""Which TFLite file features each runtime reads, measured on real files (issue 36).

    python3 tools/tflite/runtimes.py install --envs ENVS
    python3 tools/tflite/build_features.py convert --tf-envs TFENVS   # make_feature_models.py
    python3 tools/tflite/build_features.py load --envs ENVS --tf-envs TFENVS
    python3 tools/tflite/build_features.py write --tf-envs TFENVS

`convert` runs make_feature_models.py in each producer's TensorFlow venv
(`PRODUCERS`) into build/tflite/features/tf<minor>/; `load` runs
probe_features.py in every READY runtime, over every file it has not run yet and
(`--types`) over one minimal file per tensor type, one process per runtime,
restarting after a subject that crashes it; `write` copies the files to tests/fixtures/tflite-features/
(models.json: how each was made, its reference output and the features TensorFlow's
own generated FlatBuffers code finds in it, describe_features.py; matrix.jsonl and
types.jsonl: what every runtime did) and writes worker/catalog/data/tflite_features.json:
per runtime and feature, what the runtime does with a file that uses it.

How a feature's row is decided: a probe file and its control come from the same
converter (the in-sample one, `RULE_PRODUCER`) and differ by that one feature
alone (their feature sets, as TensorFlow reads them). Where the control serves
(builds, allocates, invokes and answers as the producer's interpreter does), the
probe's outcome is the feature's: `reads` (it serves too), `load-fails` (building
or allocating failed), `requests-fail` (it loads and the answer is an error or
wrong). A probe failing on an op the runtime lacks ("Didn't find op", "out of
range") says nothing of the feature: no row. SignatureDefs are `ignored` where
the runtime serves the file by tensor index but has no signature API. A tensor
type is `reads` where the minimal file allocates and `load-fails` where building
the interpreter refuses it. What no pair decides stays out of the table: the
verdicts call it unknown. The other converters' files are held out: they are
only compared with the verdicts (tools/tflite/agreement.py).

A later round of held-out files (more converters, the table left as it is):

    python3 tools/tflite/build_features.py convert --tf-envs TFENVS --producers 2.17.1,2.18.1
    python3 tools/tflite/build_features.py load --envs ENVS --tf-envs TFENVS --held-out-after C
    python3 tools/tflite/build_features.py write --tf-envs TFENVS --held-out-after C

where C is the commit of the rules the new files are measured against: `load` probes
only the files not probed yet and no tensor types; `write` adds the new files and
their rows to the committed fixtures, marks them `held_out_after: C` in models.json
(their held-out set in tests/fixtures/held_out.json) and leaves the table alone.

Standard library only; Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_matrix import _flatten
from runtimes import DEFAULT_ENVS, DEFAULT_TF_ENVS, REPO, Runtime, python_of, ready, runtimes

BUILD = REPO / "build" / "tflite" / "features"
LOADS = BUILD / "loads"
FIXTURES = REPO / "tests" / "fixtures" / "tflite-features"
TABLE = REPO / "worker" / "catalog" / "data" / "tflite_features.json"
HERE = Path(__file__).resolve().parent
ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"}
FORMAT = "tfcompat-tflite-features/1"

RULE_PRODUCER = "tf2.21"
"""The converter whose files decide the table; every other producer's files are held out."""
PRODUCERS = ("2.21.0", "2.14.1", "2.15.1", "2.16.2", "2.17.1", "2.18.1", "2.19.1", "2.20.0")
OP_ERRORS = ("Didn't find op for builtin opcode", "builtin_code out of range")


def producer_of(runtime: Runtime) -> str:
    return "tf" + ".".join(runtime.version.split(".")[:2])


def convert(args: argparse.Namespace) -> None:
    chosen = args.producers.split(",") if args.producers else PRODUCERS
    unknown = sorted(set(chosen) - set(PRODUCERS))
    if unknown:
        raise SystemExit(f"not a producer: {', '.join(unknown)} (PRODUCERS: {PRODUCERS})")
    for runtime in runtimes():
        if runtime.family != "tensorflow" or runtime.version not in chosen:
            continue
        if not ready(runtime, args.envs, args.tf_envs):
            print(f"{runtime.name}: no READY venv, skipped", file=sys.stderr)
            continue
        out = BUILD / "models" / producer_of(runtime)
        if (out / "cases.json").exists() and not args.force:
            continue
        print(f"converting with {runtime.name}", file=sys.stderr, flush=True)
        python = python_of(runtime, args.envs, args.tf_envs)
        subprocess.run(
            [str(python), str(HERE / "make_feature_models.py"), str(out)], env=ENV, check=True
        )


def _probe(python: Path, subjects: list[str], key: str) -> list[dict[str, object]]:
    """probe_features.py over `subjects`, restarting after one that kills the process."""
    rows: list[dict[str, object]] = []
    pending = list(subjects)
    while pending:
        argv = ["--types"] if key == "type_code" else pending
        proc = subprocess.run(
            [str(python), str(HERE / "probe_features.py"), *argv],
            capture_output=True,
            text=True,
            env=ENV,
            cwd=REPO,
        )
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        done = [line for line in lines if "progress" not in line]
        reached = lines[-1].get("progress") if lines and "progress" in lines[-1] else None
        if key == "type_code":  # one run; a crash ends the list
            rows += done
            if len(done) < len(subjects):
                rows.append(
                    {key: int(subjects[len(done)]), "stage": None, "crash": proc.returncode}
                )
            return rows
        rows += done
        pending = pending[len(done) :]
        if pending:  # the process died on pending[0], after `reached`
            rows.append(
                {
                    key: pending[0],
                    "stage": reached,
                    "crash": proc.returncode,
                    "error": f"the process died (exit status {proc.returncode}) after stage "
                    f"{reached or 'none'}",
                }
            )
            pending = pending[1:]
    return rows


def load(args: argparse.Namespace) -> None:
    LOADS.mkdir(parents=True, exist_ok=True)
    source = FIXTURES / "models" if args.from_fixtures else BUILD / "models"
    models = [str(p.relative_to(REPO)) for p in sorted(source.glob("tf*/*.tflite"))]
    for runtime in runtimes():
        if args.only and runtime.name not in args.only.split(","):
            continue
        if not ready(runtime, args.envs, args.tf_envs):
            print(f"{runtime.name}: no READY venv, skipped", file=sys.stderr)
            continue
        out = LOADS / f"{runtime.name}.jsonl"
        rows = [] if args.force or not out.exists() else _lines(out)
        seen = {str(r.get("model")) for r in rows}
        pending = [m for m in models if m not in seen]  # new files only: held-out producers
        # a held-out round measures converter files only: the type probes stay as committed
        has_types = bool(args.held_out_after) or any("type_code" in r for r in rows)
        if not pending and has_types:
            continue
        print(f"probing {runtime.name}: {len(pending)} files", file=sys.stderr, flush=True)
        python = python_of(runtime, args.envs, args.tf_envs)
        if pending:
            rows += _probe(python, pending, "model")
        if not has_types:
            rows += _probe(python, [str(c) for c in range(20)], "type_code")
        out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _describe(paths: list[Path], args: argparse.Namespace) -> dict[str, dict[str, object]]:
    newest = [r for r in runtimes() if r.family == "tensorflow"][-1]
    result = subprocess.run(
        [str(python_of(newest, args.envs, args.tf_envs)), str(HERE / "describe_features.py")]
        + [str(p) for p in paths],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    )
    described: dict[str, dict[str, object]] = json.loads(result.stdout)
    for entry in described.values():
        entry["by"] = newest.name
    return described


def write(args: argparse.Namespace) -> None:
    if args.held_out_after:
        add_round(args)
        return
    if args.from_fixtures:
        models_doc = json.loads((FIXTURES / "models.json").read_text())
    else:
        models_doc = {}
        # a rebuild keeps each file's held-out round: a round stays held out from the rules
        # it was first measured against, apart from the rounds before it
        committed = FIXTURES / "models.json"
        rounds = {
            k: v["held_out_after"]
            for k, v in (json.loads(committed.read_text()) if committed.exists() else {}).items()
            if v.get("held_out_after")
        }
        if (FIXTURES / "models").exists():
            shutil.rmtree(FIXTURES / "models")
        for cases_file in sorted((BUILD / "models").glob("tf*/cases.json")):
            producer = cases_file.parent.name
            for case, entry in json.loads(cases_file.read_text()).items():
                src = cases_file.parent / f"{case}.tflite"
                if "skipped" not in entry and src.exists():
                    dst = FIXTURES / "models" / producer / f"{case}.tflite"
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dst)
                    entry["path"] = f"models/{producer}/{case}.tflite"
                entry["held_out"] = producer != RULE_PRODUCER
                if f"{producer}/{case}" in rounds:
                    entry["held_out_after"] = rounds[f"{producer}/{case}"]
                models_doc[f"{producer}/{case}"] = entry
        paths = sorted(FIXTURES.glob("models/*/*.tflite"))
        described = _describe(paths, args)
        for path in paths:
            models_doc[f"{path.parent.name}/{path.stem}"]["tensorflow_reads"] = described[str(path)]
        (FIXTURES / "models.json").write_text(
            json.dumps(models_doc, indent=1, sort_keys=True) + "\n"
        )
    rows, types = _rows(models_doc)
    (FIXTURES / "matrix.jsonl").write_text(
        "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    )
    (FIXTURES / "types.jsonl").write_text(
        "".join(json.dumps(r, sort_keys=True) + "\n" for r in types)
    )
    sys.path.insert(0, str(HERE.parent))
    from fixture_sources import record

    for name in ("models.json", "matrix.jsonl", "types.jsonl"):
        record(FIXTURES / name)
    table = build_table(models_doc, rows, types)
    TABLE.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(models_doc)} models, {len(rows)} rows, {len(types)} type rows; {TABLE}")


def add_round(args: argparse.Namespace) -> None:
    """The converted files not in the fixtures yet, and their rows, added to the committed
    set as a held-out round (`held_out_after`); committed rows, type rows and the table
    stay as they are."""
    models_doc = json.loads((FIXTURES / "models.json").read_text())
    added: dict[str, dict[str, object]] = {}
    for cases_file in sorted((BUILD / "models").glob("tf*/cases.json")):
        producer = cases_file.parent.name
        for case, entry in json.loads(cases_file.read_text()).items():
            if f"{producer}/{case}" in models_doc:
                continue  # committed already: a round adds files, it never rewrites one
            src = cases_file.parent / f"{case}.tflite"
            if "skipped" not in entry and src.exists():
                entry["path"] = f"models/{producer}/{case}.tflite"
            entry["held_out"] = True
            entry["held_out_after"] = args.held_out_after
            added[f"{producer}/{case}"] = entry
    if not added:
        raise SystemExit(f"nothing to add: every converted file under {BUILD} is committed")
    models_doc.update(added)
    committed = _lines(FIXTURES / "matrix.jsonl")
    new_rows = [r for r in _rows(models_doc)[0] if r["model"] in added]
    wanted = {(str(r["runtime"]), m) for r in committed for m in added if "path" in added[m]}
    missing = wanted - {(str(r["runtime"]), str(r["model"])) for r in new_rows}
    if missing:  # every runtime of the set runs every new file, or nothing is written
        raise SystemExit(f"{len(missing)} (runtime, file) pairs not probed, e.g. {min(missing)}")
    for entry in added.values():
        if "path" in entry:
            dst = FIXTURES / str(entry["path"])
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(BUILD / str(entry["path"]), dst)
    paths = [FIXTURES / str(e["path"]) for e in added.values() if "path" in e]
    described = _describe(paths, args)
    for path in paths:
        added[f"{path.parent.name}/{path.stem}"]["tensorflow_reads"] = described[str(path)]
    rows = committed + new_rows
    (FIXTURES / "models.json").write_text(json.dumps(models_doc, indent=1, sort_keys=True) + "\n")
    (FIXTURES / "matrix.jsonl").write_text(
        "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    )
    sys.path.insert(0, str(HERE.parent))
    from fixture_sources import record

    for name in ("models.json", "matrix.jsonl"):
        record(FIXTURES / name)
    print(f"added {len(added)} models and {len(new_rows)} rows; {TABLE.name} left as it is")


def _rows(
    models_doc: dict[str, dict[str, object]],
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    rows: list[dict[str, object]] = []
    types: list[dict[str, object]] = []
    for runtime in runtimes():
        path = LOADS / f"{runtime.name}.jsonl"
        if not path.exists():
            continue
        ident = {
            "runtime": runtime.name,
            "family": runtime.family,
            "runtime_version": runtime.version,
        }
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if "type_code" in row:
                types.append({**row, **ident})
                continue
            model_id = "/".join(Path(str(row.pop("model"))).with_suffix("").parts[-2:])
            entry = models_doc.get(model_id, {})
            reference = entry.get("own_output") or entry.get("expected")
            row.update(ident, model=model_id)
            row["matches_producer"] = (
                _same(row.get("output"), reference) if row.get("stage") == "invoked" else None
            )
            if "signature_output" in row:
                row["signature_matches"] = _same(row.pop("signature_output"), reference)
            row.pop("output", None)
            rows.append(row)
    return rows, types


def _same(output: object, reference: object) -> bool | None:
    """As build_matrix's `_matches` (within 1% of the reference's largest magnitude), a
    NaN matching only a NaN: the 2.21 converter's sparse float16 file answers NaN in its
    own interpreter, and a runtime that answers as the producer does reads it as it does."""
    if not isinstance(output, list) or not isinstance(reference, list):
        return None
    out, ref = _flatten(output), _flatten(reference)
    if len(out) != len(ref):
        return False
    span = max((abs(v) for v in ref if v == v), default=0.0) or 1.0
    return all(
        (a != a and b != b) or abs(a - b) <= 0.01 * span for a, b in zip(out, ref, strict=True)
    )


def _outcome(row: dict[str, object]) -> str:
    if row.get("stage") not in ("allocated", "invoked"):
        return "load-fails"
    if row.get("stage") != "invoked" or row.get("matches_producer") is False:
        return "requests-fail"
    return "serves"


def _features(entry: dict[str, object]) -> frozenset[str]:
    reads = entry.get("tensorflow_reads")
    return frozenset(reads["features"]) if isinstance(reads, dict) else frozenset()  # type: ignore[index]


TYPE_NAMES = (
    "FLOAT32 FLOAT16 INT32 UINT8 INT64 STRING BOOL INT16 COMPLEX64 INT8 FLOAT64 COMPLEX128 UINT64 "
    "RESOURCE VARIANT UINT32 UINT16 INT4 BFLOAT16"
).split()


def build_table(
    models_doc: dict[str, dict[str, object]],
    rows: list[dict[str, object]],
    types: list[dict[str, object]],
) -> dict[str, object]:
    ours = {
        k: v for k, v in models_doc.items() if k.startswith(RULE_PRODUCER + "/") and "path" in v
    }
    sets = {k: _features(v) for k, v in ours.items()}
    pairs = []  # (feature, probe, control)
    for probe, have in sets.items():
        for control, base in sets.items():
            extra = have - base
            if base < have and len(extra) == 1:
                pairs.append((next(iter(extra)), probe, control))
    by_runtime: dict[str, dict[str, dict[str, object]]] = {}
    for row in rows:
        by_runtime.setdefault(str(row["runtime"]), {})[str(row["model"])] = row
    table: dict[str, dict[str, str]] = {}
    errors: dict[str, dict[str, str]] = {}
    for runtime, seen in by_runtime.items():
        found: dict[str, str] = {}
        said: dict[str, str] = {}
        for feature, probe, control in sorted(pairs):
            p, c = seen.get(probe), seen.get(control)
            if p is None or c is None or _outcome(c) != "serves":
                continue
            if any(words in str(p.get("error", "")) for words in OP_ERRORS):
                continue
            status = {"serves": "reads"}.get(_outcome(p), _outcome(p))
            if feature == "signature-defs" and status == "reads":
                if p.get("signature_api") is False:
                    status = "ignored"
                elif p.get("signature_error") or p.get("signature_matches") is False:
                    status = "requests-fail"
            if found.get(feature, status) != status:
                status = "conflicting"
            found[feature] = status
            if p.get("error"):
                said[feature] = str(p["error"])[:300]
        found = {f: s for f, s in found.items() if s != "conflicting"}
        table[runtime] = found
        errors[runtime] = said
    for row in types:
        code = int(str(row["type_code"]))
        name = TYPE_NAMES[code] if code < len(TYPE_NAMES) else f"TYPE_{code}"
        runtime = str(row["runtime"])
        status = "reads" if row.get("stage") == "allocated" else "load-fails"
        table.setdefault(runtime, {})[f"tensor-type-{name}"] = status
        if row.get("error"):
            errors.setdefault(runtime, {})[f"tensor-type-{name}"] = str(row["error"])[:300]
    sys.path.insert(0, str(HERE.parent))
    from provenance import source_record

    measured = [r.name for r in runtimes() if r.name in table]
    return {
        "format": FORMAT,
        "source": source_record(
            "tools/tflite/build_features.py",
            f"probe_features.py in each runtime's own environment over the {RULE_PRODUCER} "
            "converter's feature files (a probe and its control differ by one feature) and "
            "over one minimal flatbuffer per tensor type",
            [f"converter tensorflow {RULE_PRODUCER.removeprefix('tf')}", *measured],
        ),
        "pairs": [{"feature": f, "probe": p, "control": c} for f, p, c in sorted(set(pairs))],
        "runtimes": {r: dict(sorted(table[r].items())) for r in measured},
        "errors": {r: dict(sorted(errors[r].items())) for r in measured if errors.get(r)},
    }


def summary(args: argparse.Namespace) -> None:
    """The table as Markdown, runs of consecutive runtimes per family and status (the
    docs' table): `python3 tools/tflite/build_features.py summary`."""
    doc = json.loads(TABLE.read_text())
    table: dict[str, dict[str, str]] = doc["runtimes"]
    order = [r for r in runtimes() if r.name in table]
    features = sorted({f for row in table.values() for f in row})
    print("| feature | " + " | ".join(FAMILIES) + " |")
    print("|---|" + "---|" * len(FAMILIES))
    for feature in features:
        cells = []
        for family in FAMILIES:
            runs: list[list[str]] = []  # [status, first, last]
            for r in (r for r in order if r.family == family):
                status = table[r.name].get(feature, "unknown")
                if runs and runs[-1][0] == status:
                    runs[-1][2] = r.version
                else:
                    runs.append([status, r.version, r.version])
            cells.append("; ".join(f"{a}{'' if a == b else '-' + b}: {st}" for st, a, b in runs))
        if all(c.count(":") == 1 and c.endswith(": reads") for c in cells):
            continue  # read everywhere: said in one sentence below the table
        print(f"| `{feature}` | " + " | ".join(cells) + " |")


FAMILIES = ("tensorflow", "tflite-runtime", "ai-edge-litert")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("command", choices=("convert", "load", "write", "summary"))
    parser.add_argument("--envs", type=Path, default=DEFAULT_ENVS)
    parser.add_argument("--tf-envs", type=Path, default=DEFAULT_TF_ENVS)
    parser.add_argument("--only", default="")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--from-fixtures", action="store_true")
    parser.add_argument(
        "--producers", default="", help="convert: comma-separated TensorFlow versions"
    )
    parser.add_argument(
        "--held-out-after",
        default="",
        metavar="COMMIT",
        help="load, write: add the converted files as a held-out round against COMMIT's rules",
    )
    args = parser.parse_args()
    {"convert": convert, "load": load, "write": write, "summary": summary}[args.command](args)


if __name__ == "__main__":
    main()
