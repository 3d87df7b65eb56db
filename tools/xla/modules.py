"""Write the StableHLO modules `measure.py` feeds to XlaCallModule (run under a jaxlib).

    $XLAENVS/jaxnew/bin/python tools/xla/modules.py --out DIR

DIR/index.json lists every module: {"name", "file", "target", "platform_arg"}; the
files are StableHLO portable artifacts (what jax's native serialization writes into
the `module` attr), serialized by this jaxlib at the `target` StableHLO version. Every
module doubles its one f32[2] argument: `add_*` with one `add`, `rich_*` also through
the math ops jax lowers to (RICH_OPS, results multiplied by 0); a `platform_arg` module
takes the platform index first, as jax writes it for several platforms. `versions.json` names every
target stamped (this jaxlib's minimum to its current, minors and patches), so
`measure.py` can find the newest one each release reads back.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaxlib.mlir._mlir_libs import _stablehlo as stablehlo

BODY = """module @m attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main({args}) -> (tensor<2xf32>) {{
    %0 = stablehlo.add %x, %x : tensor<2xf32>
    return %0 : tensor<2xf32>
  }}
}}"""


def module_text(platform_arg: bool) -> str:
    args = "%x: tensor<2xf32>"
    if platform_arg:
        args = "%platform: tensor<i32>, " + args
    return BODY.format(args=args)


# The elementwise ops jax lowers math to, whose VHLO encodings changed (StableHLO 1.9 and
# later gave them a result_accuracy attr): a module stamped past a release's own
# StableHLO carries them in encodings it cannot read, where a bare `add` still reads.
RICH_OPS = (
    "sine",
    "cosine",
    "tanh",
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "logistic",
    "sqrt",
    "rsqrt",
    "cbrt",
)


def rich_text() -> str:
    """A module using every op of RICH_OPS, still returning x + x (the rest times 0)."""
    lines = [f"    %{op} = stablehlo.{op} %x : tensor<2xf32>" for op in RICH_OPS]
    total = "%x"
    for n, op in enumerate(RICH_OPS):
        lines.append(f"    %s{n} = stablehlo.add {total}, %{op} : tensor<2xf32>")
        total = f"%s{n}"
    lines += [
        "    %zero = stablehlo.constant dense<0.0> : tensor<2xf32>",
        f"    %dead = stablehlo.multiply {total}, %zero : tensor<2xf32>",
        "    %twice = stablehlo.add %x, %x : tensor<2xf32>",
        "    %0 = stablehlo.add %twice, %dead : tensor<2xf32>",
    ]
    body = "\n".join(lines)
    return (
        "module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
        "  func.func public @main(%x: tensor<2xf32>) -> (tensor<2xf32>) {\n"
        f"{body}\n    return %0 : tensor<2xf32>\n  }}\n}}"
    )


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def targets() -> list[str]:
    """Versions to stamp, from this jaxlib's minimum to its current one.

    The serializer stamps the target it is given (the nearest VHLO version it knows
    decides the encoding) and a reader compares the stamp with its own current version,
    so every minor up to the current one, with patches 0-99, brackets each release."""
    low, high = (
        version_key(stablehlo.get_minimum_version()),
        version_key(stablehlo.get_current_version()),
    )
    found = []
    for major in range(low[0], high[0] + 1):
        for minor in range(0, 40):
            for patch in range(0, 100):
                v = (major, minor, patch)
                if low <= v <= high:
                    found.append(".".join(str(n) for n in v))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    index = []
    versions = targets()
    for target in versions:
        for platform_arg in (False, True):
            if platform_arg and target != versions[0]:
                continue
            name = f"add_{target}" + ("_platform_arg" if platform_arg else "")
            if not platform_arg:
                rich = stablehlo.serialize_portable_artifact_str(rich_text(), target)
                (out / f"rich_{target}.mlirbc").write_bytes(rich)
                index.append(
                    {
                        "name": f"rich_{target}",
                        "file": f"rich_{target}.mlirbc",
                        "target": target,
                        "platform_arg": False,
                    }
                )
            data = stablehlo.serialize_portable_artifact_str(module_text(platform_arg), target)
            (out / f"{name}.mlirbc").write_bytes(data)
            index.append(
                {
                    "name": name,
                    "file": f"{name}.mlirbc",
                    "target": target,
                    "platform_arg": platform_arg,
                }
            )
    # MLIR text, as XlaCallModule versions 1-3 carried it (2.12 reads no bytecode)
    (out / "add_text.mlir").write_bytes(module_text(False).encode())
    index.append(
        {"name": "add_text", "file": "add_text.mlir", "target": None, "platform_arg": False}
    )
    (out / "index.json").write_text(json.dumps(index, indent=1))
    (out / "versions.json").write_text(
        json.dumps(
            {
                "jaxlib_current": stablehlo.get_current_version(),
                "jaxlib_minimum": stablehlo.get_minimum_version(),
                "targets": versions,
            }
        )
    )
    print(f"{len(index)} modules, targets {versions[0]}..{versions[-1]} ({len(versions)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
