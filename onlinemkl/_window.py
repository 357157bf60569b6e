"""Shared parts of the mini-batch engines (PolyMKL and the non-linear KRR): the base
kernels over a support window, the window itself, and the KRR solves."""

from __future__ import annotations

import contextlib
import math
import os
import warnings

import numpy as np
import scipy.linalg

from ._lazy import lazy_module
from ._params import Int, Param, Rule
from ._validation import MAX_ABS_VALUE, TOO_LARGE, shown
from .engine import EngineBase, state_rule
from .features import MAX_FEATURES
from .kernel_arrays import CompiledKernels, block_kernels, resolve_group_columns
from .kernels import check_kernels

_cp = lazy_module("onlinemkl._core.polynomial")

__all__ = [
    "LAM_GRID",
    "MAX_ABS",
    "PREDICTION_MARGIN",
    "BaseKernels",
    "WindowEngine",
    "blas_limit",
    "check_batch",
    "check_lam",
    "check_rules",
    "default_rules",
    "direct_solve",
    "duplicate_groups",
    "fit_width",
    "loo_errors",
    "loo_ridge",
]

#: Windows of fewer rows run their BLAS calls on one thread: an ``n x n`` product or
#: factorisation of a few hundred rows is over before extra threads pay for themselves, and
#: spinning threads fight the other processes (and each other) on a shared machine.
BLAS_SERIAL_ROWS = 2000

_controller = None


def blas_threads(n_rows):
    """The BLAS thread limit that fits work on ``n_rows`` support rows (1 below ``BLAS_SERIAL_ROWS``,
    else every core)."""
    return 1 if n_rows < BLAS_SERIAL_ROWS else (os.cpu_count() or 1)


def blas_limit(n_rows):
    """Context manager: BLAS (numpy's, scipy's and the one Numba calls) limited to
    :func:`blas_threads` threads (``threadpoolctl``); the process's setting comes back on exit."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    if n_rows >= BLAS_SERIAL_ROWS:
        return contextlib.nullcontext()
    return _controller.limit(limits=blas_threads(n_rows), user_api="blas")


#: Predictions are kept within the window's target range widened by this many times its width on
#: each side (:meth:`WindowEngine.target_bounds`): room for a trend to continue beyond the targets seen,
#: none for a fit that extrapolates a high-degree polynomial far beyond them.
PREDICTION_MARGIN = 1.0

#: The ridge shifts ``n lam`` that ``lam='auto'`` tries, relative to the kernel's mean eigenvalue:
#: ``numpy.logspace(*RIDGE_GRID)``.
RIDGE_GRID = (-7.0, 2.0, 37)
LAM_GRID = np.logspace(*RIDGE_GRID)

#: Once a ridge is known, PolyMKL's active-set solver tries ``numpy.logspace(*LOCAL_RIDGE_GRID)``
#: times it (kept within :data:`RIDGE_GRID`'s ends).
LOCAL_RIDGE_GRID = (-1.5, 1.5, 13)


def default_rules() -> dict:
    """The rules a window engine takes from this release unless a model file gives its own: the
    prediction margin, the ridge grids and the near-copy tolerance.  An engine records them as its
    ``rules`` setting, so a saved model predicts and goes on learning by the rules it was built with
    whatever a later release's defaults."""
    return {"prediction_margin": PREDICTION_MARGIN, "ridge_grid": list(RIDGE_GRID),
            "local_ridge_grid": list(LOCAL_RIDGE_GRID), "near_copy": NEAR_COPY}


