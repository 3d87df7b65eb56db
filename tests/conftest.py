"""Suite-wide test settings."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Property tests judge correctness, not speed (timings belong in bench/): no
# per-example deadline, so a busy 2-core CI machine cannot fail them. In CI the
# examples are derived deterministically, so a red run can be re-run as it was.
settings.register_profile(
    "tfcompat",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
settings.load_profile("tfcompat")
