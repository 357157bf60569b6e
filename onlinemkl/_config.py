"""Numba options, in one place (DESIGN.md, Numba convention 1).

Every compiled function in :mod:`onlinemkl._core` is decorated with one of the
decorators below; no module passes Numba options of its own.

* ``njit`` -- serial, nopython, cached on disk.  ``error_model="numpy"`` lets a
  division by zero produce ``inf``/``nan`` instead of raising, so the hot loops
  carry no hidden exception checks; every division that can meet a zero is
  guarded explicitly in the code.  No ``fastmath``: the mirror map, the
  proximal operators and the step sizes use ``inf``, zero-norm guards and
  q-th powers, which fast-math may rewrite.  Where speed needs SIMD lanes or
  fused multiply-adds (the dot products and the exponential of the kernel
  passes), ``onlinemkl._core.kernels`` writes them out explicitly (``fma``,
  ``_dot8``: LLVM vector code with a fixed lane order), so the result is the
  same in every path and on every machine, which reassociation would not give.
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
#: Measured with ``benchmarks/bench_predict.py`` (results/predict_parallel.md) on the 2-core
#: build machine, twice: when the machine is otherwise idle the parallel ``learn`` path wins
#: from ~300 rows on (1.3-1.4x at 10^3 rows, 1.6-1.75x from 10^5 rows, d = 16 and 128); when
#: the other core is busy, waking the worker thread costs milliseconds and the parallel path
#: is 10-30x SLOWER below ~3x10^4 rows and 0.6-1.1x at 10^5-3x10^5 rows.  The threshold
#: bounds the downside: from 10^5 rows the gain on an idle machine is ~1.6x and the loss on
#: a busy one at most ~1.6x.  Lower it on a dedicated multi-core machine.
PARALLEL_MIN_ROWS = 100_000


def njit(func):
    """Serial, cached nopython compilation (the default for ``_core``)."""
    return numba.njit(**SERIAL_OPTIONS)(func)


def njit_inline(func):
    """:func:`njit` inlined into every caller at Numba's IR level (``inline='always'``).

    For small helpers that take arrays and sit inside per-row loops: a call that is not
    inlined costs two atomic reference-count operations per array argument (~100 ns for a
    handful of arrays, measured on the per-row kernel quantities), which Numba cannot prune
    across a call.
    """
    return numba.njit(inline="always", **SERIAL_OPTIONS)(func)


def njit_parallel(func):
    """Parallel (``prange``) nopython compilation; not cached."""
    return numba.njit(**PARALLEL_OPTIONS)(func)


#: Fast-math flags that are safe for a pure accumulation (a dot product, a sum of squares):
#: reassociation lets LLVM run the sum in SIMD lanes, contraction fuses multiplies and adds.
#: No ``nnan``/``ninf``/``nsz``: an inf or NaN in the data still propagates, and no guard that
#: compares against inf, NaN or a signed zero may sit in such a function.
SUM_FLAGS = frozenset({"reassoc", "contract"})


def njit_sum(func):
    """:func:`njit` with :data:`SUM_FLAGS`: for small accumulation loops that must vectorise.

    Results agree with the plain left-to-right sum within the usual bound for a reordered
    sum, ``n * eps * sum |a_k b_k|``; the tests hold every path to that tolerance.
    """
    return numba.njit(**{**SERIAL_OPTIONS, "fastmath": set(SUM_FLAGS)})(func)


def njit_contract(func):
    """:func:`njit` that may fuse ``a * b + c`` into one fused multiply-add (no reordering).

    For polynomial evaluations (the exponential's Horner chain): half the instructions, one
    rounding instead of two; the result is within an ulp of the unfused one.
    """
    return numba.njit(**{**SERIAL_OPTIONS, "fastmath": {"contract"}})(func)
