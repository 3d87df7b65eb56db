"""The `tfcompat` command: a thin layer over the readers, rules, catalog and fleet.

Exit statuses (the CLI contract): 0 every consumer loads every artifact, 1 some
consumer cannot, 2 invalid input or usage. Errors are one line on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from worker.cli.errors import UsageError, _fail
from worker.cli.parser import build_parser
from worker.errors import TfcompatError

__all__ = ["UsageError", "build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from worker.logs import configure_logging, quiet_start

    quiet_start()
    configure_logging("WARNING", "plain")  # stdout stays the command's own output
    try:
        status: int = args.func(args)
    except TfcompatError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return status


if __name__ == "__main__":
    sys.exit(main())
