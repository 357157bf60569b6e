"""The online proximal MKL engine (Martins, Smith, Xing, Aguiar & Figueiredo 2011): kernelised FOBOS.

Per example: a gradient step on the loss only, then one proximal step on the
vector of group norms (Prop. 1; squared l2,1 is Algorithm 2, the weighted
squared l1 Algorithm 4), then an optional projection onto a ball, all in one
compiled call (:mod:`onlinemkl.proximal._step`).  Groups are kernels on feature
groups (implicit, over the support buffer) and, optionally, explicit linear
feature groups (a weight matrix, for many sparse features or features that
should stay in the primal).

The faces are :class:`onlinemkl.ProximalMKLClassifier`,
:class:`onlinemkl.ProximalMKLRegressor` and their river adapters; the
parameters they share are validated once, by :mod:`onlinemkl.proximal._setup`,
which builds this engine from them.
"""

from __future__ import annotations

import math

import numpy as np

from .._buffer import EVICTION, SupportBuffer
from .._lazy import lazy_module
from .._core.record import state_record
from ..engine import (BufferEngine, check_finite, collect_arrays, normalised, plain, restore_arrays, split_hyper,
                      state_rule)
from ..kernel_arrays import CompiledKernels, WeightedKernelSum, block_kernels, resolve_group_columns
from ..kernels import Linear
from .. import _replay
from .._replay import ReplayMemory

_cf = lazy_module("onlinemkl.proximal._step")
_cl = lazy_module("onlinemkl.proximal._losses")
_cp = lazy_module("onlinemkl.proximal._prox")
_cg = lazy_module("onlinemkl.proximal._group_steps")

__all__ = ["ProximalEngine", "GroupNormEngine", "REGULARIZERS", "SCHEDULES", "CLASSIFICATION_LOSSES",
           "REGRESSION_LOSSES", "GROUP_STEPS", "PREDICTION_MARGIN"]

#: The row hints of a replay that passes none (regression: a residual is never added to a row).
_NO_HINTS = np.zeros(0, dtype=np.int64)

REGULARIZERS = {
    "sq_l21": _cp.PROX_SQ_L21,
    "weighted_sq_l1": _cp.PROX_WEIGHTED_SQ_L1,
    "l21": _cp.PROX_L21,
    "sparse_group_lasso": _cp.PROX_SPARSE_GROUP_LASSO,
    "nonsparse": _cp.PROX_NONSPARSE_Q,
    "elastic_net": _cp.PROX_ELASTIC_NET,
    "none": _cp.PROX_NONE,
}
SCHEDULES = {"constant": _cf.SCHEDULE_CONSTANT, "invsqrt": _cf.SCHEDULE_INVSQRT,
             "strongly_convex": _cf.SCHEDULE_STRONGLY_CONVEX}
CLASSIFICATION_LOSSES = ("hinge", "logistic")
REGRESSION_LOSSES = {"squared": _cl.SQUARED, "epsilon_insensitive": _cl.EPSILON_INSENSITIVE}
#: Regression predictions are kept within the targets' range seen so far widened by this many times
#: its width on each side (:meth:`ProximalEngine.target_bounds`), the mini-batch regressors' rule: room
#: for a trend to continue beyond the targets seen, none for a prediction a kernel that grows with its
#: inputs (linear, polynomial) makes far beyond them at an input far from every one it learnt from.
PREDICTION_MARGIN = 1.0

#: How a gradient step is split among the groups (:mod:`onlinemkl.proximal._group_steps`): ``'equal'``
#: (every group the same step), ``'norms'`` (a larger share to the groups with larger norms).
GROUP_STEPS = {"equal": _cg.GROUP_STEPS_EQUAL, "norms": _cg.GROUP_STEPS_NORMS}


