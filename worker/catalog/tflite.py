"""The TFLite runtimes tfcompat has measured, and what they run.

Three data files ship with the package:
- `data/tflite_runtimes.json`: for each of 52 real runtimes (`tf.lite.Interpreter`
  of the 25 TensorFlow releases with an op registry, the standalone
  `tflite-runtime`, LiteRT `ai-edge-litert`) the builtin codes and op versions its
  resolver has, its last builtin code, the custom ops its default resolver
  registers and its default delegate runs, and whether Select TF ops run
  (tools/tflite/build_table.py, from one-op probes);
- `data/tflite_kernels.json`: kernel changes no op version shows, with the
  releases of each family measured with and without them, and the op versions
  TFLite's own versioning gives some tensor signatures;
- `data/tflite_features.json`: per runtime, what it does with a file that uses a
  file feature (buffers after the flatbuffer, SignatureDefs, sparse tensors, each
  tensor type, ...), measured on real files (tools/tflite/build_features.py);
- `data/tflite_kernel_changes.json.gz`: per runtime, the (builtin, type variant) pairs
  whose answers differ from the newest runtime's beyond the stated tolerance, on
  the same single-op files and inputs (tools/tflite/kernel_sweep.py).

All are read on first use. A family and version without a measured table gets
a `TfliteInterpreter` without one: its verdicts are unknown, never a guessed
yes. "2.14" names the newest measured 2.14.x; "2.14.0" that release exactly.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from worker.errors import UnknownRelease
from worker.model.consumer import Consumer
from worker.model.findings import SeenOnly
from worker.model.tflite import (
    LITERT,
    TENSORFLOW,
    TFLITE_RUNTIME,
    KernelChange,
    RequiredVersion,
    ResultChange,
    TfliteInterpreter,
    TfliteRuntime,
)

DATA = Path(__file__).with_name("data")
RUNTIMES_FILE = "tflite_runtimes.json"
KERNELS_FILE = "tflite_kernels.json"
FEATURES_FILE = "tflite_features.json"
RESULTS_FILE = "tflite_kernel_changes.json.gz"

FAMILIES = {"tflite": TFLITE_RUNTIME, "litert": LITERT}
"""How fleets and the command line name the standalone runtimes (`tflite: "2.14"`)."""
SHORT_NAMES = {TFLITE_RUNTIME: "tflite", LITERT: "litert", TENSORFLOW: "tf"}


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise UnknownRelease(f"'{text}' is not a version number") from None


def _has(bounds: Mapping[str, Any] | None, version: str) -> bool | None:
    """Whether a runtime of this version has a kernel change: from `from` on yes, up to
    `lacks_through` no, in between (and for a family without bounds) unknown."""
    if not bounds:
        return None
    v = Version(version)
    if bounds.get("from") is not None and v >= Version(bounds["from"]):
        return True
    if bounds.get("lacks_through") is not None and v <= Version(bounds["lacks_through"]):
        return False
    return None


class TfliteCatalog:
    """Measured runtimes by family, oldest first."""

    def __init__(
        self,
        runtimes_doc: Mapping[str, Any],
        kernels_doc: Mapping[str, Any],
        digest: str = "",
        features_doc: Mapping[str, Any] | None = None,
        results_doc: Mapping[str, Any] | None = None,
    ) -> None:
        """`digest` names the data's contents (default: computed from the documents)."""
        features_doc = features_doc or {}
        measured_features = features_doc.get("runtimes", {})
        feature_errors = features_doc.get("errors", {})
        if not digest:
            text = json.dumps(
                [runtimes_doc, kernels_doc, features_doc, results_doc or {}], sort_keys=True
            )
            digest = hashlib.sha256(text.encode()).hexdigest()
        changes = [
            (
                KernelChange(
                    op=k["op"],
                    feature=k["feature"],
                    without=k["without"],
                    convert_with=k.get("convert_with"),
                    evidence=k["evidence"],
                ),
                k.get("has") or {},
            )
            for k in kernels_doc.get("kernel_changes", [])
        ]
        required = tuple(
            RequiredVersion(
                r["op"],
                r["feature"],
                int(r["version"]),
                SeenOnly(r["seen_in"]) if r.get("seen_only") else None,
            )
            for r in kernels_doc.get("required_versions", [])
        )
        results = result_changes(results_doc or {})
        swept = results_measured(results_doc or {})
        runtimes = []
        for row in runtimes_doc.get("runtimes", []):
            family, version = row["family"], row["version"]
            fingerprint = hashlib.sha256(f"{digest}:{row['name']}".encode()).hexdigest()
            runtimes.append(
                TfliteRuntime(
                    name=row["name"],
                    family=family,
                    version=version,
                    tensorflow=row.get("tensorflow") or "",
                    flex=bool(row["flex"]),
                    max_code=int(row["max_code"]),
                    ops={int(code): (lo, hi) for code, (lo, hi) in row["ops"].items()},
                    kernels=tuple(
                        (change, _has(has.get(family), version)) for change, has in changes
                    ),
                    required_versions=required,
                    fingerprint=fingerprint,
                    custom_ops=frozenset(row["custom_ops"]) if "custom_ops" in row else None,
                    unused_custom_fails_build=bool(row.get("unused_custom_fails_build")),
                    delegate_custom_ops=frozenset(row.get("delegate_custom_ops", ())),
                    features=dict(measured_features.get(row["name"], {})),
                    feature_errors=dict(feature_errors.get(row["name"], {})),
                    result_changes=results.get(row["name"], {}),
                    results_measured=swept.get(row["name"], frozenset()),
                )
            )
        self.runtimes: tuple[TfliteRuntime, ...] = tuple(
            sorted(runtimes, key=lambda r: (r.family, Version(r.version)))
        )

    def family(self, family: str) -> list[TfliteRuntime]:
        return [r for r in self.runtimes if r.family == family]

    def interpreter(self, family: str, spec: str) -> TfliteInterpreter:
        """The runtime of `family` that `spec` names, with its table when measured. A
        TensorFlow patch release without a table of its own gets its minor's newest one,
        as it gets its minor's op registry."""
        text = spec.strip().removeprefix("v")
        wanted = _version(text)
        measured = self.family(family)
        if len(text.split(".")) >= 3:
            table = next((r for r in measured if Version(r.version) == wanted), None)
            if table is None and family == TENSORFLOW:
                table = self._same_minor(family, wanted)
            newer = tuple(r for r in measured if Version(r.version) > wanted)
            return TfliteInterpreter(family, text, table, newer, self.runtimes)
        table = self._same_minor(family, wanted)
        version = table.version if table else text
        newer = tuple(r for r in measured if Version(r.version) > Version(version))
        return TfliteInterpreter(family, version, table, newer, self.runtimes)

    def _same_minor(self, family: str, wanted: Version) -> TfliteRuntime | None:
        same = [
            r
            for r in self.family(family)
            if (Version(r.version).major, Version(r.version).minor) == (wanted.major, wanted.minor)
        ]
        return same[-1] if same else None

    def consumer(self, short: str, spec: str, name: str | None = None) -> Consumer:
        """A standalone TFLite runtime as a consumer (`tflite==2.14`, `litert==1.4`)."""
        family = FAMILIES[short]
        interpreter = self.interpreter(family, spec)
        return Consumer(
            name=name or f"{short}-{interpreter.version}",
            tensorflow=None,
            graph_def_version=0,
            tflite=interpreter,
        )

    def measured(self, family: str) -> list[str]:
        return [r.version for r in self.family(family)]


