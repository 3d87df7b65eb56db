"""`tfcompat check --json` over every committed fixture artifact, into a folder, so a
refactor of the rules can be shown to change no report (diff -r the folders).

    .venv/bin/python tools/fixture_reports.py OUT_DIR [--fleet FLEET.yaml]

The default fleet is the built-in one (every catalogued release) plus Keras and Python
declarations that reach every Keras rule (Keras 3 wheels, tf-keras, declared Pythons,
custom_objects).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = (".h5", ".keras", ".tflite", ".pb", ".meta", ".index", ".pbtxt")
KERAS_CONSUMERS = """\
  - {name: k3.0-py311, tensorflow: "2.16.2", keras: "3.0", python: "3.11"}
  - {name: k3.15, tensorflow: "2.21.0", keras: "3.15"}
  - {name: tfk-2.16, tensorflow: "2.16.2", keras: "2.16"}
  - {name: tfk-2.21, tensorflow: "2.21.0", keras: "2.21"}
  - {name: k3.6-py310, tensorflow: "2.18.1", keras: "3.6", python: "3.10"}
  - {name: tf2.8-py37, tensorflow: "2.8.4", python: "3.7"}
  - {name: tf1.15-co, tensorflow: "1.15.5", custom_objects: [MyLayer, my_loss]}
"""


def default_fleet(folder: Path) -> Path:
    builtin = (ROOT / "worker" / "fleet" / "data" / "builtin-fleet.yaml").read_text()
    consumers = builtin.split("consumers:\n", 1)[1]
    path = folder / "fleet.yaml"
    path.write_text("consumers:\n" + consumers + KERAS_CONSUMERS)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--fleet", type=Path)
    parser.add_argument("--batch", type=int, default=40)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    paths = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests" / "fixtures").rglob("*")
        if p.is_file() and p.suffix in SUFFIXES
    )
    tfcompat = Path(sys.executable).with_name("tfcompat")
    with tempfile.TemporaryDirectory() as tmp:
        fleet = args.fleet or default_fleet(Path(tmp))
        for start in range(0, len(paths), args.batch):
            batch = paths[start : start + args.batch]
            done = subprocess.run(
                [str(tfcompat), "check", "--json", "--fleet", str(fleet), *batch],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            name = f"batch-{start // args.batch:03d}"
            (args.out / f"{name}.json").write_text(done.stdout)
            (args.out / f"{name}.rc").write_text(f"{done.returncode}\n")
    print(f"{len(paths)} artifacts -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
