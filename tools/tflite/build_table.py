#!/usr/bin/env python3
"""Build the table of TFLite builtin ops each runtime resolves, from real runtimes.

    python3 tools/tflite/runtimes.py install     # the standalone runtimes' venvs
    python3 tools/tflite/build_table.py probe    # run probe_ops.py in every READY runtime
    python3 tools/tflite/build_table.py custom   # probe_custom_ops.py in every READY runtime
    python3 tools/tflite/build_table.py delegate # probe_delegate_ops.py in every READY runtime
    python3 tools/tflite/build_table.py pack     # -> worker/catalog/data/tflite_runtimes.json

`probe` runs `tools/tflite/probe_ops.py` with each runtime's own Python (see
that file for the method: one synthetic flatbuffer per (code, version), the
runtime's own builder says whether it resolves it) and keeps each runtime's raw
answer in `build/tflite/probes/<runtime>.json` (skipped when present unless
--force). `pack` checks that every runtime's versions of an op are contiguous
(TFLite registers version ranges, so a gap would mean the probe is wrong; a
range need not start at 1: BROADCAST_TO's starts at 2) and writes the compact table the worker ships, sorted and stable.
`probe` also loads one real Select TF ops model (the 2.12 converter's
`flex_det` fixture) to tell whether the runtime links the Flex delegate.

`custom` asks each runtime's default resolver for custom ops by name
(`probe_custom_ops.py`): the candidates are the names in KNOWN_CUSTOM_OPS and
every identifier-like string literal in the runtime's own shared libraries
(a resolver registers a custom op under a string literal), then, in a second
pass, every name any runtime resolved, so each runtime answers for the same
names. `delegate` (`probe_delegate_ops.py`) asks which custom ops the runtime's default
delegate (XNNPACK) runs on small float32 graphs (`delegate_custom_ops`). A name that
crashes the process (a real kernel reading tensors the probe
operator does not have) counts as resolved; the probe restarts after it. Raw
answers: `build/tflite/custom/<runtime>.json`.
Standard library only; Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: provenance
from provenance import source_record  # noqa: E402
from runtimes import DEFAULT_ENVS, DEFAULT_TF_ENVS, REPO, Runtime, python_of, ready, runtimes

PROBES = REPO / "build" / "tflite" / "probes"
PROBE = Path(__file__).resolve().parent / "probe_ops.py"
CUSTOM_PROBE = Path(__file__).resolve().parent / "probe_custom_ops.py"
DELEGATE_PROBE = Path(__file__).resolve().parent / "probe_delegate_ops.py"
LOAD = Path(__file__).resolve().parent / "load_models.py"
CUSTOM = REPO / "build" / "tflite" / "custom"
DELEGATE = REPO / "build" / "tflite" / "delegate"
ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"}
# Custom ops known to be registered somewhere (TensorFlow's own lite/kernels custom ops,
# the ops on-device frameworks such as MediaPipe add), probed in every runtime even where
# its libraries' strings do not name them. Facts, from TFLite's and MediaPipe's sources.
KNOWN_CUSTOM_OPS = (
    "AudioSpectrogram", "Mfcc", "TFLite_Detection_PostProcess",
    "Convolution2DTransposeBias", "MaxPoolingWithArgmax2D", "MaxUnpooling2D",
    "DensifyWeights", "TransformLandmarks", "TransformTensorBilinear",
    "Landmarks2TransformMatrix", "Atan2", "AvgPool3D", "MaxPool3D", "Roll", "IRFFT2D",
    "RFFT2D", "Multinomial", "RandomStandardNormal", "RandomUniform", "HashTableV2",
    "LookupTableFindV2", "LookupTableImportV2", "LookupTableSizeV2", "ParseExample",
    "ParseExampleV2", "SentencepieceTokenizeOp", "TFSentencepieceTokenizeOp",
    "WhitespaceTokenizer", "NumericVerify", "BatchMatMulV2", "ExtractImagePatches",
    "Pooling2DTransposeBias", "TFText>WhitespaceTokenizeWithOffsetsV2", "Sign",
    "AudioMicrofrontend", "Ngrams", "TFLite_Predictions_Collector",
)  # fmt: skip
IDENTIFIER = re.compile(rb"(?<=\0)[A-Z][A-Za-z0-9_>]{2,60}(?=\0)")
LIBRARY_DIRS = ("tensorflow/lite", "tensorflow_core/lite", "tflite_runtime", "ai_edge_litert")
OUTPUT = REPO / "worker" / "catalog" / "data" / "tflite_runtimes.json"
FORMAT = "tfcompat-tflite-runtimes/1"
MAX_CODE = 260
MAX_VERSION = 20


def probe(runtime: Runtime, envs: Path, tf_envs: Path, force: bool) -> None:
    out = PROBES / f"{runtime.name}.json"
    if out.exists() and not force:
        return
    PROBES.mkdir(parents=True, exist_ok=True)
    python = python_of(runtime, envs, tf_envs)
    print(f"probing {runtime.name} with {python}", file=sys.stderr, flush=True)
    result = subprocess.run(
        [str(python), str(PROBE), str(MAX_CODE), str(MAX_VERSION)],
        capture_output=True,
        text=True,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"},
    )
    if result.returncode != 0:
        raise SystemExit(f"{runtime.name}: probe failed:\n{result.stderr[-3000:]}")
    doc = json.loads(result.stdout.strip().splitlines()[-1])
    if not any(doc["ops"].values()):  # a broken install, not a runtime without kernels
        raise SystemExit(f"{runtime.name}: resolved no op at all: {doc['other_errors'].get('0')}")
    doc["runtime"] = runtime._asdict()
    doc["flex"] = _runs_flex(python)
    out.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")


def _version_ranges(name: str, ops: dict[str, list[int]]) -> dict[str, list[int]]:
    """code -> [lowest, highest] version resolved (BROADCAST_TO starts at 2)."""
    table = {}
    for code, versions in ops.items():
        if not versions:
            continue
        if versions != list(range(versions[0], versions[-1] + 1)):
            raise SystemExit(f"{name}: code {code} has non-contiguous versions {versions}")
        table[code] = [versions[0], versions[-1]]
    return table


FLEX_PROBE = "tests/fixtures/tflite/models/tf2.12/flex_det.tflite"


def _runs_flex(python: Path) -> bool:
    """Whether the runtime runs the 2.12 converter's Flex model (a real Select TF ops
    model: FlexMatrixDeterminant): Flex support is measured on that one file, the other
    producers' Flex models stay held out."""
    result = subprocess.run(
        [str(python), str(LOAD), FLEX_PROBE], capture_output=True, text=True, env=ENV, cwd=REPO
    )
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return bool(rows) and rows[0]["stage"] == "invoked"


