"""river mini-batch regressor over the polynomial-kernel MKL solvers."""

from __future__ import annotations

from .._validation import store_params
from ..engines.polymkl import make_engine
from ..features import MAX_FEATURES
from ._minibatch import _MiniBatchRiver


class PolyMKLRegressor(_MiniBatchRiver):
    """Polynomial-kernel MKL (Afkanpour et al. 2013) as a river mini-batch regressor.

    Base kernels are one linear kernel per feature (in order of first
    appearance) plus a constant; ``kernels`` may instead list kernels of
    :mod:`onlinemkl.kernels` whose groups are tuples of feature names.  Other
    parameters mean the same as in :class:`onlinemkl.PolyMKLRegressor`
    (``seed`` is its ``random_state``); inputs and target are standardised on the support
    window inside (``standardize``), so no scaler is needed in front.  Predictions are kept within
    the window's target range widened by its width on each side, as in the scikit-learn face.

    Parameters
    ----------
    batch_size
        Examples per mini-batch (``learn_one`` buffers them).
    kernels, degree, rho, lam, n_iter, eta, solver, iterate, budget, constant, tol, standardize
        See :class:`onlinemkl.PolyMKLRegressor`.
    seed
        Random seed of the sampling.
    max_features
        At most this many features: an example bringing new names past it is rejected
        (``ValueError`` listing them), as in :class:`onlinemkl.river.OBSCUREClassifier`.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import PolyMKLRegressor
    >>> model = preprocessing.StandardScaler() | PolyMKLRegressor(degree=2, n_iter=20, budget=100, seed=0)
    >>> metric = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    >>> bool(metric.get() < 5)
    True
    """

    def __init__(self, batch_size: int = 32, kernels: tuple | None = None, degree: int = 3, rho=None,
                 lam: float | str = "auto", n_iter: int = 50, eta: float = 1.0, solver: str = "active",
                 iterate: str = "average", budget: int | None = 200, constant: bool = True, tol: float = 1e-6,
                 standardize: bool = True, seed: int | None = None,
                 max_features: int | None = MAX_FEATURES):
        store_params(self, locals())
        self._setup(make_engine(self, seed))

    @property
    def _is_stochastic(self):
        return self.seed is None and self.solver != "uniform"

    @classmethod
    def _unit_test_params(cls):
        yield {"batch_size": 8, "degree": 2, "n_iter": 10, "budget": 40, "seed": 1}
        yield {"batch_size": 5, "degree": 3, "n_iter": 8, "budget": 30, "solver": "ucd", "iterate": "last",
               "seed": 2}
        yield {"batch_size": 10, "degree": 2, "budget": 30, "solver": "uniform"}