def check_rules(rules) -> dict:
    """``rules`` (:func:`default_rules`'s keys) checked: ``ValueError`` naming the rule otherwise.  The
    grids are ``(low exponent, high exponent, count)`` with at most 1000 points, so that a crafted
    file cannot make an engine allocate without bound."""
    want = default_rules()
    if not isinstance(rules, dict) or set(rules) != set(want):
        raise ValueError(f"rules must be a dict with the keys {sorted(want)}; got {str(rules)[:120]}")
    out = {}
    for name in ("prediction_margin", "near_copy"):
        v = rules[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v < math.inf):
            raise ValueError(f"rules[{name!r}]={v!r}: expected a finite number >= 0")
        out[name] = float(v)
    for name in ("ridge_grid", "local_ridge_grid"):
        g = rules[name]
        ok = isinstance(g, (list, tuple)) and len(g) == 3
        if ok:
            lo, hi, k = g
            ok = (all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi))
                  and isinstance(k, int) and not isinstance(k, bool) and -300 <= lo <= hi <= 300 and 1 <= k <= 1000)
        if not ok:
            raise ValueError(f"rules[{name!r}]={str(g)[:80]}: expected [low exponent, high exponent, count] with "
                             "-300 <= low <= high <= 300 and 1 <= count <= 1000")
        out[name] = [float(g[0]), float(g[1]), int(g[2])]
    return out


def _check_lam_param(name, value):
    return check_lam(value)


#: ``lam`` of the mini-batch learners (a row of their parameter tables).
LAM_PARAM = Param(
    "lam", Rule("'auto' or float > 0", _check_lam_param), "auto",
    "Ridge parameter for the *mean* squared loss (``alpha = (K + n lam I)^-1 y``).  'auto': chosen on\n"
    "every batch by exact leave-one-out error of the kernel ridge regression over a grid (rows and their\n"
    "near-copies left out together); the choice is ``lam_``.")

#: The rows every river mini-batch face adds to its learner's table.
RIVER_MINIBATCH_PARAMS = (
    Param("batch_size", Int(low=1), 32, "Examples per mini-batch: ``learn_one`` buffers them, and every\n"
          "``batch_size`` of them are one batch for the solver.", faces=("river",)),
    Param("max_features", Int(low=1, none=True), MAX_FEATURES,
          "At most this many features: an example bringing new names past it is rejected, the model\n"
          "unchanged (None: no cap).", faces=("river",)),
)


def check_lam(lam):
    """``lam``: 'auto' or a positive finite number (``ValueError`` / ``TypeError`` naming it otherwise)."""
    if isinstance(lam, str):
        if lam != "auto":
            raise ValueError(f"lam={lam!r}: expected 'auto' (chosen by leave-one-out on every batch) or a number > 0")
        return lam
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.integer, np.floating)):
        raise TypeError(f"lam={lam!r}: expected 'auto' or a number > 0")
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam={lam!r}: expected 'auto' or a finite number > 0")
    return float(lam)


#: Rows closer than this many standard deviations in every column (their window's) are near-copies
#: for leave-one-out (:func:`duplicate_groups`).  A row repeated behind a running scaler (river's
#: ``StandardScaler`` learns between the two copies) arrives a few hundredths of a deviation from its copy;
#: two distinct rows of three or more continuous features are almost never this close.
NEAR_COPY = 0.1


def duplicate_groups(X, tol=NEAR_COPY):
    """The window's rows grouped by (near) equal value: ``None`` when every row stands alone, else the
    group index of each row.  Leave-one-out must leave a row out with its copies (:func:`loo_errors`):
    a copy left in the fit predicts the held-out row almost perfectly, so plain leave-one-out on a
    window with repeated rows favours the smallest ridge and the model overfits.

    Equal rows form one group.  Besides, two rows are paired when each is the other's nearest
    neighbour and they differ by at most ``tol`` standard deviations of the window in every column
    (a near-copy: a repeated row seen through a scaler that moved in between).  Pairs only, never
    chains, so dense low-dimensional data is not merged into a few large groups."""
    n = X.shape[0]
    if n < 2:
        return None
    uniq, inverse, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(n)
    groups = inverse if counts.max() > 1 else None
    k = uniq.shape[0]
    if tol > 0 and k >= 3:
        sd = X.std(axis=0)
        keep = sd > 0
        if keep.any():
            from scipy.spatial import cKDTree

            Z = uniq[:, keep] / sd[keep]
            dist, nn = cKDTree(Z).query(Z, k=2, p=np.inf)
            near, nn = dist[:, 1] <= tol, nn[:, 1]
            mate = np.flatnonzero(near & (nn[nn] == np.arange(k)) & (np.arange(k) < nn))
            if mate.size:
                label = np.arange(k)
                label[nn[mate]] = mate
                groups = label[inverse]
    return groups


