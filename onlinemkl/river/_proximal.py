"""river classifier and regressor for online proximal MKL."""

from __future__ import annotations

import numpy as np
from river import base

from .._validation import store_params
from ..engines._replay import DEFAULT_WINDOW
from ..engines.proximal_setup import classifier_engine, regressor_engine
from ..features import MAX_FEATURES, LabelMap
from ..kernels import default_stream_regression_kernels
from ._base import EngineAdapter, check_regression_target, proba_dict, proba_frame


class _ProximalAdapter(EngineAdapter):
    """The attributes both proximal adapters share."""

    @property
    def zero_groups_(self):
        return self._engine.group_norms() == 0.0


class ProximalMKLClassifier(_ProximalAdapter, base.Classifier):
    """Online proximal MKL classifier for river streams (dict in, label out).

    Labels may be any hashable values and appear at any time: the model uses
    the Crammer-Singer hinge (``loss='hinge'``) or the multinomial logistic
    loss (``loss='logistic'``) over the labels seen so far.  Parameters mean
    the same as in :class:`onlinemkl.ProximalMKLClassifier`; kernel and
    explicit groups are tuples of feature names.  ``predict_proba_one`` is the
    softmax of the class scores (calibrated only for the logistic loss).
    ``replay`` ('auto': 5, or 0 with a budget and ``eviction='oldest'``) and ``replay_window``:
    after a positive loss, that many extra steps on past examples from a reservoir of the
    stream (0 turns it off); under a budget, once the buffer is full (see
    :class:`onlinemkl.ProximalMKLClassifier`).  ``max_features`` and
    ``feature_hashing``: as :class:`onlinemkl.river.OBSCUREClassifier`'s (a cap on new feature
    names, or names hashed into fixed columns).  ``group_steps='norms'`` (the regressor's default
    too): each step is split among the kernels by their norms so far, the same total step, so
    the kernel a stream needs learns faster than under the equal split.
    ``eta0='auto'``: 1.0 while at most three classes are known, 4.0 past them (a multiclass step
    moves two classes' weights; :func:`onlinemkl.engines.proximal_setup.check_eta0`); a number is
    used for any number of classes.  ``seed``: the seed of the replay draws, the model's only
    randomness (river's convention; the array face's ``random_state``); None: seed 0, so that a run
    repeats itself.  ``scale`` ('auto', True or False): the learner's own standardisation of its
    inputs, as :class:`onlinemkl.ProximalMKLClassifier`'s ('auto': a feature is standardised once
    a learnt value of magnitude above 10 arrives; a standardised stream passes bit for bit).

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
                 eta0: float | str = "auto", gamma: float | str | None = "auto", average: bool = False,
                 budget: int | None = None, eviction: str = "least_impact", replay: int | str = "auto",
                 replay_window: int = DEFAULT_WINDOW, max_features: int | None = MAX_FEATURES,
                 feature_hashing: int | None = None, group_steps: str = "norms", seed: int | None = None,
                 scale: bool | str = "auto"):
        store_params(self, locals())
        self._attach(self._new_engine(), self._feature_map(), LabelMap())

    def _new_engine(self):
        """A fresh engine from the parameters, in the multiclass form: labels emerge over time."""
        engine = classifier_engine(self, 3)
        engine.set_n_outputs(0)
        return engine

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
        self._labels.known(y)  # validate before any state changes (the row checks its values first)
        row = self._row(x, grow=True)
        idx = self._labels.add(y)
        if len(self._labels) > self._engine.n_outputs:
            self._engine.set_n_outputs(len(self._labels))
        self._engine.stream_learn(row, idx)

    def _check_label(self, y):
        if y is None:
            raise ValueError("y holds None; learn_many needs a label per row")
        self._labels.known(y)

    def learn_many(self, X, y, **kwargs):
        """``learn_one`` on each row of a DataFrame in order (every value and label checked first)."""
        examples = self._frame_examples(X, y, self._check_label)
        self._labels.check([label for _, label in examples])  # new labels of one kind, as learn_one adds them
        for x, label in examples:
            self.learn_one(x, label)

    def predict_proba_one(self, x, **kwargs):
        if not len(self._labels):
            return {}
        s = self._engine.scores_one(self._row(x, grow=False))
        return proba_dict(self._labels.labels, s[: len(self._labels)])

    def predict_one(self, x, **kwargs):
        if not len(self._labels):
            return None
        s = self._engine.scores_one(self._row(x, grow=False))
        return self._labels.labels[int(s[: len(self._labels)].argmax())]

    def _scores_many(self, X) -> np.ndarray:
        return self._engine.scores_many(self._frame_rows(X))[:, : len(self._labels)]

    def predict_proba_many(self, X):
        """Class probabilities of a DataFrame's rows at once (BLAS kernel blocks; the values of
        :meth:`predict_proba_one` row by row, up to rounding)."""
        import pandas as pd

        if not len(self._labels):
            return pd.DataFrame(index=X.index)
        return proba_frame(self._labels.labels, self._scores_many(X), X.index)

    def predict_many(self, X):
        """Labels of a DataFrame's rows at once (the labels of :meth:`predict_one`, up to ties within rounding)."""
        import pandas as pd

        if not len(self._labels):
            return pd.Series([None] * len(X), index=X.index, dtype=object)
        labels = np.empty(len(self._labels), dtype=object)
        labels[:] = self._labels.labels
        return pd.Series(labels[np.argmax(self._scores_many(X), axis=1)], index=X.index, dtype=object)


