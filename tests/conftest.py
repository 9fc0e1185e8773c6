"""Hypothesis profiles: "default" for CI, "thorough" (HYPOTHESIS_PROFILE=thorough) for soak runs."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
