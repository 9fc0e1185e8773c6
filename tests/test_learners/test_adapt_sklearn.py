"""scikit-learn conformance of AdaptClassifier (check_estimator; binary and multiclass)."""

from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks

from learners import AdaptClassifier


# The checks use fresh data of varying widths, so the high-cost model is fitted inside fit
# (fit_high_cost=True); it declares binary and multiclass support.  No check is skipped.
@parametrize_with_checks(
    [
        AdaptClassifier(
            LogisticRegression(),
            fit_high_cost=True,
            high_cost_proba="fitted",
            n_starts=2,
            max_iter=2,
            inner_iter=20,
        ),
        AdaptClassifier(
            LogisticRegression(),
            method="gbrt",
            fit_high_cost=True,
            high_cost_proba="fitted",
            n_estimators=3,
            max_iter=1,
        ),
    ]
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