def _libraries(python: Path) -> list[Path]:
    site = sorted(python.parent.parent.glob("lib/python3*/site-packages"))
    found: list[Path] = []
    for root in site:
        for sub in LIBRARY_DIRS:
            found += sorted((root / sub).rglob("*.so")) if (root / sub).is_dir() else []
    return found


def _candidates(python: Path) -> set[str]:
    names = set(KNOWN_CUSTOM_OPS)
    for library in _libraries(python):
        names.update(m.decode() for m in IDENTIFIER.findall(library.read_bytes()))
    return names


def _probe_custom(runtime: Runtime, python: Path, names: list[str]) -> dict[str, str]:
    """name -> "resolved" | "unresolved" | "crash", restarting after a crash."""
    answers: dict[str, str] = {}
    pending = list(names)
    names_file = CUSTOM / f"{runtime.name}.names"
    while pending:
        names_file.write_text("\n".join(pending) + "\n")
        result = subprocess.run(
            [str(python), str(CUSTOM_PROBE), str(names_file)],
            capture_output=True,
            text=True,
            env=ENV,
        )
        done = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        for row in done:
            answers[row["name"]] = row["outcome"]
        pending = pending[len(done) :]
        if pending:  # the process died on pending[0]
            if not done and result.returncode > 0:  # an exception, not a crash
                raise SystemExit(f"{runtime.name}: custom probe failed:\n{result.stderr[-2000:]}")
            answers[pending[0]] = "crash"
            pending = pending[1:]
    names_file.unlink()
    return answers


