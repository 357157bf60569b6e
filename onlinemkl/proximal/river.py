"""river classifier and regressor for online proximal MKL."""

from __future__ import annotations

import numpy as np
from river import base

from .._params import face
from ._setup import CLASSIFIER_PARAMS, REGRESSOR_PARAMS, classifier_engine, regressor_engine
from ..features import LabelMap
from ..kernels import default_stream_regression_kernels
from .._river_adapter import EngineAdapter, check_regression_target, proba_dict, proba_frame


class _ProximalAdapter(EngineAdapter):
    """The attributes both proximal adapters share."""

    @property
    def zero_groups_(self):
        return self._engine.group_norms() == 0.0


@face(CLASSIFIER_PARAMS, "river", setup="_start")
class ProximalMKLClassifier(_ProximalAdapter, base.Classifier):
    """Online proximal MKL classifier for river streams (dict in, label out).

    Labels may be any hashable values and appear at any time: the model uses
    the Crammer-Singer hinge (``loss='hinge'``) or the multinomial logistic
    loss (``loss='logistic'``) over the labels seen so far.  ``predict_proba_one`` is the
    softmax of the class scores (calibrated only for the logistic loss).

    {parameters}

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import ProximalMKLClassifier
    >>> model = preprocessing.StandardScaler() | ProximalMKLClassifier(budget=300)
    >>> metric = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    >>> metric.get() > 0.8
    True
    """

    def _start(self):
        # Validate now: a bad parameter fails at construction, not mid-stream.
        self._attach(self._new_engine(), self._feature_map(), LabelMap())

    def _new_engine(self):
        """A fresh engine from the parameters, in the multiclass form: labels emerge over time."""
        engine = classifier_engine(self, "river", 3)
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


@face(REGRESSOR_PARAMS, "river", setup="_start")
class ProximalMKLRegressor(_ProximalAdapter, base.MiniBatchRegressor):
    """Online proximal MKL regressor for river streams (dict in, number out).

    Targets are standardised online by their running mean and standard deviation, so ``eta0``
    and ``epsilon`` do not depend on the target's units.  The defaults are those of one pass
    over a stream; where ``fit``'s epochs over a fixed set need others, the scikit-learn face's
    are given beside them.  Predictions are kept within the range of the targets learnt so far
    widened by its width on each side, as the scikit-learn face's (a scaler in front still
    learning a feature whose scale just changed can hand the learner a value of hundreds of
    deviations, which the linear and quadratic kernels would extrapolate without limit).

    {parameters}

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

    def _start(self):
        self._attach(self._new_engine(), self._feature_map())

    def _new_engine(self):
        """A fresh engine from the parameters."""
        return regressor_engine(self, "river")

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
