"""river mini-batch regressor over the non-linear kernel combination KRR."""

from __future__ import annotations

from .._params import face
from .engine import PARAMS, make_engine
from .._river_minibatch import _MiniBatchRiver


@face(PARAMS, "river", setup="_start")
class NonlinearKRRRegressor(_MiniBatchRiver):
    """Non-linear kernel combination KRR (Cortes et al. 2009) as a river mini-batch regressor.

    ``batch_size`` examples make one mini-batch.  With ``kernels=None`` the base kernels are one
    linear kernel per feature plus a constant; a new feature's weight starts at ``mu0``.  Inputs
    and target are standardised on the support window inside (``standardize``), so no scaler is
    needed in front.  Predictions are kept within the window's target range widened by its width
    on each side, as in the scikit-learn face.

    {parameters}

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import NonlinearKRRRegressor
    >>> model = preprocessing.StandardScaler() | NonlinearKRRRegressor(degree=2, budget=100)
    >>> metric = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    >>> bool(metric.get() < 5)
    True
    """

    def _start(self):
        self._setup(make_engine(self))

    @classmethod
    def _unit_test_params(cls):
        yield {"batch_size": 8, "degree": 2, "max_iter": 5, "budget": 40}
        yield {"batch_size": 6, "degree": 3, "max_iter": 5, "budget": 30, "norm": "l1", "line_search": False}
