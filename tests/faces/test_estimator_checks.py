"""Every face under its ecosystem's own estimator checks, in one place.

scikit-learn's ``parametrize_with_checks`` runs on each scikit-learn face (small epochs and a
fixed ``random_state`` keep it fast and let the determinism checks run), and river's
``checks.yield_checks`` on each river face and on :class:`onlinemkl.river.Guard` (every parameter
set of its ``_unit_test_params``).  Every check passes: an entry in :data:`EXPECTED_FAILED_CHECKS`
needs a reason a reviewer would accept, and the suite is xfail-strict, so an entry must go
once the library is fixed.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

import onlinemkl
import onlinemkl.river
from _river_checks import river_check_test

#: ``{check name: reason}`` of the scikit-learn checks a face is known to fail (none).
EXPECTED_FAILED_CHECKS: dict = {}

SKLEARN_FACES = [
    onlinemkl.OBSCUREClassifier(random_state=0, stage1_epochs=3, stage2_epochs=1),
    onlinemkl.OBSCUREClassifier(random_state=0, stage1_epochs=2, stage2_epochs=1, budget=20,
                                eviction="least_impact", p=1.1),
    onlinemkl.ProximalMKLClassifier(random_state=0, budget=30),
    onlinemkl.ProximalMKLClassifier(random_state=0, n_epochs=2),
    onlinemkl.ProximalMKLClassifier(random_state=0, loss="logistic", regularizer="l21", lam=1e-3, budget=20,
                                    eviction="least_impact", average=True, explicit_groups=(None,)),
    onlinemkl.ProximalMKLRegressor(random_state=0, n_epochs=2),
    onlinemkl.ProximalMKLRegressor(random_state=0, loss="epsilon_insensitive", budget=20, explicit_groups=(None,),
                                   average=False),
    onlinemkl.PolyMKLRegressor(degree=2, n_iter=5, random_state=0),
    onlinemkl.PolyMKLRegressor(degree=2, n_iter=5, solver="ucd", budget=20, random_state=0),
    onlinemkl.NonlinearKRRRegressor(max_iter=3),
]


@parametrize_with_checks(SKLEARN_FACES, expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
                         xfail_strict=True)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


test_river_check = river_check_test(onlinemkl.river.OBSCUREClassifier, onlinemkl.river.ProximalMKLClassifier,
                                    onlinemkl.river.ProximalMKLRegressor, onlinemkl.river.PolyMKLRegressor,
                                    onlinemkl.river.NonlinearKRRRegressor, onlinemkl.river.Guard)
