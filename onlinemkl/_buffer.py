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

_cb = lazy_module("onlinemkl._core.buffer")

ARRAY_FIELDS = ("S", "ssq", "sdiag", "ypos", "yneg", "coef", "tstamp")
#: The arrays as they are held: the stored diagonals kernel by kernel (``sdiag_t[F, cap]``).
HELD_FIELDS = ("S", "ssq", "sdiag_t", "ypos", "yneg", "coef", "tstamp")


#: A full buffer's eviction policies (the ``eviction`` parameter) and their codes in compiled code.
EVICTION = {"oldest": _cb.EVICT_OLDEST, "least_impact": _cb.EVICT_LEAST_IMPACT}


class SupportBuffer:
    """Stored examples with their labels, coefficients and cached norms.

    The stored diagonals are held kernel by kernel, ``sdiag_t[F, cap]`` (what compiled code
    takes as ``sdiag``): the kernel pass normalises a block of rows with a contiguous row of it,
    a loop that vectorises, where a column of ``(cap, F)`` would be read with a stride.
    ``sdiag`` is the row-major ``(cap, F)`` view of the same numbers, the layout of the state
    (files, pickles, merges); assigning to it stores the transpose.
    """

    def __init__(self, n_kernels: int, n_groups: int, n_coef: int, budget: int | None = None,
                 capacity: int = 16, n_features: int = 0):
        self.budget = budget
        cap = capacity if budget is None else max(1, min(capacity, budget))
        dcap = max(1, n_features)
        self.S = np.zeros((cap, dcap))
        self.ssq = np.zeros((cap, n_groups))
        self.sdiag_t = np.zeros((n_kernels, cap))
        self.ypos = np.zeros(cap, dtype=np.int64)
        self.yneg = np.full(cap, -1, dtype=np.int64)
        self.coef = np.zeros((cap, n_coef))
        self.tstamp = np.zeros(cap, dtype=np.int64)

    @property
    def sdiag(self) -> np.ndarray:
        """The stored diagonals row by row, ``(cap, F)``: a view of :attr:`sdiag_t`."""
        return self.sdiag_t.T

    @sdiag.setter
    def sdiag(self, value) -> None:
        self.sdiag_t = np.ascontiguousarray(np.asarray(value, dtype=float).T)

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
            if name == "sdiag":
                arr = np.zeros((self.sdiag_t.shape[0], new))
                arr[:, :cap] = self.sdiag_t
                self.sdiag_t = arr
                continue
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
        """The arrays compiled code takes (``sdiag`` as :attr:`sdiag_t`)."""
        return tuple(getattr(self, name) for name in HELD_FIELDS)

    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in HELD_FIELDS)