class GroupNormEngine(BufferEngine):
    """What the proximal learners share (flat and structured): the squared group norms
    ``theta_sq`` with their lazy scales ``sigma``, the averaged-model bookkeeping
    (``sigma_cum``, ``avg_acc``, ``avg_base``), the class vectors ``beta`` of the stored
    examples, and a buffer with one coefficient column per kernel.  ``_CORE`` is the compiled
    module whose ``H_*``/``IH_*``/``I_*`` indices the ``hyper`` (real-valued settings),
    ``ihyper`` (integer settings) and ``istate`` (counters) arrays follow.

    The compiled steps take the state as records (:class:`~onlinemkl.proximal._step.ProxRows`,
    :class:`~onlinemkl.proximal._step.GroupState`, ...), built once and kept in ``_records`` until
    an array is replaced (:meth:`_forget_records`).
    """

    _ROW_ARRAYS = ("beta", "avg_acc", "avg_base")
    _CORE = _cf

    def _init_groups(self, st, loss_code, budget, eviction, P, n_cols):
        """The state of ``P`` groups (the kernels first) from the :func:`settings` ``st``."""
        core, F = self._CORE, self.ck.n_kernels
        h = self.hyper = np.zeros(core.N_HYPER)
        for index, key in ((core.H_LAM, "lam"), (core.H_PROX_PARAM, "param"), (core.H_ETA0, "eta0"),
                           (core.H_SIGMA_SC, "modulus"), (core.H_GAMMA, "gamma")):
            h[index] = st[key]
        s = self.ihyper = np.zeros(core.N_IHYPER, dtype=np.int64)
        s[core.IH_PROX] = st["prox"]
        s[core.IH_SCHEDULE] = st["schedule"]
        s[core.IH_LOSS] = loss_code
        s[core.IH_BUDGET] = 0 if budget is None else budget
        s[core.IH_POLICY] = EVICTION[eviction]
        self.istate = np.zeros(core.N_ISTATE, dtype=np.int64)
        self.theta_sq = np.zeros(P)
        self.sigma = np.ones(P)
        self.sigma_cum = np.zeros(F)
        self.prox_weights = np.ones(P) if st["weights"] is None else np.asarray(st["weights"], dtype=float)
        self.buf = SupportBuffer(F, self.ck.n_groups, F, budget=budget)
        cap = self.buf.capacity
        self.beta = np.zeros((cap, n_cols))
        self.avg_acc = np.zeros((cap, F))
        self.avg_base = np.zeros((cap, F))
        self.n_features = 0
        self._forget_records()

    @property
    def n_support(self):
        return int(self.istate[self._CORE.I_N])

    @property
    def evictions(self) -> int:
        """Stored rows dropped so far to keep within the budget (0 without one)."""
        return int(self.istate[self._CORE.I_EVICTIONS])

    def _prox_rows(self, coef=None):
        """The buffer and the per-row arrays as the record the compiled code takes (``coef``:
        other coefficients than the buffer's, e.g. the averaged model's)."""
        b = self.buf
        return _cf.ProxRows(b.S, b.ssq, b.sdiag_t, b.coef if coef is None else coef, self.beta, b.tstamp,
                            self.avg_acc, self.avg_base)

    def _group_state(self):
        """The group norms, scales, counters and settings as the record the compiled code takes."""
        return _cf.GroupState(self.theta_sq, self.sigma, self.sigma_cum, self.prox_weights, self.istate, self.hyper,
                              self.ihyper)

    def group_norms(self):
        """``||theta_k||`` of every group (kernels first)."""
        return self.sigma * np.sqrt(np.maximum(self.theta_sq, 0.0))

    def kernel_weights(self):
        """``||theta_k|| / sum_l ||theta_l||`` (uniform before any update)."""
        return normalised(self.group_norms())

    def _grow_outputs(self, n: int):
        """Room for ``n`` output columns in ``beta`` (doubling); the new width if it grew, else None."""
        C = self.beta.shape[1]
        if n <= C:
            return None
        new = max(n, 2 * C)
        beta = np.zeros((self.beta.shape[0], new))
        beta[:, :C] = self.beta
        self.beta = beta
        self._forget_records()
        return new

    def _row_shapes(self):
        """The per-row arrays as ``(name, array, shape past the row axis)``, for the state checks."""
        C, F = self.beta.shape[1], self.ck.n_kernels
        return ("beta", self.beta, (C,)), ("avg_acc", self.avg_acc, (F,)), ("avg_base", self.avg_base, (F,))

    def _split_hyper(self, arrays, need, floats=None, ints=None, missing=None):
        """``arrays`` in this layout (:func:`~onlinemkl.engine.split_hyper`), given where a file
        without an ``ihyper`` array kept the learner's own settings in its ``hyper``
        (``floats``/``ints``: new index -> saved index; the shared ones are added here)."""
        core = self._CORE
        floats = {core.H_LAM: 2, core.H_PROX_PARAM: 3, core.H_ETA0: 5, core.H_SIGMA_SC: 6, core.H_GAMMA: 7,
                  **(floats or {})}
        ints = {core.IH_LOSS: 0, core.IH_PROX: 1, core.IH_SCHEDULE: 4, core.IH_BUDGET: 8, core.IH_POLICY: 9,
                **(ints or {})}
        return split_hyper(arrays, floats, ints, need, missing)

    def _check_groups_state(self, need, fresh, free, P):
        """The structural rules the proximal states share; ``fresh`` are a fresh engine's
        ``(hyper, ihyper)`` and ``free`` the indices of each that may differ from them (those
        that grow with the stream)."""
        core, F, h, s = self._CORE, self.ck.n_kernels, self.hyper, self.ihyper
        need(h.shape == (core.N_HYPER,), f"hyper has shape {h.shape}, expected ({core.N_HYPER},)")
        need(s.shape == (core.N_IHYPER,), f"ihyper has shape {s.shape}, expected ({core.N_IHYPER},)")
        need(self.istate.shape == (core.N_ISTATE,), f"istate has shape {self.istate.shape}")
        same = all(np.array_equal(np.delete(arr, sorted(skip)), np.delete(want, sorted(skip)))
                   for arr, want, skip in zip((h, s), fresh, free))
        need(same,
             "the saved settings (loss, regulariser, lam, schedule, gamma, budget, ...) differ from the parameters")
        for name, arr, shape in (("theta_sq", self.theta_sq, (P,)), ("sigma", self.sigma, (P,)),
                                 ("sigma_cum", self.sigma_cum, (F,)), ("prox_weights", self.prox_weights, (P,))):
            need(arr.shape == shape, f"{name} has shape {arr.shape}, expected {shape}")
        self.ck.check_restored(need, "ck")
        self._check_buffer(need, F, self._row_shapes())
        need(bool(np.all(self.istate >= 0)), "negative counters")
        self._check_groups(self.ck, need, "ck")

    def _check_groups_values(self, need, names):
        """The value rules (``strict``): positive scales; finite values in the shared arrays and ``names``."""
        need(bool(np.all(self.sigma > 0)), "a group scale is not positive")
        check_finite(self, ("theta_sq", "sigma", "sigma_cum", "prox_weights", "beta", "avg_acc", "avg_base",
                            "buf.S", "buf.ssq", "buf.sdiag", "buf.coef", "ck.params") + tuple(names), need)


