"""scikit-learn's estimator checks on the array API's classifiers (``OBSCUREClassifier``,
``ProximalMKLClassifier``; ``predict_proba`` included).

Small epochs keep it fast; ``random_state`` is fixed so that the determinism checks run.
Every expected failure carries its reason; they run in xfail-strict mode, so an entry must be
removed when the library is fixed (the fixes are in the helper's report: all are wording or
convention changes in ``onlinemkl/_validation.check_rows`` and ``onlinemkl/obscure.check_labels`` /
``OBSCUREClassifier.fit``).
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from onlinemkl import OBSCUREClassifier, ProximalMKLClassifier

EXPECTED_FAILED_CHECKS: dict = {}  # every scikit-learn check passes


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS


@parametrize_with_checks(
    [
        OBSCUREClassifier(random_state=0, stage1_epochs=2, stage2_epochs=1),
        OBSCUREClassifier(random_state=0, stage1_epochs=2, stage2_epochs=1, budget=20, eviction="least_impact",
                          p=1.1),
        ProximalMKLClassifier(random_state=0, budget=30),
    ],
    expected_failed_checks=_expected_failed_checks,
    xfail_strict=True,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
