"""river mini-batch regressor over the non-linear kernel combination KRR."""

from __future__ import annotations

from .._validation import store_params
from ..engines.nonlinear import make_engine
from ..features import MAX_FEATURES
from ._minibatch import _MiniBatchRiver


class NonlinearKRRRegressor(_MiniBatchRiver):
    """Non-linear kernel combination KRR (Cortes et al. 2009) as a river mini-batch regressor.

    Parameters mean the same as in :class:`onlinemkl.NonlinearKRRRegressor`;
    ``batch_size`` examples make one mini-batch.  With ``kernels=None`` the
    base kernels are one linear kernel per feature plus a constant; a new
    feature's weight starts at ``mu0``.  Inputs and target are standardised on the support
    window inside (``standardize``), so no scaler is needed in front.  ``max_features``: at most
    this many features (an example bringing new names past it is rejected, as in
    :class:`onlinemkl.river.OBSCUREClassifier`).  Predictions are kept within the window's target
    range widened by its width on each side, as in the scikit-learn face.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import NonlinearKRRRegressor
    >>> model = preprocessing.StandardScaler() | NonlinearKRRRegressor(degree=2, budget=100)
    >>> metric = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    >>> bool(metric.get() < 5)
    True
    """

    def __init__(self, batch_size: int = 32, kernels: tuple | None = None, degree: int = 2, lam: float | str = "auto",
                 mu0: float = 0.0, Lambda: float = 1.0, norm: str = "l2", eta: float = 1.0,
                 line_search: bool = True, epsilon: float = 1e-4, max_iter: int = 20, budget: int | None = 200,
                 constant: bool = True, standardize: bool = True, tol: float = 1e-4,
                 max_features: int | None = MAX_FEATURES):
        store_params(self, locals())
        self._setup(make_engine(self))

    @classmethod
    def _unit_test_params(cls):
        yield {"batch_size": 8, "degree": 2, "max_iter": 5, "budget": 40}
        yield {"batch_size": 6, "degree": 3, "max_iter": 5, "budget": 30, "norm": "l1", "line_search": False}
