#!/usr/bin/env python3
"""The TFLite fixture matrix: models from real converters, loaded by real runtimes.

    python3 tools/tflite/runtimes.py install
    python3 tools/tflite/build_matrix.py convert   # make_models.py in each TensorFlow venv
    python3 tools/tflite/build_matrix.py load      # load_models.py in every READY runtime
    python3 tools/tflite/build_matrix.py write     # -> tests/fixtures/tflite/

With `--from-fixtures`, `load` runs the committed models (tests/fixtures/tflite/models)
instead of build/, and `write` rewrites only `matrix.jsonl`, from the committed
`models.json`: how the matrix grows to new runtimes without converting again.

`convert` writes `build/tflite/models/tf<minor>/` (skipped when its cases.json
exists unless --force); `load` runs every model through every runtime, one
process per runtime, restarting after a model that crashes the process (that
model's row says `crash`), and keeps `build/tflite/loads/<runtime>.jsonl`;
`write` copies the models to `tests/fixtures/tflite/models/` and writes
`models.json` (how each was made, TensorFlow's own output, the producer's own
interpreter output, and what TensorFlow's own FlatBuffers code reads in the
file: `describe_models.py`) and `matrix.jsonl` (one row per runtime x model: how far
the runtime got, its error, its output, and whether the output matches the
producer's own interpreter within 1% of the output range). Standard library
only; Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtimes import DEFAULT_ENVS, DEFAULT_TF_ENVS, REPO, Runtime, python_of, ready, runtimes

BUILD = REPO / "build" / "tflite"
MODELS = BUILD / "models"
LOADS = BUILD / "loads"
FIXTURES = REPO / "tests" / "fixtures" / "tflite"
HERE = Path(__file__).resolve().parent
ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"}


def producer_dir(runtime: Runtime) -> Path:
    return MODELS / ("tf" + ".".join(runtime.version.split(".")[:2]))


def convert(args: argparse.Namespace) -> None:
    for runtime in runtimes():
        if runtime.family != "tensorflow" or not ready(runtime, args.envs, args.tf_envs):
            continue
        out = producer_dir(runtime)
        if (out / "cases.json").exists() and not args.force:
            continue
        print(f"converting with {runtime.name}", file=sys.stderr, flush=True)
        python = python_of(runtime, args.envs, args.tf_envs)
        # 1.x's converter runs the `toco_from_protos` script from the venv's bin/
        env = {**ENV, "PATH": f"{python.parent}:{ENV['PATH']}"}
        subprocess.run([str(python), str(HERE / "make_models.py"), str(out)], env=env, check=True)


def model_paths(from_fixtures: bool = False) -> list[Path]:
    return sorted((FIXTURES / "models" if from_fixtures else MODELS).glob("tf*/*.tflite"))


def load(args: argparse.Namespace) -> None:
    LOADS.mkdir(parents=True, exist_ok=True)
    models = model_paths(args.from_fixtures)
    for runtime in runtimes():
        if args.only and runtime.name not in args.only.split(","):
            continue
        if not ready(runtime, args.envs, args.tf_envs):
            print(f"{runtime.name}: no READY venv, skipped", file=sys.stderr)
            continue
        out = LOADS / f"{runtime.name}.jsonl"
        if out.exists() and not args.force:
            continue
        print(f"loading with {runtime.name}", file=sys.stderr, flush=True)
        python = python_of(runtime, args.envs, args.tf_envs)
        rows: list[dict[str, object]] = []
        pending = [str(m.relative_to(REPO)) for m in models]
        while pending:
            proc = subprocess.run(
                [str(python), str(HERE / "load_models.py"), *pending],
                capture_output=True,
                text=True,
                env=ENV,
                cwd=REPO,
            )
            done = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
            rows += done
            pending = pending[len(done) :]
            if pending:  # the process died on pending[0]
                rows.append({"model": pending[0], "stage": None, "crash": proc.returncode})
                pending = pending[1:]
        out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def _matches(output: object, reference: object) -> bool | None:
    if not isinstance(output, list) or not isinstance(reference, list):
        return None
    flat_out = _flatten(output)
    flat_ref = _flatten(reference)
    if len(flat_out) != len(flat_ref):
        return False
    span = max((abs(v) for v in flat_ref), default=0.0) or 1.0
    return all(abs(a - b) <= 0.01 * span for a, b in zip(flat_out, flat_ref, strict=True))


def _flatten(value: object) -> list[float]:
    if isinstance(value, list):
        return [x for item in value for x in _flatten(item)]
    return [float(value)]  # type: ignore[arg-type]


def _add_tensorflow_reading(models_doc: dict[str, object], args: argparse.Namespace) -> None:
    """Each model as TensorFlow's own generated FlatBuffers code reads it (the newest
    TensorFlow runtime's schema): the truth the reader tests compare with."""
    newest = [r for r in runtimes() if r.family == "tensorflow"][-1]
    paths = sorted(FIXTURES.glob("models/*/*.tflite"))
    result = subprocess.run(
        [str(python_of(newest, args.envs, args.tf_envs)), str(HERE / "describe_models.py")]
        + [str(p) for p in paths],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    )
    described = json.loads(result.stdout)
    for path in paths:
        entry = models_doc[f"{path.parent.name}/{path.stem}"]
        assert isinstance(entry, dict)
        entry["tensorflow_reads"] = described[str(path)]
        entry["tensorflow_reads"]["by"] = newest.name


