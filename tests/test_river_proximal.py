"""river's own estimator checks on the proximal MKL adapters, one test per check."""

from _river_checks import river_check_test
from onlinemkl.river import ProximalMKLClassifier, ProximalMKLRegressor

test_river_check = river_check_test(ProximalMKLClassifier, ProximalMKLRegressor)
