"""river's own estimator checks on the proximal MKL adapters, one test per check."""

import copy

import pytest
from river import checks

from onlinemkl.river import ProximalMKLClassifier, ProximalMKLRegressor


def _cases():
    for cls in (ProximalMKLClassifier, ProximalMKLRegressor):
        for params in cls._unit_test_params():
            model = cls(**params)
            for check in checks.yield_checks(model):
                name = getattr(check, "__name__", repr(check))
                yield pytest.param(model, check, id=f"{cls.__name__}-{params}-{name}")


@pytest.mark.parametrize("model, check", list(_cases()))
def test_river_check(model, check):
    check(copy.deepcopy(model))