def write(args: argparse.Namespace) -> None:
    if args.from_fixtures:
        models_doc = json.loads((FIXTURES / "models.json").read_text())
        _write_rows(models_doc)
        return
    models_doc = {}
    if (FIXTURES / "models").exists():
        shutil.rmtree(FIXTURES / "models")
    for cases_file in sorted(MODELS.glob("tf*/cases.json")):
        producer = cases_file.parent.name
        for case, entry in json.loads(cases_file.read_text()).items():
            model_id = f"{producer}/{case}"
            src = cases_file.parent / f"{case}.tflite"
            if "skipped" not in entry and src.exists():
                dst = FIXTURES / "models" / producer / f"{case}.tflite"
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                entry["path"] = f"models/{producer}/{case}.tflite"
            models_doc[model_id] = entry
    _add_tensorflow_reading(models_doc, args)
    (FIXTURES / "models.json").write_text(json.dumps(models_doc, indent=1, sort_keys=True) + "\n")
    _write_rows(models_doc)


def _write_rows(models_doc: dict[str, object]) -> None:
    rows = []
    for runtime in runtimes():
        path = LOADS / f"{runtime.name}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            row = json.loads(line)
            model_id = "/".join(Path(row.pop("model")).with_suffix("").parts[-2:])
            entry = models_doc.get(model_id)
            # the producer's own interpreter's output; TensorFlow's where that did not run
            # (2.21's tf.lite.Interpreter has no Flex delegate)
            reference = None
            if isinstance(entry, dict):
                reference = entry.get("own_output") or entry.get("expected")
            row.update(
                runtime=runtime.name,
                family=runtime.family,
                runtime_version=runtime.version,
                model=model_id,
                matches_producer=_matches(row.get("output"), reference)
                if row.get("stage") == "invoked"
                else None,
            )
            rows.append(row)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    (FIXTURES / "matrix.jsonl").write_text(
        "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    )
    sys.path.insert(0, str(HERE.parent))
    from fixture_sources import record  # the files' source records (sources.json)

    record(FIXTURES / "models.json")
    record(FIXTURES / "matrix.jsonl")
    print(f"wrote {len(models_doc)} models, {len(rows)} rows to {FIXTURES}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("convert", "load", "write"))
    parser.add_argument("--envs", type=Path, default=DEFAULT_ENVS)
    parser.add_argument("--tf-envs", type=Path, default=DEFAULT_TF_ENVS)
    parser.add_argument("--only", default="")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--from-fixtures", action="store_true")
    args = parser.parse_args()
    {"convert": convert, "load": load, "write": write}[args.command](args)


if __name__ == "__main__":
    main()
