"""`python -m worker.cli`: the same as the `tfcompat` command."""

import sys

from worker.cli import main

sys.exit(main())
