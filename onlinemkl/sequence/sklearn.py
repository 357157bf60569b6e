"""Online MKL for sequence labelling: the array and dict face of
:class:`onlinemkl.sequence.engine.SequenceEngine` (a first-order chain whose unary
parts are a multiple-kernel model and whose label transitions are an explicit
feature group).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._validation import check_rows
from ..engine import engine_for_state, kernels_of_state, state_with_settings
from ..proximal._setup import settings
from .._params import face
from .engine import CRF_ETA0, PARAMS, SequenceEngine
from ..features import FeatureMap, LabelMap, check_feature_cap
from ..kernels import restoring_kernels
from ..proximal.sklearn import _ProximalFace
from ..sklearn import EngineEstimator

__all__ = ["SequenceMKLLabeler"]


@face(PARAMS, "sklearn")
class SequenceMKLLabeler(_ProximalFace, EngineEstimator):
    """Online multiple kernel learning for sequence labelling (first-order chain).

    Martins et al. (2010), Algorithm 3 with a structured loss.  One sequence at
    a time (``learn_one(xs, ys)``): the unary parts are scored by a
    multiple-kernel model over per-position feature vectors (stored in the
    support buffer as position examples), the label transitions (with start
    and stop scores) form one explicit group.  The structured hinge loss uses
    loss-augmented Viterbi with Hamming cost; the CRF loss forward-backward
    marginals.  ``kernel_weights_`` has one entry per kernel, then the
    transition group.

    {parameters}

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
    * Dict positions hold at most ``max_features`` feature names (default
      100 000): a sequence bringing names past it is rejected, listing them.

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

    _STATE_ATTRS = ("_engine", "_features", "_labels", "_array_input", "_scaling", "_stored")

    def _ensure_engine(self):
        if hasattr(self, "_engine"):
            return
        check_feature_cap(self.max_features, None)
        self._engine = self._new_engine()
        self._scaling = self._new_scaling()
        self._features = FeatureMap(max_features=self.max_features)
        self._labels = LabelMap()
        self._array_input = None
        self._stored = {}  # learn_one's seq_id -> where its positions are stored (not saved)

    def _new_engine(self):
        cost = PARAMS.validated(self, "sklearn")["cost"]
        # Appendix E: ||theta*|| <= sqrt(2 L(0) / modulus).  The loss at theta = 0
        # grows with the sequence length (and, for the CRF, the number of labels),
        # so the settings give the radius for L(0) = 1 and each step scales it by
        # sqrt(mean L(0)) of the sequences seen so far (SequenceEngine.learn).
        st = settings(self, False, 1.0, n_extra_groups=1)
        if self.eta0 == "auto" and self.loss == "crf":
            st["eta0"] = CRF_ETA0
        gamma_unit = st["gamma"] if (self.gamma == "auto" and st["gamma"] > 0) else None
        return SequenceEngine(st, self.loss, cost, self.budget, self.eviction, gamma_unit, bool(self.average))

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
                values = [self._features.values(x) for x in xs]  # validate first
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"xs: {exc}") from None
            if grow:
                # every position's new names at once: past max_features nothing is recorded
                self._features.check_room(self._features.new_names(k for v in values for k in v))
                self._array_input = False
                for v in values:
                    self._features.add(v)
                self._engine.set_features(len(self._features), self._features.lookup)
            rows = [self._features.row(v) for v in values]
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

    def learn_one(self, xs, ys, seq_id=None):
        """One online step on one labelled sequence; returns ``self``.

        An empty sequence is a no-op.  A rejected input leaves the model unchanged.
        ``seq_id`` (any hashable; None: a new sequence): a sequence learnt again under the same
        id, with the same features, adds each position's update to the row already holding it
        (as ``fit``'s epochs do) rather than storing the position again.  The ids are kept with
        the model in memory, not in its file: after loading, every sequence is new.
        """
        fresh = not hasattr(self, "_engine")
        try:
            hints = None
            if seq_id is not None:
                try:
                    hash(seq_id)
                except TypeError:
                    raise TypeError(f"seq_id={seq_id!r} is not hashable; pass a str, int or tuple") from None
                stored = self.__dict__.get("_stored", {})
                hints = stored.get(seq_id)
                n_pos = self._length(xs, "xs")
                if hints is None or hints.shape[0] != n_pos:
                    hints = np.full((n_pos, 2), -1, dtype=np.int64)
            self._learn_one(xs, ys, hints)
            if seq_id is not None:
                self.__dict__.setdefault("_stored", {})[seq_id] = hints
        except BaseException:
            if fresh:
                self._forget()
            raise
        return self

    def _learn_one(self, xs, ys, hints=None):
        L = self._length(xs, "xs")
        if self._length(ys, "ys") != L:
            raise ValueError(f"xs has {L} positions but ys has {len(ys)} labels; they must match")
        self._ensure_engine()
        if L == 0:
            return
        self._label_indices_check(ys)
        self._labels.check(ys)  # every new label of a kind the model has, before anything changes
        X = self._rows(xs, grow=True)  # validates before recording anything
        idx = np.array([self._labels.add(y) for y in ys], dtype=np.int64)
        if len(self._labels) > self._engine.n_labels:
            self._engine.set_n_labels(len(self._labels))
        if self._scaling is not None:
            X = self._scaling.learn_rows(X)  # the positions in order, as a stream of rows
        self._engine.learn(np.ascontiguousarray(X), idx, hints)

    def fit(self, X_seqs, y_seqs):
        """``n_epochs`` passes over the sequences in random order (a fresh model).

        Each position is stored once: when a later epoch updates a position already in the
        buffer, the update is added to its row's class vectors (the same model as storing it
        again, in one row), so the buffer holds at most as many rows as there are distinct
        positions.  ``learn_one`` takes every sequence as new positions.

        On bad input the error names the sequence and the previous model is kept.
        """
        n = self._length(X_seqs, "X_seqs")
        if self._length(y_seqs, "y_seqs") != n:
            raise ValueError(f"{n} sequences but {len(y_seqs)} label sequences; they must match")
        PARAMS.validated(self, "sklearn")
        saved = {a: self.__dict__[a] for a in self._STATE_ATTRS if a in self.__dict__}
        self._forget()
        try:
            self._ensure_engine()
            rng = np.random.default_rng(self.random_state)
            # where each position is stored: a re-visit in a later epoch adds to its row
            # (a sequence without a length gets none here: _learn_one names it)
            ends = np.cumsum([len(xs) if hasattr(xs, "__len__") and not isinstance(xs, dict) else 0
                              for xs in X_seqs], dtype=np.int64)
            starts = ends - np.diff(ends, prepend=0)
            hints = np.full((int(ends[-1]) if n else 0, 2), -1, dtype=np.int64)
            for _ in range(self.n_epochs):
                for i in rng.permutation(n):
                    try:
                        self._learn_one(X_seqs[i], y_seqs[i], hints[starts[i]:ends[i]])
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
        X = self._scaled(self._rows(xs, grow=False))
        path = self._engine.predict(np.ascontiguousarray(X))
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

    def objective(self, X_seqs, y_seqs):
        """The training objective of the current (last) model on labelled sequences:
        ``lam * R(theta) + mean loss``, Martins et al.'s eq. (10) with ``R`` the regulariser
        (``0.5 (sum_k ||theta_k||)^2`` for 'sq_l21') and the structured hinge or CRF loss of each
        sequence.  What the step size is chosen by (the objective after a few epochs), and how
        to follow training along the epochs.  A label never seen in training raises ``ValueError``.
        """
        n = self._length(X_seqs, "X_seqs")
        if self._length(y_seqs, "y_seqs") != n:
            raise ValueError(f"{n} sequences but {len(y_seqs)} label sequences; they must match")
        if not hasattr(self, "_engine"):
            raise ValueError("the labeller has not learnt anything yet; fit or learn_one first")
        total = 0.0
        for i, (xs, ys) in enumerate(zip(X_seqs, y_seqs)):
            L = self._length(xs, "xs")
            if self._length(ys, "ys") != L:
                raise ValueError(f"sequence {i}: xs has {L} positions but ys has {len(ys)} labels")
            if L == 0:
                continue
            idx = np.empty(L, dtype=np.int64)
            for p, y in enumerate(ys):
                found = self._labels._find(y)[0]
                if found is None:
                    raise ValueError(f"sequence {i}: ys[{p}] = {y!r} was never seen in training; the objective "
                                     "needs labels the model knows")
                idx[p] = found
            X = self._scaled(self._rows(xs, grow=False))
            total += self._engine.loss(np.ascontiguousarray(X), idx)
        return float(self.lam) * self._engine.regularizer_value() + (total / n if n else 0.0)

    @property
    def classes_(self):
        """The labels seen so far, in order of first appearance."""
        return list(self._labels.labels) if hasattr(self, "_labels") else []

    @property
    def n_support_(self):
        return self._engine.n_support if hasattr(self, "_engine") else 0

    # -- persistence: the engine's state, the feature and label maps and the input kind ---------

    def _get_state(self):
        if not hasattr(self, "_engine"):
            return {"fitted": False}, {}
        params, arrays = state_with_settings(self._engine)
        state = {"fitted": True, "engine": params, "labels": list(self._labels.labels),
                 "features": list(self._features.names), "array_input": self._array_input}
        if self._scaling is not None:
            state["scaling"], scaling_arrays = self._scaling.state()
            arrays = {**arrays, **scaling_arrays}
        return state, arrays

    def _set_state(self, state, arrays):
        if not state.get("fitted"):
            return
        self._forget()
        try:
            saved = kernels_of_state(state["engine"], arrays, self._new_engine)
            with restoring_kernels(self, saved):  # the engine is built with them
                self._ensure_engine()
                self._engine = engine_for_state(self._engine, state["engine"], self)  # the saved settings
                self._engine.set_state(state["engine"], arrays)
                self._labels = LabelMap(state["labels"])
                if len(self._labels) != self._engine.n_labels:
                    raise ValueError(f"{len(self._labels)} labels but the engine has {self._engine.n_labels}")
                array_input = state["array_input"]
                if array_input not in (None, True, False):
                    raise ValueError(f"array_input={array_input!r} is not None, True or False")
                self._array_input = array_input
                self._features.restore(state["features"])
                n_feat = self._engine.n_features
                if array_input is False and len(self._features) != n_feat:
                    raise ValueError(f"{len(self._features)} feature names but the engine has {n_feat} features")
                if array_input is not False and len(self._features):
                    raise ValueError("feature names saved for a model trained on arrays")
                if array_input is None and (n_feat or self._engine.n_support):
                    raise ValueError("a model without input kind has features or stored positions")
                if state.get("scaling") is None:
                    self._scaling = None
                    self.scale = False  # a file written before the parameter (or with scale=False)
                elif self._scaling is None:
                    raise ValueError("the state holds input scaling statistics but the labeller has scale=False")
                else:
                    self._scaling.restore(state["scaling"], arrays, n_feat)
        except BaseException:
            self._forget()
            raise
