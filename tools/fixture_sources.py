"""The source records of the fixture truth files (tests/fixtures/*/sources.json).

A matrix is one row per line and an artifacts list one entry per item, so their
source records sit beside them in the folder's `sources.json`
(tools/provenance.py `record_fixture_source`). Each tool that writes a truth file calls
`record(path)` after writing it; the tool, what it ran and what it read (consumer
releases, producers, pinned wheels, taken from the file itself) are known here, per file.

    .venv/bin/python tools/fixture_sources.py            rewrite every record, each dated
                                                         as its file's last commit
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from provenance import record_fixture_source, releases_read  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"


def _lines(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    raw = gzip.decompress(raw) if path.suffix == ".gz" else raw
    return [json.loads(line) for line in raw.decode().splitlines() if line.strip()]


def _doc(path: Path) -> Any:
    return json.loads(path.read_text())


def _prefixes(ids: Any) -> list[str]:
    return list(dict.fromkeys(str(i).split("/")[0] for i in ids))


def _tf_matrix(path: Path) -> list[str]:
    rows = _lines(path)
    return [f"consumer tensorflow {v}" for v in releases_read(rows, "consumer_tf_version")] + [
        f"artifacts of {p}" for p in _prefixes(r["artifact"] for r in rows)
    ]


def _tf_artifacts(path: Path) -> list[str]:
    return [f"producer {p}" for p in _prefixes(a["id"] for a in _doc(path))]


def _fixed_for(path: Path) -> list[str]:
    return list(dict.fromkeys(c for v in _doc(path).values() for c in v["for"]))


def _wheels(entries: Any) -> list[str]:
    return list(
        dict.fromkeys(
            f"{e['package']}=={e['version']} ({e.get('wheel') or e['wheel_sha256'][:12]})"
            for e in entries
        )
    )


def _keyed_wheels(path: Path) -> list[str]:
    return _wheels(_doc(path).values())


def _real_matrix(key: str, wheels: Path) -> Callable[[Path], list[str]]:
    def read(path: Path) -> list[str]:
        found = _doc(wheels)
        entries = found.values() if isinstance(found, dict) else found
        consumers = releases_read(_lines(path), key)
        return [f"consumer {c}" for c in consumers] + _wheels(entries)

    return read


SERVE = "tools/fixtures/serve_matrix.py"
ARTIFACTS = "where each artifact comes from: its producer, case, format and load path"
HELD = ARTIFACTS + ", and when it was held out (held_out_after)"
LOADED = "loaded by each consumer release (tools/fixtures/load.py in its own venv)"
# folder/file -> (tool, how, read)
RULES: dict[str, tuple[str, str, Callable[[Path], list[str]]]] = {
    "tf-real/matrix.jsonl.gz": (
        "tools/fixtures/build.py",
        f"each artifact made by its producer release (tools/fixtures/produce.py) and {LOADED}",
        _tf_matrix,
    ),
    "tf-real/artifacts.json": ("tools/fixtures/build.py", ARTIFACTS, _tf_artifacts),
    "tf-real/consumers.json": (
        "tools/fixtures/build.py",
        "each consumer venv's TensorFlow version and GraphDef version",
        lambda p: [v["tf_version"] for v in _doc(p).values()],
    ),
    "tf-real/skipped.json": (
        "tools/fixtures/build.py",
        "the cases each producer did not build, and why",
        lambda p: [f"producer {k}" for k in _doc(p)],
    ),
    "tf-real/fixes.json": (
        "tools/fixtures/verify_fixes.py",
        "each `tfcompat fix` copy of a failing artifact loaded and run by the release it was "
        "fixed for",
        _fixed_for,
    ),
    "tf-real/hazard_probes.jsonl": (
        "tools/fixtures/probe_hazards.py",
        "an input chosen to exercise each at-risk hazard, run by the producer and the consumer",
        lambda p: [f"tensorflow {v}" for v in releases_read(_lines(p), "consumer_tf_version")],
    ),
    # The base set came with its truth, made before this repository's fixture tools: its
    # README (the "tool" named) says how; nothing here rebuilds it.
    "tf-base/matrix.jsonl": (
        "tests/fixtures/tf-base/README.md",
        f"made by real TensorFlow 2.12.1 and 2.21.0 producers, {LOADED.split(' (')[0]}; "
        "delivered with its truth, not rebuilt by a tool here",
        _tf_matrix,
    ),
    "tf-base/artifacts.json": (
        "tests/fixtures/tf-base/README.md",
        ARTIFACTS + "; delivered with its truth, not rebuilt by a tool here",
        _tf_artifacts,
    ),
    "tf-base/consumers.json": (
        "tests/fixtures/tf-base/README.md",
        "each consumer's TensorFlow version and GraphDef version; delivered, not rebuilt here",
        lambda p: [v["tf_version"] for v in _doc(p).values()],
    ),
    "tf-serve/matrix.jsonl.gz": (
        SERVE,
        f"serve cases (tools/fixtures/serve_cases.py) made in each producer release, {LOADED}",
        _tf_matrix,
    ),
    "tf-serve/artifacts.json": (SERVE, HELD, _tf_artifacts),
    "tf-shapes/matrix.jsonl.gz": (
        SERVE,
        f"shape cases (--script shape_cases) made in each producer release, {LOADED}",
        _tf_matrix,
    ),
    "tf-shapes/artifacts.json": (SERVE, HELD, _tf_artifacts),
    "tf-xla/matrix.jsonl.gz": (
        SERVE,
        f"jax models (--script xla_cases, jax and TensorFlow in one venv), {LOADED}",
        _tf_matrix,
    ),
    "tf-xla/artifacts.json": (SERVE, HELD, _tf_artifacts),
    "tf-shapes/shape_fixes.json": (
        "tools/fixtures/verify_shape_fixes.py",
        "each strip_output_shapes copy of a failing graph imported and run by the release it "
        "was fixed for",
        _fixed_for,
    ),
    "real-models/shape_fixes.json": (
        "tools/fixtures/verify_shape_fixes.py",
        "each strip_output_shapes copy of a failing graph imported and run by the release it "
        "was fixed for",
        _fixed_for,
    ),
    "real-models/artifacts.json": (
        "tools/fixtures/real_models.py",
        "where each real model comes from: its package's pinned wheel and SHA-256, its member, "
        "load path and held_out_after",
        lambda p: _wheels(_doc(p)),
    ),
    "real-models/matrix.jsonl.gz": (
        "tools/fixtures/real_models.py",
        f"each real model {LOADED}",
        _real_matrix("consumer_tf_version", FIXTURES / "real-models" / "artifacts.json"),
    ),
    "keras/matrix.jsonl": (
        "tools/keras/build_matrix.py",
        "each Keras file loaded by every consumer (load_model, one interpreter per load, in "
        "each release's or Keras wheel's venv), merged by `write`",
        lambda p: (
            [f"consumer {c}" for c in releases_read(_lines(p), "consumer")]
            + [f"files of {x}" for x in _prefixes(r["model"] for r in _lines(p))]
        ),
    ),
    "keras/models.json": (
        "tools/keras/build_matrix.py",
        "each Keras file `make` wrote: its producer's input and output",
        lambda p: [f"producer {x}" for x in _prefixes(_doc(p))],
    ),
    "keras-apps/matrix.jsonl": (
        "tools/keras/build_applications.py",
        "whole Keras 2 models (applications with weights=None, non-default layer settings) "
        "saved as H5 by each writer, loaded by each Keras 3 wheel's load_model",
        lambda p: (
            [f"consumer {c}" for c in releases_read(_lines(p), "consumer")]
            + [f"files of {x}" for x in _prefixes(r["model"] for r in _lines(p))]
        ),
    ),
    "keras-apps-2/matrix.jsonl": (
        "tools/keras/build_applications.py",
        "whole Keras 2 models of the second round (--round 2: other applications and "
        "settings) saved as H5 by each writer, loaded by each Keras 3 wheel's load_model",
        lambda p: (
            [f"consumer {c}" for c in releases_read(_lines(p), "consumer")]
            + [f"files of {x}" for x in _prefixes(r["model"] for r in _lines(p))]
        ),
    ),
    "keras-names/matrix.jsonl": (
        "tools/keras/build_applications.py",
        "Keras 2 models with one unusual layer or model name each (--round 3) saved as H5 "
        "by each writer, loaded by each Keras 3 wheel's load_model",
        lambda p: (
            [f"consumer {c}" for c in releases_read(_lines(p), "consumer")]
            + [f"files of {x}" for x in _prefixes(r["model"] for r in _lines(p))]
        ),
    ),
    "keras-names-2/matrix.jsonl": (
        "tools/keras/build_applications.py",
        "Keras 2 models whose layer or model names hold '/' (--round 4: other applications "
        "and hand-named models) saved as H5 by each writer, loaded by Keras 3 wheels",
        lambda p: (
            [f"consumer {c}" for c in releases_read(_lines(p), "consumer")]
            + [f"files of {x}" for x in _prefixes(r["model"] for r in _lines(p))]
        ),
    ),
    "keras-rename/record.jsonl": (
        "tools/keras/rename_check.py",
        "'/' models saved as H5 by each writer, renamed there as the rename_layers fix says, "
        "the original and the renamed file loaded by Keras 3 wheels and their outputs compared",
        lambda p: (
            [f"consumer {c}" for c in releases_read(_lines(p), "consumer") if c != "writer"]
            + [f"writer {w}" for w in dict.fromkeys(r["writer"] for r in _lines(p))]
        ),
    ),
    "keras-nested/made.json": (
        "tools/keras/nested_models.py",
        "Keras 2 models used as layers in shapes keras.nested-call was not read on, built "
        "with seeded weights and saved whole as H5 by each writer's tf.keras",
        lambda p: [f"writer {w}" for w in _doc(p)],
    ),
    "keras-nested/record.jsonl": (
        "tools/keras/nested_models.py",
        "each keras-nested file loaded by Keras 3 wheels (load_model, compile=False, stopped "
        "after 10 s) and run on a fixed input",
        lambda p: (
            [f"consumer {c}" for c in releases_read(_lines(p), "consumer")]
            + [f"writer {w}" for w in dict.fromkeys(r["writer"] for r in _lines(p))]
        ),
    ),
    "keras-reduction/models.json": (
        "tools/keras/reduction_models.py",
        "tiny Keras models compiled with loss objects of several reductions, a loss by name, "
        "per-output losses and metric objects, saved as H5 (and .keras from 2.12) by each "
        "producer's tf.keras",
        lambda p: [
            f"producer tensorflow {t}"
            for t in dict.fromkeys(e["tensorflow"] for e in _doc(p).values())
        ],
    ),
    "keras-reduction/matrix.jsonl": (
        "tools/keras/reduction_models.py",
        "each keras-reduction file loaded by Keras 3 wheels and a Keras 2 control as "
        "build_matrix.py loads its compiled files (load_model compiling, then compile=False)",
        lambda p: (
            [f"consumer {c}" for c in releases_read(_lines(p), "consumer")]
            + [f"files of {x}" for x in _prefixes(r["model"] for r in _lines(p))]
        ),
    ),
    "keras-unbuilt/models.json": (
        "tools/keras/unbuilt_models.py",
        "Sequential models with and without a declared input, built with fixed seeds, run "
        "once (predict, or compile and fit) and saved as H5 by each producer's tf.keras",
        lambda p: [f"producer {x}" for x in _prefixes(_doc(p))],
    ),
    "keras-unbuilt/matrix.jsonl": (
        "tools/keras/unbuilt_models.py",
        "each keras-unbuilt file loaded by each consumer (load_model, compile=False) and run "
        "on its input, as build_matrix.py loads",
        lambda p: (
            [f"consumer {c}" for c in releases_read(_lines(p), "consumer")]
            + [f"files of {x}" for x in _prefixes(r["model"] for r in _lines(p))]
        ),
    ),
    "keras-real/artifacts.json": (
        "tools/keras/real_models.py",
        "where each real Keras file comes from (pinned wheel, SHA-256, member) and whether it "
        "is held out",
        _keyed_wheels,
    ),
    "keras-real/matrix.jsonl": (
        "tools/keras/real_models.py",
        "each real Keras file loaded by every consumer as build_matrix.py loads (compile=True, "
        "a request of zeros)",
        _real_matrix("consumer", FIXTURES / "keras-real" / "artifacts.json"),
    ),
    "tflite/matrix.jsonl": (
        "tools/tflite/build_matrix.py",
        "each converter model loaded and invoked by every runtime (tools/tflite/load_models.py "
        "in the runtime's own venv)",
        lambda p: releases_read(_lines(p), "runtime"),
    ),
    "tflite/models.json": (
        "tools/tflite/build_matrix.py",
        "each model a converter wrote (tools/tflite/make_models.py, one venv per release): its "
        "input and the producer's output",
        lambda p: [f"converter of {x}" for x in _prefixes(_doc(p))],
    ),
    "tflite-features/matrix.jsonl": (
        "tools/tflite/build_features.py",
        "each file-feature model built, allocated and invoked by every runtime "
        "(tools/tflite/probe_features.py in the runtime's own venv)",
        lambda p: releases_read(_lines(p), "runtime"),
    ),
    "tflite-features/types.jsonl": (
        "tools/tflite/build_features.py",
        "one minimal flatbuffer per tensor type built and allocated by every runtime "
        "(tools/tflite/probe_features.py --types in the runtime's own venv)",
        lambda p: releases_read(_lines(p), "runtime"),
    ),
    "tflite-features/models.json": (
        "tools/tflite/build_features.py",
        "each file-feature model a converter wrote (tools/tflite/make_feature_models.py, one "
        "venv per release): its input, the producer's output, the features TensorFlow reads",
        lambda p: [f"converter of {x}" for x in _prefixes(_doc(p))],
    ),
    "tflite-real/models.json": (
        "tools/tflite/real_models.py",
        "where each real .tflite comes from (pinned wheel, SHA-256, member) and whether it is "
        "held out",
        _keyed_wheels,
    ),
    "tf-dtypes/matrix.jsonl.gz": (
        SERVE,
        f"data-type cases (--script dtype_cases) made in each producer release, {LOADED}",
        _tf_matrix,
    ),
    "tf-dtypes/artifacts.json": (SERVE, HELD, _tf_artifacts),
    "tf-devices/matrix.jsonl.gz": (
        SERVE,
        f"device-pin cases (--script device_cases) made in each producer release, {LOADED}",
        _tf_matrix,
    ),
    "tf-devices/artifacts.json": (SERVE, HELD, _tf_artifacts),
    "tf-signatures/matrix.jsonl.gz": (
        SERVE,
        "tag and signature cases (--script signature_cases) made in each producer release, "
        f"{LOADED}",
        _tf_matrix,
    ),
    "tf-signatures/artifacts.json": (SERVE, HELD, _tf_artifacts),
    "tf-assets/matrix.jsonl.gz": (
        SERVE,
        "own-file cases (--script asset_cases: assets, init-op assertions, tables) made in "
        f"each producer release, {LOADED}",
        _tf_matrix,
    ),
    "tf-assets/artifacts.json": (SERVE, HELD, _tf_artifacts),
    "tf-bites/matrix.jsonl.gz": (
        SERVE,
        "late-bite cases (--script bite_cases: a missing kernel, op or attr on the request "
        f"path, in a function body, in an unused branch) made in each producer release, {LOADED}",
        _tf_matrix,
    ),
    "tf-bites/artifacts.json": (SERVE, HELD, _tf_artifacts),
    "keras3-export/matrix.jsonl.gz": (
        SERVE,
        "Keras 3 model.export cases (--script keras_export_cases) made in each producer "
        f"release with its Keras, {LOADED}",
        _tf_matrix,
    ),
    "keras3-export/artifacts.json": (SERVE, HELD, _tf_artifacts),
    "tflite-real/matrix.jsonl": (
        "tools/tflite/real_models.py",
        "each real .tflite loaded and invoked by every runtime (load_real.py in the runtime's "
        "own venv)",
        _real_matrix("runtime", FIXTURES / "tflite-real" / "models.json"),
    ),
    "foreign/keras_architecture.json": (
        "tools/fixtures/foreign_formats.py",
        "a Keras 3 model's to_json() (numpy backend)",
        lambda p: ["keras (the version foreign_formats.py's venv installs)"],
    ),
}


def record(path: Path, date: str | None = None) -> None:
    """Write the source record of a truth file just written (date: today unless given)."""
    path = Path(path).resolve()
    key = f"{path.parent.name}/{path.name}"
    if key not in RULES:
        raise KeyError(f"{key}: no source rule in tools/fixture_sources.py")
    tool, how, read = RULES[key]
    record_fixture_source(path, tool, how, read(path), date)


def last_commit_date(path: Path) -> str:
    return subprocess.run(
        ["git", "log", "-1", "--format=%ad", "--date=short", "--", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def main() -> int:
    for key in RULES:
        path = FIXTURES / key
        record(path, last_commit_date(path))
    print(f"{len(RULES)} records in tests/fixtures/*/sources.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
