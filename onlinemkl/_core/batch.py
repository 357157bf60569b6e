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
from .kernels import BSPLINE, P_NORMALIZE, RBF, block_values, kernel_value, stored_diag
from .state import Work


class GroupProducts(NamedTuple):
    """One feature group's products between queries ``x_a`` and stored rows ``z_i``: the dot
    products ``dots[a, i]``, the squared norms ``xsq[a]``, ``zsq[i]``, and where the group needs
    them the L1 distances ``l1[a, i]`` and directly summed squared distances ``sqd[a, i]``
    (arrays of shape ``(1, 1)``, never read, otherwise)."""

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
    F = codes.shape[0]
    if js.shape[0] == 0:
        return
    g = spec.kgroup[js[0]]  # js: the kernels of one group (block_values computes that group's)
    work = Work(np.empty((1, ns)), np.empty((1, ns)), np.zeros((1, ns)), np.empty(ns), np.empty(ns, dtype=np.int64))
    wd, d2, wl = work.dots, work.sqds, work.l1s
    vals = np.empty((F, ns))
    for a in range(nq):
        i0 = a if symmetric else 0
        m = ns - i0
        xa = xsq[a]
        # query a's quantities into row 0 of the work record, from position 0 (block_values' layout)
        for t in range(m):
            wd[0, t] = dots[a, i0 + t]
        if use_sqd:
            for t in range(m):
                d2[0, t] = sqd[a, i0 + t]
        else:
            for t in range(m):
                v = xa + zsq[i0 + t] - 2.0 * wd[0, t]
                d2[0, t] = v if v > 0.0 else 0.0
        if use_l1:
            for t in range(m):
                wl[0, t] = l1[a, i0 + t]
        block_values(codes, params, spec.kgroup, g, work, m, vals)
        for k in range(js.shape[0]):
            j = js[k]
            if params[j, P_NORMALIZE] != 0.0:
                xj = xdiag[a, j]
                for t in range(m):
                    vals[j, t] = (vals[j, t] * zdiag[i0 + t, j]) * xj
            for t in range(m):
                out[j, a, i0 + t] = vals[j, t]
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
    if js.shape[0] == 0:
        return
    g = spec.kgroup[js[0]]  # js: the kernels of one group (block_values computes that group's)
    vals = np.empty((F, ns))
    work = Work(np.empty((1, ns)), np.empty((1, ns)), np.zeros((1, ns)), np.empty(ns), np.empty(ns, dtype=np.int64))
    wd, d2, wl = work.dots, work.sqds, work.l1s
    need_d2 = False
    for k in range(js.shape[0]):
        need_d2 = need_d2 or codes[js[k]] == RBF or codes[js[k]] == BSPLINE
    for a in range(nq):
        # query a's quantities into row 0 of the work record (block_values' layout)
        for i in range(ns):
            wd[0, i] = dots[a, i]
        if need_d2:
            if use_sqd:
                for i in range(ns):
                    d2[0, i] = sqd[a, i]
            else:
                xa = xsq[a]
                for i in range(ns):
                    v = xa + zsq[i] - 2.0 * dots[a, i]
                    d2[0, i] = v if v > 0.0 else 0.0
        if use_l1:
            for i in range(ns):
                wl[0, i] = l1[a, i]
        block_values(codes, params, spec.kgroup, g, work, ns, vals)
        for k in range(js.shape[0]):
            j = js[k]
            wj = w[j]
            if params[j, P_NORMALIZE] != 0.0:
                wx = wj * xdiag[a, j]
                zj = zinv[j]
                for i in range(ns):
                    acc[a, i] += wx * (vals[j, i] * zj[i])
            else:
                for i in range(ns):
                    acc[a, i] += wj * vals[j, i]
