"""Per-feature standardisation of a per-example learner's inputs (the ``scale`` parameter).

The default kernels (:func:`onlinemkl.kernels.default_kernels`: an RBF of bandwidth relative to
the number of features, normalised linear and quadratic kernels) are meant for standardised
inputs: on raw inputs of large magnitude (salaries of 1e5 beside ages of 50) every RBF value
between distinct examples is 0 and the linear kernels see one feature only.  :class:`InputScaling`
is the learner's own answer, owned by the face that turns examples into rows (beside its feature
map) and saved with the model:

* ``scale='auto'`` (the default): the inputs are used as they come while they look standardised.
  The ``n``-th learnt example shows that they are not when a value's magnitude is above
  ``max(TRIGGER, 2 sqrt(n))``, and every feature is standardised from then on, as a
  ``StandardScaler`` in front would do.  No stream standardised by running statistics reaches
  that bound: by Samuelson's inequality a value's distance from a mean that includes it is at most
  ``sqrt(n - 1)`` standard deviations (the factor 2 covers a scaler that has seen a mini-batch
  more than the learner); nor does a set standardised by its own statistics in ``fit``.  On such
  inputs nothing fires and the rows reach the learner untouched, bit for bit.  (Inputs scaled by
  statistics fitted elsewhere can hold larger values: with heavy tails 'auto' may switch on.)
* ``scale=True``: every feature is standardised from its first learnt value.
* ``scale=False``: never (the inputs are the user's business, e.g. a ``StandardScaler`` in front).

A standardised feature's mean and standard deviation are estimated (Welford) over its first
:data:`WARMUP` learnt values, then frozen: from then on every query and every example stored
meet the kernels in the same units (a running estimate would move the units under the stored
examples for ever); the examples stored during the warm-up are in the units of their time.  A
learnt value more than :data:`RESTART` standard deviations from a frozen mean (the feature
changed units, or a concept switch moved another feature's values into it) starts a new estimate
at that value.  A feature of zero spread is centred only.  What the learner sees of a
standardised feature is clipped to ``+-LIMIT`` (a query far beyond the values learnt would make
the kernels extrapolate: an unnormalised linear kernel in proportion); before the switch nothing
is clipped.  Prediction never changes the statistics.

Missing features read 0 in the raw units (as without scaling): the statistics are of the rows
the learner sees, where an absent feature is a 0.
"""

from __future__ import annotations

import math

import numpy as np

from ._params import Param, Rule

__all__ = ["InputScaling", "check_scale", "TRIGGER", "LIMIT", "RESTART", "WARMUP"]

#: With ``scale='auto'``, the ``n``-th learnt example switches standardisation on if a value's
#: magnitude is above ``max(TRIGGER, 2 sqrt(n))`` (the module docstring says why no standardised
#: stream reaches it); the feature maps flag values above ``TRIGGER`` on their way in.
TRIGGER = 10.0

#: What the learner sees of a standardised feature is clipped to ``+-LIMIT`` standard deviations.
LIMIT = 10.0

#: A learnt value more than this many standard deviations from a frozen mean restarts the estimate.
RESTART = 10.0

#: Learnt values over which a feature's mean and standard deviation are estimated before they are frozen.
WARMUP = 50

_KEYS = ("scaling.count", "scaling.mean", "scaling.m2")


