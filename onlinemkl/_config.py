"""Numba options, in one place (DESIGN.md, Numba convention 1).

Every compiled function in :mod:`onlinemkl._core` is decorated with one of the
decorators below; no module passes Numba options of its own.

* ``njit`` -- serial, nopython, cached on disk.  ``error_model="numpy"`` lets a
  division by zero produce ``inf``/``nan`` instead of raising, so the hot loops
  carry no hidden exception checks; every division that can meet a zero is
  guarded explicitly in the code.  No ``fastmath``: the mirror map, the
  proximal operators and the step sizes use ``inf``, zero-norm guards and
  q-th powers, which fast-math may rewrite.
* ``njit_parallel`` -- the same, with ``parallel=True`` for ``prange`` loops
  over independent outputs.  Never cached (Numba's cache of parallel functions
  is fragile across processes and thread layers).

Set ``ONLINEMKL_NO_CACHE=1`` to turn the on-disk cache off (e.g. on a read-only
install); ``NUMBA_CACHE_DIR`` chooses where it lives.
"""

from __future__ import annotations

import os

import numba

#: True unless the environment asks for no on-disk cache.
CACHE = os.environ.get("ONLINEMKL_NO_CACHE", "") not in ("1", "true", "yes")

SERIAL_OPTIONS = dict(nogil=True, cache=CACHE, fastmath=False, error_model="numpy")
PARALLEL_OPTIONS = dict(nogil=True, cache=False, fastmath=False, error_model="numpy", parallel=True)

#: Buffers with at least this many stored rows use the parallel kernel-row pass.
#: Measured with ``benchmarks/bench_predict.py`` (results/predict_parallel.md) on the
#: 2-core shared build machine: waking the worker threads costs milliseconds there, and
#: with two cores sharing one memory bus the parallel learn path never won at every
#: larger size for d = 128 (0.8x at 10^5 and 3x10^5 rows) and only from ~10^5 rows in
#: median (not in best case) for d = 16.  So the parallel pass is kept for very large
#: buffers only; re-measure on a machine with more cores and lower thread wake-up
#: latency and lower this.
PARALLEL_MIN_ROWS = 1_000_000


def njit(func):
    """Serial, cached nopython compilation (the default for ``_core``)."""
    return numba.njit(**SERIAL_OPTIONS)(func)


def njit_parallel(func):
    """Parallel (``prange``) nopython compilation; not cached."""
    return numba.njit(**PARALLEL_OPTIONS)(func)