def loo_errors(resid, one_minus_lev, groups=None):
    """Leave-one-out residuals of a linear smoother, one column per ridge: ``resid = (I - H) y`` and
    ``one_minus_lev = diag(I - H)``, both ``(n, n_ridges)``.  A distinct row's is ``resid / (1 - H_ii)``.
    Rows in a group of ``m`` equal rows (``groups``, :func:`duplicate_groups`) are left out together:
    equal rows have equal rows of ``H``, so ``(I - H)_GG = I + (l - 1) 1 1'`` with ``l = 1 - H_ii`` and
    the leave-group-out residual is ``r_i - (l - 1) sum_G r / (1 + m (l - 1))``."""
    out = resid / np.maximum(one_minus_lev, 1e-300)
    if groups is None:
        return out
    counts = np.bincount(groups)
    m = counts[groups]
    rows = np.flatnonzero(m > 1)
    if rows.size == 0:
        return out
    sums = np.zeros((counts.shape[0], resid.shape[1]))
    np.add.at(sums, groups[rows], resid[rows])
    lm1 = one_minus_lev[rows] - 1.0
    denom = np.maximum(1.0 + m[rows, None] * lm1, 1e-300)
    out[rows] = resid[rows] - lm1 * sums[groups[rows]] / denom
    return out


def loo_ridge(K, y, grid=LAM_GRID, groups=None):
    """Kernel ridge regression with its ridge chosen by exact leave-one-out, from one eigendecomposition.

    With ``K = U diag(s) U'`` and shift ``c = n lam``, the hat matrix is ``H = U diag(s / (s + c)) U'``
    and the leave-one-out residual of example ``i`` is ``(y - H y)_i / (1 - H_ii)``: every shift of
    ``grid`` (times the mean eigenvalue) costs two ``n x n`` products.  Returns ``(lam, alpha, loo_mse)``
    with ``alpha = (K + n lam I)^-1 y`` for the shift of least leave-one-out error (for the mean squared
    loss, ``lam = c / n``).  ``groups`` (:func:`duplicate_groups` of the window) leaves equal rows out
    together.
    """
    n = y.shape[0]
    s, U = scipy.linalg.eigh(K, check_finite=False)
    s = np.maximum(s, 0.0)
    scale = s.sum() / n
    if not scale > 0:
        scale = 1.0
    shifts = scale * np.asarray(grid)
    Uy = U.T @ y
    F = s[:, None] / (s[:, None] + shifts[None, :])
    resid = y[:, None] - U @ (F * Uy[:, None])
    lev = (U * U) @ F
    if groups is None:
        loo = np.mean((resid / np.maximum(1.0 - lev, 1e-12)) ** 2, axis=0)
    else:
        loo = np.mean(loo_errors(resid, np.maximum(1.0 - lev, 1e-12), groups) ** 2, axis=0)
    k = int(np.argmin(loo))
    alpha = U @ (Uy / (s + shifts[k]))
    return float(shifts[k] / n), alpha, float(loo[k])

#: Largest accepted magnitude of an input or target (the library's one bound, see
#: :data:`onlinemkl._validation.MAX_ABS_VALUE`): its square, summed over millions of rows, stays
#: finite in float64 (standardising a column computes such sums).
MAX_ABS = MAX_ABS_VALUE


def _column(j, names):
    return f"feature {names[j]!r}" if names is not None and j < len(names) else f"column {j}"