def _probe_delegate(python: Path) -> dict[str, str]:
    """name -> "runs" | "refused" | "unresolved": the custom ops the default delegate
    (XNNPACK) runs on float32 tensors (probe_delegate_ops.py)."""
    result = subprocess.run(
        [str(python), str(DELEGATE_PROBE)], capture_output=True, text=True, env=ENV
    )
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    if not rows:
        raise SystemExit(f"delegate probe failed:\n{result.stderr[-2000:]}")
    return {row["name"]: row["outcome"] for row in rows}


def delegate(chosen: list[Runtime], envs: Path, tf_envs: Path, force: bool) -> None:
    DELEGATE.mkdir(parents=True, exist_ok=True)
    for runtime in chosen:
        out = DELEGATE / f"{runtime.name}.json"
        if out.exists() and not force:
            continue
        print(f"delegate ops: {runtime.name}", file=sys.stderr, flush=True)
        found = _probe_delegate(python_of(runtime, envs, tf_envs))
        out.write_text(json.dumps(found, sort_keys=True, indent=1) + "\n")


def _unused_custom_fails_build(python: Path) -> bool:
    """Whether an unresolved custom op no operator uses already fails the build (1.13 and
    1.14 resolve every OperatorCode when the interpreter is built)."""
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "from probe_custom_ops import model_bytes\n"
        "from probe_ops import load_interpreter_class\n"
        "cls, _ = load_interpreter_class()\n"
        "try:\n    cls(model_content=model_bytes('NoSuchCustomOp', used=False))\n"
        "except Exception as exc:\n    print('FAILS', exc)\n"
        "else:\n    print('BUILDS')\n"
    ) % str(CUSTOM_PROBE.parent)
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=ENV)
    lines = [x for x in result.stdout.splitlines() if x.startswith(("FAILS", "BUILDS"))]
    if not lines:
        raise SystemExit(f"unused custom op probe failed:\n{result.stderr[-2000:]}")
    return lines[-1].startswith("FAILS")


def custom(chosen: list[Runtime], envs: Path, tf_envs: Path, force: bool) -> None:
    CUSTOM.mkdir(parents=True, exist_ok=True)
    docs: dict[str, dict[str, object]] = {}
    for runtime in chosen:
        out = CUSTOM / f"{runtime.name}.json"
        python = python_of(runtime, envs, tf_envs)
        if out.exists() and not force:
            docs[runtime.name] = json.loads(out.read_text())
            continue
        names = sorted(_candidates(python))
        print(f"custom ops: {runtime.name}, {len(names)} names", file=sys.stderr, flush=True)
        doc = {
            "answers": _probe_custom(runtime, python, names),
            "unused_fails_build": _unused_custom_fails_build(python),
        }
        out.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
        docs[runtime.name] = doc
    resolved = sorted(
        {n for d in docs.values() for n, a in d["answers"].items() if a != "unresolved"}  # type: ignore[attr-defined]
    )
    for runtime in chosen:  # second pass: every runtime answers for every resolved name
        doc = docs[runtime.name]
        answers = doc["answers"]
        assert isinstance(answers, dict)
        missing = [n for n in resolved if n not in answers]
        if missing:
            python = python_of(runtime, envs, tf_envs)
            answers.update(_probe_custom(runtime, python, missing))
            (CUSTOM / f"{runtime.name}.json").write_text(
                json.dumps(doc, sort_keys=True, indent=1) + "\n"
            )


