"""river classifier for OBSCURE."""

from __future__ import annotations


import numpy as np
from river import base

from .._params import face
from .._replay import check_replay, many_class_steps, river_seed
from .engine import PARAMS, ObscureEngine, resolve_params
from ..features import LabelMap, label_key
from ..kernels import kernels_in_use
from .._river_adapter import EngineAdapter, proba_dict, proba_frame


@face(PARAMS, "river", setup="_start")
class OBSCUREClassifier(EngineAdapter, base.Classifier):
    """OBSCURE multiple kernel classifier for river streams (dict in, label out).

    Stage 1 (online p-norm mirror descent) for the first ``switch_after``
    examples, then stage 2 (stochastic, with the adaptive step and the radius
    ``R`` estimated from stage 1).  Labels can be any hashable
    values and may appear at any time (multiclass Crammer-Singer hinge); with
    ``loss='hinge'`` it is a binary classifier of True/False labels (river's
    binary convention) with the binary hinge loss.  Features may appear, disappear and come in any order: a missing
    feature reads 0, so put a ``StandardScaler`` in front (raw features of large magnitude are
    standardised by the learner itself, ``scale='auto'``).  Kernel groups are
    tuples of feature *names*.  A feature that first appears mid-stream joins
    the kernels on all features (``group=None``) and any group that names it
    (stored examples read 0 there); relative bandwidths (``gamma=None``,
    ``h=None``) are resolved when a kernel's group first has features and then
    kept.

    ``predict_proba_one`` returns the softmax of the class scores (binary
    hinge: the logistic function of the score).  These are monotone in the
    scores, not calibrated probabilities.

    {parameters}

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import OBSCUREClassifier
    >>> model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=500)
    >>> metric = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    >>> metric.get() > 0.85
    True
    """

    def _start(self):
        # Validate now: a bad parameter fails at construction, not mid-stream.
        self._attach(self._new_engine(), self._feature_map(), LabelMap())

    def _new_engine(self):
        """A fresh engine from the parameters, with the kernels in use (:func:`~onlinemkl.kernels.kernels_in_use`)."""
        v = PARAMS.validated(self, "river")
        kernels, p = resolve_params(kernels_in_use(self), v["p"])
        steps = check_replay(v["replay"], v["replay_window"], v["budget"], eviction=v["eviction"])
        return ObscureEngine(kernels, p, v["eta"], v["lam"], v["budget"], v["eviction"], v["pegasos"],
                             v["loss"] == "hinge", C=v["C"], replay=steps, replay_window=v["replay_window"],
                             replay_many=many_class_steps(v["replay"], steps), seed=river_seed(v["seed"]))

    @property
    def _multiclass(self):
        return self.loss != "hinge"

    @classmethod
    def _unit_test_params(cls):
        yield {"budget": 200}
        yield {"budget": 100, "eviction": "least_impact", "switch_after": 50}
        yield {"budget": 100, "loss": "hinge", "switch_after": 30, "pegasos": True}

    # -- learning -------------------------------------------------------------------------

    def _check_label(self, y):
        """Raise for a label this model cannot learn (before any state changes)."""
        if y is None:
            raise ValueError("y is None; learn_one needs a label")
        if self._engine.binary:
            if not (isinstance(y, (bool, np.bool_)) or label_key(y) in (0, 1)):
                raise ValueError(
                    f"label {y!r}: loss='hinge' is a binary classifier for True/False (or 1/0) labels, as river's "
                    "binary classifiers; use loss='multiclass_hinge' for other labels"
                )
        else:
            self._labels.known(y)

    def learn_many(self, X, y, **kwargs):
        """``learn_one`` on each row of a DataFrame in order (every value and label checked first)."""
        examples = self._frame_examples(X, y, self._check_label)
        if not self._engine.binary:
            self._labels.check([label for _, label in examples])  # new labels of one kind, as learn_one adds them
        for x, label in examples:
            self.learn_one(x, label)

    def learn_one(self, x, y, **kwargs):
        # Validate everything before changing any state: the label first (no
        # state change), then the row (every value is checked before a column is added).
        self._check_label(y)
        if self._engine.binary:
            row = self._row(x, grow=True)
            yi = 1 if label_key(y) else -1  # the text "0" is False
        else:
            row = self._row(x, grow=True)
            yi = self._labels.add(y)
            if len(self._labels) > self._engine.n_outputs:
                self._engine.set_n_classes(len(self._labels))
        self._engine.stream_learn(row, yi, self.switch_after)

    # -- prediction -----------------------------------------------------------------------

    def _scores(self, x):
        return self._engine.scores_one(self._row(x, grow=False))

    def predict_proba_one(self, x, **kwargs):
        if self._engine.binary:
            # river's binary convention: {False: 1 - p, True: p}, p the logistic function of the score.
            return proba_dict([False, True], self._scores(x), binary=True)
        labels = self._labels.labels
        if not labels:
            return {}
        s = self._scores(x)
        return proba_dict(labels, s[: len(labels)])

    def predict_one(self, x, **kwargs):
        if self._engine.binary:
            return bool(self._scores(x)[0] > 0)
        labels = self._labels.labels
        if not labels:
            return None
        s = self._scores(x)
        return labels[int(s[: len(labels)].argmax())]  # the method: np.argmax's wrapper costs a microsecond

    # -- batch prediction (BLAS path) ---------------------------------------------------

    def _scores_many(self, X) -> np.ndarray:
        return self._engine.scores_many(self._frame_rows(X))

    def predict_proba_many(self, X):
        """Class probabilities of a DataFrame's rows at once (BLAS kernel blocks; same
        values as :meth:`predict_proba_one` row by row, up to rounding)."""
        import pandas as pd

        if self._engine.binary:
            return proba_frame([False, True], self._scores_many(X)[:, 0], X.index, binary=True)
        labels = self._labels.labels
        if not labels:
            return pd.DataFrame(index=X.index)
        return proba_frame(labels, self._scores_many(X)[:, : len(labels)], X.index)

    def predict_many(self, X):
        """Labels of a DataFrame's rows at once (BLAS kernel blocks; the same labels as
        :meth:`predict_one` row by row, up to ties within rounding)."""
        import pandas as pd

        if self._engine.binary:
            return pd.Series(self._scores_many(X)[:, 0] > 0, index=X.index, dtype=bool)
        if not self._labels.labels:
            return pd.Series([None] * len(X), index=X.index, dtype=object)
        s = self._scores_many(X)[:, : len(self._labels)]
        labels = np.empty(len(self._labels), dtype=object)
        labels[:] = self._labels.labels
        return pd.Series(labels[np.argmax(s, axis=1)], index=X.index, dtype=object)

    # -- attributes -----------------------------------------------------------------------

    @property
    def stage_(self) -> int:
        return self._engine.stage

    @property
    def R_(self):
        return self._engine.radius

    def _check_labels(self, labels):
        if self._engine.binary and len(labels):
            raise ValueError("a binary (loss='hinge') model stores no label list")
        if not self._engine.binary:
            super()._check_labels(labels)
