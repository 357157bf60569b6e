"""river classifier and regressor for online proximal MKL."""

from __future__ import annotations

import numbers

import numpy as np
from river import base

from .. import proximal as _px
from ._features import FeatureIndex, LabelIndex
from ._obscure import softmax_dict


class _ProximalRiver:  # noqa: D101 (mixin)
    """Shared parameter handling: the engine is built by the array estimator's validation."""

    def _build(self, estimator, n_outputs_fn):
        self._estimator = estimator
        self._engine = n_outputs_fn()
        self._features = FeatureIndex()

    def _row(self, x, grow):
        eng = self._engine
        n_before = len(self._features)
        row = self._features.row(x, grow)
        if grow and len(self._features) != n_before:
            eng.set_features(len(self._features), self._features.lookup)
        if row.shape[0] < eng.n_features:
            row = np.concatenate([row, np.zeros(eng.n_features - row.shape[0])])
        return row

    # -- persistence (the onlinemkl.persist protocol) -------------------------------------

    def save(self, path):
        """Save to ``path`` in onlinemkl's model format (not pickle); ``onlinemkl.load(path)`` reads it.

        The write is atomic; see :mod:`onlinemkl.persist` for the format and
        its limits (labels and feature names must be JSON-representable:
        str, int, float, bool, None or tuples of them).  Returns the path.
        To save a pipeline, use ``onlinemkl.persist.save(pipeline, path)``.
        """
        from ..persist import save

        return save(self, path)

    def _get_state(self):
        state, arrays = self._engine._get_state()
        out = {"engine": state, "features": list(self._features.columns)}
        if hasattr(self, "_labels"):
            out["labels"] = list(self._labels.labels)
        return out, arrays

    def _set_state(self, state, arrays):
        self._engine._set_state(state["engine"], arrays)
        names = list(state["features"])
        columns = {name: i for i, name in enumerate(names)}
        if len(columns) != len(names):
            raise ValueError("a feature name is listed twice")
        if len(columns) != self._engine.n_features:
            raise ValueError(f"{len(columns)} feature names for {self._engine.n_features} engine features")
        if hasattr(self, "_labels"):
            labels = LabelIndex()
            for y in list(state["labels"]):
                labels.add(y)
            if len(labels) != len(state["labels"]):
                raise ValueError("a label is listed twice")
            if len(labels) != self._engine.n_outputs:
                raise ValueError(f"{len(labels)} labels for {self._engine.n_outputs} outputs")
            self._labels = labels
        elif self._engine.n_outputs != 1:
            raise ValueError(f"a regressor has 1 output; the engine has {self._engine.n_outputs}")
        self._features.columns = columns

    @property
    def kernel_weights_(self):
        return self._engine.kernel_weights()

    @property
    def zero_groups_(self):
        return self._engine.group_norms() == 0.0

    @property
    def n_support_(self):
        return self._engine.n_support


