"""Online MKL for sequence labelling: a first-order chain whose unary parts are a
multiple-kernel model and whose label transitions are an explicit feature group.

The proximal steps, step sizes, projection and kernel weights are the flat
learner's (:mod:`onlinemkl.proximal`), shared through the same compiled
functions; :mod:`onlinemkl._core.sequence` holds the structured step.
"""

from __future__ import annotations

import math

import numpy as np

from ._buffer import SupportBuffer
from ._core import sequence as _cs
from ._validation import check_choice, check_number, check_rows
from .kernels import CompiledKernels, resolve_group_columns
from .obscure import EVICTION
from .proximal import _COMMON_DOC, _ProximalBase
from .river._features import FeatureIndex, LabelIndex

__all__ = ["SequenceMKLLabeler"]

LOSSES = {"svm": _cs.LOSS_SVM, "crf": _cs.LOSS_CRF}


class SequenceEngine:
    """State of the sequence labeller (internal)."""

    def __init__(self, settings, loss, cost, budget, eviction):
        self.ck = CompiledKernels(settings["kernels"])
        F = self.ck.n_kernels
        P = F + 1
        h = self.hyper = np.zeros(_cs.N_HYPER)
        h[_cs.H_LOSS] = LOSSES[loss]
        h[_cs.H_PROX] = settings["prox"]
        h[_cs.H_LAM] = settings["lam"]
        h[_cs.H_PROX_PARAM] = settings["param"]
        h[_cs.H_SCHEDULE] = settings["schedule"]
        h[_cs.H_ETA0] = settings["eta0"]
        h[_cs.H_SIGMA_SC] = settings["modulus"]
        h[_cs.H_GAMMA] = settings["gamma"]
        h[_cs.H_BUDGET] = 0 if budget is None else budget
        h[_cs.H_POLICY] = EVICTION[eviction]
        h[_cs.H_COST] = cost
        self.istate = np.zeros(_cs.N_ISTATE, dtype=np.int64)
        self.theta_sq = np.zeros(P)
        self.sigma = np.ones(P)
        self.sigma_cum = np.zeros(F)
        w = settings["weights"]
        self.prox_weights = np.ones(P) if w is None else w
        self.buf = SupportBuffer(F, self.ck.n_groups, F, budget=budget)
        cap = self.buf.capacity
        self.beta = np.zeros((cap, 2))
        self.avg_acc = np.zeros((cap, F))
        self.avg_base = np.zeros((cap, F))
        self.trans = {name: np.zeros((2, 2)) for name in ("T", "Tavg")}
        self.trans.update({name: np.zeros(2) for name in ("S0", "S1", "S0avg", "S1avg")})
        self.b = np.zeros(P)
        self.b_new = np.zeros(P)
        self.n_features = 0

    @property
    def n_labels(self):
        return int(self.hyper[_cs.H_NLABELS])

    @property
    def n_support(self):
        return int(self.istate[_cs.I_N])

    def set_features(self, n_features, lookup=None):
        if n_features > self.n_features:
            self.n_features = n_features
            self.buf.ensure_columns(n_features)
            self.ck.set_columns(resolve_group_columns(self.ck.groups, n_features, lookup))

    def set_n_labels(self, Y):
        self.hyper[_cs.H_NLABELS] = Y
        C = self.beta.shape[1]
        if Y > C:
            new = max(Y, 2 * C)
            beta = np.zeros((self.beta.shape[0], new))
            beta[:, :C] = self.beta
            self.beta = beta
            for name, arr in list(self.trans.items()):
                grown = np.zeros((new, new) if arr.ndim == 2 else new)
                grown[tuple(slice(0, C) for _ in range(arr.ndim))] = arr
                self.trans[name] = grown

    def _ensure_rows(self, n_rows):
        cap = self.buf.capacity
        self.buf.ensure_rows(n_rows)
        if self.buf.capacity != cap:
            for name in ("beta", "avg_acc", "avg_base"):
                old = getattr(self, name)
                arr = np.zeros((self.buf.capacity,) + old.shape[1:])
                arr[:cap] = old
                setattr(self, name, arr)

    def learn(self, xs, ys):
        self._ensure_rows(self.n_support + xs.shape[0])
        b = self.buf
        tr = self.trans
        return _cs.sequence_learn(
            xs, ys, b.S, b.ssq, b.sdiag, b.coef, self.beta, b.tstamp, self.avg_acc, self.avg_base,
            *self.ck.arrays(), tr["T"], tr["S0"], tr["S1"], tr["Tavg"], tr["S0avg"], tr["S1avg"],
            self.theta_sq, self.sigma, self.sigma_cum, self.prox_weights, self.istate, self.hyper, self.b, self.b_new,
        )

    def predict(self, xs, average=False):
        Y = self.n_labels
        path = np.zeros(xs.shape[0], dtype=np.int64)
        if Y == 0 or xs.shape[0] == 0:
            return path
        b = self.buf
        tr = self.trans
        n = self.n_support
        F = self.ck.n_kernels
        if average:
            from ._core.fobos import averaged_coefficients

            T = max(int(self.istate[_cs.I_T]), 1)
            coef = np.empty((max(n, 1), F))
            averaged_coefficients(n, b.coef, self.avg_acc, self.avg_base, self.sigma_cum, T, coef)
            sigma = np.ones(F + 1)
            trans = (tr["Tavg"] / T, tr["S0avg"] / T, tr["S1avg"] / T)
        else:
            coef, sigma = b.coef, self.sigma
            trans = (tr["T"], tr["S0"], tr["S1"])
        _cs.sequence_predict(xs, b.S, b.ssq, b.sdiag, coef, self.beta, n, *self.ck.arrays(), sigma, *trans, Y, path)
        return path

    def group_norms(self):
        return self.sigma * np.sqrt(np.maximum(self.theta_sq, 0.0))


