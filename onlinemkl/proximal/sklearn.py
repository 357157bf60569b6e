"""Online proximal MKL (Martins, Smith, Xing, Aguiar & Figueiredo 2011): kernelised FOBOS.

The array-API faces :class:`ProximalMKLClassifier` and
:class:`ProximalMKLRegressor` over :class:`onlinemkl.proximal.engine.ProximalEngine`
(the algorithm and its options are described there); the river adapters are
in :mod:`onlinemkl.river`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from .._sync import ModelLock
from .._params import face
from ._setup import CLASSIFIER_PARAMS, REGRESSOR_PARAMS, classifier_engine, regressor_engine
from ..sklearn import EngineClassifier, EngineEstimator, check_labels

__all__ = ["ProximalMKLClassifier", "ProximalMKLRegressor"]


class _ProximalFace(ModelLock):
    """The fitted attributes every proximal learner shares (the sequence labeller's too; under the model lock)."""

    @property
    def kernel_weights_(self):
        """``beta_k = ||theta_k|| / sum_l ||theta_l||`` per group (kernels, then explicit groups)."""
        return self._fitted_engine().kernel_weights()

    @property
    def zero_groups_(self):
        """Boolean mask of the groups that are exactly zero."""
        return self._fitted_engine().group_norms() == 0.0


@face(CLASSIFIER_PARAMS, "sklearn")
class ProximalMKLClassifier(ClassifierMixin, _ProximalFace, EngineClassifier):
    """Online proximal MKL classifier (kernelised FOBOS with group-norm proximal steps).

    {parameters}

    Notes
    -----
    ``predict_proba`` is the softmax of the class scores (two classes: the logistic function of
    :meth:`decision_function`), columns in the order of ``classes_``: the mapping of the river
    face's ``predict_proba_one``; calibrated for ``loss='logistic'``, only monotone in the scores
    for the hinge loss.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.preprocessing import StandardScaler
    >>> from onlinemkl import ProximalMKLClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = ProximalMKLClassifier(n_epochs=3, random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    def _new_engine(self, classes):
        return classifier_engine(self, "sklearn", len(classes))

    def _learn_rows(self, engine, X, yi, order):
        for i in order:
            engine.stream_learn(X[i], yi[i])

    def fit(self, X, y):
        X = self._rows(X, first=True)
        y = check_labels(y, X.shape[0])
        classes = self._fit_classes(y)
        engine = self._new_engine(classes)
        engine.set_features(X.shape[1])
        yi = self._encode(y, classes, len(classes) == 2)
        scaling = self._new_scaling()
        if scaling is not None:
            X = scaling.fit_rows(X)
        self.classes_, self._engine, self.n_features_in_, self._scaling = classes, engine, X.shape[1], scaling
        rng = np.random.default_rng(self.random_state)
        for _ in range(self.n_epochs):
            self._learn_rows(engine, X, yi, rng.permutation(X.shape[0]))
        return self

    def partial_fit(self, X, y, classes=None):
        """Learn from a mini-batch in order; ``classes`` is required on the first call.

        A rejected batch leaves the model unchanged.
        """
        engine, X, yi = self._partial_fit_batch(X, y, classes)
        self._learn_rows(engine, X, yi, range(X.shape[0]))
        return self

    def decision_function(self, X):
        s = self._fitted_engine().scores_many(self._scaled(self._rows(X)))
        return s[:, 0] if len(self.classes_) == 2 else s

    def predict(self, X):
        return self._predict_from_scores(self.decision_function(X), threshold_inclusive=True)


@face(REGRESSOR_PARAMS, "sklearn")
class ProximalMKLRegressor(RegressorMixin, _ProximalFace, EngineEstimator):
    """Online proximal MKL regressor (kernelised FOBOS with group-norm proximal steps).

    Targets are standardised online by their running mean and standard deviation (an intercept
    and a scale learnt from the stream), so ``eta0`` and ``epsilon`` do not depend on the
    target's units.  Predictions are kept within the range of the targets learnt so far widened
    by its width on each side (:meth:`onlinemkl.proximal.engine.ProximalEngine.target_bounds`):
    the linear and quadratic kernels extrapolate without limit at an input far from every one
    learnt from.

    {parameters}

    Examples
    --------
    >>> import numpy as np
    >>> from onlinemkl import ProximalMKLRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2))
    >>> y = np.sin(3 * X[:, 0]) + X[:, 1]
    >>> reg = ProximalMKLRegressor(n_epochs=3, random_state=0).fit(X, y)
    >>> bool(reg.score(X, y) > 0.8)
    True
    """

    def _new_engine(self):
        return regressor_engine(self, "sklearn")

    def fit(self, X, y):
        X = self._rows(X, first=True)
        y = self._targets(y, X.shape[0])
        engine = self._new_engine()
        engine.set_features(X.shape[1])
        scaling = self._new_scaling()
        if scaling is not None:
            X = scaling.fit_rows(X)
        self._engine, self.n_features_in_, self._scaling = engine, X.shape[1], scaling
        rng = np.random.default_rng(self.random_state)
        for _ in range(self.n_epochs):
            for i in rng.permutation(X.shape[0]):
                engine.stream_learn(X[i], y[i])
        return self

    def partial_fit(self, X, y):
        first = not hasattr(self, "_engine")
        X = self._rows(X, first)
        y = self._targets(y, X.shape[0])
        if first:
            engine = self._new_engine()
            engine.set_features(X.shape[1])
            scaling = self._new_scaling()
        else:
            engine, scaling = self._engine, self._scaling
        if scaling is not None:
            X = scaling.learn_rows(X)
        self._engine, self.n_features_in_, self._scaling = engine, X.shape[1], scaling
        for i in range(X.shape[0]):
            engine.stream_learn(X[i], y[i])
        return self

    def predict(self, X):
        return self._fitted_engine().predict_many(self._scaled(self._rows(X)))
