"""`tfcompat worker` whose pool processes die as they start, as they do when the
machine cannot give them memory: run as `python -m tests.pipeline.dying_pool worker ...`."""

from __future__ import annotations

import os
import sys
from typing import Any

from celery import signals


@signals.worker_process_init.connect
def _die(**_: Any) -> None:
    os._exit(1)


if __name__ == "__main__":
    from worker.cli import main

    sys.exit(main(sys.argv[1:]))