def _delegate_answers(runtime: Runtime, partial: bool) -> dict[str, str]:
    path = DELEGATE / f"{runtime.name}.json"
    if not path.exists() and partial:
        return {}
    if not path.exists():
        raise SystemExit(f"{runtime.name}: run build_table.py delegate first")
    found: dict[str, str] = json.loads(path.read_text())
    return found


def _custom_row(runtime: Runtime, partial: bool) -> dict[str, object]:
    path = CUSTOM / f"{runtime.name}.json"
    if not path.exists():
        raise SystemExit(f"{runtime.name}: run build_table.py custom first")
    doc = json.loads(path.read_text())
    return {
        # a Flex-named op is the Flex delegate's (`flex`), not a custom op of its own
        "custom_ops": sorted(
            n for n, a in doc["answers"].items() if a != "unresolved" and not n.startswith("Flex")
        ),
        "custom_probed": len(doc["answers"]),
        # run by the default delegate (XNNPACK) when the operator's tensors are float32
        "delegate_custom_ops": sorted(n for n, a in _delegate_answers(runtime, partial).items() if a == "runs"),
        "unused_custom_fails_build": doc["unused_fails_build"],
    }


def pack(partial: bool = False) -> dict[str, object]:
    """Every probed runtime (with `partial`, only those whose custom ops are probed too)."""
    names: dict[str, str] = {}
    rows = []
    for runtime in runtimes():
        path = PROBES / f"{runtime.name}.json"
        if not path.exists() or (partial and not (CUSTOM / f"{runtime.name}.json").exists()):
            continue
        doc = json.loads(path.read_text())
        names.update(doc["names"])  # later (newer) runtimes win
        in_range = [int(c) for c in doc["ops"]]
        rows.append(
            {
                "name": runtime.name,
                "family": runtime.family,
                "version": runtime.version,
                "tensorflow": runtime.tensorflow,
                "module": doc["module"],
                "module_version": doc["module_version"],
                "flex": doc["flex"],
                "max_code": max(in_range),
                "ops": _version_ranges(runtime.name, doc["ops"]),
                **_custom_row(runtime, partial),
            }
        )
    return {
        "format": FORMAT,
        "source": source_record(
            "tools/tflite/build_table.py",
            "probe_ops.py (builtin codes and versions), probe_custom_ops.py (custom ops of the "
            "default resolver), probe_delegate_ops.py (custom ops the default delegate runs) "
            "and the 2.12 converter's Flex model, each in the runtime's own environment",
            [f"{row['family']}=={row['version']}" for row in rows],
        ),
        "names": dict(sorted(names.items(), key=lambda kv: int(kv[0]))),
        "runtimes": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("probe", "custom", "delegate", "pack"))
    parser.add_argument("--envs", type=Path, default=DEFAULT_ENVS)
    parser.add_argument("--tf-envs", type=Path, default=DEFAULT_TF_ENVS)
    parser.add_argument("--only", default="")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--partial", action="store_true", help="pack: skip half-measured ones")
    args = parser.parse_args()
    if args.command == "probe":
        for runtime in runtimes():
            if args.only and runtime.name not in args.only.split(","):
                continue
            if ready(runtime, args.envs, args.tf_envs):
                probe(runtime, args.envs, args.tf_envs, args.force)
            else:
                print(f"{runtime.name}: no READY venv, skipped", file=sys.stderr)
    elif args.command in ("custom", "delegate"):
        chosen = [
            r
            for r in runtimes()
            if (not args.only or r.name in args.only.split(","))
            and ready(r, args.envs, args.tf_envs)
        ]
        if args.command == "custom":
            custom(chosen, args.envs, args.tf_envs, args.force)
        else:
            delegate(chosen, args.envs, args.tf_envs, args.force)
    else:
        doc = pack(args.partial)
        text = json.dumps(doc, indent=None, separators=(",", ":"), sort_keys=False)
        OUTPUT.write_text(text + "\n")
        print(f"wrote {OUTPUT} ({len(text)} bytes, {len(doc['runtimes'])} runtimes)")


if __name__ == "__main__":
    main()
