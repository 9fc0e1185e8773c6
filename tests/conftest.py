"""Hypothesis profiles.

"default" (CI and plain runs) draws the same examples every run (derandomized), so a green
run stays green; "thorough" (HYPOTHESIS_PROFILE=thorough) draws 3,000 fresh random examples
per property for soak runs that hunt for new counterexamples.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
