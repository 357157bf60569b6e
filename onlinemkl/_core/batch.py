"""Kernel matrices and weighted kernel sums for many queries at once (the batch path).

``fit`` precomputes a training set's kernel matrices, and batch prediction sums the weighted
kernels of many queries against the buffer.  Both start from a matrix of dot products per
feature group (a BLAS product, made by :mod:`onlinemkl.kernels`) and then apply each kernel's
formula row by row with :func:`~onlinemkl._core.kernels.block_values`, the same loops as the
per-example pass.
"""

from __future__ import annotations

import numpy as np

from typing import NamedTuple

from .._config import njit
from .kernels import BSPLINE, P_NORMALIZE, RBF, block_values, kernel_value, ladder_base, stored_diag
from .state import Work


class GroupProducts(NamedTuple):
    """One feature group's products between queries ``x_a`` and stored rows ``z_i``: the dot
    products ``dots[a, i]``, the squared norms ``xsq[a]``, ``zsq[i]``, and where the group needs
    them the L1 distances ``l1[a, i]`` and directly summed squared distances ``sqd[a, i]``
    (``(1, 1)`` placeholders otherwise)."""

    dots: np.ndarray
    xsq: np.ndarray
    zsq: np.ndarray
    l1: np.ndarray
    sqd: np.ndarray


@njit
def values_from_products(prod, use_l1, use_sqd, js, spec, xdiag, zdiag, symmetric, out):
    """Every kernel ``j in js`` of one group from its matrix of dot products.

    ``prod`` is a :class:`GroupProducts`: ``dots[a, i] = x_a . z_i``, ``xsq``/``zsq`` the squared
    group norms, ``l1`` the L1 distances (read only if ``use_l1``), ``sqd`` the squared
    distances summed directly (read only if ``use_sqd``, the groups flagged ``GROUP_SQDIST``;
    otherwise they come from the norms and ``dots``).  ``xdiag[a, j]`` / ``zdiag[i, j]`` are the
    self-kernel values in the stored form (:func:`~onlinemkl._core.kernels.stored_diag`).
    Writes ``out[j, a, i]`` row by row.  ``symmetric``: the queries are the stored rows
    themselves (a training set's own kernel matrices, ``dots`` symmetric): only ``i >= a`` is
    computed and mirrored, which gives the same numbers (every formula is symmetric in its two
    arguments) at half the cost.
    """
    dots, xsq, zsq, l1, sqd = prod
    codes, params = spec.codes, spec.params
    nq = dots.shape[0]
    ns = dots.shape[1]
    d2 = np.empty(ns)
    zero = np.zeros(ns)
    work = Work(zero, zero, zero, np.empty(ns), np.empty(ns, dtype=np.int64))
    for a in range(nq):
        i0 = a if symmetric else 0
        xa = xsq[a]
        if use_sqd:
            for i in range(i0, ns):
                d2[i] = sqd[a, i]
        else:
            for i in range(i0, ns):
                v = xa + zsq[i] - 2.0 * dots[a, i]
                d2[i] = v if v > 0.0 else 0.0
        m = ns - i0
        for k in range(js.shape[0]):
            j = js[k]
            oj = out[j, a]
            block_values(codes[j], params[j], dots[a, i0:], d2[i0:], l1[a, i0:] if use_l1 else zero[i0:], m, oj, i0,
                         out[ladder_base(params[j], j), a], work)
            if params[j, P_NORMALIZE] != 0.0:
                xj = xdiag[a, j]
                for i in range(i0, ns):
                    oj[i] = (oj[i] * zdiag[i, j]) * xj
    if symmetric:
        T = 64
        for k in range(js.shape[0]):
            j = js[k]
            for b0 in range(0, nq, T):
                for c0 in range(b0, ns, T):
                    for a in range(b0, min(b0 + T, nq)):
                        for i in range(max(c0, a + 1), min(c0 + T, ns)):
                            out[j, i, a] = out[j, a, i]


@njit
def stored_self_kernels(gsq, js, codes, params, out):
    """``out[a, j] = K_j(x_a, x_a)`` in the stored form (:func:`~onlinemkl._core.kernels.stored_diag`)
    from the squared group norms ``gsq[a]``: the batch counterpart of ``self_kernels``."""
    for a in range(gsq.shape[0]):
        for k in range(js.shape[0]):
            j = js[k]
            out[a, j] = stored_diag(kernel_value(codes[j], params[j], gsq[a], 0.0, 0.0), params[j, P_NORMALIZE])


@njit
def weighted_sum_prep(prod, use_l1, use_sqd, js, spec, xdiag, zinv, w, acc):
    """``acc[a, i] += sum_j w_j K_j(x_a, z_i)`` over one group's kernels ``js`` (in index order).

    Row by row: the squared distances, then each kernel's raw values with
    :func:`~onlinemkl._core.kernels.block_values`, then ``acc`` gains them times ``w_j`` and, for
    a normalised kernel, the two reciprocal roots of the diagonals: ``(w_j rx) K_j(x, z)
    zinv[j, i]`` with ``rx`` the query's and ``zinv[j, i]`` the stored row's diagonal in the
    stored form, ``1/sqrt(K_j(., .))`` (0 where it is not positive).  ``prod``, ``use_l1`` and
    ``use_sqd`` as in :func:`values_from_products`.  The kernels of a ladder
    (:func:`~onlinemkl._core.kernels.ladder_value`) read their base's values, which come
    earlier in ``js``.
    """
    dots, xsq, zsq, l1, sqd = prod
    codes, params = spec.codes, spec.params
    nq = dots.shape[0]
    ns = dots.shape[1]
    F = codes.shape[0]
    d2 = np.empty(ns)
    vals = np.empty((F, ns))
    zero = np.zeros(ns)
    work = Work(zero, zero, zero, np.empty(ns), np.empty(ns, dtype=np.int64))
    need_d2 = False
    for k in range(js.shape[0]):
        need_d2 = need_d2 or codes[js[k]] == RBF or codes[js[k]] == BSPLINE
    for a in range(nq):
        if need_d2:
            if use_sqd:
                for i in range(ns):
                    d2[i] = sqd[a, i]
            else:
                xa = xsq[a]
                for i in range(ns):
                    v = xa + zsq[i] - 2.0 * dots[a, i]
                    d2[i] = v if v > 0.0 else 0.0
        for k in range(js.shape[0]):
            j = js[k]
            block_values(codes[j], params[j], dots[a], d2, l1[a] if use_l1 else zero, ns, vals[j], 0,
                         vals[ladder_base(params[j], j)], work)
            wj = w[j]
            if params[j, P_NORMALIZE] != 0.0:
                wx = wj * xdiag[a, j]
                zj = zinv[j]
                for i in range(ns):
                    acc[a, i] += wx * (vals[j, i] * zj[i])
            else:
                for i in range(ns):
                    acc[a, i] += wj * vals[j, i]
