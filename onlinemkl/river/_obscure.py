"""river classifier for OBSCURE."""

from __future__ import annotations

import math

import numpy as np
from river import base

from .._core import obscure as _co
from .._validation import check_choice, store_params
from ..engines._replay import DEFAULT_WINDOW, check_replay, many_class_steps, river_seed
from ..engines.obscure import ObscureEngine, check_params, stream_step
from ..features import MAX_FEATURES, LabelMap, label_key
from ..kernels import kernels_in_use
from ._base import EngineAdapter, proba_dict, proba_frame


class OBSCUREClassifier(EngineAdapter, base.Classifier):
    """OBSCURE multiple kernel classifier for river streams (dict in, label out).

    Stage 1 (online p-norm mirror descent) for the first ``switch_after``
    examples, then stage 2 (stochastic, with the adaptive step and the radius
    ``R`` estimated from stage 1); see :class:`onlinemkl.OBSCUREClassifier`
    for the parameters, which mean the same here.  Labels can be any hashable
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

    Parameters
    ----------
    kernels
        Tuple of :mod:`onlinemkl.kernels` kernels; None for the default set.
    p
        Group norm, in (1, 2]; None for the authors' default ``q = 2 ln F``.
    lam
        Regularisation; None for ``1 / (C N)``, N the examples seen when stage 2 starts.
    C
        Used when ``lam`` is None.
    eta
        Stage-1 step; None for ``F^(-2/q)``.
    switch_after
        When stage 2 starts: after this many examples, 'auto' (once stage-1
        updates stop: 500 consecutive examples without a margin error), or
        None (stage 1 only).
    pegasos
        Stage 2 with ``s_t = 0`` (Pegasos-MKL).
    budget
        Maximum stored examples; None for unbounded.  With replay on (the default), a
        reservoir of up to ``replay_window`` past examples is kept beside them (``replay=0``:
        none).
    eviction
        'least_impact' or 'oldest' (a sliding window, for drifting streams): as
        :class:`onlinemkl.OBSCUREClassifier`'s.
    replay
        After a margin error, this many extra steps on past examples drawn from a
        reservoir of ``replay_window`` of them (0: off; 'auto': 5, 10 once more than three
        classes have been seen, and 0 with a budget and ``eviction='oldest'``).  With a budget and more than two
        classes, while the buffer has room, on stored examples instead, each step adding to its own stored row or
        to nothing (no row spent on a repeat); once it is full, from the reservoir, an update taking the row
        eviction frees.
    replay_window
        Past examples kept for replay (a uniform sample of the stream; fewer when rows are
        very wide, at most 2^20 values in all).
    loss
        'multiclass_hinge', or 'hinge' (binary: True/False labels).
    max_features
        At most this many features (every stored example is a dense row over all of them): an
        example bringing new names past the cap is rejected with a ``ValueError`` listing them,
        the model unchanged.  None: no cap.  The default is far above any dense data set's width.
    feature_hashing
        None, or a width: hash every feature name into that many fixed columns (CRC-32; colliding
        names add up), for streams whose names never stop changing (ids, words).  Memory then
        does not depend on the names seen; kernel groups of names read their names' columns.
    seed
        Seed of the replay draws, the model's only randomness (river's convention for the
        parameter; :class:`onlinemkl.OBSCUREClassifier`'s ``random_state``).  None: seed 0, so
        that a run repeats itself; an int: another sequence of draws.
    scale
        'auto', True or False: the learner's own standardisation of its inputs, as
        :class:`onlinemkl.OBSCUREClassifier`'s ('auto': a feature is standardised once a learnt
        value of magnitude above 10 arrives; a standardised stream passes bit for bit).

    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from onlinemkl.river import OBSCUREClassifier
    >>> model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=500)
    >>> metric = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    >>> metric.get() > 0.85
    True
    """

    def __init__(self, kernels: tuple | None = None, p: float | None = None, lam: float | None = None,
                 C: float = 1.0, eta: float | None = None, switch_after: int | str | None = "auto",
                 pegasos: bool = False, budget: int | None = None, eviction: str = "least_impact",
                 loss: str = "multiclass_hinge", replay: int | str = "auto", replay_window: int = DEFAULT_WINDOW,
                 max_features: int | None = MAX_FEATURES, feature_hashing: int | None = None,
                 seed: int | None = None, scale: bool | str = "auto"):
        store_params(self, locals())
        # Validate now: a bad parameter fails at construction, not mid-stream.
        self._attach(self._new_engine(), self._feature_map(), LabelMap())

    def _new_engine(self):
        """A fresh engine from the parameters, with the kernels in use (:func:`~onlinemkl.kernels.kernels_in_use`)."""
        kernels, p = check_params(kernels_in_use(self), self.p, self.lam, self.C, self.eta, self.switch_after,
                                  self.budget, self.eviction)
        check_choice("loss", self.loss, ("multiclass_hinge", "hinge"))
        steps = check_replay(self.replay, self.replay_window, self.budget, eviction=self.eviction)
        return ObscureEngine(kernels, p, self.eta, self.lam, self.budget, self.eviction, bool(self.pegasos),
                             self.loss == "hinge", C=self.C, replay=steps, replay_window=self.replay_window,
                             replay_many=many_class_steps(self.replay, steps), seed=river_seed(self.seed))

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
        stream_step(self._engine, row, yi, self.switch_after)

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
        R = self._engine.hyper[_co.H_R]
        return None if math.isinf(R) else float(R)

    def _check_labels(self, labels):
        if self._engine.binary and len(labels):
            raise ValueError("a binary (loss='hinge') model stores no label list")
        if not self._engine.binary:
            super()._check_labels(labels)
