"""Hypothesis profiles (docs/testing.md).

"default" (CI and plain runs) is derandomized with no example database: every run draws the
same examples, so a green run stays green and a red one reproduces.  "thorough"
(``HYPOTHESIS_PROFILE=thorough``) draws fresh random examples every run, remembers failing
ones in ``.hypothesis/`` and replays them first, and runs 20 times as many examples: a soak
run that hunts for new counterexamples.

"mutation" (``HYPOTHESIS_PROFILE=mutation``, for mutmut) is "default" at a quarter of the
examples and without shrinking: every mutant runs the properties, so they must be quick, and
a mutant only needs *a* failing example, not the smallest one (shrinking a failure of a
mutant could take longer than mutmut's timeout, which then reports a caught mutant as a
timeout).

A property's own budget is never fixed in the test: ``@settings(max_examples=examples(40))``
(:func:`tests.strategies.examples`) scales 40 by the loaded profile (40 under "default",
800 under "thorough").
"""

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase

settings.register_profile(
    "default",
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    derandomize=False,
    database=DirectoryBasedExampleDatabase(".hypothesis/examples"),
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "mutation",
    parent=settings.get_profile("default"),
    max_examples=25,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