def _tolerance(tolerance: Mapping[str, Any], kind: str) -> str:
    if kind == "float_ulps":
        return f"{tolerance.get('float_ulps')} ULPs of the output's largest magnitude"
    if kind == "integers":
        return "none (an integer output without a scale must be equal)"
    steps = tolerance.get("quantized_steps")
    return f"{steps} quantised step{'s' if steps != 1 else ''}"


def _distance(value: object, kind: str) -> str:
    if not isinstance(value, int | float):
        return str(value)
    unit = {"float_ulps": "ULPs", "integers": "apart"}.get(kind, "quantised steps")
    return f"{value:g} {unit}"


def result_changes(doc: Mapping[str, Any]) -> dict[str, dict[tuple[str, str], ResultChange]]:
    """runtime name -> (builtin, variant) -> its measured change, from the sweep's table."""
    tolerance = doc.get("tolerance", {})
    measured = doc.get("measured", {})
    found: dict[str, dict[tuple[str, str], ResultChange]] = {}
    for row in doc.get("changes", []):
        ev = row["evidence"]
        found.setdefault(row["runtime"], {})[(row["op"], row["variant"])] = ResultChange(
            op=row["op"],
            variant=row["variant"],
            reference=row["reference"],
            classes=tuple(row["classes"]),
            met_on=row["met_on"],
            evidence_class=ev["class"],
            got=ev["got"],
            expected=ev["expected"],
            distance=_distance(ev["distance"], ev["kind"]),
            tolerance=_tolerance(tolerance, ev["kind"]),
            producer=ev["producer"],
            runtimes=len(measured.get(row["op"], {}).get(row["variant"], ())),
            remeasure=doc.get("remeasure", "").format(runtime=row["runtime"]),
        )
    return found


def results_measured(doc: Mapping[str, Any]) -> dict[str, frozenset[tuple[str, str]]]:
    """runtime name -> the (builtin, variant) pairs the sweep ran in it and got answers."""
    found: dict[str, set[tuple[str, str]]] = {}
    for op, variants in doc.get("measured", {}).items():
        for variant, names in variants.items():
            for name in names:
                found.setdefault(name, set()).add((op, variant))
    return {name: frozenset(pairs) for name, pairs in found.items()}


def _read(name: str) -> bytes:
    try:
        return (DATA / name).read_bytes()
    except FileNotFoundError:
        return b"{}"


@functools.cache
def load_tflite_catalog() -> TfliteCatalog:
    """The measured runtimes shipped with the package, read once per process (on the
    first consumer built, or the first .tflite checked)."""
    runtimes, kernels = _read(RUNTIMES_FILE), _read(KERNELS_FILE)
    features, results = _read(FEATURES_FILE), _read(RESULTS_FILE)
    results = gzip.decompress(results) if results.startswith(b"\x1f\x8b") else results
    digest = hashlib.sha256(
        runtimes + b"\0" + kernels + b"\0" + features + b"\0" + results
    ).hexdigest()
    return TfliteCatalog(
        json.loads(runtimes), json.loads(kernels), digest, json.loads(features), json.loads(results)
    )
