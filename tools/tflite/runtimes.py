#!/usr/bin/env python3
"""The TFLite runtimes we measure, and how each is installed.

Three families of interpreter run TFLite flatbuffers:
- `tensorflow` (`tf.lite.Interpreter` inside a full TensorFlow wheel; it links the
  Select TF ops (Flex) delegate);
- `tflite-runtime` (the standalone interpreter wheel, 2.7.0 to 2.14.0 on PyPI; no
  Flex);
- `ai-edge-litert` (LiteRT, the standalone interpreter's successor, 1.0.1 on).

TensorFlow venvs are reused from a directory of READY venvs (the ones
`tools/build_registries.py` makes, default $TFENVS); the standalone
runtimes get throwaway venvs under `--envs` (default build/tflite/envs).

    python3 tools/tflite/runtimes.py install            # every standalone runtime
    python3 tools/tflite/runtimes.py list               # name, python path, READY or not

Recipes are what worked (Linux x86_64, December 2026): tflite-runtime wheels for
Python 3.9 cover 2.7.0-2.14.0 (3.11 has 2.14.0 only); they were built against
numpy 1.x, hence `numpy<2`. LiteRT wheels exist for 3.11; LiteRT 1.x also needs
`numpy<2` (with numpy 2 every interpreter call fails with "SystemError: <built-in
method CreateWrapperFromBuffer ...> returned a result with an exception set").
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ENVS = REPO / "build" / "tflite" / "envs"
DEFAULT_TF_ENVS = Path(os.environ.get("TFENVS", ".cache/tfenvs"))


class Runtime(NamedTuple):
    name: str  # "tensorflow-2.15.1", "tflite-runtime-2.14.0", "ai-edge-litert-1.2.0"
    family: str  # "tensorflow" | "tflite-runtime" | "ai-edge-litert"
    version: str  # the package's own version
    tensorflow: str  # the TensorFlow release whose TFLite it ships ("" when unknown)
    python: str  # interpreter minor version for a new venv
    requirements: tuple[str, ...]


# every release tools/build_registries.py installs (its RECIPES): one with an op registry
TENSORFLOW = (
    "1.13.2", "1.14.0", "1.15.5", "2.0.4", "2.1.4", "2.2.3", "2.3.4", "2.4.4", "2.5.3",
    "2.6.5", "2.7.4", "2.8.4", "2.9.3", "2.10.1", "2.11.0", "2.12.1", "2.13.1", "2.14.1",
    "2.15.1", "2.16.2", "2.17.1", "2.18.1", "2.19.1", "2.20.0", "2.21.0",
)  # fmt: skip
TFLITE_RUNTIME = ("2.7.0", "2.8.0", "2.9.1", "2.10.0", "2.11.0", "2.12.0", "2.13.0", "2.14.0")
LITERT = (
    "1.0.0", "1.0.1", "1.1.0", "1.1.1", "1.1.2", "1.2.0", "1.3.0", "1.4.0",
    "2.0.2", "2.0.3", "2.1.0", "2.1.1", "2.1.2", "2.1.3", "2.1.4", "2.1.5", "2.1.6",
    "2.2.0", "2.3.0",
)  # fmt: skip


def runtimes() -> list[Runtime]:
    found = [Runtime(f"tensorflow-{v}", "tensorflow", v, v, "", ()) for v in TENSORFLOW]
    found += [
        Runtime(
            f"tflite-runtime-{v}",
            "tflite-runtime",
            v,
            v,
            "3.9",
            (f"tflite-runtime=={v}", "numpy<2"),
        )
        for v in TFLITE_RUNTIME
    ]
    found += [
        Runtime(
            f"ai-edge-litert-{v}",
            "ai-edge-litert",
            v,
            "",
            "3.11",
            (f"ai-edge-litert=={v}",) + (("numpy<2",) if v.startswith("1.") else ()),
        )
        for v in LITERT
    ]
    return found


def find_python(minor: str) -> str:
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = []
    if root.is_dir():
        for d in root.iterdir():
            m = re.fullmatch(re.escape(minor) + r"\.(\d+)", d.name)
            if m and (d / "bin" / "python").exists():
                candidates.append((int(m.group(1)), str(d / "bin" / "python")))
    if candidates:
        return max(candidates)[1]
    found = shutil.which("python" + minor)
    if not found:
        raise SystemExit(f"no Python {minor} found")
    return found


def python_of(runtime: Runtime, envs: Path, tf_envs: Path) -> Path:
    """Absolute: the drivers run it from tools/tflite, not from where they were called."""
    if runtime.family == "tensorflow":
        return (tf_envs / runtime.version / "bin" / "python").absolute()
    return (envs / runtime.name / "bin" / "python").absolute()


def ready(runtime: Runtime, envs: Path, tf_envs: Path) -> bool:
    root = python_of(runtime, envs, tf_envs).parent.parent
    return (root / "READY").exists()


def install(runtime: Runtime, envs: Path) -> None:
    venv = envs / runtime.name
    if (venv / "READY").exists():
        return
    if venv.exists():
        shutil.rmtree(venv)
    envs.mkdir(parents=True, exist_ok=True)
    log = envs / f"{runtime.name}.log"
    with log.open("w") as out:
        subprocess.run([find_python(runtime.python), "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-cache-dir"]
        code = subprocess.run(
            [*pip, *runtime.requirements], stdout=out, stderr=subprocess.STDOUT
        ).returncode
    if code != 0:
        raise SystemExit(f"{runtime.name}: pip failed, see {log}")
    (venv / "READY").write_text(str(venv / "bin" / "python") + "\n")
    print(f"{runtime.name}: ready", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("install", "list"))
    parser.add_argument("--envs", type=Path, default=DEFAULT_ENVS)
    parser.add_argument("--tf-envs", type=Path, default=DEFAULT_TF_ENVS)
    parser.add_argument("--only", default="", help="comma-separated runtime names")
    args = parser.parse_args()
    chosen = [r for r in runtimes() if not args.only or r.name in args.only.split(",")]
    for runtime in chosen:
        if args.command == "install" and runtime.family != "tensorflow":
            install(runtime, args.envs)
        state = "READY" if ready(runtime, args.envs, args.tf_envs) else "missing"
        print(f"{runtime.name}\t{python_of(runtime, args.envs, args.tf_envs)}\t{state}")


if __name__ == "__main__":
    main()