class SequenceMKLLabeler(_ProximalBase):
    __doc__ = """Online multiple kernel learning for sequence labelling (first-order chain).

    One sequence at a time (``learn_one(xs, ys)``): the unary parts are scored by
    a multiple-kernel model over per-position feature vectors (stored in the
    support buffer as position examples), the label transitions (with start
    and stop scores) form one explicit group.  The structured hinge loss uses
    loss-augmented Viterbi with Hamming cost; the CRF loss forward-backward
    marginals.  ``kernel_weights_`` has one entry per kernel, then the
    transition group.

    Parameters
    ----------
    loss : {'svm', 'crf'}, default 'svm'
    cost : float >= 0, default 1.0
        Hamming cost of a wrong position in loss-augmented decoding (SVM).""" + _COMMON_DOC.replace(
        "    explicit_groups : tuple of feature groups, default None\n"
        "        Extra groups kept in the primal as linear weight matrices (a group is\n"
        "        None for all features or a tuple of columns).\n", "") + """
    Inputs: ``xs`` is a 2-D array (one row per position) or a list of feature
    dicts; ``ys`` a sequence of hashable labels.  An empty sequence is learnt as
    a no-op and predicted as ``[]``; labels never seen in training are never
    predicted; features never seen are ignored at prediction.

    Examples
    --------
    >>> import numpy as np
    >>> from onlinemkl.sequence import SequenceMKLLabeler
    >>> from onlinemkl.kernels import RBF
    >>> rng = np.random.default_rng(0)
    >>> seqs = [rng.normal(size=(5, 2)) for _ in range(60)]
    >>> labels = [(x[:, 0] > 0).astype(int).tolist() for x in seqs]
    >>> model = SequenceMKLLabeler(kernels=(RBF(gamma=0.5),), random_state=0).fit(seqs, labels)
    >>> model.predict_one(np.array([[2.0, 0.0], [-2.0, 0.0]]))
    [1, 0]
    """

    _classification = True

    def __init__(self, kernels=None, loss="svm", cost=1.0, regularizer="sq_l21", lam=1e-4, q=1.5, sigma=1.0,
                 l1_ratio=1.0, group_weights=None, schedule="invsqrt", eta0=1.0, gamma="auto", average=False,
                 budget=None, eviction="oldest", n_epochs=1, random_state=None):
        self.kernels = kernels
        self.loss = loss
        self.cost = cost
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
        self.n_epochs = n_epochs
        self.random_state = random_state

    def _ensure_engine(self):
        if hasattr(self, "_engine"):
            return
        check_choice("loss", self.loss, tuple(LOSSES))
        cost = check_number("cost", self.cost, low=0.0)
        # Loss at theta = 0 for the appendix-E radius: the Hamming cost of the
        # worst labelling is unbounded in L; use the per-position value
        # (documented: gamma='auto' bounds a per-position-normalised model).
        loss_at_zero = max(cost, 1.0) if self.loss == "svm" else math.log(2.0)
        settings = self._settings(loss_at_zero, n_extra_groups=1)
        self._engine = SequenceEngine(settings, self.loss, cost, self.budget, self.eviction)
        self._features = FeatureIndex()
        self._labels = LabelIndex()
        self._array_input = None

    # -- inputs ----------------------------------------------------------------------------

    def _rows(self, xs, grow):
        """``xs`` -> (L, d) float64 rows; dict positions via the feature index."""
        if isinstance(xs, np.ndarray) or (len(xs) and not isinstance(xs[0], dict)):
            if self._array_input is False:
                raise TypeError("this model was trained on feature dicts; pass a list of dicts per position")
            X = check_rows(np.asarray(xs, dtype=float).reshape(len(xs), -1), name="xs",
                           n_features=self._engine.n_features or None) if len(xs) else np.zeros((0, 0))
            if grow:
                self._array_input = True
                self._engine.set_features(X.shape[1])
            return X
        if self._array_input is True and len(xs):
            raise TypeError("this model was trained on arrays; pass a 2-D array per sequence")
        rows = [self._features.row(x, grow=False) for x in xs]  # validate first
        if grow and len(xs):
            self._array_input = False
            rows = [self._features.row(x, grow=True) for x in xs]
            self._engine.set_features(len(self._features), self._features.lookup)
        d = self._engine.n_features
        out = np.zeros((len(rows), d))
        for i, r in enumerate(rows):
            out[i, : min(d, r.shape[0])] = r[:d]
        return out

    # -- learning --------------------------------------------------------------------------

    def learn_one(self, xs, ys):
        """One online step on one labelled sequence; returns ``self``."""
        self._ensure_engine()
        if len(xs) != len(ys):
            raise ValueError(f"xs has {len(xs)} positions but ys has {len(ys)} labels; they must match")
        if len(xs) == 0:
            return self
        X = self._rows(xs, grow=False) if self._engine.n_features else None
        for y in ys:
            self._labels.known(y)  # hashability check before any change
        X = self._rows(xs, grow=True)
        idx = np.array([self._labels.add(y) for y in ys], dtype=np.int64)
        if len(self._labels) > self._engine.n_labels:
            self._engine.set_n_labels(len(self._labels))
        self._engine.learn(np.ascontiguousarray(X), idx)
        return self

    def fit(self, X_seqs, y_seqs):
        """``n_epochs`` passes over the sequences in random order (a fresh model)."""
        if len(X_seqs) != len(y_seqs):
            raise ValueError(f"{len(X_seqs)} sequences but {len(y_seqs)} label sequences; they must match")
        for attr in ("_engine", "_features", "_labels", "_array_input"):
            self.__dict__.pop(attr, None)
        self._ensure_engine()
        rng = np.random.default_rng(self.random_state)
        for _ in range(self.n_epochs):
            for i in rng.permutation(len(X_seqs)):
                self.learn_one(X_seqs[i], y_seqs[i])
        return self

    def predict_one(self, xs):
        """The Viterbi labelling of one sequence (a list of labels)."""
        if not hasattr(self, "_engine") or len(xs) == 0 or not len(self._labels):
            return []
        X = self._rows(xs, grow=False)
        path = self._engine.predict(np.ascontiguousarray(X), average=bool(self.average))
        return [self._labels.labels[i] for i in path]

    def predict(self, X_seqs):
        return [self.predict_one(xs) for xs in X_seqs]

    @property
    def kernel_weights_(self):
        nrm = self._engine.group_norms()
        s = nrm.sum()
        return nrm / s if s > 0 else np.full_like(nrm, 1.0 / nrm.size)

    @property
    def n_support_(self):
        return self._engine.n_support
