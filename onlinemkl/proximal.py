"""Online proximal MKL (Martins, Smith, Xing, Aguiar & Figueiredo 2011): kernelised FOBOS.

Per example: a gradient step on the loss only, then one proximal step on the
vector of group norms (Prop. 1; squared l2,1 is Algorithm 2, the weighted
squared l1 Algorithm 4), then an optional projection onto a ball, all in one
compiled call (:mod:`onlinemkl._core.fobos`).  Groups are kernels on feature
groups (implicit, over the support buffer) and, optionally, explicit linear
feature groups (a weight matrix, for many sparse features or features that
should stay in the primal).

Faces: :class:`ProximalMKLClassifier`, :class:`ProximalMKLRegressor` (arrays,
scikit-learn API) and the river adapters in :mod:`onlinemkl.river`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.validation import check_is_fitted

from ._buffer import RefreshRowCachesOnUnpickle, SupportBuffer
from ._core import fobos as _cf
from ._core import losses as _cl
from ._core import prox as _cp
from ._validation import check_choice, check_number, check_rows
from .kernels import (CompiledKernels, Linear, WeightedKernelSum, block_kernels, check_kernels,
                      default_regression_kernels, resolve_group_columns)
from .obscure import EVICTION, check_labels, encode_labels

__all__ = ["ProximalMKLClassifier", "ProximalMKLRegressor", "ProximalEngine", "REGULARIZERS"]

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


def check_X(X, n_features=None, owner="the model"):
    """:func:`check_rows` (which also refuses complex and sparse input)."""
    return check_rows(X, n_features=n_features, owner=owner)


def check_explicit_groups(groups):
    if groups is None:
        return ()
    if not isinstance(groups, (tuple, list)):
        raise TypeError(f"explicit_groups={groups!r}: expected a tuple of feature groups, e.g. ((0, 1), None)")
    return tuple(Linear(group=g).group for g in groups)


class ProximalEngine(RefreshRowCachesOnUnpickle):
    """State and per-example steps of online proximal MKL (internal; use the estimators)."""

    def __init__(self, kernels, explicit_groups, loss_code, prox_code, lam, prox_param, group_weights,
                 schedule, eta0, strong_convexity, gamma, budget, eviction, n_outputs, epsilon=0.1):
        self.ck = CompiledKernels(kernels)
        self.explicit_groups = tuple(explicit_groups)
        # Explicit groups reuse the kernel machinery for their column ranges.
        self.xk = CompiledKernels([Linear(group=g) for g in self.explicit_groups])
        F, E = self.ck.n_kernels, len(self.explicit_groups)
        P = F + E
        self.hyper = np.zeros(_cf.N_HYPER)
        h = self.hyper
        h[_cf.H_LOSS] = loss_code
        h[_cf.H_PROX] = prox_code
        h[_cf.H_LAM] = lam
        h[_cf.H_PROX_PARAM] = prox_param
        h[_cf.H_SCHEDULE] = schedule
        h[_cf.H_ETA0] = eta0
        h[_cf.H_SIGMA_SC] = strong_convexity
        h[_cf.H_GAMMA] = gamma
        h[_cf.H_BUDGET] = 0 if budget is None else budget
        h[_cf.H_POLICY] = EVICTION[eviction]
        h[_cf.H_NOUT] = n_outputs
        h[_cf.H_EPSILON] = epsilon
        self.istate = np.zeros(_cf.N_ISTATE, dtype=np.int64)
        self.theta_sq = np.zeros(P)
        self.sigma = np.ones(P)
        self.sigma_cum = np.zeros(F)
        self.prox_weights = np.ones(P) if group_weights is None else np.asarray(group_weights, dtype=float)
        self.buf = SupportBuffer(F, self.ck.n_groups, F, budget=budget)
        cap = self.buf.capacity
        self.beta = np.zeros((cap, max(n_outputs, 1)))
        self.avg_acc = np.zeros((cap, F))
        self.avg_base = np.zeros((cap, F))
        self.W = np.zeros((E, 1, max(n_outputs, 1)))
        self.W_avg = np.zeros_like(self.W)
        self.n_features = 0
        # Regression targets: running count, mean and sum of squared deviations (Welford).
        self.ystats = np.array([0.0, 0.0, 0.0])
        self._scratch(max(n_outputs, 1))

    def _scratch(self, C):
        P = self.theta_sq.shape[0]
        self.g = np.zeros((P, C))
        self.scores = np.zeros(C)
        self.dl = np.zeros(C)
        self.b = np.zeros(P)
        self.b_new = np.zeros(P)

    @property
    def n_outputs(self):
        return int(self.hyper[_cf.H_NOUT])

    @property
    def n_support(self):
        return int(self.istate[_cf.I_N])

    @property
    def n_kernels(self):
        return self.ck.n_kernels

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

    def set_n_outputs(self, n_out):
        self.hyper[_cf.H_NOUT] = n_out
        C = self.beta.shape[1]
        if n_out > C:
            new = max(n_out, 2 * C)
            beta = np.zeros((self.beta.shape[0], new))
            beta[:, :C] = self.beta
            self.beta = beta
            for name in ("W", "W_avg"):
                old = getattr(self, name)
                arr = np.zeros(old.shape[:2] + (new,))
                arr[:, :, :C] = old
                setattr(self, name, arr)
            self._scratch(new)

    def _ensure_rows(self, n_rows):
        cap = self.buf.capacity
        self.buf.ensure_rows(n_rows)
        new = self.buf.capacity
        if new != cap:
            for name in ("beta", "avg_acc", "avg_base"):
                old = getattr(self, name)
                arr = np.zeros((new,) + old.shape[1:])
                arr[:cap] = old
                setattr(self, name, arr)

    def learn(self, x, y_cls, y_val):
        self._ensure_rows(self.n_support + 1)
        b = self.buf
        codes, params, kgroup, granges, gptr, gl1 = self.ck.arrays()
        return _cf.fobos_learn(
            x, y_cls, y_val, b.S, b.ssq, b.sdiag, b.coef, self.beta, b.tstamp, self.avg_acc, self.avg_base,
            codes, params, kgroup, granges, gptr, gl1, self.W, self.W_avg, self.xk.granges, self.xk.gptr,
            self.theta_sq, self.sigma, self.sigma_cum, self.prox_weights, self.istate, self.hyper,
            self.g, self.scores, self.dl, self.b, self.b_new,
        )

    def target_scale(self):
        """``(mean, std)`` of the regression targets seen so far (std 1 until two differ)."""
        n, mean, m2 = self.ystats
        std = math.sqrt(m2 / n) if n > 1 and m2 > 0 else 1.0
        return mean, std

    def learn_regression(self, x, y):
        """Learn ``y`` standardised by the running target mean/std (an online intercept and scale)."""
        st = self.ystats
        st[0] += 1.0
        delta = y - st[1]
        st[1] += delta / st[0]
        st[2] += delta * (y - st[1])
        mean, std = self.target_scale()
        return self.learn(x, 0, (y - mean) / std)

    def scores_one(self, x, average=False):
        """Scores of one example through the compiled pass (last or averaged model)."""
        b = self.buf
        codes, params, kgroup, granges, gptr, gl1 = self.ck.arrays()
        n_out = max(self.n_outputs, 1)
        n = self.n_support
        coef, W, sigma = b.coef, self.W, self.sigma
        if average:
            # the averaged model's coefficients (O(n F)), then the same single pass with unit scales
            T = max(int(self.istate[_cf.I_T]), 1)
            coef = np.zeros((max(n, 1), self.n_kernels))
            _cf.averaged_coefficients(n, b.coef, self.avg_acc, self.avg_base, self.sigma_cum, T, coef)
            W = self.W_avg / T
            sigma = np.ones_like(self.sigma)
        _cf.fobos_scores(x, b.S, b.ssq, b.sdiag, coef, self.beta, codes, params, kgroup, granges, gptr, gl1,
                         W, self.xk.granges, self.xk.gptr, sigma, n, n_out, self.g, self.scores)
        return self.scores[:n_out].copy()

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

    def scores_many(self, X, average=False, block=4096):
        """Scores of many examples with BLAS products (last or averaged model).

        Queries go in blocks of :meth:`WeightedKernelSum.rows_per_block` rows (at most
        ``block``), as OBSCURE's batch path does: the block's kernel values (``F x rows x n``)
        stay near 8 MB whatever the number ``n`` of stored examples, instead of one
        ``F x 2048 x n`` array (800 MB at ``n = 10^4``).
        """
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

    def _explicit_columns(self):
        cols = []
        for e in range(len(self.explicit_groups)):
            rng = self.xk.granges[self.xk.gptr[e]:self.xk.gptr[e + 1]]
            cols.append(np.concatenate([np.arange(a, b) for a, b in rng]) if len(rng) else np.zeros(0, int))
        return cols

    def group_norms(self):
        """``||theta_k||`` of every group (kernels first, then explicit groups)."""
        return self.sigma * np.sqrt(np.maximum(self.theta_sq, 0.0))

    def kernel_weights(self):
        """``beta_k = ||theta_k|| / sum_l ||theta_l||`` (uniform before any update)."""
        nrm = self.group_norms()
        s = nrm.sum()
        return nrm / s if s > 0 else np.full_like(nrm, 1.0 / nrm.size)

    # -- persistence (the onlinemkl.persist protocol) -------------------------------------

    @staticmethod
    def _state_array_names():
        """The arrays a saved engine holds (dotted paths); ``g, scores, dl, b, b_new`` are scratch."""
        return ("hyper", "istate", "theta_sq", "sigma", "sigma_cum", "prox_weights", "beta", "avg_acc", "avg_base",
                "W", "W_avg", "ystats", "buf.S", "buf.ssq", "buf.sdiag", "buf.ypos", "buf.yneg", "buf.coef",
                "buf.tstamp", "ck.codes", "ck.params", "ck.kgroup", "ck.granges", "ck.gptr", "ck.gl1",
                "xk.codes", "xk.params", "xk.kgroup", "xk.granges", "xk.gptr", "xk.gl1")

    def _get_state(self):
        from .persist import collect_arrays

        state = {"n_features": int(self.n_features), "kernels_resolved": bool(self.ck._resolved),
                 "explicit_resolved": bool(self.xk._resolved)}
        return state, collect_arrays(self, self._state_array_names())

    def _set_state(self, state, arrays):
        """Restore onto an engine built from the same parameters; every shape and index is checked.

        The hyper-parameters must equal the fresh engine's (they come from the
        constructor parameters), except the number of outputs in use, which
        grows with a river stream's labels.
        """
        from .persist import restore_arrays

        fresh_hyper = self.hyper.copy()
        fresh_weights = self.prox_weights.copy()
        restore_arrays(self, arrays, self._state_array_names())
        self.n_features = int(state["n_features"])
        self.ck._resolved = bool(state["kernels_resolved"])
        self.xk._resolved = bool(state["explicit_resolved"])
        self._check_state(fresh_hyper, fresh_weights)
        self.ck.refresh_row_caches(self.buf.S, self.n_support, self.buf.ssq, self.buf.sdiag)
        self._scratch(self.beta.shape[1])

    def _check_state(self, fresh_hyper, fresh_weights):
        from .persist import _get_path

        F, E, G = self.ck.n_kernels, len(self.explicit_groups), self.ck.n_groups
        P = F + E
        b, h = self.buf, self.hyper

        def need(ok, rule):
            if not ok:
                raise ValueError(f"inconsistent proximal-MKL state: {rule}")

        need(h.shape == (_cf.N_HYPER,), f"hyper has shape {h.shape}, expected ({_cf.N_HYPER},)")
        need(self.istate.shape == (_cf.N_ISTATE,), f"istate has shape {self.istate.shape}")
        settings = [i for i in range(_cf.N_HYPER) if i != _cf.H_NOUT]
        need(np.array_equal(h[settings], fresh_hyper[settings]),
             "the saved settings (loss, regulariser, lam, schedule, gamma, budget, ...) differ from the parameters")
        for name, arr, shape in (("theta_sq", self.theta_sq, (P,)), ("sigma", self.sigma, (P,)),
                                 ("sigma_cum", self.sigma_cum, (F,)), ("prox_weights", self.prox_weights, (P,)),
                                 ("ystats", self.ystats, (3,))):
            need(arr.shape == shape, f"{name} has shape {arr.shape}, expected {shape}")
        need(np.array_equal(self.prox_weights, fresh_weights), "prox_weights differ from group_weights")
        self.ck.check_restored(need, "ck")
        self.xk.check_restored(need, "xk")
        cap, dcap = b.S.shape
        C = self.beta.shape[1]
        for name, arr, shape in (("buf.ssq", b.ssq, (cap, G)), ("buf.sdiag", b.sdiag, (cap, F)),
                                 ("buf.ypos", b.ypos, (cap,)), ("buf.yneg", b.yneg, (cap,)),
                                 ("buf.coef", b.coef, (cap, F)), ("buf.tstamp", b.tstamp, (cap,)),
                                 ("beta", self.beta, (cap, C)), ("avg_acc", self.avg_acc, (cap, F)),
                                 ("avg_base", self.avg_base, (cap, F))):
            need(arr.shape == shape, f"{name} has shape {arr.shape}, expected {shape}")
        need(self.W.shape[0] == E and self.W.shape[2] == C and self.W_avg.shape == self.W.shape,
             f"W {self.W.shape} / W_avg {self.W_avg.shape} do not fit {E} explicit groups and {C} outputs")
        budget = 0 if b.budget is None else b.budget
        need(cap >= 1 and (budget == 0 or cap <= budget), f"buffer capacity {cap} exceeds the budget {budget}")
        need(bool(np.all(self.istate >= 0)), "negative counters")
        n = self.n_support
        need(n <= cap, f"{n} stored examples in a buffer of {cap} rows")
        need(0 <= self.n_features <= min(dcap, self.W.shape[1]),
             f"{self.n_features} features in buffers of {dcap} and {self.W.shape[1]} columns")
        n_out = h[_cf.H_NOUT]
        need(n_out == int(n_out) and 0 <= n_out <= C and C >= 1, f"{n_out!r} outputs for {C} output slots")
        need(bool(np.all(self.sigma > 0)), "a group scale is not positive")
        need(bool(np.all(self.theta_sq >= 0)), "a squared group norm is negative")
        need(self.ystats[0] >= 0 and self.ystats[2] >= 0, "bad target statistics")
        for name in ("theta_sq", "sigma", "sigma_cum", "beta", "avg_acc", "avg_base", "W", "W_avg", "ystats",
                     "buf.S", "buf.ssq", "buf.sdiag", "buf.coef", "ck.params", "xk.params"):
            need(bool(np.all(np.isfinite(_get_path(self, name)))), f"{name} holds NaN or infinite values")
        for ck, what in ((self.ck, "ck"), (self.xk, "xk")):
            r, p = ck.granges, ck.gptr
            need(r.ndim == 2 and r.shape[1] == 2, f"{what}.granges has shape {r.shape}")
            need(bool(np.all((r[:, 0] >= 0) & (r[:, 0] <= r[:, 1]) & (r[:, 1] <= self.n_features))),
                 f"a {what} feature group's columns are out of range")
            need(p[0] == 0 and p[-1] == r.shape[0] and bool(np.all(np.diff(p) >= 0)), f"{what}.gptr is not a valid index")

    def recompute_theta_sq(self):
        """Implicit groups' raw squared norms recomputed from the buffer; explicit from W."""
        b = self.buf
        out = np.empty_like(self.theta_sq)
        F = self.n_kernels
        out[:F] = _cf.theta_sq_dense_from_buffer(b.S, b.ssq, b.sdiag, b.coef, self.beta, self.n_support,
                                                 max(self.n_outputs, 1), *self.ck.arrays())
        for e in range(len(self.explicit_groups)):
            out[F + e] = float(np.sum(self.W[e] ** 2))
        return out


