"""river's own estimator checks on the OBSCURE adapter, one test per check, as river runs them."""

from _river_checks import river_check_test
from onlinemkl.river import OBSCUREClassifier

test_river_check = river_check_test(OBSCUREClassifier, class_in_id=False)
