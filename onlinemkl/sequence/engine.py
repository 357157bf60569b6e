"""The sequence-labelling engine: a first-order chain whose unary parts are a
multiple-kernel model and whose label transitions are an explicit feature group.

The proximal steps, step sizes, projection and kernel weights are the flat
learner's (:mod:`onlinemkl.proximal.engine`), shared through the same compiled
functions; :mod:`onlinemkl.sequence._step` holds the structured step.
"""

from __future__ import annotations

import math

import numpy as np

from .._lazy import lazy_module
from .._params import Bool, Choice, Param, Rule, Table, number
from .._scaling import SCALE_PARAM
from ..engine import BufferEngine, collect_arrays, plain, restore_arrays, state_rule
from ..features import MAX_FEATURES
from ..kernel_arrays import CompiledKernels, resolve_group_columns
from .._window import blas_limit
from ..kernels import KERNELS_RULE
from ..proximal._setup import check_eta0_param, check_gamma_param, common_rows
from ..proximal.engine import GroupNormEngine

_cp = lazy_module("onlinemkl.proximal._prox")
_cs = lazy_module("onlinemkl.sequence._step")

__all__ = ["SequenceEngine", "PARAMS", "LOSSES", "CRF_ETA0", "TRANSITION_ARRAYS", "per_kernel_class_vectors"]

LOSSES = {"svm": _cs.LOSS_SVM, "crf": _cs.LOSS_CRF}

#: ``eta0='auto'`` with the CRF loss (the structured hinge's is 1.0).  The CRF's gradient, observed
#: minus expected counts, shrinks as the marginals grow confident, so the hinge's step moves it
#: too little: MKL over linear, quadratic and Gaussian kernels on the OCR words (one training
#: fold, 20 epochs) labels 82.6 % of the test characters at 1.0, 86.2 % at 4 and 87.0 % at 10,
#: the lowest objective after 5 epochs of {1, 4, 10, 30, 100}; noisy digit strings (5 epochs)
#: 91.2 % at 1.0, 93.6 % at 4 and at 10.
CRF_ETA0 = 10.0

_regularisation, _shape, _buffer = common_rows(
    eviction_default="oldest",
    eviction_doc="What a full buffer drops: the oldest stored position, or the one with the least impact on\n"
                 "the scores (removed, not merged).")

#: The sequence labeller's parameters (its signature, its Parameters section and their validation).
PARAMS = Table(
    Param("kernels", KERNELS_RULE, None,
          "The kernels over a position's features, one group each; None: the default set."),
    Param("loss", Choice(tuple(LOSSES)), "svm",
          "'svm': the structured hinge, by loss-augmented Viterbi with Hamming cost; 'crf': the CRF's\n"
          "log-loss, by forward-backward marginals."),
    Param("cost", number("float >= 0", low=0.0), 1.0,
          "Hamming cost of a wrong position in loss-augmented decoding (``loss='svm'``)."),
    *_regularisation,
    Param("lam", number("float >= 0", low=0.0), 1e-4, "Regularisation strength."),
    *_shape,
    Param("eta0", Rule("float > 0 or 'auto'", check_eta0_param), "auto",
          "The initial step size; 'auto': 1.0 with the structured hinge, ``CRF_ETA0`` (10.0) with the\n"
          "CRF loss, whose gradient (observed minus expected counts) shrinks as the marginals grow\n"
          "confident, where the hinge's stays a whole label on every wrong position."),
    Param("gamma", Rule("float > 0, 'auto' or None", check_gamma_param), "auto",
          "Radius of the projection ball; 'auto' is appendix E's ``sqrt(2 L(0) / modulus)`` where the\n"
          "regulariser is strongly convex (otherwise no projection), with ``L(0)`` the mean loss at\n"
          "``theta = 0`` of the sequences seen so far: ``cost * mean length`` (SVM) or\n"
          "``log(n_labels) * mean length`` (CRF); None: no projection."),
    Param("average", Bool(), False,
          "Predict with the averaged model ``(1/T) sum_t theta_t`` (kept without storing history)."),
    *_buffer,
    Param("n_epochs", number("int >= 1", low=1, integer=True), 1,
          "Passes over the sequences in ``fit`` (random order)."),
    Param("random_state", number("int or None", integer=True, allow_none=True), None,
          "Seed of ``fit``'s order of the sequences (None: a fresh order each time)."),
    Param("max_features", number("int >= 1 or None", low=1, integer=True, allow_none=True), MAX_FEATURES,
          "With dict positions, at most this many feature names: a sequence bringing names past it is\n"
          "rejected, listing them, the model unchanged (None: no cap)."),
    SCALE_PARAM,
)