class _ProximalBase(BaseEstimator):
    """Parameters and fitting shared by the classifier and the regressor."""

    _classification = True

    def _engine_for(self, n_outputs, loss_code, loss_at_zero):
        st = self._settings(loss_at_zero)
        return ProximalEngine(st["kernels"], st["explicit"], loss_code, st["prox"], st["lam"], st["param"],
                              st["weights"], st["schedule"], st["eta0"], st["modulus"], st["gamma"],
                              self.budget, self.eviction, n_outputs, epsilon=getattr(self, "epsilon", 0.1))

    def _settings(self, loss_at_zero, n_extra_groups=0):
        """Validated settings shared by every proximal learner (flat and structured).

        ``n_extra_groups`` counts groups the learner adds itself (the sequence
        labeller's transition group) for ``group_weights``.
        """
        kernels = check_kernels(self.kernels, None if self._classification else default_regression_kernels)
        explicit = check_explicit_groups(getattr(self, "explicit_groups", None))
        P = len(kernels) + len(explicit) + n_extra_groups
        check_choice("regularizer", self.regularizer, tuple(REGULARIZERS))
        lam = check_number("lam", self.lam, low=0.0)
        check_choice("schedule", self.schedule, tuple(SCHEDULES))
        eta0 = check_number("eta0", self.eta0, low=0.0, low_open=True)
        check_number("budget", self.budget, low=1, integer=True, allow_none=True)
        check_choice("eviction", self.eviction, tuple(EVICTION))
        check_number("n_epochs", getattr(self, "n_epochs", 1), low=1, integer=True)
        reg = self.regularizer
        if reg == "nonsparse":
            param = check_number("q", self.q, low=1.0, high=2.0, low_open=True)
        elif reg == "elastic_net":
            param = check_number("sigma", self.sigma, low=0.0)
        elif reg == "sparse_group_lasso":
            param = check_number("l1_ratio", self.l1_ratio, low=0.0)
        else:
            param = 0.0
        weights = None
        if self.group_weights is not None:
            weights = np.asarray(self.group_weights, dtype=float)
            if weights.shape != (P,) or not np.all(np.isfinite(weights)) or np.any(weights <= 0):
                raise ValueError(
                    f"group_weights must hold {P} finite positive numbers (one per kernel, then one per "
                    f"explicit group or transition group); got {self.group_weights!r}"
                )
        # Strong convexity of lam * R (for the 1/(sigma t) schedule) and the appendix-E radius.
        modulus = {"sq_l21": lam, "weighted_sq_l1": lam * float(np.min(weights)) ** 2 if weights is not None else lam,
                   "elastic_net": lam * param,
                   # 0.5 sum ||theta_k||^q is lam-strongly convex only at q = 2 (the plain squared l2 norm)
                   "nonsparse": lam if float(self.q) == 2.0 else 0.0}.get(reg, 0.0)
        if self.schedule == "strongly_convex" and modulus <= 0:
            raise ValueError(
                f"schedule='strongly_convex' needs a strongly convex regulariser (sq_l21, weighted_sq_l1, or "
                f"elastic_net with sigma > 0) and lam > 0; regularizer={reg!r}, lam={lam}"
            )
        if self.gamma == "auto":
            gamma = math.sqrt(2.0 * loss_at_zero / modulus) if (modulus > 0 and loss_at_zero is not None) else 0.0
        elif self.gamma is None:
            gamma = 0.0
        else:
            gamma = check_number("gamma", self.gamma, low=0.0, low_open=True, hint=" (or 'auto', or None)")
        return dict(kernels=kernels, explicit=explicit, prox=REGULARIZERS[reg], lam=lam, param=param,
                    weights=weights, schedule=SCHEDULES[self.schedule], eta0=eta0, modulus=modulus, gamma=gamma)

    @property
    def kernel_weights_(self):
        """``beta_k = ||theta_k|| / sum_l ||theta_l||`` per group (kernels, then explicit groups)."""
        check_is_fitted(self, "_engine")
        return self._engine.kernel_weights()

    @property
    def zero_groups_(self):
        """Boolean mask of the groups that are exactly zero."""
        check_is_fitted(self, "_engine")
        return self._engine.group_norms() == 0.0

    @property
    def n_support_(self):
        check_is_fitted(self, "_engine")
        return self._engine.n_support

    def _scores(self, X):
        check_is_fitted(self, "_engine")
        X = check_X(X, n_features=self.n_features_in_, owner=type(self).__name__)
        return self._engine.scores_many(X, average=bool(self.average))


