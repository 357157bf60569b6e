"""river mini-batch regressor over the polynomial-kernel MKL solvers."""

from __future__ import annotations

from .._params import face
from .engine import PARAMS, make_engine
from .._river_minibatch import _MiniBatchRiver


@face(PARAMS, "river", setup="_start")
class PolyMKLRegressor(_MiniBatchRiver):
    """Polynomial-kernel MKL (Afkanpour et al. 2013) as a river mini-batch regressor.

    Base kernels are one linear kernel per feature (in sorted name order) plus a constant;
    ``kernels`` may instead list kernels of :mod:`onlinemkl.kernels` whose groups are tuples of
    feature names.  Inputs and target are standardised on the support window inside
    (``standardize``), so no scaler is needed in front.  Predictions are kept within the window's
    target range widened by its width on each side, as in the scikit-learn face.

    {parameters}

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import PolyMKLRegressor
    >>> model = preprocessing.StandardScaler() | PolyMKLRegressor(degree=2, n_iter=20, budget=100, seed=0)
    >>> metric = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    >>> bool(metric.get() < 5)
    True
    """

    def _start(self):
        self._setup(make_engine(self, "river"))

    @property
    def _is_stochastic(self):
        return self.seed is None and self.solver != "uniform"

    @classmethod
    def _unit_test_params(cls):
        yield {"batch_size": 8, "degree": 2, "n_iter": 10, "budget": 40, "seed": 1}
        yield {"batch_size": 5, "degree": 3, "n_iter": 8, "budget": 30, "solver": "ucd", "iterate": "last",
               "seed": 2}
        yield {"batch_size": 10, "degree": 2, "budget": 30, "solver": "uniform"}