def check_scale(value):
    """The ``scale`` parameter: ``'auto'``, True or False (``ValueError`` naming the parameter otherwise)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value == "auto":
        return value
    raise ValueError(f"scale={value!r}: choose 'auto' (standardise every feature once a learnt value shows the "
                     "inputs are not standardised), True (standardise every feature) or False (use the inputs as "
                     "they come)")


class InputScaling:
    """The standardisation statistics of one learner's input columns (see the module docstring).

    ``count``, ``mean`` and ``m2`` (Welford's sum of squared deviations) per column; a column
    with count 0 is used as it comes.  The columns grow with the rows learnt; a query row wider
    than the statistics passes its extra columns through.
    """

    __slots__ = ("mode", "seen", "warmup", "count", "mean", "m2", "shift", "scale", "live")

    def __init__(self, mode="auto"):
        self.mode = check_scale(mode)
        self.seen = 0
        self.warmup = WARMUP  # saved with the statistics: a model file keeps its warm-up whatever the default
        self.count = np.zeros(0, dtype=np.int64)
        self.mean = np.zeros(0)
        self.m2 = np.zeros(0)
        self._derive()

    def _derive(self) -> None:
        """``shift`` and ``scale`` (the transform ``(x - shift) / scale``) from the statistics."""
        on = self.count > 0
        self.live = bool(on.any())
        self.shift = np.where(on, self.mean, 0.0)
        sd = np.sqrt(np.divide(self.m2, self.count, out=np.zeros_like(self.m2), where=on))
        self.scale = np.where(on & (sd > 0), sd, 1.0)

    def _grow(self, width: int) -> None:
        n = self.count.shape[0]
        if width > n:
            self.count = np.concatenate([self.count, np.zeros(width - n, dtype=np.int64)])
            self.mean = np.concatenate([self.mean, np.zeros(width - n)])
            self.m2 = np.concatenate([self.m2, np.zeros(width - n)])
            self._derive()

    # -- the transform ------------------------------------------------------------------------

    def rows(self, X: np.ndarray) -> np.ndarray:
        """Rows (1-D or 2-D) as the learner sees them: the standardised columns transformed and clipped
        to ``+-LIMIT``; ``X`` itself while no feature is standardised."""
        if not self.live:
            return X
        n = min(X.shape[-1], self.count.shape[0])
        out = np.array(X, dtype=np.float64, copy=True)
        on = self.count[:n] > 0
        z = np.clip((out[..., :n] - self.shift[:n]) / self.scale[:n], -LIMIT, LIMIT)
        out[..., :n] = np.where(on, z, out[..., :n])
        return out

    def _switch(self, x: np.ndarray) -> bool:
        """Whether the learnt row ``x`` (the ``seen``-th) switches 'auto' standardisation on."""
        return float(np.max(np.abs(x), initial=0.0)) > max(TRIGGER, 2.0 * math.sqrt(self.seen))

    def learn_row(self, x: np.ndarray, large: bool = True) -> np.ndarray:
        """Update the statistics with the row ``x`` being learnt and return it as the learner sees it.

        ``large`` False promises that no value of ``x`` exceeds :data:`TRIGGER` in magnitude (the
        feature map's check): with 'auto' and nothing standardised yet, ``x`` itself comes back at once.
        """
        mode = self.mode
        if mode is False:
            return x
        self.seen += 1
        if not self.live and mode == "auto" and (not large or not self._switch(x)):
            return x
        self._grow(x.shape[0])
        count = self.count[:x.shape[0]]
        start = count == 0
        frozen = count >= self.warmup
        if frozen.any():
            z = (x - self.shift[:x.shape[0]]) / self.scale[:x.shape[0]]
            start |= frozen & (np.abs(z) > RESTART)
        warm = (count > 0) & ~frozen
        if start.any() or warm.any():
            idx = np.flatnonzero(start | warm)
            c = np.where(start[idx], 0, count[idx]) + 1
            old = np.where(start[idx], 0.0, self.mean[idx])
            m2 = np.where(start[idx], 0.0, self.m2[idx])
            v = x[idx]
            d = v - old
            mean = old + d / c
            self.m2[idx] = m2 + d * (v - mean)
            self.mean[idx] = mean
            self.count[idx] = c
            self._derive()
        return self.rows(x)

    def learn_rows(self, X: np.ndarray) -> np.ndarray:
        """:meth:`learn_row` on each row of ``X`` in order (a mini-batch learnt as a stream of its rows)."""
        if self.mode is False:
            return X
        if not self.live and self.mode == "auto" and not (X.size and float(np.max(np.abs(X))) > TRIGGER):
            self.seen += X.shape[0]
            return X
        return np.array([self.learn_row(X[i]) for i in range(X.shape[0])]).reshape(X.shape)

    def fit_rows(self, X: np.ndarray) -> np.ndarray:
        """Start from the exact statistics of ``X`` (``fit``: every row known at once) and return ``X``
        as the learner sees it ('auto': standardised if a value is above ``max(TRIGGER, 2 sqrt(n))``
        for ``n`` rows, which a set standardised by its own statistics cannot hold)."""
        n, d = X.shape
        self.seen = n
        self.count = np.zeros(d, dtype=np.int64)
        self.mean = np.zeros(d)
        self.m2 = np.zeros(d)
        if n and (self.mode is True or (self.mode == "auto" and self._switch(X))):
            self.count[:] = n
            self.mean[:] = X.mean(axis=0)
            self.m2[:] = ((X - self.mean) ** 2).sum(axis=0)
        self._derive()
        return self.rows(X)

    # -- state --------------------------------------------------------------------------------

    def state(self) -> tuple[dict, dict]:
        """``(state, arrays)`` for a model file: the examples learnt and the statistics
        (:meth:`restore` reads them back exactly)."""
        return ({"seen": int(self.seen), "warmup": int(self.warmup)},
                {"scaling.count": self.count, "scaling.mean": self.mean, "scaling.m2": self.m2})

    def restore(self, state, arrays: dict, n_features: int) -> None:
        """Set what :meth:`state` gave, checked (``ValueError`` naming the rule)."""
        seen, warmup = (state.get(k) if isinstance(state, dict) else None for k in ("seen", "warmup"))
        for name, value, low in (("count of examples learnt", seen, 0), ("warm-up", warmup, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ValueError(f"the input scaling's {name} must be an integer >= {low}; got {value!r}")
        missing = [k for k in _KEYS if k not in arrays]
        if missing:
            raise ValueError(f"the input scaling's arrays {missing} are missing")
        count, mean, m2 = (arrays[k] for k in _KEYS)
        for name, a, kind in (("count", count, "i"), ("mean", mean, "f"), ("m2", m2, "f")):
            if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype.kind != kind:
                raise ValueError(f"scaling.{name} must be a 1-D {'int64' if kind == 'i' else 'float64'} array")
        if not (count.shape == mean.shape == m2.shape) or count.shape[0] > max(n_features, 0):
            raise ValueError(f"the input scaling's arrays must have one entry per feature (at most {n_features}); "
                             f"got shapes {count.shape}, {mean.shape}, {m2.shape}")
        if np.any(count < 0) or not np.all(np.isfinite(mean)) or not np.all(np.isfinite(m2)) or np.any(m2 < 0):
            raise ValueError("the input scaling's statistics must be non-negative counts, finite means and "
                             "non-negative finite sums of squares")
        self.seen, self.warmup = seen, warmup
        self.count = np.array(count, dtype=np.int64)
        self.mean = np.array(mean, dtype=np.float64)
        self.m2 = np.array(m2, dtype=np.float64)
        self._derive()

    def by_name(self, names) -> dict:
        """``{feature name: (count, mean, m2)}`` of the standardised features (to compare models)."""
        return {names[j]: (int(self.count[j]), float(self.mean[j]), float(self.m2[j]))
                for j in np.flatnonzero(self.count > 0) if j < len(names)}


def scaling_of(estimator):
    """A fresh :class:`InputScaling` of ``estimator``'s ``scale`` parameter (validated); None for
    ``scale=False`` and for the learners without the parameter (the mini-batch ones standardise
    every window themselves)."""
    scale = getattr(estimator, "scale", False)
    if scale is False:
        return None
    return InputScaling(scale)


def _check_scale_param(name, value):
    return check_scale(value)


#: ``scale``, a row of the per-example learners' parameter tables (OBSCURE, proximal MKL).
SCALE_PARAM = Param(
    "scale", Rule("{'auto', True, False}", _check_scale_param), "auto",
    "The learner's own standardisation of its inputs, for raw features of any units (the default\n"
    "kernels are meant for standardised ones).  'auto': the inputs are used as they come until a learnt\n"
    "value shows they are not standardised (magnitude above ``max(10, 2 sqrt(n))`` at the n-th example,\n"
    "which no standardised stream reaches), then every feature is standardised (mean and deviation\n"
    "estimated over its first 50 values, then frozen; a batch ``fit`` uses the whole set's);\n"
    "standardised inputs reach the learner bit for bit as they come.  True: always; False: never.  The\n"
    "statistics are saved with the model.")