_COMMON_DOC = """
    kernels : sequence of onlinemkl.kernels.Kernel, default None
        Implicit kernel groups (None: the default set).
    explicit_groups : tuple of feature groups, default None
        Extra groups kept in the primal as linear weight matrices (a group is
        None for all features or a tuple of columns).
    regularizer : {'sq_l21', 'weighted_sq_l1', 'l21', 'sparse_group_lasso', 'nonsparse', 'elastic_net', 'none'}
        'sq_l21' is MKL, ``0.5 (sum_k ||theta_k||)^2``; 'l21' the group lasso;
        'weighted_sq_l1' uses ``group_weights``; 'nonsparse' ``0.5 sum ||theta_k||^q``;
        'elastic_net' ``sum ||theta_k|| + sigma/2 ||theta||^2``; 'sparse_group_lasso'
        adds an l1 term (weight ``l1_ratio * lam``) inside explicit groups.
    lam : float >= 0, default 1e-4
    q : float in (1, 2], default 1.5  (regularizer='nonsparse')
    sigma : float >= 0, default 1.0  (regularizer='elastic_net')
    l1_ratio : float >= 0, default 1.0  (regularizer='sparse_group_lasso')
    group_weights : sequence of float or None  (regularizer='weighted_sq_l1')
    schedule : {'invsqrt', 'constant', 'strongly_convex'}, default 'invsqrt'
        ``eta0/sqrt(t)``, ``eta0``, or ``1/(modulus t)`` for a strongly convex regulariser (Prop. 5).
    eta0 : float > 0, default 1.0
    gamma : float, 'auto' or None, default 'auto'
        Radius of the projection ball; 'auto' is appendix E's ``sqrt(2 L(0) / modulus)``
        where the regulariser is strongly convex (otherwise no projection).
    average : bool, default False
        Predict with the averaged model ``(1/T) sum_t theta_t`` (kept without storing history).
    budget : int or None; eviction : {'oldest', 'least_impact'}
        As in OBSCURE.
    n_epochs : int, default 1
        Passes over the data in ``fit`` (random order).
    random_state : int or None
"""