def check_batch(X, y, names=None):
    """Raise ``ValueError`` naming the column (and row) of the first value that is NaN, infinite or
    beyond ``MAX_ABS`` in magnitude; the same for the targets."""
    bad = ~np.isfinite(X) | (np.abs(X) > MAX_ABS)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        v = float(X[i, j])
        why = TOO_LARGE if np.isfinite(v) else "is NaN or infinite; impute or drop it before the learner"
        raise ValueError(f"{_column(j, names)} = {shown(v)} in row {i} of the batch {why}")
    bad = ~np.isfinite(y) | (np.abs(y) > MAX_ABS)
    if bad.any():
        i = int(np.argmax(bad))
        v = float(y[i])
        why = TOO_LARGE if np.isfinite(v) else "is NaN or infinite; drop the example"
        raise ValueError(f"target y = {shown(v)} in row {i} of the batch {why}")


class BaseKernels:
    """The base kernels ``kappa_1..kappa_r`` over a support set (internal).

    ``kernels=None``: the factor form, one linear kernel per input column plus a
    constant (base kernel 0 is the constant, base kernel ``j + 1`` reads column
    ``j``).  Otherwise the dense form: the given kernels of
    :mod:`onlinemkl.kernels`, with feature groups resolved by ``lookup``
    (names, river) or as column indices (arrays).
    """

    def __init__(self, kernels, constant=True):
        self.kernels = None if kernels is None else check_kernels(kernels)
        self.constant = bool(constant)
        self.ck = None if self.kernels is None else CompiledKernels(self.kernels)
        self.lookup = None

    def save_ck(self, state: dict, arrays: dict) -> None:
        """Add the compiled kernels' resolved parameters and per-group freeze flags to a saved state."""
        if self.ck is not None:
            state["ck_resolved"] = bool(self.ck._resolved)
            state["ck_frozen"] = [bool(v) for v in self.ck.gfrozen]  # groups whose bandwidths are fixed
            arrays["ck_params"] = self.ck.params.copy()

    def restore_ck(self, state: dict, arrays: dict, learner: str) -> None:
        """Restore what :meth:`save_ck` wrote, checking it against the kernels; the ladder columns
        are derived again from the restored gammas."""
        if self.ck is None:
            return

        def need(ok, rule):
            if not ok:
                raise ValueError(f"inconsistent {learner} state: {rule}")

        frozen, params = state.get("ck_frozen"), arrays.get("ck_params")
        need(isinstance(state.get("ck_resolved"), bool), "ck_resolved is not a bool")
        need(isinstance(frozen, (list, tuple)) and len(frozen) == self.ck.n_groups
             and all(isinstance(v, bool) for v in frozen), f"ck_frozen={frozen!r} is not one bool per kernel group")
        need(isinstance(params, np.ndarray) and params.dtype == np.float64 and params.shape == self.ck.params.shape,
             f"ck_params must be float64 of shape {self.ck.params.shape}")
        need(bool(np.all(np.isfinite(params))), "ck_params holds NaN or infinite values")
        self.ck._resolved = state["ck_resolved"]
        self.ck.gfrozen = np.array(frozen, dtype=bool)
        self.ck.params[:] = params
        self.ck.find_ladders()

    @property
    def mode(self) -> int:
        return _cp.MODE_FACTOR if self.kernels is None else _cp.MODE_DENSE

    def n_base(self, n_features: int) -> int:
        if self.kernels is None:
            return n_features + (1 if self.constant else 0)
        return len(self.kernels)

    def factor(self, X: np.ndarray) -> np.ndarray:
        if self.constant:
            return np.ascontiguousarray(np.hstack([np.ones((X.shape[0], 1)), X]))
        return np.ascontiguousarray(X)

    def order(self, n_features: int) -> np.ndarray:
        """The sequence in which the samplers run through the base kernels (their numbering).

        The river adapters number features by sorted name, so the numbering, and with it every
        draw, does not depend on the order in which features first appeared.
        """
        return np.arange(self.n_base(n_features), dtype=np.int64)

    def _compiled(self, n_features):
        lookup = None
        if self.lookup is not None:
            def lookup(name, _inner=self.lookup):  # names registered after the support set was built read 0
                c = _inner(name)
                return c if c is not None and c < n_features else None
        self.ck.set_columns(resolve_group_columns(self.ck.groups, n_features, lookup))
        return self.ck

    def arrays(self, X: np.ndarray):
        """``(Kb, Fb)`` for the support set ``X`` (the unused one is empty)."""
        if self.kernels is None:
            return np.zeros((0, 0, 0)), self.factor(X)
        return np.ascontiguousarray(block_kernels(X, X, self._compiled(X.shape[1]))), np.zeros((0, 0))

    def cross(self, Xq: np.ndarray, X: np.ndarray):
        """Base kernels between queries and the support set: ``(r, nq, n)`` (dense form only)."""
        return block_kernels(Xq, X, self._compiled(X.shape[1]))


