"""river's own estimator checks as pytest tests, one test per (parameter set, check).

Each adapter's test module calls :func:`river_check_test` with its classes and binds the result
to a ``test_*`` name; the checks are run on a deep copy of the model, as river runs them.
"""

import copy

import pytest
from river import checks


def _cases(classes, class_in_id):
    for cls in classes:
        for params in cls._unit_test_params():
            model = cls(**params)
            for check in checks.yield_checks(model):
                name = getattr(check, "__name__", repr(check))
                prefix = f"{cls.__name__}-" if class_in_id else ""
                yield pytest.param(model, check, id=f"{prefix}{params}-{name}")


def river_check_test(*classes, class_in_id=True):
    """A test parametrized over every river check of every ``_unit_test_params()`` set of ``classes``
    (test ids ``Class-params-check``; without ``class_in_id``, ``params-check``)."""

    @pytest.mark.parametrize("model, check", list(_cases(classes, class_in_id)))
    def test_river_check(model, check):
        check(copy.deepcopy(model))

    return test_river_check
