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
timeout).  Under it every test also gets a 30 s ``pytest-timeout`` (the suite's default is
300 s): an endless loop a mutant makes then fails the test before mutmut's CPU limit stops
it, and counts as killed rather than as a timeout.

A property's own budget is never fixed in the test: ``@settings(max_examples=examples(40))``
(:func:`tests.strategies.examples`) scales 40 by the loaded profile (40 under "default",
800 under "thorough").

Native thread pools (OpenBLAS, OpenMP, MKL) are capped at one thread for the suite and the
processes it starts, unless the environment already sets them: the tests fit thousands of
small models, and on a machine of few (or shared) cores OpenBLAS's worker threads spin while
they wait, which made a test file of small ``LogisticRegression`` fits 5x slower here (82 s
vs 16 s wall at load 9; fitted coefficients are bit-identical with one thread).
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # inherited by the worker processes tests start

import pytest  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402  (after the variables above)

threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]), user_api="blas")  # if already loaded
threadpool_limits(int(os.environ["OMP_NUM_THREADS"]), user_api="openmp")

from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from hypothesis.database import DirectoryBasedExampleDatabase  # noqa: E402

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

MUTATION_TIMEOUT_S = 30

_throwaway_postgres = None


def pytest_configure(config: pytest.Config) -> None:
    """A throwaway PostgreSQL server when none is configured (tests/throwaway_postgres.py);
    started before collection, where the PostgreSQL cases decide whether they skip."""
    global _throwaway_postgres
    from tests import throwaway_postgres

    _throwaway_postgres = throwaway_postgres.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    from tests import throwaway_postgres

    throwaway_postgres.stop(_throwaway_postgres)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under the mutation profile a hang fails at 30 s (ahead of any per-file timeout)."""
    if os.environ.get("HYPOTHESIS_PROFILE") == "mutation":
        for item in items:
            item.add_marker(pytest.mark.timeout(MUTATION_TIMEOUT_S), append=False)
