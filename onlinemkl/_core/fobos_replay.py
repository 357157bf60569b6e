"""Replay's steps of online proximal MKL in one compiled call (:mod:`onlinemkl.engines._replay`).

After a step with a positive loss the learner takes a few more steps on examples drawn from
its reservoir of past ones.  One call per replayed step would pay Python's call and Numba's
argument dispatch once per step, a cost that on a small buffer is larger than the step; here
the steps run in one loop over :func:`~onlinemkl._core.fobos.fobos_learn`, with the same
arguments the one-step calls would have had, so the model is the same bit for bit.
"""

from __future__ import annotations

import numpy as np

from .._config import njit
from .fobos import fobos_learn


@njit
def fobos_replay(order, X, labels, buf, spec, xg, st, scratch, merge, eviction):
    """Steps on the rows ``X[order[t]]`` with ``labels = (y_cls, y_val)``: labels ``y_cls[t]`` /
    targets ``y_val[t]``, in order.

    ``merge``: the reservoir's row hints flattened, ``[slot, stamp]`` per row of ``X`` (see
    :func:`~onlinemkl._core.fobos.fobos_learn`'s ``merge``), updated in place where a step stores
    or adds to a row; any other length (regression: an empty array) passes no hint.  ``buf``,
    ``spec``, ``xg``, ``st``, ``scratch`` as :func:`~onlinemkl._core.fobos.fobos_learn` takes them
    (plain tuples), and ``eviction``; the caller guarantees capacity for ``len(order)`` more
    rows.  Returns the number of steps that updated the model.
    """
    y_cls, y_val = labels
    hints = merge.shape[0] == 2 * X.shape[0]
    none = np.full(2, -1, dtype=np.int64)  # fobos_learn's "stored nowhere"
    n_updates = 0
    for t in range(order.shape[0]):
        i = order[t]
        hint = merge[2 * i:2 * i + 2] if hints else none
        _, _, updated, slot = fobos_learn(X[i], y_cls[t], y_val[t], buf, spec, xg, st, scratch, hint, eviction)
        if updated:
            n_updates += 1
            if hints and slot >= 0:  # (-1: projected onto a row, the hint still holds or names none)
                merge[2 * i] = slot
                merge[2 * i + 1] = buf[5][slot]  # the time stamp of the row (ProxRows.tstamp)
    return n_updates
