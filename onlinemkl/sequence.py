"""Online MKL for sequence labelling: a first-order chain whose unary parts are a
multiple-kernel model and whose label transitions are an explicit feature group.

The proximal steps, step sizes, projection and kernel weights are the flat
learner's (:mod:`onlinemkl.proximal`), shared through the same compiled
functions; :mod:`onlinemkl._core.sequence` holds the structured step.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._buffer import RefreshRowCachesOnUnpickle, SupportBuffer
from ._core import sequence as _cs
from ._validation import check_choice, check_number, check_rows
from .kernels import CompiledKernels, resolve_group_columns
from .obscure import EVICTION
from .proximal import _COMMON_DOC, _ProximalBase
from .river._features import FeatureIndex, LabelIndex

__all__ = ["SequenceMKLLabeler", "SequenceEngine"]

LOSSES = {"svm": _cs.LOSS_SVM, "crf": _cs.LOSS_CRF}

#: Transition-group arrays: raw transition/start/stop scores and their running sums (averaged model).
TRANSITION_ARRAYS = ("T", "S0", "S1", "Tavg", "S0avg", "S1avg")


class SequenceEngine(RefreshRowCachesOnUnpickle):
    """State of the sequence labeller (internal).

    Plain numpy state: the support buffer of position examples (``buf``), the
    class vectors ``beta`` of the stored positions, the averaged-model
    bookkeeping, the transition group (``T``, ``S0``, ``S1`` and their sums),
    the group norms and lazy scales.  ``len_sum`` is the number of positions
    learnt (for ``gamma='auto'``).
    """

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
        self.prox_weights = np.ones(P) if w is None else np.asarray(w, dtype=float)
        self.buf = SupportBuffer(F, self.ck.n_groups, F, budget=budget)
        cap = self.buf.capacity
        self.beta = np.zeros((cap, 2))
        self.avg_acc = np.zeros((cap, F))
        self.avg_base = np.zeros((cap, F))
        for name in TRANSITION_ARRAYS:
            setattr(self, name, np.zeros((2, 2)) if name.startswith("T") else np.zeros(2))
        self.b = np.zeros(P)
        self.b_new = np.zeros(P)
        self.n_features = 0
        self.len_sum = 0

    @property
    def n_labels(self):
        return int(self.hyper[_cs.H_NLABELS])

    @property
    def n_support(self):
        return int(self.istate[_cs.I_N])

    @property
    def n_kernels(self):
        return self.ck.n_kernels

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
            for name in TRANSITION_ARRAYS:
                arr = getattr(self, name)
                grown = np.zeros((new, new) if arr.ndim == 2 else new)
                grown[tuple(slice(0, C) for _ in range(arr.ndim))] = arr
                setattr(self, name, grown)

    def _ensure_rows(self, n_rows):
        cap = self.buf.capacity
        self.buf.ensure_rows(n_rows)
        if self.buf.capacity != cap:
            for name in ("beta", "avg_acc", "avg_base"):
                old = getattr(self, name)
                arr = np.zeros((self.buf.capacity,) + old.shape[1:])
                arr[:cap] = old
                setattr(self, name, arr)

    def learn(self, xs, ys, gamma_unit=None):
        """One step on a non-empty sequence (rows ``xs``, label indices ``ys``).

        ``gamma_unit``: with ``gamma='auto'``, the radius for a loss of 1 at
        ``theta = 0``; the radius used is ``gamma_unit * sqrt(mean L(0))``.
        """
        self.len_sum += int(xs.shape[0])
        if gamma_unit is not None:
            self.hyper[_cs.H_GAMMA] = gamma_unit * math.sqrt(self.mean_loss_at_zero(xs.shape[0]))
        self._ensure_rows(self.n_support + xs.shape[0])
        b = self.buf
        return _cs.sequence_learn(
            xs, ys, b.S, b.ssq, b.sdiag, b.coef, self.beta, b.tstamp, self.avg_acc, self.avg_base,
            *self.ck.arrays(), self.T, self.S0, self.S1, self.Tavg, self.S0avg, self.S1avg,
            self.theta_sq, self.sigma, self.sigma_cum, self.prox_weights, self.istate, self.hyper, self.b, self.b_new,
        )

    def mean_loss_at_zero(self, pending=0):
        """Mean loss at ``theta = 0`` of the sequences learnt so far (and one of length ``pending``).

        At ``theta = 0`` every labelling scores 0, so a sequence of length L
        has structured hinge loss ``cost * L`` (every position wrong) and CRF
        loss ``log Z = L log Y``.
        """
        n_seq = int(self.istate[_cs.I_T]) + (1 if pending else 0)
        per_position = self.hyper[_cs.H_COST] if self.hyper[_cs.H_LOSS] == _cs.LOSS_SVM \
            else math.log(max(self.n_labels, 2))
        return per_position * self.len_sum / max(n_seq, 1)

    def predict(self, xs, average=False):
        Y = self.n_labels
        path = np.zeros(xs.shape[0], dtype=np.int64)
        if Y == 0 or xs.shape[0] == 0:
            return path
        b = self.buf
        n = self.n_support
        F = self.ck.n_kernels
        if average:
            from ._core.fobos import averaged_coefficients

            T = max(int(self.istate[_cs.I_T]), 1)
            coef = np.empty((max(n, 1), F))
            averaged_coefficients(n, b.coef, self.avg_acc, self.avg_base, self.sigma_cum, T, coef)
            sigma = np.ones(F + 1)
            trans = (self.Tavg / T, self.S0avg / T, self.S1avg / T)
        else:
            coef, sigma = b.coef, self.sigma
            trans = (self.T, self.S0, self.S1)
        _cs.sequence_predict(xs, b.S, b.ssq, b.sdiag, coef, self.beta, n, *self.ck.arrays(), sigma, *trans, Y, path)
        return path

    def group_norms(self):
        return self.sigma * np.sqrt(np.maximum(self.theta_sq, 0.0))

    def recompute_theta_sq(self):
        """Squared raw group norms recomputed from the buffer and the transition arrays (tests)."""
        from ._core.fobos import theta_sq_dense_from_buffer

        b = self.buf
        out = np.empty_like(self.theta_sq)
        F = self.ck.n_kernels
        out[:F] = theta_sq_dense_from_buffer(b.S, b.ssq, b.sdiag, b.coef, self.beta, self.n_support,
                                             max(self.n_labels, 1), *self.ck.arrays())
        out[F] = float(np.sum(self.T ** 2) + np.sum(self.S0 ** 2) + np.sum(self.S1 ** 2))
        return out

    # -- persistence (the onlinemkl.persist protocol) -------------------------------------

    @staticmethod
    def _state_array_names():
        return ("hyper", "istate", "theta_sq", "sigma", "sigma_cum", "prox_weights", "beta", "avg_acc", "avg_base",
                *TRANSITION_ARRAYS, "buf.S", "buf.ssq", "buf.sdiag", "buf.ypos", "buf.yneg", "buf.coef",
                "buf.tstamp", "ck.codes", "ck.params", "ck.kgroup", "ck.granges", "ck.gptr", "ck.gl1")

    def _get_state(self):
        from .persist import collect_arrays

        state = {"n_features": int(self.n_features), "len_sum": int(self.len_sum),
                 "kernels_resolved": bool(self.ck._resolved)}
        return state, collect_arrays(self, self._state_array_names())

    def _set_state(self, state, arrays, gamma_auto):
        """Restore onto an engine built from the same parameters; every shape and index is checked."""
        from .persist import restore_arrays

        fresh_hyper = self.hyper.copy()
        restore_arrays(self, arrays, self._state_array_names())
        self.n_features = int(state["n_features"])
        self.len_sum = int(state["len_sum"])
        self.ck._resolved = bool(state["kernels_resolved"])
        self.b = np.zeros_like(self.theta_sq)
        self.b_new = np.zeros_like(self.theta_sq)
        self._check_state(fresh_hyper, gamma_auto)
        self.ck.refresh_row_caches(self.buf.S, self.n_support, self.buf.ssq, self.buf.sdiag)

    def _check_state(self, fresh_hyper, gamma_auto):
        from .persist import _get_path

        F, G = self.ck.n_kernels, self.ck.n_groups
        P = F + 1
        b, ck, h = self.buf, self.ck, self.hyper

        def need(ok, rule):
            if not ok:
                raise ValueError(f"inconsistent sequence-labeller state: {rule}")

        need(h.shape == (_cs.N_HYPER,), f"hyper has shape {h.shape}")
        need(self.istate.shape == (_cs.N_ISTATE,), f"istate has shape {self.istate.shape}")
        settings = [i for i in range(_cs.N_HYPER) if i != _cs.H_NLABELS and not (gamma_auto and i == _cs.H_GAMMA)]
        need(np.array_equal(h[settings], fresh_hyper[settings]),
             "the saved settings (loss, regulariser, lam, schedule, budget, ...) differ from the parameters")
        need(math.isfinite(h[_cs.H_GAMMA]) and h[_cs.H_GAMMA] >= 0, "gamma is not finite and >= 0")
        for name, arr, shape in (("theta_sq", self.theta_sq, (P,)), ("sigma", self.sigma, (P,)),
                                 ("sigma_cum", self.sigma_cum, (F,)), ("prox_weights", self.prox_weights, (P,))):
            need(arr.shape == shape, f"{name} has shape {arr.shape}, expected {shape}")
        ck.check_restored(need)
        cap, dcap = b.S.shape
        C = self.beta.shape[1]
        for name, arr, shape in (("buf.ssq", b.ssq, (cap, G)), ("buf.sdiag", b.sdiag, (cap, F)),
                                 ("buf.ypos", b.ypos, (cap,)), ("buf.yneg", b.yneg, (cap,)),
                                 ("buf.coef", b.coef, (cap, F)), ("buf.tstamp", b.tstamp, (cap,)),
                                 ("beta", self.beta, (cap, C)), ("avg_acc", self.avg_acc, (cap, F)),
                                 ("avg_base", self.avg_base, (cap, F)), ("T", self.T, (C, C)),
                                 ("Tavg", self.Tavg, (C, C)), ("S0", self.S0, (C,)), ("S1", self.S1, (C,)),
                                 ("S0avg", self.S0avg, (C,)), ("S1avg", self.S1avg, (C,))):
            need(arr.shape == shape, f"{name} has shape {arr.shape}, expected {shape}")
        budget = 0 if b.budget is None else b.budget
        need(cap >= 1 and (budget == 0 or cap <= budget), f"buffer capacity {cap} exceeds the budget {budget}")
        n = self.n_support
        need(0 <= n <= cap, f"{n} stored positions in a buffer of {cap} rows")
        need(bool(np.all(self.istate >= 0)), "negative counters")
        need(0 <= self.n_features <= dcap, f"{self.n_features} features in a buffer of {dcap} columns")
        Y = h[_cs.H_NLABELS]
        need(Y == int(Y) and 0 <= Y <= C, f"{Y!r} labels for {C} label slots")
        need(self.len_sum >= 0, "negative number of positions")
        need(bool(np.all(self.sigma > 0)), "a group scale is not positive")
        for name in ("theta_sq", "sigma", "sigma_cum", "prox_weights", "beta", "avg_acc", "avg_base",
                     *TRANSITION_ARRAYS, "buf.S", "buf.ssq", "buf.sdiag", "buf.coef", "ck.params"):
            need(bool(np.all(np.isfinite(_get_path(self, name)))), f"{name} holds NaN or infinite values")
        r = ck.granges
        need(r.ndim == 2 and r.shape[1] == 2, f"ck.granges has shape {r.shape}")
        need(bool(np.all((r[:, 0] >= 0) & (r[:, 0] <= r[:, 1]) & (r[:, 1] <= self.n_features))),
             "a feature group's columns are out of range")
        p = ck.gptr
        need(p[0] == 0 and p[-1] == r.shape[0] and bool(np.all(np.diff(p) >= 0)), "ck.gptr is not a valid index")


class SequenceMKLLabeler(_ProximalBase):
    __doc__ = """Online multiple kernel learning for sequence labelling (first-order chain).

    Martins et al. (2010), Algorithm 3 with a structured loss.  One sequence at
    a time (``learn_one(xs, ys)``): the unary parts are scored by a
    multiple-kernel model over per-position feature vectors (stored in the
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
        "        None for all features or a tuple of columns).\n", "").replace(
        "    gamma : float, 'auto' or None, default 'auto'\n"
        "        Radius of the projection ball; 'auto' is appendix E's ``sqrt(2 L(0) / modulus)``\n"
        "        where the regulariser is strongly convex (otherwise no projection).\n",
        "    gamma : float, 'auto' or None, default 'auto'\n"
        "        Radius of the projection ball; 'auto' is appendix E's ``sqrt(2 L(0) / modulus)``\n"
        "        where the regulariser is strongly convex (otherwise no projection), with\n"
        "        ``L(0)`` the mean loss at ``theta = 0`` of the sequences seen so far:\n"
        "        ``cost * mean length`` (SVM) or ``log(n_labels) * mean length`` (CRF).\n") + """
    Notes
    -----
    Inputs: ``xs`` is one sequence: a 2-D array or a list of rows (one row of numbers
    per position; arrays of more dimensions, e.g. images, are flattened to one
    row per position) or a list of feature dicts (one per position, as in
    river).  A model keeps the kind it was first trained on.  ``ys`` is a
    sequence of hashable labels, one per position (a string works: one label
    per character).

    * Variable lengths are the norm: every sequence has its own length.
    * Empty sequences: ``learn_one([], [])`` is a no-op (nothing to learn; the
      step counter does not move) and ``predict_one([])`` returns ``[]``.
    * Labels: the label set grows as new labels appear in ``learn_one``.
      ``predict_one`` only returns labels seen in training; before any label
      has been seen it returns ``[None] * len(xs)`` (as river's
      ``predict_one`` returns None before learning).
    * Features: with dicts, features never seen in training are ignored at
      prediction (and missing ones read 0); with arrays, every sequence must
      have the number of columns of the first one.
    * Bad input (ragged rows, NaN or infinite values, a wrong number of
      columns, ``len(xs) != len(ys)``, unhashable or NaN labels, mixing dicts
      and rows) raises ``ValueError``/``TypeError`` naming ``xs`` or ``ys``
      and the position, and leaves the model unchanged.  ``fit`` names the
      sequence and restores the previous model.

    Saving: ``model.save(path)`` writes onlinemkl's model file
    (:mod:`onlinemkl.persist`); ``onlinemkl.load(path)`` predicts
    bit-for-bit like the saved model and continues learning identically.

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
    >>> model.predict_one([])
    []
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

    _STATE_ATTRS = ("_engine", "_features", "_labels", "_array_input", "_gamma_unit")

    def _ensure_engine(self):
        if hasattr(self, "_engine"):
            return
        check_choice("loss", self.loss, tuple(LOSSES))
        cost = check_number("cost", self.cost, low=0.0)
        # Appendix E: ||theta*|| <= sqrt(2 L(0) / modulus).  The loss at theta = 0
        # grows with the sequence length (and, for the CRF, the number of labels),
        # so the settings give the radius for L(0) = 1 and each step scales it by
        # sqrt(mean L(0)) of the sequences seen so far (SequenceEngine.learn).
        settings = self._settings(1.0, n_extra_groups=1)
        engine = SequenceEngine(settings, self.loss, cost, self.budget, self.eviction)
        self._gamma_unit = settings["gamma"] if (self.gamma == "auto" and settings["gamma"] > 0) else None
        self._engine = engine
        self._features = FeatureIndex()
        self._labels = LabelIndex()
        self._array_input = None

    def _forget(self):
        for attr in self._STATE_ATTRS:
            self.__dict__.pop(attr, None)

    # -- inputs ----------------------------------------------------------------------------

    @staticmethod
    def _length(value, name):
        if isinstance(value, dict):
            raise TypeError(f"{name} is a dict; pass a sequence (a list or an array) with one entry per position")
        try:
            return len(value)
        except TypeError:
            raise TypeError(f"{name} must be a sequence with one entry per position (a list or an array); "
                            f"got {type(value).__name__}") from None

    def _matrix(self, xs):
        """``xs`` (array or list of rows) -> validated (L, d) float64 rows."""
        L = len(xs)
        if not isinstance(xs, np.ndarray):
            shape0 = np.shape(xs[0]) if not isinstance(xs[0], dict) else None
            for i, row in enumerate(xs):
                if isinstance(row, dict):
                    raise TypeError(f"xs[{i}] is a feature dict but xs[0] is not; every position must be a "
                                    "row of numbers, or every position a feature dict")
                if np.shape(row) != shape0:
                    raise ValueError(f"xs is ragged: position {i} has shape {np.shape(row)} but position 0 has "
                                     f"{shape0}; every position needs the same number of features")
        try:
            A = np.asarray(xs, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"xs must hold numbers (float-convertible) at every position: {exc}") from None
        if A.ndim == 1:
            raise ValueError(f"xs is a 1-D array of shape {A.shape}; pass one row per position, e.g. "
                             "np.reshape(xs, (-1, 1)) for one feature per position")
        if A.ndim > 2:
            A = A.reshape(L, -1)  # e.g. one image per position: flattened to one row
        return check_rows(A, name="xs", n_features=self._engine.n_features or None)

    def _rows(self, xs, grow):
        """``xs`` -> (L, d) float64 rows; dict positions via the feature index.

        With ``grow`` the input kind and new features are recorded, but only
        after every position has been validated (a rejected ``xs`` changes nothing).
        """
        if hasattr(xs, "to_numpy") and not isinstance(xs, np.ndarray):
            xs = xs.to_numpy()  # a pandas DataFrame: one row per position
        if not isinstance(xs, np.ndarray) and isinstance(xs[0], dict):
            if self._array_input is True:
                raise TypeError("xs holds feature dicts, but this model was trained on rows of numbers; "
                                "pass a 2-D array (one row per position)")
            for i, x in enumerate(xs):
                if not isinstance(x, dict):
                    raise TypeError(f"xs[{i}] is a {type(x).__name__} but xs[0] is a feature dict; "
                                    "every position must be a feature dict, or every position a row of numbers")
            try:
                rows = [self._features.row(x, grow=False) for x in xs]  # validate first
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"xs: {exc}") from None
            if grow:
                self._array_input = False
                rows = [self._features.row(x, grow=True) for x in xs]
                self._engine.set_features(len(self._features), self._features.lookup)
            d = self._engine.n_features
            out = np.zeros((len(rows), max(d, 1)))
            for i, r in enumerate(rows):
                m = min(d, r.shape[0])
                out[i, :m] = r[:m]
            return out
        if self._array_input is False:
            raise TypeError("xs holds rows of numbers, but this model was trained on feature dicts; "
                            "pass a list with one feature dict per position")
        X = self._matrix(xs)
        if grow:
            self._array_input = True
            self._engine.set_features(X.shape[1])
        return X

    def _label_indices_check(self, ys):
        for i, y in enumerate(ys):
            try:
                hash(y)
            except TypeError:
                raise TypeError(f"ys[{i}] = {y!r} is not hashable; labels must be hashable values "
                                "(str, int, tuple, ...)") from None
            if isinstance(y, numbers.Real) and not isinstance(y, numbers.Integral) and math.isnan(y):
                raise ValueError(f"ys[{i}] is NaN; a label must equal itself (drop or relabel the position)")

    # -- learning --------------------------------------------------------------------------

    def learn_one(self, xs, ys):
        """One online step on one labelled sequence; returns ``self``.

        An empty sequence is a no-op.  A rejected input leaves the model unchanged.
        """
        fresh = not hasattr(self, "_engine")
        try:
            self._learn_one(xs, ys)
        except BaseException:
            if fresh:
                self._forget()
            raise
        return self

    def _learn_one(self, xs, ys):
        L = self._length(xs, "xs")
        if self._length(ys, "ys") != L:
            raise ValueError(f"xs has {L} positions but ys has {len(ys)} labels; they must match")
        self._ensure_engine()
        if L == 0:
            return
        self._label_indices_check(ys)
        X = self._rows(xs, grow=True)  # validates before recording anything
        idx = np.array([self._labels.add(y) for y in ys], dtype=np.int64)
        if len(self._labels) > self._engine.n_labels:
            self._engine.set_n_labels(len(self._labels))
        self._engine.learn(np.ascontiguousarray(X), idx, self._gamma_unit)

    def fit(self, X_seqs, y_seqs):
        """``n_epochs`` passes over the sequences in random order (a fresh model).

        On bad input the error names the sequence and the previous model is kept.
        """
        n = self._length(X_seqs, "X_seqs")
        if self._length(y_seqs, "y_seqs") != n:
            raise ValueError(f"{n} sequences but {len(y_seqs)} label sequences; they must match")
        check_number("n_epochs", self.n_epochs, low=1, integer=True)
        saved = {a: self.__dict__[a] for a in self._STATE_ATTRS if a in self.__dict__}
        self._forget()
        try:
            self._ensure_engine()
            rng = np.random.default_rng(self.random_state)
            for _ in range(self.n_epochs):
                for i in rng.permutation(n):
                    try:
                        self._learn_one(X_seqs[i], y_seqs[i])
                    except (TypeError, ValueError) as exc:
                        raise type(exc)(f"sequence {i}: {exc}") from None
        except BaseException:
            self._forget()
            self.__dict__.update(saved)
            raise
        return self

    def predict_one(self, xs):
        """The Viterbi labelling of one sequence (a list of labels, one per position)."""
        L = self._length(xs, "xs")
        if L == 0:
            return []
        if not hasattr(self, "_engine") or not len(self._labels):
            return [None] * L
        X = self._rows(xs, grow=False)
        path = self._engine.predict(np.ascontiguousarray(X), average=bool(self.average))
        labels = self._labels.labels
        return [labels[i] for i in path]

    def predict(self, X_seqs):
        """``predict_one`` of every sequence (a list of label lists)."""
        return [self.predict_one(xs) for xs in X_seqs]

    def score(self, X_seqs, y_seqs):
        """Per-position (per-character) accuracy over all sequences."""
        n = self._length(X_seqs, "X_seqs")
        if self._length(y_seqs, "y_seqs") != n:
            raise ValueError(f"{n} sequences but {len(y_seqs)} label sequences; they must match")
        right = total = 0
        for i, (xs, ys) in enumerate(zip(X_seqs, y_seqs)):
            pred = self.predict_one(xs)
            if len(ys) != len(pred):
                raise ValueError(f"sequence {i}: xs has {len(pred)} positions but ys has {len(ys)} labels")
            right += sum(p == y for p, y in zip(pred, ys))
            total += len(ys)
        return right / total if total else float("nan")

    @property
    def classes_(self):
        """The labels seen so far, in order of first appearance."""
        return list(self._labels.labels) if hasattr(self, "_labels") else []

    @property
    def kernel_weights_(self):
        """``||theta_k|| / sum_l ||theta_l||``: one entry per kernel, then the transition group."""
        check_is_fitted(self, "_engine")
        nrm = self._engine.group_norms()
        s = nrm.sum()
        return nrm / s if s > 0 else np.full_like(nrm, 1.0 / nrm.size)

    @property
    def zero_groups_(self):
        """Boolean mask of the groups that are exactly zero (kernels, then the transition group)."""
        check_is_fitted(self, "_engine")
        return self._engine.group_norms() == 0.0

    @property
    def n_support_(self):
        return self._engine.n_support if hasattr(self, "_engine") else 0

    # -- persistence ------------------------------------------------------------------------

    def save(self, path):
        """Save to ``path`` in onlinemkl's model format (not pickle); ``onlinemkl.load(path)`` reads it.

        The write is atomic; see :mod:`onlinemkl.persist` for the format.  Returns the path.
        """
        from .persist import save

        return save(self, path)

    def _get_state(self):
        if not hasattr(self, "_engine"):
            return {"fitted": False}, {}
        state, arrays = self._engine._get_state()
        cols = self._features.columns
        out = {"fitted": True, "engine": state, "labels": list(self._labels.labels),
               "features": sorted(cols, key=cols.__getitem__), "array_input": self._array_input}
        return out, arrays

    def _set_state(self, state, arrays):
        if not state.get("fitted"):
            return
        self._forget()
        try:
            self._ensure_engine()
            self._engine._set_state(state["engine"], arrays, self._gamma_unit is not None)
            labels = list(state["labels"])
            for y in labels:
                self._labels.add(y)
            if len(self._labels) != len(labels):
                raise ValueError("the saved labels are not distinct")
            if len(labels) != self._engine.n_labels:
                raise ValueError(f"{len(labels)} labels but the engine has {self._engine.n_labels}")
            array_input = state["array_input"]
            if array_input not in (None, True, False):
                raise ValueError(f"array_input={array_input!r} is not None, True or False")
            self._array_input = array_input
            for name in state["features"]:
                self._features.columns[name] = len(self._features.columns)
            n_feat = self._engine.n_features
            if array_input is False and len(self._features) != n_feat:
                raise ValueError(f"{len(self._features)} feature names but the engine has {n_feat} features")
            if array_input is not False and len(self._features):
                raise ValueError("feature names saved for a model trained on arrays")
            if array_input is None and (n_feat or self._engine.n_support):
                raise ValueError("a model without input kind has features or stored positions")
        except BaseException:
            self._forget()
            raise