def direct_solve(A, y):
    """``A^-1 y`` for a symmetric positive (semi-)definite ``A``: Cholesky, else least squares.

    The factorisation and the triangular solves go straight to LAPACK (``cho_factor`` /
    ``cho_solve``): ``scipy.linalg.solve`` would add a condition-number estimate whose only use is a
    warning, about a third of the cost of a solve at a few hundred rows.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            x = scipy.linalg.cho_solve(scipy.linalg.cho_factor(A, lower=True, check_finite=False), y,
                                       check_finite=False)
        if np.all(np.isfinite(x)):
            return x
    except (np.linalg.LinAlgError, ValueError):
        pass
    return np.linalg.lstsq(A, y, rcond=None)[0]


def fit_width(X, n_features):
    """Pad with zero columns, or drop columns the model has not seen (their weight is zero)."""
    if X.shape[1] < n_features:
        return np.hstack([X, np.zeros((X.shape[0], n_features - X.shape[1]))])
    return np.ascontiguousarray(X[:, :n_features])


class WindowEngine(EngineBase):
    """A mini-batch engine over the window of the ``budget`` most recent examples (``Xw``, ``yw``).

    Protocol (:mod:`onlinemkl.engine`): ``learn_many(rows, targets)`` appends a
    batch to the window and runs the solver on it; ``predict_many(rows)``;
    ``get_state``/``set_state``.  :meth:`set_lookup` (feature names -> columns,
    for kernel groups of names) is called by the face that owns the feature map.
    """

    #: The arrays of the state, beside the base kernels' (subclasses).
    _ARRAYS: tuple = ()
    _LEARNER = ""

    #: Feature names by column (set by a face that has them), for error messages.
    column_names = None

    def learn_many(self, X: np.ndarray, y: np.ndarray):
        """Append a batch to the window and run the solver on it, all or nothing.

        Values that are NaN, infinite or whose squares overflow are rejected before anything
        changes.  Should the solve still produce non-finite numbers (finite inputs whose kernel
        values overflow, e.g. large magnitudes raised to a high degree), the whole state is put
        back as it was and a ``ValueError`` names the column of largest magnitude.
        """
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        check_batch(X, y, self.column_names)
        saved = self.get_state()
        saved = (dict(saved[0]), {k: v.copy() for k, v in saved[1].items()})
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"), \
                    blas_limit(self.Xw.shape[0] + X.shape[0]):
                self._learn_batch(X, y)
            ok = all(bool(np.all(np.isfinite(getattr(self, name)))) for name in self._ARRAYS)
        except ValueError:
            self.set_state(*saved, strict=False)
            raise
        except (np.linalg.LinAlgError, FloatingPointError, OverflowError, ZeroDivisionError):
            ok = False
        if not ok:
            self.set_state(*saved, strict=False)
            j = int(np.argmax(np.abs(X).max(axis=0))) if X.size else 0
            raise ValueError(f"the batch makes the kernel values overflow (non-finite numbers); "
                             f"{_column(j, self.column_names)} has the largest magnitude ({np.abs(X[:, j]).max():g}): "
                             "rescale it (e.g. StandardScaler) or lower the degree. The model is unchanged.")

    def _check_kernel_range(self, Z, degree):
        """Raise ``ValueError`` naming the column when the inputs ``Z`` entering the linear base kernels
        (the factor form) make degree-``degree`` kernel values, summed over the window, overflow float64
        (any entry beyond ``(1e300 / (n r^degree))^(1 / (2 degree))``)."""
        if self.base.kernels is not None or not Z.size:
            return
        n, r = Z.shape[0], Z.shape[1] + 1
        limit = (1e300 / (n * float(r) ** degree)) ** (0.5 / degree)
        big = np.abs(Z).max(axis=0)
        if big.max() > limit:
            j = int(np.argmax(big))
            raise ValueError(f"{_column(j, self.column_names)} reaches {big[j]:g} in magnitude: its degree-{degree} "
                             f"kernel values overflow float64 (the limit is {limit:.3g}); rescale it "
                             "(e.g. StandardScaler) or lower the degree. The model is unchanged.")

    def _learn_batch(self, X, y):  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def predict_many(self, X: np.ndarray) -> np.ndarray:
        """Predictions of many (validated) rows in the target's units; 0 before the first batch.

        Every prediction is kept within :meth:`target_bounds`, the window's target range widened by
        the ``prediction_margin`` rule times its width on each side: a fit that would extrapolate far beyond
        the targets it was fitted on (a kernel that interpolates its window, a tiny ridge) predicts
        at the edge of what the window supports instead (a NaN, which no finite state produces,
        reads the window's mean)."""
        if self.Xw.shape[0] == 0:
            return np.zeros(X.shape[0])
        with blas_limit(self.Xw.shape[0]):
            out = self._predict(X)
        lo, hi = self.target_bounds()
        return np.clip(np.nan_to_num(out, nan=float(self.yw.mean()), posinf=hi, neginf=lo), lo, hi)

    def target_bounds(self):
        """``(lo, hi)``: the window's target range ``[min, max]`` widened by the ``prediction_margin`` rule
        (:data:`PREDICTION_MARGIN`) times its width on each side (a function of the window, which the state
        holds, and of the recorded rule)."""
        y_min, y_max = float(self.yw.min()), float(self.yw.max())
        width = y_max - y_min
        return y_min - self.margin * width, y_max + self.margin * width

    def _predict(self, X):  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def _init_window(self, kernels, constant, budget, standardize=False, lam=0.1, rules=None):
        self.rules = self._resolved("rules", default_rules() if rules is None else check_rules(rules))
        self.margin = self.rules["prediction_margin"]
        self.near_copy = self.rules["near_copy"]
        self.ridge_grid = np.logspace(*self.rules["ridge_grid"])
        self.local_ridge_grid = np.logspace(*self.rules["local_ridge_grid"])
        self.base = BaseKernels(kernels, constant)
        self.budget = budget
        self.standardize = bool(standardize)
        self.lam_auto = lam == "auto"
        self.lam = 0.0 if self.lam_auto else float(lam)  # the ridge in use ('auto': chosen per batch, 0 before)
        self.n_features = 0
        self.Xw = np.zeros((0, 0))
        self.yw = np.zeros(0)

    @property
    def n_support(self) -> int:
        return int(self.Xw.shape[0])

    def scaling(self):
        """``(x_mean, x_scale, y_mean, y_scale)`` of the window: the kernels see ``(x - x_mean) / x_scale``
        and the solvers ``(y - y_mean) / y_scale``.  With ``standardize`` these are the window's means and
        standard deviations (scale 1 for a constant column); without, only the target is centred.
        A function of the window, which the state holds, so a restored model scales as the original."""
        nf = self.Xw.shape[1]
        if self.Xw.shape[0] == 0:
            return np.zeros(nf), np.ones(nf), 0.0, 1.0
        ym = float(self.yw.mean())
        if not self.standardize:
            return np.zeros(nf), np.ones(nf), ym, 1.0
        xm = self.Xw.mean(axis=0)
        xs = self.Xw.std(axis=0)
        xs[~(xs > 1e-12 * np.maximum(np.abs(xm), 1e-300))] = 1.0
        ys = float(self.yw.std())
        if not ys > 1e-12 * max(abs(ym), 1e-300):
            ys = 1.0
        return xm, xs, ym, ys

    def scaled_window(self):
        """``(Z, yc, scaling)``: the window's inputs and targets as the solvers see them."""
        sc = self.scaling()
        return (self.Xw - sc[0]) / sc[1], (self.yw - sc[2]) / sc[3], sc

    def scaled_queries(self, X, sc):
        """Query rows as the kernels see them (width fitted to the model's features); with
        ``standardize``, each column clipped to the window's range, so that a polynomial kernel does
        not extrapolate a cubic far beyond the data it was fitted on (a drifting stream's next
        example often lies outside the window)."""
        Z = (fit_width(X, self.n_features) - sc[0]) / sc[1]
        if self.standardize:
            Z = np.clip(Z, (self.Xw.min(axis=0) - sc[0]) / sc[1], (self.Xw.max(axis=0) - sc[0]) / sc[1])
        return np.ascontiguousarray(Z)

    def set_lookup(self, lookup) -> None:
        self.base.lookup = lookup

    def check_columns(self, n_features: int) -> None:
        """Raise ``ValueError`` when the parameters do not fit ``n_features`` columns (kernel groups
        that name other columns), before anything is learnt."""
        if self.base.kernels is not None:
            resolve_group_columns(self.base.ck.groups, n_features)

    def _widen(self, n_features: int) -> None:
        """Zero columns for new features (stored rows read 0 there)."""
        if self.Xw.shape[0]:
            self.Xw = np.hstack([self.Xw, np.zeros((self.Xw.shape[0], n_features - self.Xw.shape[1]))])
        else:
            self.Xw = np.zeros((0, n_features))
        self.n_features = n_features

    def _remap_window(self, mapping, width) -> None:
        """New feature columns were inserted: old column ``c`` is now ``mapping[c]`` of ``width``."""
        Xw = np.zeros((self.Xw.shape[0], width))
        Xw[:, mapping[: self.Xw.shape[1]]] = self.Xw
        self.Xw, self.n_features = Xw, width

    def _append(self, X, y, *carried):
        """Append a batch to the window (padded to the features), dropping the oldest rows beyond
        the budget; ``carried`` per-row arrays of the window are cut the same way."""
        self.set_features(X.shape[1])
        if X.shape[1] < self.n_features:
            X = np.hstack([X, np.zeros((X.shape[0], self.n_features - X.shape[1]))])
        Xw = np.vstack([self.Xw, X])
        yw = np.concatenate([self.yw, y])
        if self.budget is not None and Xw.shape[0] > self.budget:
            Xw, yw = Xw[-self.budget:], yw[-self.budget:]
            carried = tuple(c[-self.budget:] for c in carried)
        self.Xw, self.yw = np.ascontiguousarray(Xw), np.ascontiguousarray(yw)
        return carried

    def _window_arrays(self) -> dict:
        arrays = {name: getattr(self, name).copy() for name in self._ARRAYS}
        return arrays

    def _restore_window(self, params: dict, arrays: dict):
        """Check the window's arrays and restore them; returns ``need`` for the subclass's rules."""
        need = state_rule(self._LEARNER)
        for name in self._ARRAYS:
            arr, cur = arrays.get(name), getattr(self, name)
            need(isinstance(arr, np.ndarray), f"the array {name!r} is missing")
            need(arr.dtype == cur.dtype and arr.ndim == cur.ndim,
                 f"array {name!r} is {arr.dtype}, {arr.ndim}-D; expected {cur.dtype}, {cur.ndim}-D")
        Xw, yw = arrays["Xw"], arrays["yw"]
        n_features = int(params["n_features"])
        need(Xw.ndim == 2 and Xw.shape[1] == n_features, f"Xw has shape {Xw.shape} for {n_features} features")
        n = Xw.shape[0]
        need(yw.shape == (n,), f"yw has shape {yw.shape} for {n} rows")
        need(self.budget is None or n <= self.budget, f"{n} rows exceed budget={self.budget}")
        return need

    def _set_window(self, params: dict, arrays: dict) -> None:
        for name in self._ARRAYS:
            setattr(self, name, np.ascontiguousarray(arrays[name]))
        self.n_features = int(params["n_features"])
        self.base.restore_ck(params, arrays, self._LEARNER)