class ProximalMKLRegressor(_ProximalAdapter, base.MiniBatchRegressor):
    """Online proximal MKL regressor for river streams (dict in, number out).

    Parameters mean the same as in :class:`onlinemkl.ProximalMKLRegressor`; five defaults
    differ, for one pass over a stream: the last iterate (``average=False``), which follows
    a drifting target where the average of all iterates lags, ``lam=1e-3``, ``eta0=0.3``
    (every regression step is capped at ``1 / K(x, x)``, so a larger step stays stable on
    wide inputs), ``kernels=None`` meaning
    :func:`onlinemkl.kernels.default_stream_regression_kernels` (an unnormalised quadratic
    kernel, which learns pairwise interactions in one pass; its docstring says why) and
    ``group_steps='norms'``: each step is split among the kernels by their norms so far
    (the same total step), so the kernel a stream needs learns faster than under the equal
    split (:mod:`onlinemkl._core.group_steps`).
    ``max_features`` and ``feature_hashing`` as :class:`onlinemkl.river.OBSCUREClassifier`'s.
    ``seed``: the seed of the replay draws (with ``replay > 0``; river's convention, the array
    face's ``random_state``); None: seed 0.  ``scale``: as the classifier's (the learner's own
    standardisation of raw inputs; 'auto' by default).

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import ProximalMKLRegressor
    >>> model = preprocessing.StandardScaler() | ProximalMKLRegressor(budget=300)
    >>> metric = evaluate.progressive_val_score(datasets.TrumpApproval(), model, metrics.MAE())
    >>> bool(metric.get() < 5)
    True
    """

    #: ``kernels=None``: the quadratic kernel unnormalised, scaled by ``2 / d`` (its docstring says why).
    _default_kernels = staticmethod(default_stream_regression_kernels)

    def __init__(self, kernels: tuple | None = None, explicit_groups: tuple | None = None, loss: str = "squared",
                 epsilon: float = 0.1, regularizer: str = "sq_l21", lam: float = 1e-3, q: float = 1.5,
                 sigma: float = 1.0, l1_ratio: float = 1.0, group_weights: tuple | None = None,
                 schedule: str = "invsqrt", eta0: float = 0.3, gamma: float | str | None = None,
                 average: bool = False, budget: int | None = None, eviction: str = "least_impact",
                 replay: int = 0, replay_window: int = DEFAULT_WINDOW, max_features: int | None = MAX_FEATURES,
                 feature_hashing: int | None = None, group_steps: str = "norms", seed: int | None = None,
                 scale: bool | str = "auto"):
        store_params(self, locals())
        self._attach(self._new_engine(), self._feature_map())

    def _new_engine(self):
        """A fresh engine from the parameters."""
        return regressor_engine(self)

    @classmethod
    def _unit_test_params(cls):
        yield {"budget": 150}
        yield {"budget": 100, "loss": "epsilon_insensitive", "regularizer": "elastic_net", "lam": 0.01,
               "eviction": "oldest", "average": True}

    def learn_one(self, x, y, **kwargs):
        y = check_regression_target(y)
        self._engine.stream_learn(self._row(x, grow=True), y)

    def learn_many(self, X, y, **kwargs):
        """``learn_one`` on each row of a DataFrame in order, with the targets of a Series (or any
        sequence) of the same length; every value and target is checked first, so a rejected batch
        changes nothing, and the model learnt is the one a ``learn_one`` loop learns."""
        for x, target in self._frame_examples(X, y, check_regression_target, what="target"):
            self.learn_one(x, target)

    def predict_one(self, x, **kwargs):
        return self._engine.predict_one(self._row(x, grow=False))

    def predict_many(self, X):
        """Predictions of a DataFrame's rows at once, a Series on its index (BLAS kernel blocks; the
        values of :meth:`predict_one` row by row, up to rounding).  Unknown columns are ignored."""
        import pandas as pd

        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"X must be a pandas DataFrame; got {type(X).__name__}")
        M = self._frame_rows(X)
        return pd.Series(self._engine.predict_many(M), index=X.index, dtype=float)