#: Transition-group arrays: raw transition/start/stop scores and their running sums (averaged model).
TRANSITION_ARRAYS = ("T", "S0", "S1", "Tavg", "S0avg", "S1avg")


def per_kernel_class_vectors(arrays):
    """A state saved with a class vector per position and a coefficient per kernel (2-D
    ``beta[cap, C]``, ``buf.coef[cap, F]``, ``avg_acc[cap, F]``) in the class vectors per kernel
    (``beta[F, cap, C] = coef.T (x) beta``, the same for the averaged sums); others as they are."""
    beta, coef, acc = arrays.get("beta"), arrays.get("buf.coef"), arrays.get("avg_acc")
    if not (isinstance(beta, np.ndarray) and beta.ndim == 2 and isinstance(coef, np.ndarray)
            and isinstance(acc, np.ndarray) and coef.ndim == 2 and acc.shape == coef.shape
            and beta.shape[0] == coef.shape[0]):
        return arrays
    out = dict(arrays)
    out["beta"] = np.ascontiguousarray(coef.T[:, :, None] * beta[None, :, :])
    out["avg_acc"] = np.ascontiguousarray(acc.T[:, :, None] * beta[None, :, :])
    out["buf.coef"] = np.zeros_like(coef)
    return out


class SequenceEngine(GroupNormEngine):
    """State of the sequence labeller (internal).

    Plain numpy state: the support buffer of position examples (``buf``; its
    ``coef`` column is unused, 0), the class vectors of the stored positions, one
    per kernel (``beta[F, cap, C]``, raw: times the group's lazy scale), the
    averaged-model bookkeeping (``avg_acc[F, cap, C]``, ``avg_base``), the
    transition group (``T``, ``S0``, ``S1`` and their sums), the group norms and
    lazy scales.  ``len_sum`` is the number of positions learnt (for
    ``gamma='auto'``).

    Protocol (:mod:`onlinemkl.engine`): one example is one sequence:
    ``learn(xs, ys, hints)`` (rows and label indices of its positions, and where
    they are stored already) and ``predict(xs)`` (the Viterbi path);
    ``get_state``/``set_state``.  A state saved with one class vector per
    position and a coefficient per kernel (2-D ``beta``) is converted on load.

    ``gamma_unit``: with ``gamma='auto'``, the radius for a loss of 1 at
    ``theta = 0``; each step uses ``gamma_unit * sqrt(mean L(0))`` (None: the
    fixed radius of the settings).
    """

    _CORE = _cs
    _ROW_ARRAYS = ("avg_base",)  # beta and avg_acc hold their rows on axis 1 (_ensure_rows)

    def __init__(self, settings, loss, cost, budget, eviction, gamma_unit=None, average=False):
        self._remember_init(locals())
        self.gamma_unit = gamma_unit
        self.average = bool(average)
        self.ck = CompiledKernels(settings["kernels"])
        P = self.ck.n_kernels + 1
        self._init_groups(settings, LOSSES[loss], budget, eviction, P, 2)
        self.beta = np.zeros((P - 1, self.buf.capacity, 2))
        self.avg_acc = np.zeros_like(self.beta)
        self.hyper[_cs.H_COST] = cost
        for name in TRANSITION_ARRAYS:
            setattr(self, name, np.zeros((2, 2)) if name.startswith("T") else np.zeros(2))
        self.b = np.zeros(P)
        self.b_new = np.zeros(P)
        self.len_sum = 0

    @property
    def n_labels(self):
        return int(self.ihyper[_cs.IH_NLABELS])


    def set_features(self, n_features, lookup=None):
        if n_features > self.n_features:
            self.n_features = n_features
            self.buf.ensure_columns(n_features)
            self.ck.set_columns(resolve_group_columns(self.ck.groups, n_features, lookup))
            self._forget_records()

    def set_n_labels(self, Y):
        """Use ``Y`` labels (they grow as new labels appear); the arrays grow by doubling."""
        self.ihyper[_cs.IH_NLABELS] = Y
        C = self.beta.shape[2]
        if Y <= C:
            return
        new = max(Y, 2 * C)
        for name in ("beta", "avg_acc"):
            arr = getattr(self, name)
            grown = np.zeros(arr.shape[:2] + (new,))
            grown[:, :, :C] = arr
            setattr(self, name, grown)
        for name in TRANSITION_ARRAYS:
            arr = getattr(self, name)
            grown = np.zeros((new, new) if arr.ndim == 2 else new)
            grown[tuple(slice(0, n) for n in arr.shape)] = arr
            setattr(self, name, grown)
        self._forget_records()

    def _ensure_rows(self, n_rows):
        cap = self.buf.capacity
        super()._ensure_rows(n_rows)
        new = self.buf.capacity
        if new != cap:
            for name in ("beta", "avg_acc"):
                arr = getattr(self, name)
                grown = np.zeros((arr.shape[0], new, arr.shape[2]))
                grown[:, :cap] = arr
                setattr(self, name, grown)
            self._forget_records()

    def _position_rows(self, B=None):
        """The buffer and the class vectors as :class:`~onlinemkl.sequence._step.PositionRows`
        (``B``: other class vectors than the model's, e.g. the averaged model's)."""
        b = self.buf
        return _cs.PositionRows(b.S, b.ssq, b.sdiag_t, self.beta if B is None else B, b.tstamp, self.avg_acc,
                                self.avg_base)

    def _build_records(self):
        """``(buf, spec, chain, chain_avg, st)``, the records
        :func:`~onlinemkl.sequence._step.sequence_learn` takes, as plain tuples
        (:func:`~onlinemkl.engine.plain`); kept until an array is replaced."""
        self._records = plain(self._position_rows(), self.ck.spec(), _cs.ChainScores(self.T, self.S0, self.S1),
                              _cs.ChainScores(self.Tavg, self.S0avg, self.S1avg), self._group_state())
        return self._records

    def learn(self, xs, ys, hints=None):
        """One step on a non-empty sequence (rows ``xs``, label indices ``ys``).

        ``hints`` (int64 ``[L, 2]``, updated in place): per position the ``[slot, stamp]`` of the
        row that holds it from an earlier step, or ``[-1, -1]`` (None: every position is new).
        A re-visited position's update is added to its row, so the buffer holds each position
        once (:func:`~onlinemkl.sequence._step.sequence_learn`)."""
        self.len_sum += int(xs.shape[0])
        if self.gamma_unit is not None:
            self.hyper[_cs.H_GAMMA] = self.gamma_unit * math.sqrt(self.mean_loss_at_zero(xs.shape[0]))
        self._ensure_rows(self.n_support + xs.shape[0])
        if hints is None:
            hints = np.full((xs.shape[0], 2), -1, dtype=np.int64)
        buf, spec, chain, chain_avg, st = self._records or self._build_records()
        with blas_limit(xs.shape[0]):  # a word's products have a few rows: extra BLAS threads only wait
            return _cs.sequence_learn(xs, ys, buf, spec, chain, chain_avg, st, self.b, self.b_new, hints)

    def mean_loss_at_zero(self, pending=0):
        """Mean loss at ``theta = 0`` of the sequences learnt so far (and one of length ``pending``).

        At ``theta = 0`` every labelling scores 0, so a sequence of length L
        has structured hinge loss ``cost * L`` (every position wrong) and CRF
        loss ``log Z = L log Y``.
        """
        n_seq = int(self.istate[_cs.I_T]) + (1 if pending else 0)
        per_position = self.hyper[_cs.H_COST] if self.ihyper[_cs.IH_LOSS] == _cs.LOSS_SVM \
            else math.log(max(self.n_labels, 2))
        return per_position * self.len_sum / max(n_seq, 1)

    def predict(self, xs, average=None):
        """The Viterbi path (label indices) of a sequence's rows (last or averaged model;
        default: ``average``)."""
        average = self.average if average is None else average
        Y = self.n_labels
        path = np.zeros(xs.shape[0], dtype=np.int64)
        if Y == 0 or xs.shape[0] == 0:
            return path
        buf, spec, chain, _, _ = self._records or self._build_records()
        n = self.n_support
        F = self.ck.n_kernels
        sigma = self.sigma
        if average:
            T = max(int(self.istate[_cs.I_T]), 1)
            B = np.zeros_like(self.beta)
            _cs.averaged_class_vectors(n, self.beta, self.avg_acc, self.avg_base, self.sigma_cum, T, B)
            buf, chain = plain(self._position_rows(B), _cs.ChainScores(self.Tavg / T, self.S0avg / T, self.S1avg / T))
            sigma = np.ones(F + 1)
        with blas_limit(xs.shape[0]):
            _cs.sequence_predict(xs, buf, n, spec, sigma, chain, Y, path)
        return path

    def loss(self, xs, ys):
        """The structured loss of one labelled sequence under the current (last) model: the
        hinge ``max_y (score(y) + cost * Hamming(y, ys)) - score(ys)`` (SVM) or ``log Z - score(ys)``
        (CRF)."""
        Y = self.n_labels
        if Y == 0 or xs.shape[0] == 0:
            return 0.0
        buf, spec, chain, _, _ = self._records or self._build_records()
        with blas_limit(xs.shape[0]):
            _, _, _, U, T, S0, S1 = _cs.model_scores(xs, _cs.PositionRows(*buf), self.n_support, _cs.KernelSpec(*spec),
                                                     self.sigma, self.T, self.S0, self.S1, Y)
        gold = _cs.sequence_score(U, T, S0, S1, ys)
        if self.ihyper[_cs.IH_LOSS] == _cs.LOSS_SVM:
            aug = _cs.viterbi_loss_augmented(U, T, S0, S1, ys, self.hyper[_cs.H_COST],
                                             np.empty(xs.shape[0], dtype=np.int64))
            return max(float(aug - gold), 0.0)
        log_z = _cs.forward_backward(U, T, S0, S1, np.empty((xs.shape[0], Y)), np.empty((Y, Y)))
        return max(float(log_z - gold), 0.0)

    def regularizer_value(self):
        """``R(theta)`` of the regulariser from the group norms (kernels, then the transitions);
        for the sparse group lasso only its group part (the within-group l1 needs coordinates)."""
        b = self.group_norms()
        code, param = int(self.ihyper[_cs.IH_PROX]), float(self.hyper[_cs.H_PROX_PARAM])
        if code == _cp.PROX_SQ_L21:
            return 0.5 * float(np.sum(b)) ** 2
        if code == _cp.PROX_WEIGHTED_SQ_L1:
            return 0.5 * float(np.sum(np.maximum(self.prox_weights, 0.0) * b)) ** 2
        if code in (_cp.PROX_L21, _cp.PROX_SPARSE_GROUP_LASSO):
            return float(np.sum(b))
        if code == _cp.PROX_NONSPARSE_Q:
            return 0.5 * float(np.sum(b ** param))
        if code == _cp.PROX_ELASTIC_NET:
            return float(np.sum(b)) + 0.5 * param * float(np.sum(b * b))
        return 0.0

    def recompute_theta_sq(self):
        """Squared raw group norms recomputed from the buffer and the transition arrays (tests)."""
        out = np.empty_like(self.theta_sq)
        F = self.ck.n_kernels
        out[:F] = _cs.theta_sq_from_rows(self._position_rows(), self.n_support, max(self.n_labels, 1),
                                         self.ck.spec())
        out[F] = float(np.sum(self.T ** 2) + np.sum(self.S0 ** 2) + np.sum(self.S1 ** 2))
        return out

    # -- state (the onlinemkl.engine protocol) ------------------------------------------

    #: The arrays of the state (dotted paths); ``b``, ``b_new`` are scratch.
    _STATE_ARRAYS = ("hyper", "ihyper", "istate", "theta_sq", "sigma", "sigma_cum", "prox_weights", "beta",
                     "avg_acc", "avg_base", *TRANSITION_ARRAYS) + BufferEngine._BUFFER_ARRAYS + BufferEngine._KERNEL_ARRAYS

    def get_state(self):
        params = {"n_features": int(self.n_features), "len_sum": int(self.len_sum),
                  "kernels_resolved": bool(self.ck._resolved), **self._kernel_state()}
        return params, collect_arrays(self, self._STATE_ARRAYS)

    def set_state(self, params, arrays, strict=True):
        """Restore onto an engine built from the same parameters; every shape and index is checked."""
        self._check_kernel_state(params, state_rule("sequence-labeller"))
        fresh = (self.hyper.copy(), self.ihyper.copy())
        arrays = per_kernel_class_vectors(arrays)
        arrays = self._split_hyper(arrays, state_rule("sequence-labeller"), {_cs.H_COST: 11}, {_cs.IH_NLABELS: 10})
        restore_arrays(self, arrays, self._STATE_ARRAYS)
        self._forget_records()
        self.n_features = int(params["n_features"])
        self.len_sum = int(params["len_sum"])
        self.ck._resolved = bool(params["kernels_resolved"])
        self.b = np.zeros_like(self.theta_sq)
        self.b_new = np.zeros_like(self.theta_sq)
        self._check_state(fresh, strict)
        self._refresh_row_caches()

    def _row_shapes(self):
        return (("avg_base", self.avg_base, (self.ck.n_kernels,)),)

    def _check_state(self, fresh, strict):
        h = self.hyper
        need = state_rule("sequence-labeller")
        F, cap = self.ck.n_kernels, self.buf.capacity
        for name in ("beta", "avg_acc"):
            arr = getattr(self, name)
            need(arr.shape[:2] == (F, cap) and arr.shape[2] >= 1,
                 f"{name} has shape {arr.shape}, expected ({F}, {cap}, label slots)")
        need(self.avg_acc.shape == self.beta.shape, f"avg_acc has shape {self.avg_acc.shape}, beta {self.beta.shape}")
        free = ({_cs.H_GAMMA} if self.gamma_unit is not None else set(), {_cs.IH_NLABELS})
        self._check_groups_state(need, fresh, free, self.ck.n_kernels + 1)
        need(math.isfinite(h[_cs.H_GAMMA]) and h[_cs.H_GAMMA] >= 0, "gamma is not finite and >= 0")
        C = self.beta.shape[2]
        for name, arr, shape in (("T", self.T, (C, C)), ("Tavg", self.Tavg, (C, C)), ("S0", self.S0, (C,)),
                                 ("S1", self.S1, (C,)), ("S0avg", self.S0avg, (C,)), ("S1avg", self.S1avg, (C,))):
            need(arr.shape == shape, f"{name} has shape {arr.shape}, expected {shape}")
        Y = self.ihyper[_cs.IH_NLABELS]
        need(0 <= Y <= C, f"{Y!r} labels for {C} label slots")
        need(self.len_sum >= 0, "negative number of positions")
        if strict:
            self._check_groups_values(need, TRANSITION_ARRAYS)
