"""Regenerate worker/proto/*_pb2.py(i) from worker/proto/*.proto.

Uses the protoc bundled with the pinned grpcio-tools (see pyproject's dev
extras), so the output is the same on every machine; tests/proto checks that
the committed modules match a fresh generation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grpc_tools import protoc

PROTO_DIR = Path(__file__).resolve().parent.parent / "worker" / "proto"


def generate(out_dir: Path) -> list[Path]:
    """Write the generated modules for every .proto into out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for proto in sorted(PROTO_DIR.glob("*.proto")):
        status = protoc.main(
            [
                "protoc",
                f"--proto_path={PROTO_DIR}",
                f"--python_out={out_dir}",
                f"--pyi_out={out_dir}",
                str(proto),
            ]
        )
        if status != 0:
            raise SystemExit(f"protoc failed on {proto.name} (exit {status})")
        written += [out_dir / f"{proto.stem}_pb2.py", out_dir / f"{proto.stem}_pb2.pyi"]
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PROTO_DIR, help="output folder")
    args = parser.parse_args()
    for path in generate(args.out):
        print(path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