# The flat learners evict with a projection onto a partner (onlinemkl._core.fobos.evict_and_merge)
# and default to 'least_impact'; the sequence labeller reuses _COMMON_DOC with plain removal.
_FLAT_BUDGET_DOC = _COMMON_DOC.replace("""    budget : int or None; eviction : {'oldest', 'least_impact'}
        As in OBSCURE.
""", """    budget : int or None
        Maximum number of stored examples (None: unbounded).
    eviction : {'least_impact', 'oldest'}, default 'least_impact'
        What a full buffer drops: the stored example with the smallest contribution
        ``||Delta theta||^2``, or the oldest (a sliding window, for drifting streams).
        Either way its contribution is first projected, per kernel group, onto the
        stored example with a parallel class vector that keeps most of it (always
        possible with one output: binary classification and regression; the same
        class pair for the multiclass hinge); the averaged model's share moves with
        it, and only the residual is lost.  With the decaying step sizes the oldest
        examples carry the largest coefficients, so 'oldest' costs accuracy on
        stationary data (the averaged model, which weights each example by its time
        in the model, the most).
""")


class ProximalMKLClassifier(ClassifierMixin, _ProximalBase):
    __doc__ = """Online proximal MKL classifier (kernelised FOBOS with group-norm proximal steps).

    Parameters
    ----------
    loss : {'hinge', 'logistic'}, default 'hinge'
        Binary hinge / logistic for two classes, Crammer-Singer hinge / multinomial
        logistic for more.""" + _FLAT_BUDGET_DOC + """
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

    def __init__(self, kernels=None, explicit_groups=None, loss="hinge", regularizer="sq_l21", lam=1e-4, q=1.5,
                 sigma=1.0, l1_ratio=1.0, group_weights=None, schedule="invsqrt", eta0=1.0, gamma="auto",
                 average=False, budget=None, eviction="least_impact", n_epochs=1, random_state=None):
        self.kernels = kernels
        self.explicit_groups = explicit_groups
        self.loss = loss
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

    def _new_engine(self, classes):
        check_choice("loss", self.loss, CLASSIFICATION_LOSSES)
        C = len(classes)
        if C == 2:
            code = _cl.HINGE if self.loss == "hinge" else _cl.LOGISTIC
            return self._engine_for(1, code, 1.0 if self.loss == "hinge" else math.log(2.0))
        code = _cl.MULTICLASS_HINGE if self.loss == "hinge" else _cl.MULTINOMIAL
        return self._engine_for(C, code, 1.0 if self.loss == "hinge" else math.log(C))

    def _learn_rows(self, engine, X, yi, order):
        for i in order:
            engine.learn(X[i], int(yi[i]), 0.0)

    def fit(self, X, y):
        X = check_X(X)
        y = check_labels(y, X.shape[0])
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(f"y has 1 class (a single class, {classes[0]!r}); a classifier needs at least 2")
        engine = self._new_engine(classes)
        engine.set_features(X.shape[1])
        yi = encode_labels(y, classes, len(classes) == 2)
        self.classes_, self._engine, self.n_features_in_ = classes, engine, X.shape[1]
        rng = np.random.default_rng(self.random_state)
        for _ in range(self.n_epochs):
            self._learn_rows(engine, X, yi, rng.permutation(X.shape[0]))
        return self

    def partial_fit(self, X, y, classes=None):
        """Learn from a mini-batch in order; ``classes`` is required on the first call."""
        first = not hasattr(self, "_engine")
        X = check_X(X, n_features=None if first else self.n_features_in_, owner=type(self).__name__)
        y = check_labels(y, X.shape[0])
        if first:
            if classes is None:
                raise ValueError("classes must be given on the first call to partial_fit, e.g. classes=[0, 1, 2]")
            classes = np.unique(np.asarray(classes))
            if len(classes) < 2:
                raise ValueError(f"classes={classes.tolist()!r}: a classifier needs at least 2 classes")
            engine = self._new_engine(classes)
            engine.set_features(X.shape[1])
        else:
            engine, classes = self._engine, self.classes_
        yi = encode_labels(y, classes, len(classes) == 2)
        self._engine, self.classes_, self.n_features_in_ = engine, classes, X.shape[1]
        self._learn_rows(engine, X, yi, range(X.shape[0]))
        return self

    # -- persistence (the onlinemkl.persist protocol) -------------------------------------

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
        out = {"fitted": True, "engine": state, "n_features_in_": int(self.n_features_in_)}
        classes = np.asarray(self.classes_)
        if classes.dtype.kind == "O":
            out["classes_"] = classes.tolist()
        else:
            arrays = dict(arrays, classes_=classes)
        return out, arrays

    def _set_state(self, state, arrays):
        if not state.get("fitted"):
            return
        if "classes_" in arrays:
            classes = arrays["classes_"]
        else:
            labels = list(state["classes_"])
            classes = np.empty(len(labels), dtype=object)
            for i, lab in enumerate(labels):
                classes[i] = lab
        if classes.ndim != 1 or len(classes) < 2:
            raise ValueError(f"classes_ must be 1-D with at least 2 labels; got shape {classes.shape}")
        if not np.array_equal(np.unique(classes), classes):
            raise ValueError("classes_ must be sorted and unique")
        engine = self._new_engine(classes)
        engine._set_state(state["engine"], arrays)
        expected = 1 if len(classes) == 2 else len(classes)
        if engine.n_outputs != expected:
            raise ValueError(f"{len(classes)} classes but the engine has {engine.n_outputs} outputs")
        n_in = int(state["n_features_in_"])
        if n_in != engine.n_features or n_in < 1:
            raise ValueError(f"n_features_in_={n_in} but the engine has {engine.n_features} features")
        self._engine, self.classes_, self.n_features_in_ = engine, classes, n_in

    def decision_function(self, X):
        s = self._scores(X)
        return s[:, 0] if len(self.classes_) == 2 else s

    def predict(self, X):
        s = self.decision_function(X)
        if s.ndim == 1:
            return self.classes_[(s >= 0).astype(int)]
        return self.classes_[np.argmax(s, axis=1)]


class ProximalMKLRegressor(RegressorMixin, _ProximalBase):
    __doc__ = """Online proximal MKL regressor (kernelised FOBOS with group-norm proximal steps).

    Parameters
    ----------
    loss : {'squared', 'epsilon_insensitive'}, default 'squared'
    epsilon : float >= 0, default 0.1
        Width of the epsilon-insensitive loss, in units of the target's standard deviation.""" + _FLAT_BUDGET_DOC + """
    Defaults differ from the classifier's where regression needs it:
    ``kernels=None`` uses :func:`onlinemkl.kernels.default_regression_kernels`,
    ``lam=1e-2``, ``eta0=0.1``, the averaged model and 3 epochs in ``fit``.
    Targets are standardised online by their running mean and standard
    deviation (an intercept and a scale learnt from the stream), so ``eta0``
    and ``epsilon`` do not depend on the target's units.

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

    _classification = False

    def __init__(self, kernels=None, explicit_groups=None, loss="squared", epsilon=0.1, regularizer="sq_l21",
                 lam=1e-2, q=1.5, sigma=1.0, l1_ratio=1.0, group_weights=None, schedule="invsqrt", eta0=0.1,
                 gamma=None, average=True, budget=None, eviction="least_impact", n_epochs=3, random_state=None):
        self.kernels = kernels
        self.explicit_groups = explicit_groups
        self.loss = loss
        self.epsilon = epsilon
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

    def _new_engine(self):
        check_choice("loss", self.loss, tuple(REGRESSION_LOSSES))
        check_number("epsilon", self.epsilon, low=0.0)
        return self._engine_for(1, REGRESSION_LOSSES[self.loss], None)

    @staticmethod
    def _targets(y, n):
        if y is None:
            raise ValueError("ProximalMKLRegressor requires y to be passed, but the target y is None (pass one target per row of X)")
        y = np.asarray(y)
        if y.dtype.kind == "c":
            raise ValueError("Complex data not supported: y holds complex numbers; regression targets must be real")
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"y must hold numbers (regression targets): {exc}") from None
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected; y (n, 1) was ravelled to "
                          "shape (n,)", DataConversionWarning, stacklevel=3)
            y = y.ravel()
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-D with one target per row of X ({n} rows); got shape {y.shape}")
        if not np.all(np.isfinite(y)):
            raise ValueError("y contains NaN or infinite targets; drop or impute them")
        return y

    def fit(self, X, y):
        X = check_X(X)
        y = self._targets(y, X.shape[0])
        engine = self._new_engine()
        engine.set_features(X.shape[1])
        self._engine, self.n_features_in_ = engine, X.shape[1]
        rng = np.random.default_rng(self.random_state)
        for _ in range(self.n_epochs):
            for i in rng.permutation(X.shape[0]):
                engine.learn_regression(X[i], y[i])
        return self

    def partial_fit(self, X, y):
        first = not hasattr(self, "_engine")
        X = check_X(X, n_features=None if first else self.n_features_in_, owner=type(self).__name__)
        y = self._targets(y, X.shape[0])
        if first:
            engine = self._new_engine()
            engine.set_features(X.shape[1])
        else:
            engine = self._engine
        self._engine, self.n_features_in_ = engine, X.shape[1]
        for i in range(X.shape[0]):
            engine.learn_regression(X[i], y[i])
        return self

    def predict(self, X):
        s = self._scores(X)[:, 0]  # checks fitted and X first
        mean, std = self._engine.target_scale()
        return mean + std * s

    # -- persistence (the onlinemkl.persist protocol) -------------------------------------

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
        return {"fitted": True, "engine": state, "n_features_in_": int(self.n_features_in_)}, arrays

    def _set_state(self, state, arrays):
        if not state.get("fitted"):
            return
        engine = self._new_engine()
        engine._set_state(state["engine"], arrays)
        if engine.n_outputs != 1:
            raise ValueError(f"a regressor has 1 output; the engine has {engine.n_outputs}")
        n_in = int(state["n_features_in_"])
        if n_in != engine.n_features or n_in < 1:
            raise ValueError(f"n_features_in_={n_in} but the engine has {engine.n_features} features")
        self._engine, self.n_features_in_ = engine, n_in