def _target_std(n: float, m2: float) -> float:
    """The regression targets' standard deviation from Welford's count and ``M2`` (1 until two differ)."""
    return math.sqrt(m2 / n) if n > 1 and m2 > 0 else 1.0


class ProximalEngine(GroupNormEngine):
    """State and per-example steps of online proximal MKL (internal; use the estimators).

    Protocol (:mod:`onlinemkl.engine`): ``learn(row, label)`` with ``label`` an
    output index (classification) or a target (regression, standardised online
    by the running mean and standard deviation); ``scores_one(row)`` and
    ``scores_many(rows)`` (the averaged model when ``average``); regressors also
    ``predict_one(row)``/``predict_many(rows)`` in the target's units, kept within
    :meth:`target_bounds`; ``get_state``/``set_state``.

    ``prediction_margin`` (None: :data:`PREDICTION_MARGIN`, recorded as the resolved setting) is the
    width of the regression prediction bounds on each side of the targets' range, in units of its width.
    """

    _FIXED_SETTINGS = ("n_outputs",)

    def __init__(self, kernels, explicit_groups, loss_code, prox_code, lam, prox_param, group_weights,
                 schedule, eta0, strong_convexity, gamma, budget, eviction, n_outputs, epsilon=0.1, average=False,
                 replay=0, replay_window=1000, seed=0, group_steps=0, eta0_many=None, few_classes=None,
                 prediction_margin=None):
        self._remember_init(locals())
        if prediction_margin is None:
            prediction_margin = self._resolved("prediction_margin", PREDICTION_MARGIN)
        if isinstance(prediction_margin, bool) or not isinstance(prediction_margin, (int, float)) \
                or not 0.0 <= prediction_margin < math.inf:
            raise ValueError(f"prediction_margin={prediction_margin!r}: expected a finite number >= 0")
        self.prediction_margin = float(prediction_margin)
        self._eta0 = (eta0, eta0 if eta0_many is None else eta0_many)  # up to / past few_classes classes
        #: The classes up to which ``eta0`` applies (``eta0_many`` past them): ``FEW_CLASSES`` by default.
        self.few_classes = self._resolved("few_classes", _replay.FEW_CLASSES if few_classes is None
                                          else int(few_classes))
        self.regression = loss_code in REGRESSION_LOSSES.values()
        self.replay = ReplayMemory(replay, replay_window, seed, float_labels=self.regression,
                                   few_classes=self.few_classes)
        self.average = bool(average)
        self.ck = CompiledKernels(kernels)
        self.explicit_groups = tuple(explicit_groups)
        # Explicit groups reuse the kernel machinery for their column ranges.
        self.xk = CompiledKernels([Linear(group=g) for g in self.explicit_groups])
        F, E = self.ck.n_kernels, len(self.explicit_groups)
        st = dict(prox=prox_code, lam=lam, param=prox_param, schedule=schedule, eta0=eta0, modulus=strong_convexity,
                  gamma=gamma, weights=group_weights)
        self._init_groups(st, loss_code, budget, eviction, F + E, max(n_outputs, 1))
        self.ihyper[_cf.IH_NOUT] = n_outputs
        self.hyper[_cf.H_ETA0] = self.eta0_for(n_outputs)
        self.hyper[_cf.H_EPSILON] = epsilon
        self.ihyper[_cf.IH_GROUP_STEPS] = group_steps
        self.W = np.zeros((E, 1, max(n_outputs, 1)))
        self.W_avg = np.zeros_like(self.W)
        # Regression targets: running count, mean and sum of squared deviations (Welford).
        self.ystats = np.array([0.0, 0.0, 0.0])
        # Regression targets: the least and the greatest so far ([inf, -inf]: none yet; [-inf, inf]: not
        # known, a state saved before the range was kept, which leaves its predictions unbounded).
        self.yrange = np.array([np.inf, -np.inf])
        self._scratch(max(n_outputs, 1))
        # one new example as fobos_run's arguments: order [0], its label, its target
        self._one = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1))

    def _scratch(self, C):
        P = self.theta_sq.shape[0]
        self.g = np.zeros((P, C))
        self.scores = np.zeros(C)
        self.dl = np.zeros(C)
        self.b = np.zeros(P)
        self.b_new = np.zeros(P)
        self._forget_records()

    def _build_records(self):
        """``(buf, spec, xg, st, scratch)``, the records :func:`~onlinemkl.proximal._step.fobos_run`
        and :func:`~onlinemkl.proximal._step.fobos_scores` take, as plain tuples (:func:`~onlinemkl.engine.plain`);
        kept until an array is replaced."""
        self._records = plain(self._prox_rows(), self.ck.spec(),
                              _cf.ExplicitGroups(self.W, self.W_avg, self.xk.granges, self.xk.gptr),
                              self._group_state(), _cf.ProxScratch(self.g, self.scores, self.dl, self.b, self.b_new))
        return self._records

    #: The records as one compiled object (:mod:`onlinemkl._core.record`), what the per-example
    #: calls pass; None: build it again (with the records, see :meth:`_forget_records`).
    _state = None

    def _forget_records(self) -> None:
        super()._forget_records()
        self._state = None

    def _state_record(self):
        """The :class:`~onlinemkl._core.record.StateRecord` of the records, kept as they are."""
        state = self._state
        if state is None:
            state = self._state = state_record(self._records or self._build_records(), _cf.new_state_record)
        return state

    @property
    def n_outputs(self):
        return int(self.ihyper[_cf.IH_NOUT])

    def set_features(self, n_features, lookup=None):
        if n_features < self.n_features:
            raise ValueError("the number of features cannot shrink")
        self.n_features = n_features
        self.buf.ensure_columns(n_features)
        self.ck.set_columns(resolve_group_columns(self.ck.groups, n_features, lookup))
        self.xk.set_columns(resolve_group_columns(self.xk.groups, n_features, lookup))
        E, dcap, C = self.W.shape
        if n_features > dcap:
            new = max(n_features, 2 * dcap)
            for name in ("W", "W_avg"):
                old = getattr(self, name)
                arr = np.zeros((E, new, C))
                arr[:, :dcap] = old
                setattr(self, name, arr)
        self._forget_records()

    #: ``eta0='auto'``'s step past three classes in the files saved without settings.
    UNRECORDED_ETA0_MANY = 2.0

    def unrecorded(self, face) -> ProximalEngine:
        """A file saved without settings and ``eta0='auto'`` stepped :data:`UNRECORDED_ETA0_MANY`
        past three classes: the engine with that step (``eta0='auto'`` resolves to another now)."""
        if getattr(face, "eta0", None) != "auto" or self._init_args["eta0_many"] == self.UNRECORDED_ETA0_MANY:
            return self
        return type(self)(**dict(self._init_args, eta0_many=self.UNRECORDED_ETA0_MANY))

    def eta0_for(self, n_outputs) -> float:
        """The initial step size with ``n_outputs`` outputs (``eta0_many`` past three classes)."""
        return self._eta0[int(n_outputs > self.few_classes)]

    def set_n_outputs(self, n_out):
        """Use ``n_out`` outputs (a river stream's labels grow); the arrays grow by doubling, and
        ``eta0`` becomes ``eta0_many`` past ``few_classes`` (:data:`~onlinemkl._replay.FEW_CLASSES`)."""
        self.ihyper[_cf.IH_NOUT] = n_out
        self.hyper[_cf.H_ETA0] = self.eta0_for(n_out)
        new = self._grow_outputs(n_out)
        if new is not None:
            for name in ("W", "W_avg"):
                old = getattr(self, name)
                arr = np.zeros(old.shape[:2] + (new,))
                arr[:, :, :old.shape[2]] = old
                setattr(self, name, arr)
            self._scratch(new)

    def learn(self, x, label):
        """One step on a row: ``label`` an output index, or a regression target."""
        if self.regression:
            return self.learn_regression(x, label)
        return self._step(x, int(label), 0.0)

    def stream_learn(self, x, label):
        """:meth:`learn`, then replay (:mod:`onlinemkl._replay`) after a positive loss.

        Without a budget, always.  With one (:meth:`replays_now`), a classifier replays once its
        buffer is full and a regressor while it has room.  Replayed regression targets are
        standardised with the current running statistics without updating them (a replay is
        not a new target).  A replayed class update goes to the row already holding the example
        when it can (the ``merge`` hint of :func:`~onlinemkl.proximal._step.fobos_step`)."""
        out = self.learn(x, label)
        mem = self.replay
        slot = out[3]
        if mem.steps > 0 and mem.size and out[0] > 0.0 and self.replays_now():
            stamp = self.buf.tstamp[slot] if slot >= 0 else -1
            self.replay_steps(mem.steps)
            if slot >= 0 and self.buf.tstamp[slot] != stamp:  # a replayed step evicted x's row
                slot = -1
        mem.add(x, label, slot, self.buf.tstamp)
        return out

    def replays_now(self) -> bool:
        """Whether a margin error is followed by replay steps now (the budget's rule).

        A classifier under a budget replays only once its buffer is full.  With 'least_impact'
        eviction and a decreasing step size, the newest rows hold the smallest coefficients, so
        the rows stored before the buffer fills stay in it; replay while it has room would spend
        them on repeats, and a tight budget would keep few distinct examples.  At a full buffer a
        replayed update competes with the stored rows for eviction (:meth:`_eviction`): the
        least of them all goes, projected onto a row with a parallel class vector, so replay
        adjusts the kept rows rather than replacing them.  A regressor replays while its buffer
        has room (its repeats never share a row).  Under ``eviction='oldest'`` replay is off
        unless asked for (``replay=k``: the same rule)."""
        if self.buf.budget is None:
            return True
        room = self.buf.has_room(self.n_support)
        return room if self.regression else not room

    def replay_steps(self, steps: int) -> None:
        """``steps`` replay steps on examples drawn from the reservoir, in one compiled call
        (:func:`~onlinemkl.proximal._step.fobos_run`): the draws do not depend on the steps,
        so they are made first; the steps are those of one :meth:`_step` each."""
        mem = self.replay
        order = mem.draw(steps)
        rows, labels, where = mem.held(self.n_features)
        if self.regression:  # targets standardised as now (a replay is not a new target), no row hints
            mean, std = self.target_scale()
            y_cls, y_val, where = np.zeros(steps, dtype=np.int64), (labels[order] - mean) / std, _NO_HINTS
        else:
            y_cls, y_val = labels[order], np.zeros(steps)
        self._ensure_rows(self.n_support + steps)
        _cf.fobos_run(order, rows, (y_cls, y_val), self._state or self._state_record(), where, self._eviction(True))

    def _step(self, x, y_cls, y_val):
        """The compiled step on a new example: class index ``y_cls`` or standardised target ``y_val``
        (no row hint: a new example is stored nowhere yet)."""
        n = self.istate[_cf.I_N]
        if n >= self.buf.S.shape[0]:  # the buffer is full: grow it (at the budget: no-op, the step evicts)
            self._ensure_rows(int(n) + 1)
        state = self._state or self._state_record()
        one = self._one
        one[1][0], one[2][0] = y_cls, y_val
        loss, yhat, updated, slot, _ = _cf.fobos_run(one[0], x[None, :], one[1:], state, _NO_HINTS, self._eviction())
        return loss, yhat, updated, slot

    def _eviction(self, replay=False):
        """The eviction policy code the compiled step takes; None without a budget (that variant
        is compiled without the eviction code).  ``replay``: a classifier's replayed update competes
        for a row under 'least_impact' (:data:`~onlinemkl.proximal._evict.EVICT_LEAST_IMPACT_COMPETING`)."""
        ev = int(self.ihyper[_cf.IH_POLICY]) if self.ihyper[_cf.IH_BUDGET] > 0 else None
        compete = replay and not self.regression and ev == EVICTION["least_impact"]
        return _cf.EVICT_LEAST_IMPACT_COMPETING if compete else ev

    def target_scale(self):
        """``(mean, std)`` of the regression targets seen so far (std 1 until two differ)."""
        n, mean, m2 = self.ystats.tolist()  # Python floats: this runs twice per example
        return mean, _target_std(n, m2)

    def learn_regression(self, x, y):
        """Learn ``y`` standardised by the running target mean/std (an online intercept and scale).

        Welford's update of ``ystats = (count, mean, M2)``, in Python floats (the same IEEE
        arithmetic as on the array's elements, without a numpy scalar per operation)."""
        r = self.yrange
        lo, hi = r.tolist()
        if y < lo:
            r[0] = y
        if y > hi:
            r[1] = y
        n, mean, m2 = self.ystats.tolist()
        n += 1.0
        delta = y - mean
        mean += delta / n
        m2 += delta * (y - mean)
        st = self.ystats
        st[0], st[1], st[2] = n, mean, m2
        return self._step(x, 0, (y - mean) / _target_std(n, m2))

    def scores_one(self, x, average=None):
        """Scores of one example through the compiled pass (last or averaged model; default: ``average``)."""
        n_out = max(int(self.ihyper[_cf.IH_NOUT]), 1)
        self._score_pass(x, self.average if average is None else average, n_out)
        return self.scores[:n_out].copy()

    def _score_pass(self, x, average, n_out):
        """The compiled pass of :meth:`scores_one`: the ``n_out`` scores of ``x`` left in ``self.scores``
        (the regression prediction reads its one score there, without a copy)."""
        n = int(self.istate[_cf.I_N])
        if n == 0 and not self.explicit_groups:
            # no stored example and no explicit weights: every score is 0 exactly, answered
            # without the compiled pass (a new process's first prediction never waits for it)
            self.scores[:n_out] = 0.0
            return
        state = self._state or self._state_record()
        if average:
            # the averaged model's coefficients (O(n F)), then the same single pass with unit scales
            T = max(int(self.istate[_cf.I_T]), 1)
            coef = np.zeros((max(n, 1), self.n_kernels))
            _cf.averaged_coefficients(n, self.buf.coef, self.avg_acc, self.avg_base, self.sigma_cum, T, coef)
            _cf.fobos_scores(x, state, coef, self.W_avg / T, np.ones_like(self.sigma), n, n_out)
        else:
            _cf.fobos_scores(x, state, self.buf.coef, self.W, self.sigma, n, n_out)

    def _explicit_matrix(self, average):
        T = max(int(self.istate[_cf.I_T]), 1)
        F = self.n_kernels
        out = []
        for e in range(len(self.explicit_groups)):
            if average:
                out.append(self.W_avg[e, : self.n_features, : self.n_outputs] / T)
            else:
                out.append(self.sigma[F + e] * self.W[e, : self.n_features, : self.n_outputs])
        return out

    def scores_many(self, X, average=None, block=4096):
        """Scores of many examples with BLAS products (last or averaged model).

        Queries go in blocks of :meth:`WeightedKernelSum.rows_per_block` rows (at most
        ``block``), as OBSCURE's batch path does: the block's kernel values (``F x rows x n``)
        stay near 8 MB whatever the number ``n`` of stored examples, instead of one
        ``F x 2048 x n`` array (800 MB at ``n = 10^4``).
        """
        average = self.average if average is None else average
        n = self.n_support
        n_out = max(self.n_outputs, 1)
        out = np.zeros((X.shape[0], n_out))
        for Wm, cols in zip(self._explicit_matrix(average), self._explicit_columns()):
            out += X[:, cols] @ Wm[cols]
        if n == 0 or X.shape[0] == 0:
            return out
        coef = self.buf.coef[:n]
        F = self.n_kernels
        if average:
            c = np.empty((n, F))
            _cf.averaged_coefficients(n, coef, self.avg_acc, self.avg_base, self.sigma_cum,
                                      max(int(self.istate[_cf.I_T]), 1), c)
        else:
            c = coef * self.sigma[:F]
        # M[k] = coef[:, k] * beta: group k's (n, C) output weights, so a block's scores are sum_k K_k M[k]
        M = np.ascontiguousarray(c.T[:, :, None] * self.beta[None, :n, :n_out])
        S = self.buf.S[:n, : self.n_features]
        rows = max(1, min(int(block), WeightedKernelSum.rows_per_block(n, F, 1 << 23)))
        for start in range(0, X.shape[0], rows):
            K = block_kernels(X[start:start + rows], S, self.ck)  # (F, rows, n)
            acc = out[start:start + rows]
            for k in range(F):
                acc += K[k] @ M[k]
        return out

    def target_bounds(self):
        """``(lo, hi)``: the range ``[y_min, y_max]`` of the regression targets learnt so far widened by
        ``prediction_margin`` times its width on each side; ``(-inf, inf)`` before any target (and for a
        state saved before the range was kept).

        Why: the model's kernels that grow with their inputs (the unnormalised linear and quadratic
        kernels of the defaults) extrapolate without limit.  An input far from every one learnt from (a
        scaler in front still learning a feature whose scale just changed hands the learner a value of
        several hundred deviations) gets a prediction of that size, orders of magnitude beyond any target
        seen; bounded, it is at most a margin beyond them.  Predictions within the bounds, the rest of
        the time, are unchanged, and learning uses the model's own scores (the bounds act on the
        reported prediction only).  A function of the state, so a saved model predicts the same.
        """
        y_min, y_max = self.yrange.tolist()
        if not y_min <= y_max or y_max - y_min == math.inf:  # no target yet, or the range not known
            return -math.inf, math.inf
        width = y_max - y_min
        return y_min - self.prediction_margin * width, y_max + self.prediction_margin * width

    def predict_one(self, x):
        """Regression: the prediction of one row in the target's units (the compiled pass), kept within
        :meth:`target_bounds`."""
        mean, std = self.target_scale()
        self._score_pass(x, self.average, 1)
        p = mean + std * self.scores[0].item()
        lo, hi = self.target_bounds()
        return max(lo, min(p, hi))

    def predict_many(self, X):
        """Regression: predictions of many rows in the target's units (BLAS blocks), kept within
        :meth:`target_bounds`."""
        mean, std = self.target_scale()
        return np.clip(mean + std * self.scores_many(X)[:, 0], *self.target_bounds())

    def _explicit_columns(self):
        cols = []
        for e in range(len(self.explicit_groups)):
            rng = self.xk.granges[self.xk.gptr[e]:self.xk.gptr[e + 1]]
            cols.append(np.concatenate([np.arange(a, b) for a, b in rng]) if len(rng) else np.zeros(0, int))
        return cols

    # -- state (the onlinemkl.engine protocol) ------------------------------------------

    #: The arrays of the state (dotted paths); ``g, scores, dl, b, b_new`` are scratch.
    _STATE_ARRAYS = ("hyper", "ihyper", "istate", "theta_sq", "sigma", "sigma_cum", "prox_weights", "beta",
                     "avg_acc", "avg_base", "W", "W_avg", "ystats", "yrange") + BufferEngine._BUFFER_ARRAYS + BufferEngine._KERNEL_ARRAYS \
        + ("xk.codes", "xk.params", "xk.kgroup", "xk.granges", "xk.gptr", "xk.gl1") + ReplayMemory.STATE_ARRAYS

    def get_state(self):
        params = {"n_features": int(self.n_features), "kernels_resolved": bool(self.ck._resolved),
                  "explicit_resolved": bool(self.xk._resolved), **self._kernel_state()}
        arrays = collect_arrays(self, self._STATE_ARRAYS)
        if self.yrange[0] == -math.inf:  # a state loaded from before the range was kept saves as it came
            del arrays["yrange"]
        return params, arrays

    def set_state(self, params, arrays, strict=True):
        """Restore onto an engine built from the same parameters; every shape and index is checked.

        The hyper-parameters must equal the fresh engine's (they come from the
        constructor parameters), except the number of outputs in use, which
        grows with a river stream's labels.
        """
        self._check_kernel_state(params, state_rule("proximal-MKL"))
        fresh = (self.hyper.copy(), self.ihyper.copy())
        fresh_weights = self.prox_weights.copy()
        if "yrange" not in arrays:
            # saved before the targets' range was kept: the range is not known, and the predictions
            # stay unbounded (as they were when saved) however much the model learns after loading
            arrays = {**arrays, "yrange": np.array([-np.inf, np.inf])}
        # a state without ihyper kept every setting in hyper; one saved before the group_steps setting
        # existed has one entry fewer, and takes the parameter's value (it changes how the model
        # learns from now on, not what it predicts)
        arrays = self._split_hyper(arrays, state_rule("proximal-MKL"), {_cf.H_EPSILON: 11},
                                      {_cf.IH_NOUT: 10, _cf.IH_GROUP_STEPS: 12}, {12: fresh[1][_cf.IH_GROUP_STEPS]})
        restore_arrays(self, arrays, self._STATE_ARRAYS)
        self._forget_records()
        self.n_features = int(params["n_features"])
        self.ck._resolved = bool(params["kernels_resolved"])
        self.xk._resolved = bool(params["explicit_resolved"])
        self._check_state(fresh, fresh_weights, strict)
        self._refresh_row_caches()
        self._scratch(self.beta.shape[1])

    def _check_state(self, fresh, fresh_weights, strict):
        E = len(self.explicit_groups)
        need = state_rule("proximal-MKL")
        self._check_groups_state(need, fresh, ({_cf.H_ETA0}, {_cf.IH_NOUT}), self.ck.n_kernels + E)
        need(self.ystats.shape == (3,), f"ystats has shape {self.ystats.shape}, expected (3,)")
        need(self.yrange.shape == (2,), f"yrange has shape {self.yrange.shape}, expected (2,)")
        need(np.array_equal(self.prox_weights, fresh_weights), "prox_weights differ from group_weights")
        self.xk.check_restored(need, "xk")
        C = self.beta.shape[1]
        need(self.W.shape[0] == E and self.W.shape[2] == C and self.W_avg.shape == self.W.shape,
             f"W {self.W.shape} / W_avg {self.W_avg.shape} do not fit {E} explicit groups and {C} outputs")
        need(self.n_features <= self.W.shape[1], f"{self.n_features} features in W of {self.W.shape[1]} columns")
        n_out = self.ihyper[_cf.IH_NOUT]
        need(0 <= n_out <= C and C >= 1, f"{n_out!r} outputs for {C} output slots")
        need(self.hyper[_cf.H_ETA0] == self.eta0_for(n_out), "eta0 differs from the parameters")
        self._check_groups(self.xk, need, "xk")
        self.replay.check(need, self.n_features, self._label_ok)
        if strict:
            self._check_groups_values(need, ("W", "W_avg", "ystats", "xk.params"))
            need(bool(np.all(self.theta_sq >= 0)), "a squared group norm is negative")
            need(self.ystats[0] >= 0 and self.ystats[2] >= 0, "bad target statistics")
            lo, hi = (float(v) for v in self.yrange)
            need((math.isfinite(lo) and math.isfinite(hi) and lo <= hi) or (lo, hi) in ((math.inf, -math.inf),
                                                                                      (-math.inf, math.inf)),
                 "bad target range: yrange must be [min, max] of the targets, [inf, -inf] (none) or [-inf, inf]")

    def _label_ok(self, y):
        """Which replayed labels are valid: finite targets, +-1 (binary losses) or output indices."""
        if self.regression:
            return np.isfinite(y)
        if self.ihyper[_cf.IH_LOSS] in (_cl.HINGE, _cl.LOGISTIC):
            return np.abs(y) == 1
        return (y >= 0) & (y < max(self.n_outputs, 1))

    def recompute_theta_sq(self):
        """Implicit groups' raw squared norms recomputed from the buffer; explicit from W."""
        out = np.empty_like(self.theta_sq)
        F = self.n_kernels
        out[:F] = _cf.theta_sq_dense_from_buffer(self._prox_rows(), self.n_support, max(self.n_outputs, 1),
                                                 self.ck.spec())
        for e in range(len(self.explicit_groups)):
            out[F + e] = float(np.sum(self.W[e] ** 2))
        return out
