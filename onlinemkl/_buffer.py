"""The support buffer's storage: struct-of-arrays with capacity (Python side).

The compiled code (:mod:`onlinemkl._core.buffer`) reads and writes these
arrays in place; this class only allocates and grows them.  Rows grow by
doubling (capped at the budget, so a model with a budget never holds more than
``budget`` rows: memory is flat on an endless stream); columns grow by doubling
when a stream shows new features (old rows read 0 there).

Without a budget the buffer grows with the number of updates (margin errors),
``O(n_updates * d)`` floats.
"""

from __future__ import annotations

import numpy as np

from ._lazy import lazy_module

_cb = lazy_module("buffer")

ARRAY_FIELDS = ("S", "ssq", "sdiag", "ypos", "yneg", "coef", "tstamp")


#: A full buffer's eviction policies (the ``eviction`` parameter) and their codes in compiled code.
EVICTION = {"oldest": _cb.EVICT_OLDEST, "least_impact": _cb.EVICT_LEAST_IMPACT}


class SupportBuffer:
    """Stored examples with their labels, coefficients and cached norms."""

    def __init__(self, n_kernels: int, n_groups: int, n_coef: int, budget: int | None = None,
                 capacity: int = 16, n_features: int = 0):
        self.budget = budget
        cap = capacity if budget is None else max(1, min(capacity, budget))
        dcap = max(1, n_features)
        self.S = np.zeros((cap, dcap))
        self.ssq = np.zeros((cap, n_groups))
        self.sdiag = np.zeros((cap, n_kernels))
        self.ypos = np.zeros(cap, dtype=np.int64)
        self.yneg = np.full(cap, -1, dtype=np.int64)
        self.coef = np.zeros((cap, n_coef))
        self.tstamp = np.zeros(cap, dtype=np.int64)

    @property
    def capacity(self) -> int:
        return self.S.shape[0]

    @property
    def n_features_capacity(self) -> int:
        return self.S.shape[1]

    def has_room(self, n_stored: int) -> bool:
        """True unless a budget is set and ``n_stored`` examples already fill it."""
        return self.budget is None or n_stored < self.budget

    def ensure_rows(self, n_rows: int) -> None:
        """Room for ``n_rows`` stored examples (doubling; never beyond the budget)."""
        if self.budget is not None:
            n_rows = min(n_rows, self.budget)
        cap = self.capacity
        if n_rows <= cap:
            return
        new = max(n_rows, 2 * cap)
        if self.budget is not None:
            new = max(n_rows, min(new, self.budget))
        for name in ARRAY_FIELDS:
            old = getattr(self, name)
            arr = np.zeros((new,) + old.shape[1:], dtype=old.dtype)
            if name == "yneg":
                arr[:] = -1
            arr[:cap] = old
            setattr(self, name, arr)

    def ensure_columns(self, n_features: int) -> None:
        """Room for ``n_features`` columns; new columns are 0 for every stored row."""
        dcap = self.n_features_capacity
        if n_features <= dcap:
            return
        new = max(n_features, 2 * dcap)
        S = np.zeros((self.capacity, new))
        S[:, :dcap] = self.S
        self.S = S

    def arrays(self):
        return tuple(getattr(self, name) for name in ARRAY_FIELDS)

    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in ARRAY_FIELDS)
