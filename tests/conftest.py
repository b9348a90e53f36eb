"""Shared test configuration: Hypothesis profiles.

Profiles (select with HYPOTHESIS_PROFILE; CI=true selects ``ci``):

- ``dev`` (default): quick local runs.
- ``ci``: bounded so the whole suite stays well inside CI's limit on 2 cores.
- ``thorough``: many more examples and longer state-machine runs, for a night run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev",
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    stateful_step_count=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
_default = "ci" if os.environ.get("CI") else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default))