class ProximalMKLClassifier(_ProximalRiver, base.Classifier):
    """Online proximal MKL classifier for river streams (dict in, label out).

    Labels may be any hashable values and appear at any time: the model uses
    the Crammer-Singer hinge (``loss='hinge'``) or the multinomial logistic
    loss (``loss='logistic'``) over the labels seen so far.  Parameters mean
    the same as in :class:`onlinemkl.ProximalMKLClassifier`; kernel and
    explicit groups are tuples of feature names.  ``predict_proba_one`` is the
    softmax of the class scores (calibrated only for the logistic loss).

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import ProximalMKLClassifier
    >>> model = preprocessing.StandardScaler() | ProximalMKLClassifier(budget=300)
    >>> metric = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    >>> metric.get() > 0.8
    True
    """

    def __init__(self, kernels: tuple | None = None, explicit_groups: tuple | None = None, loss: str = "hinge",
                 regularizer: str = "sq_l21", lam: float = 1e-4, q: float = 1.5, sigma: float = 1.0,
                 l1_ratio: float = 1.0, group_weights: tuple | None = None, schedule: str = "invsqrt",
                 eta0: float = 1.0, gamma: float | str | None = "auto", average: bool = False,
                 budget: int | None = None, eviction: str = "least_impact"):
        self.kernels = kernels
        self.explicit_groups = explicit_groups
        self.loss = loss
        self.regularizer = regularizer
        self.lam = lam
        self.q = q
        self.sigma = sigma
        self.l1_ratio = l1_ratio
        self.group_weights = group_weights
        self.schedule = schedule
        self.eta0 = eta0
        self.gamma = gamma
        self.average = average
        self.budget = budget
        self.eviction = eviction
        est = _px.ProximalMKLClassifier(kernels=kernels, explicit_groups=explicit_groups, loss=loss,
                                        regularizer=regularizer, lam=lam, q=q, sigma=sigma, l1_ratio=l1_ratio,
                                        group_weights=group_weights, schedule=schedule, eta0=eta0, gamma=gamma,
                                        average=average, budget=budget, eviction=eviction)
        # Multiclass form from the start: labels emerge over time.
        self._build(est, lambda: est._new_engine(np.arange(3)))
        self._engine.set_n_outputs(0)
        self._labels = LabelIndex()

    @property
    def _multiclass(self):
        return True

    @classmethod
    def _unit_test_params(cls):
        yield {"budget": 150}
        yield {"budget": 100, "loss": "logistic", "regularizer": "l21", "lam": 0.01, "eviction": "oldest"}
        yield {"budget": 100, "explicit_groups": (None,), "average": True}

    def learn_one(self, x, y, **kwargs):
        if y is None:
            raise ValueError("y is None; learn_one needs a label")
        self._features.row(x, grow=False)  # validate before any state changes
        self._labels.known(y)
        row = self._row(x, grow=True)
        idx = self._labels.add(y)
        if len(self._labels) > self._engine.n_outputs:
            self._engine.set_n_outputs(len(self._labels))
        self._engine.learn(row, idx, 0.0)

    def predict_proba_one(self, x, **kwargs):
        if not len(self._labels):
            return {}
        s = self._engine.scores_one(self._row(x, grow=False), average=self.average)
        return softmax_dict(self._labels.labels, s[: len(self._labels)])

    def predict_one(self, x, **kwargs):
        if not len(self._labels):
            return None
        s = self._engine.scores_one(self._row(x, grow=False), average=self.average)
        return self._labels.labels[int(np.argmax(s[: len(self._labels)]))]


class ProximalMKLRegressor(_ProximalRiver, base.Regressor):
    """Online proximal MKL regressor for river streams (dict in, number out).

    Parameters mean the same as in :class:`onlinemkl.ProximalMKLRegressor`.

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import ProximalMKLRegressor
    >>> model = preprocessing.StandardScaler() | ProximalMKLRegressor(budget=300)
    >>> metric = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    >>> bool(metric.get() < 5)
    True
    """

    def __init__(self, kernels: tuple | None = None, explicit_groups: tuple | None = None, loss: str = "squared",
                 epsilon: float = 0.1, regularizer: str = "sq_l21", lam: float = 1e-2, q: float = 1.5,
                 sigma: float = 1.0, l1_ratio: float = 1.0, group_weights: tuple | None = None,
                 schedule: str = "invsqrt", eta0: float = 0.1, gamma: float | str | None = None,
                 average: bool = True, budget: int | None = None, eviction: str = "least_impact"):
        self.kernels = kernels
        self.explicit_groups = explicit_groups
        self.loss = loss
        self.epsilon = epsilon
        self.regularizer = regularizer
        self.lam = lam
        self.q = q
        self.sigma = sigma
        self.l1_ratio = l1_ratio
        self.group_weights = group_weights
        self.schedule = schedule
        self.eta0 = eta0
        self.gamma = gamma
        self.average = average
        self.budget = budget
        self.eviction = eviction
        est = _px.ProximalMKLRegressor(kernels=kernels, explicit_groups=explicit_groups, loss=loss, epsilon=epsilon,
                                       regularizer=regularizer, lam=lam, q=q, sigma=sigma, l1_ratio=l1_ratio,
                                       group_weights=group_weights, schedule=schedule, eta0=eta0, gamma=gamma,
                                       average=average, budget=budget, eviction=eviction)
        self._build(est, est._new_engine)

    @classmethod
    def _unit_test_params(cls):
        yield {"budget": 150}
        yield {"budget": 100, "loss": "epsilon_insensitive", "regularizer": "elastic_net", "lam": 0.01,
               "eviction": "oldest", "average": True}

    def learn_one(self, x, y, **kwargs):
        if isinstance(y, bool) or not isinstance(y, numbers.Real) or not np.isfinite(y):
            raise ValueError(f"y={y!r}: a regression target must be a finite number")
        self._features.row(x, grow=False)
        row = self._row(x, grow=True)
        self._engine.learn_regression(row, float(y))

    def predict_one(self, x, **kwargs):
        mean, std = self._engine.target_scale()
        return mean + std * float(self._engine.scores_one(self._row(x, grow=False), average=self.average)[0])
