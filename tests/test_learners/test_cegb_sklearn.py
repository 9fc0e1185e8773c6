"""scikit-learn conformance of the budgeted classifiers (check_estimator, every check)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from learners import CEGBClassifier, GreedyMiserClassifier


# No check is skipped or expected to fail.  A split penalty is on; feature costs cannot be,
# as their length must match the checks' varying column counts.  Checks that need pandas or
# the array API are skipped by scikit-learn itself when those are not installed.
@parametrize_with_checks(
    [
        CEGBClassifier(tradeoff=0.01, split_cost=1e-3, n_estimators=20),
        GreedyMiserClassifier(split_cost=1e-3, n_estimators=20),
    ]
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
