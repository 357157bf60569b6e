"""river classifier for OBSCURE."""

from __future__ import annotations

import math

import numpy as np
from river import base

from .. import _obscure_engine as _ob
from .._core import obscure as _co
from .._validation import check_choice, check_feature_value, check_number
from ..kernels import check_kernels
from ._features import FeatureIndex


def softmax_dict(labels, scores) -> dict:
    """``{label: softmax(scores)}``, computed with the max shifted out."""
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - s.max())
    e /= e.sum()
    return {lab: float(v) for lab, v in zip(labels, e)}


class OBSCUREClassifier(base.Classifier):
    """OBSCURE multiple kernel classifier for river streams (dict in, label out).

    Stage 1 (online p-norm mirror descent) for the first ``switch_after``
    examples, then stage 2 (stochastic, with the adaptive step and the radius
    ``R`` estimated from stage 1); see :class:`onlinemkl.OBSCUREClassifier`
    for the parameters, which mean the same here.  Labels can be any hashable
    values and may appear at any time (multiclass Crammer-Singer hinge); with
    ``loss='hinge'`` it is a binary classifier of True/False labels (river's
    binary convention) with the binary hinge loss.  Features may appear, disappear and come in any order: a missing
    feature reads 0, so put a ``StandardScaler`` in front.  Kernel groups are
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
        Maximum stored examples; None for unbounded.
    eviction
        'oldest' or 'least_impact'.
    loss
        'multiclass_hinge', or 'hinge' (binary: True/False labels).

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
                 pegasos: bool = False, budget: int | None = None, eviction: str = "oldest",
                 loss: str = "multiclass_hinge"):
        self.kernels = kernels
        self.p = p
        self.lam = lam
        self.C = C
        self.eta = eta
        self.switch_after = switch_after
        self.pegasos = pegasos
        self.budget = budget
        self.eviction = eviction
        self.loss = loss
        # Validate now: a bad parameter fails at construction, not mid-stream.
        self._kernels = check_kernels(kernels)
        F = len(self._kernels)
        self._p = _ob.default_p(F) if p is None else check_number(
            "p", p, low=1.0, high=2.0, low_open=True, hint=" (OBSCURE needs 1 < p <= 2)")
        check_number("lam", lam, low=0.0, low_open=True, allow_none=True)
        check_number("C", C, low=0.0, low_open=True)
        check_number("eta", eta, low=0.0, low_open=True, allow_none=True)
        _ob.check_switch_after(switch_after)
        check_number("budget", budget, low=1, integer=True, allow_none=True)
        check_choice("eviction", eviction, tuple(_ob.EVICTION))
        check_choice("loss", loss, ("multiclass_hinge", "hinge"))
        self._engine = _ob.ObscureEngine(self._kernels, self._p, eta, lam, budget, eviction,
                                         bool(pegasos), loss == "hinge", C=C)
        self._features = FeatureIndex()
        self._labels: list = []
        self._label_index: dict = {}

    @property
    def _multiclass(self):
        return self.loss != "hinge"

    @classmethod
    def _unit_test_params(cls):
        yield {"budget": 200}
        yield {"budget": 100, "eviction": "least_impact", "switch_after": 50}
        yield {"budget": 100, "loss": "hinge", "switch_after": 30, "pegasos": True}

    # -- learning -------------------------------------------------------------------------

    def _encode_label(self, y):
        """Output index (multiclass) or +-1 (binary) of ``y``; registers a new label."""
        if self._engine.binary:
            return 1 if y else -1
        try:
            idx = self._label_index.get(y)
        except TypeError:
            raise TypeError(f"label {y!r} is not hashable; labels must be hashable values") from None
        if idx is None:
            if self._engine.binary and len(self._labels) == 2:
                raise ValueError(
                    f"label {y!r} is a third class, but loss='hinge' is binary; use loss='multiclass_hinge'"
                )
            idx = len(self._labels)
            self._labels.append(y)
            self._label_index[y] = idx
            self._engine.set_n_classes(len(self._labels))
        if self._engine.binary:
            return 1 if idx == 1 else -1
        return idx

    def _row(self, x: dict, grow: bool) -> np.ndarray:
        """Validated float64 row of ``x`` (length ``n_features``); with ``grow`` new features get columns.

        The same rules as :meth:`FeatureIndex.row` (every value is checked before
        any column is registered, so a rejected example changes nothing), with a
        fast path for plain ``float``/``int`` values: this runs twice per
        prequential example, and the generic ``numbers.Real`` check costs more
        than a small model's whole compiled step.
        """
        eng = self._engine
        cols = self._features.columns
        items = []
        for k, v in x.items():
            t = type(v)
            if t is float:
                if v - v != 0.0:  # inf or nan
                    check_feature_value(k, v)
            elif t is int:
                v = float(v)
            else:
                v = check_feature_value(k, v)
            items.append((k, v))
        if grow:
            n_before = len(cols)
            for k, _ in items:
                if k not in cols:
                    cols[k] = len(cols)
            if len(cols) != n_before:
                eng.set_features(len(cols), self._features.lookup)
        row = np.zeros(eng.n_features)
        for k, v in items:
            c = cols.get(k)
            if c is not None:
                row[c] = v
        return row

    def learn_one(self, x, y, **kwargs):
        if y is None:
            raise ValueError("y is None; learn_one needs a label")
        # Validate everything before changing any state: the label first (no
        # state change), then the row (every value is checked before a column is added).
        self._encode_label_check(y)
        row = self._row(x, grow=True)
        yi = self._encode_label(y)
        _ob.stream_step(self._engine, row, yi, self.switch_after)

    def _encode_label_check(self, y):
        if self._engine.binary:
            if not (isinstance(y, (bool, np.bool_)) or y in (0, 1)):
                raise ValueError(
                    f"label {y!r}: loss='hinge' is a binary classifier for True/False (or 1/0) labels, as river's "
                    "binary classifiers; use loss='multiclass_hinge' for other labels"
                )
            return
        try:
            known = y in self._label_index
        except TypeError:
            raise TypeError(f"label {y!r} is not hashable; labels must be hashable values") from None
        if not known and self._engine.binary and len(self._labels) == 2:
            raise ValueError(f"label {y!r} is a third class, but loss='hinge' is binary; use loss='multiclass_hinge'")

    # -- prediction -----------------------------------------------------------------------

    def _scores(self, x):
        return self._engine.scores_one(self._row(x, grow=False))

    def predict_proba_one(self, x, **kwargs):
        if self._engine.binary:
            # river's binary convention: {False: 1 - p, True: p}, p the logistic function of the score.
            s = self._scores(x)
            return softmax_dict([False, True], [-s[0] / 2.0, s[0] / 2.0])
        if not self._labels:
            return {}
        s = self._scores(x)
        return softmax_dict(self._labels, s[: len(self._labels)])

    def predict_one(self, x, **kwargs):
        if self._engine.binary:
            return bool(self._scores(x)[0] > 0)
        if not self._labels:
            return None
        s = self._scores(x)
        return self._labels[int(np.argmax(s[: len(self._labels)]))]

    # -- batch prediction (BLAS path) ---------------------------------------------------

    def _matrix(self, X) -> np.ndarray:
        """A pandas DataFrame -> float64 rows of the model's feature space.

        Columns the model has not seen are dropped and missing ones read 0, as
        in :meth:`predict_one`; values must be finite numbers.
        """
        eng = self._engine
        M = np.zeros((len(X), eng.n_features))
        cols = self._features.columns
        for name in X.columns:
            c = cols.get(name)
            if c is None:
                continue
            try:
                v = np.asarray(X[name], dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(
                    f"feature {name!r} is not numeric; encode categorical features "
                    "(e.g. river's preprocessing.OneHotEncoder) before the learner"
                ) from None
            if not np.all(np.isfinite(v)):
                raise ValueError(f"feature {name!r} has a non-finite value; impute or drop it before the learner")
            M[:, c] = v
        return M

    def _scores_many(self, X) -> np.ndarray:
        return self._engine.scores_many(self._matrix(X))

    def predict_proba_many(self, X):
        """Class probabilities of a DataFrame's rows at once (BLAS kernel blocks; same
        values as :meth:`predict_proba_one` row by row, up to rounding)."""
        import pandas as pd

        if self._engine.binary:
            s = self._scores_many(X)[:, 0]
            p = 1.0 / (1.0 + np.exp(-s))
            return pd.DataFrame({False: 1.0 - p, True: p}, index=X.index)
        if not self._labels:
            return pd.DataFrame(index=X.index)
        s = self._scores_many(X)[:, : len(self._labels)]
        e = np.exp(s - s.max(axis=1, keepdims=True))
        e /= e.sum(axis=1, keepdims=True)
        return pd.DataFrame(e, index=X.index, columns=list(self._labels))

    def predict_many(self, X):
        """Labels of a DataFrame's rows at once (BLAS kernel blocks; the same labels as
        :meth:`predict_one` row by row, up to ties within rounding)."""
        import pandas as pd

        if self._engine.binary:
            return pd.Series(self._scores_many(X)[:, 0] > 0, index=X.index, dtype=bool)
        if not self._labels:
            return pd.Series([None] * len(X), index=X.index, dtype=object)
        s = self._scores_many(X)[:, : len(self._labels)]
        labels = np.empty(len(self._labels), dtype=object)
        labels[:] = self._labels
        return pd.Series(labels[np.argmax(s, axis=1)], index=X.index, dtype=object)

    # -- attributes -----------------------------------------------------------------------

    @property
    def kernel_weights_(self) -> np.ndarray:
        return self._engine.kernel_weights()

    @property
    def n_support_(self) -> int:
        return self._engine.n_support

    @property
    def stage_(self) -> int:
        return self._engine.stage

    @property
    def R_(self):
        R = self._engine.hyper[_co.H_R]
        return None if math.isinf(R) else float(R)

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
        return {"engine": state, "features": list(self._features.columns), "labels": list(self._labels)}, arrays

    def _set_state(self, state, arrays):
        self._engine._set_state(state["engine"], arrays)
        names, labels = list(state["features"]), list(state["labels"])
        columns = {name: i for i, name in enumerate(names)}
        if len(columns) != len(names):
            raise ValueError("a feature name is listed twice")
        if len(columns) != self._engine.n_features:
            raise ValueError(f"{len(columns)} feature names for {self._engine.n_features} engine features")
        index = {label: i for i, label in enumerate(labels)}
        if len(index) != len(labels):
            raise ValueError("a label is listed twice")
        if self._engine.binary and labels:
            raise ValueError("a binary (loss='hinge') model stores no label list")
        if not self._engine.binary and len(labels) != self._engine.n_outputs:
            raise ValueError(f"{len(labels)} labels for {self._engine.n_outputs} outputs")
        self._features.columns = columns
        self._labels = labels
        self._label_index = index
