"""Kernel rows: the hot loop (first stage of the pipeline).

Every function here works from the same per-row quantities of one *feature
group*: the dot product ``x . s``, the squared Euclidean distance
``||x - s||^2`` (from the cached squared norms: ``|x|^2 + |s|^2 - 2 x.s``,
clipped at 0) and, only for groups that carry a Laplacian kernel, the L1
distance.  All kernels on a group are then evaluated from those numbers, so the
buffer is read once per example whatever the number of kernels
(DESIGN.md, performance model).

Kernel specification arrays (built by :mod:`onlinemkl.kernels`):

``codes[F]``      kernel kind (``LINEAR`` ... ``BSPLINE``)
``params[F, 4]``  kind parameters (see :func:`kernel_value`) and, in column 3,
                  1.0 for unit-diagonal normalisation
``kgroup[F]``     the feature group of each kernel
``granges[R, 2]`` column ranges ``[start, stop)`` of all groups, concatenated
``gptr[G + 1]``   group ``g`` owns ``granges[gptr[g]:gptr[g + 1]]``
``gl1[G]``        1 where the group needs the L1 distance (a Laplacian kernel)
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import njit, njit_parallel

LINEAR = 0
POLYNOMIAL = 1
RBF = 2
LAPLACIAN = 3
BSPLINE = 4


@njit
def kernel_value(code, p, dot, sqd, l1):
    """Raw (unnormalised) kernel value of one kind from the shared quantities.

    ``p`` is the kernel's parameter row: polynomial ``(degree, offset, scale)``,
    RBF ``gamma`` (``exp(-gamma ||x-z||^2)``), Laplacian ``gamma``
    (``exp(-gamma ||x-z||_1)``, as scikit-learn's ``laplacian_kernel``),
    B1-spline ``h`` (``max(0, 1 - ||x-z|| / h)``, Martins et al. Table 1).
    """
    if code == LINEAR:
        return dot
    elif code == POLYNOMIAL:
        base = p[2] * dot + p[1]
        deg = int(p[0])
        out = 1.0
        for _ in range(deg):
            out *= base
        return out
    elif code == RBF:
        return np.exp(-p[0] * sqd)
    elif code == LAPLACIAN:
        return np.exp(-p[0] * l1)
    else:  # BSPLINE
        v = 1.0 - np.sqrt(sqd) / p[0]
        return v if v > 0.0 else 0.0


@njit
def normalise(v, dx, ds):
    """Unit-diagonal normalisation ``K(x,z) / sqrt(K(x,x) K(z,z))`` (0 if a diagonal is 0)."""
    den = dx * ds
    if den > 0.0:
        return v / np.sqrt(den)
    return 0.0


@njit
def group_sqnorms(x, granges, gptr, out):
    """Squared norm of ``x`` restricted to each feature group."""
    G = gptr.shape[0] - 1
    for g in range(G):
        acc = 0.0
        for r in range(gptr[g], gptr[g + 1]):
            for c in range(granges[r, 0], granges[r, 1]):
                acc += x[c] * x[c]
        out[g] = acc


@njit
def self_kernels(x, codes, params, kgroup, gsq, out):
    """Raw ``K_j(x, x)`` for every kernel (the diagonal used by normalisation and norms)."""
    for j in range(codes.shape[0]):
        out[j] = kernel_value(codes[j], params[j], gsq[kgroup[j]], 0.0, 0.0)


@njit
def row_quantities(x, xsq, S, i, ssq, granges, gptr, gl1, dots, sqds, l1s):
    """Dot products, squared and L1 distances of ``x`` and buffer row ``i`` per group."""
    G = gptr.shape[0] - 1
    for g in range(G):
        acc = 0.0
        acc1 = 0.0
        use_l1 = gl1[g] != 0
        for r in range(gptr[g], gptr[g + 1]):
            for c in range(granges[r, 0], granges[r, 1]):
                a = x[c]
                b = S[i, c]
                acc += a * b
                if use_l1:
                    acc1 += abs(a - b)
        dots[g] = acc
        d2 = xsq[g] + ssq[i, g] - 2.0 * acc
        sqds[g] = d2 if d2 > 0.0 else 0.0
        l1s[g] = acc1


@njit
def prepare_query(x, codes, params, kgroup, granges, gptr, xsq, xdiag):
    """The per-query quantities every row function needs: group norms and ``K_j(x, x)``."""
    group_sqnorms(x, granges, gptr, xsq)
    self_kernels(x, codes, params, kgroup, xsq, xdiag)


@njit
def effective_diag(raw, normalized):
    """``K_j(x, x)`` as the model sees it: 1 for a normalised kernel (0 if the raw value is 0)."""
    if normalized != 0.0:
        return 1.0 if raw > 0.0 else 0.0
    return raw


@njit
def kernel_row(x, xsq, xdiag, S, ssq, sdiag, n, codes, params, kgroup, granges, gptr, gl1, out):
    """Kernel values of ``x`` against buffer rows ``0..n-1``: ``out[j, i] = K_j(x, S_i)``.

    ``xsq``/``xdiag`` come from :func:`prepare_query`; ``ssq[n, G]`` are the
    rows' squared group norms and ``sdiag[n, F]`` their raw self-kernel values.
    """
    G = gptr.shape[0] - 1
    F = codes.shape[0]
    dots = np.empty(G)
    sqds = np.empty(G)
    l1s = np.empty(G)
    for i in range(n):
        row_quantities(x, xsq, S, i, ssq, granges, gptr, gl1, dots, sqds, l1s)
        for j in range(F):
            g = kgroup[j]
            v = kernel_value(codes[j], params[j], dots[g], sqds[g], l1s[g])
            if params[j, 3] != 0.0:
                v = normalise(v, xdiag[j], sdiag[i, j])
            out[j, i] = v


@njit_parallel
def kernel_row_parallel(x, xsq, xdiag, S, ssq, sdiag, n, codes, params, kgroup, granges, gptr, gl1, out):
    """:func:`kernel_row` with rows spread over threads (identical results)."""
    G = gptr.shape[0] - 1
    F = codes.shape[0]
    for i in numba.prange(n):
        dots = np.empty(G)
        sqds = np.empty(G)
        l1s = np.empty(G)
        row_quantities(x, xsq, S, i, ssq, granges, gptr, gl1, dots, sqds, l1s)
        for j in range(F):
            g = kgroup[j]
            v = kernel_value(codes[j], params[j], dots[g], sqds[g], l1s[g])
            if params[j, 3] != 0.0:
                v = normalise(v, xdiag[j], sdiag[i, j])
            out[j, i] = v


@njit
def kernel_scores(x, xsq, xdiag, S, ssq, sdiag, n, codes, params, kgroup, granges, gptr, gl1,
                  coef, ypos, yneg, g_out):
    """The fused hot loop: per-kernel scores of ``x`` in one pass over the buffer.

    ``g_out[j, c] = sum_i coef[i, j or 0] * ([ypos_i = c] - [yneg_i = c]) * K_j(S_i, x)``:
    the scores ``theta^j . phi_j(x, c)`` of every kernel ``j`` and output ``c``
    under the raw (unscaled) coefficients.  ``coef`` has one column (a
    coefficient shared by all kernels, OBSCURE) or ``F`` columns (one per
    kernel group, proximal MKL).  ``yneg_i = -1`` means "no negative part"
    (binary and regression models).  ``xsq``/``xdiag`` come from :func:`prepare_query`.
    """
    G = gptr.shape[0] - 1
    F = codes.shape[0]
    per_kernel = 1 if coef.shape[1] > 1 else 0
    g_out[:, :] = 0.0
    dots = np.empty(G)
    sqds = np.empty(G)
    l1s = np.empty(G)
    for i in range(n):
        row_quantities(x, xsq, S, i, ssq, granges, gptr, gl1, dots, sqds, l1s)
        cp = ypos[i]
        cn = yneg[i]
        for j in range(F):
            g = kgroup[j]
            v = kernel_value(codes[j], params[j], dots[g], sqds[g], l1s[g])
            if params[j, 3] != 0.0:
                v = normalise(v, xdiag[j], sdiag[i, j])
            v *= coef[i, j * per_kernel]
            g_out[j, cp] += v
            if cn >= 0:
                g_out[j, cn] -= v


@njit
def accumulate_scores(K, n, coef, ypos, yneg, g_out):
    """Scores from a precomputed kernel row ``K[F, n]`` (same sums, same order as
    :func:`kernel_scores`, so the parallel path gives identical numbers)."""
    F = K.shape[0]
    per_kernel = 1 if coef.shape[1] > 1 else 0
    g_out[:, :] = 0.0
    for i in range(n):
        cp = ypos[i]
        cn = yneg[i]
        for j in range(F):
            v = K[j, i] * coef[i, j * per_kernel]
            g_out[j, cp] += v
            if cn >= 0:
                g_out[j, cn] -= v
