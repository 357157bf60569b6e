"""river's own estimator checks on the OBSCURE adapter, one test per check, as river runs them."""

import copy

import pytest
from river import checks

from onlinemkl.river import OBSCUREClassifier


def _cases():
    for params in OBSCUREClassifier._unit_test_params():
        model = OBSCUREClassifier(**params)
        for check in checks.yield_checks(model):
            name = getattr(check, "__name__", repr(check))
            yield pytest.param(model, check, id=f"{params}-{name}")


@pytest.mark.parametrize("model, check", list(_cases()))
def test_river_check(model, check):
    check(copy.deepcopy(model))
