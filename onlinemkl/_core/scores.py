"""Scores from kernel values: the second stage of the pipeline.

A model's raw score of output ``c`` under kernel ``j`` is a weighted sum over the stored
rows, ``g[j, c] = sum_i w_i(j, c) K_j(x, S_i)``.  The passes here read the buffer once, in
blocks of :data:`~onlinemkl._core.kernels.ROW_BLOCK` rows: the kernel values of a block
(:func:`~onlinemkl._core.kernels.kernel_row_block`), then the block's contribution to the
scores, as dot products of whole rows of values with whole rows of weights (loops that
vectorise) rather than a scatter row by row.

Two weightings:

* OBSCURE (one coefficient per stored row shared by all kernels, a positive and an optional
  negative class): ``w_i(j, c) = coef[i, 0] ([ypos_i = c] - [yneg_i = c])``;
  :func:`kernel_scores`, :func:`accumulate_block`;
* proximal MKL (a coefficient per row and kernel, times a per-row output vector ``beta``):
  ``w_i(j, c) = coef[i, j] beta[i, c]``; :func:`dense_kernel_scores`, :func:`accumulate_per_kernel`.
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import njit, njit_inline, njit_parallel, njit_sum
from .kernels import ROW_BLOCK, block_quantities, block_values, block_work, kernel_row_block, normalise_block

#: Up to this many outputs, scores with a shared coefficient are accumulated densely
#: (:func:`accumulate_block`: a weight row per output, a dot product per kernel and output);
#: past it, the row-by-row scatter (whose cost does not grow with the outputs) is cheaper.
DENSE_OUTPUTS = 12

#: Kernels and outputs per pass of :func:`accumulate_block` (:func:`signed_tile`).
TILE_KERNELS = 5
TILE_OUTPUTS = 4


@njit_sum
def dot_at(a, b, m):
    """``sum_{t < m} a[t] b[t]`` (1-D arrays; a reassociated, vectorised sum)."""
    acc = 0.0
    for t in range(m):
        acc += a[t] * b[t]
    return acc


@njit
def dense_accumulation(coef, g_out):
    """Whether :func:`accumulate_block`'s dense order applies (every path decides alike)."""
    return coef.shape[1] == 1 and g_out.shape[1] <= DENSE_OUTPUTS


@njit_sum
def signed_tile(kv, j0, nj, cb, yp, yn, m, c0, r):
    """The dense sums of up to :data:`TILE_KERNELS` kernels ``j0 .. j0+nj-1`` and the
    :data:`TILE_OUTPUTS` outputs ``c0 ..`` in one pass over a block:
    ``r[TILE_OUTPUTS a + c] = sum_t kv[j0 + a, t] cb[t, 0] s_{c0+c}(t)`` (``s`` as in
    :func:`accumulate_block`, made in the loop from ``yp``/``yn``).

    Twenty independent sums in one loop, which LLVM vectorises (``reassoc``): each kernel's
    row is read once for four outputs, and the signed weights never go through memory.  A
    tile narrower than five kernels repeats kernel ``j0`` in the unused places (its sums
    are dropped): one loop body for every kernel count, so one compilation.
    """
    # row indices, not row views (each view: two atomic reference counts per call)
    k1 = j0 + 1 if nj > 1 else j0
    k2 = j0 + 2 if nj > 2 else j0
    k3 = j0 + 3 if nj > 3 else j0
    k4 = j0 + 4 if nj > 4 else j0
    a00 = a01 = a02 = a03 = a10 = a11 = a12 = a13 = a20 = a21 = 0.0
    a22 = a23 = a30 = a31 = a32 = a33 = a40 = a41 = a42 = a43 = 0.0
    for t in range(m):
        w = cb[t, 0]
        p = yp[t]
        q = yn[t]
        # arithmetic, not a branch: random classes would mispredict one
        w0 = w * (int(p == c0) - int(q == c0))
        w1 = w * (int(p == c0 + 1) - int(q == c0 + 1))
        w2 = w * (int(p == c0 + 2) - int(q == c0 + 2))
        w3 = w * (int(p == c0 + 3) - int(q == c0 + 3))
        v0 = kv[j0, t]
        v1 = kv[k1, t]
        v2 = kv[k2, t]
        v3 = kv[k3, t]
        v4 = kv[k4, t]
        a00 += v0 * w0
        a01 += v0 * w1
        a02 += v0 * w2
        a03 += v0 * w3
        a10 += v1 * w0
        a11 += v1 * w1
        a12 += v1 * w2
        a13 += v1 * w3
        a20 += v2 * w0
        a21 += v2 * w1
        a22 += v2 * w2
        a23 += v2 * w3
        a30 += v3 * w0
        a31 += v3 * w1
        a32 += v3 * w2
        a33 += v3 * w3
        a40 += v4 * w0
        a41 += v4 * w1
        a42 += v4 * w2
        a43 += v4 * w3
    r[0] = a00
    r[1] = a01
    r[2] = a02
    r[3] = a03
    r[4] = a10
    r[5] = a11
    r[6] = a12
    r[7] = a13
    r[8] = a20
    r[9] = a21
    r[10] = a22
    r[11] = a23
    r[12] = a30
    r[13] = a31
    r[14] = a32
    r[15] = a33
    r[16] = a40
    r[17] = a41
    r[18] = a42
    r[19] = a43


@njit
def accumulate_block(kv, m, coef, i0, ypos, yneg, ws, g_out):
    """``g_out[j, c] += sum_{t < m} kv[j, t] * coef[i0 + t, 0] * s_c(i0 + t)`` for every kernel and output.

    ``s_c(i) = 1`` if ``ypos[i] = c``, ``-1`` if ``yneg[i] = c``, else 0.  No read-modify-write
    of ``g_out`` per row, which would wait on itself whenever consecutive rows share a class:
    with several outputs, tiles of :data:`TILE_KERNELS` kernels by :data:`TILE_OUTPUTS` outputs
    (:func:`signed_tile`, the weights made in registers); with one output (binary models), the
    weights ``w = coef * s`` (exactly ``+-coef`` or a zero) go to ``ws`` (scratch of ``>= m``
    entries, at least :data:`TILE_KERNELS` x :data:`TILE_OUTPUTS`) and every kernel's row meets
    them in one dot product.
    """
    C = g_out.shape[1]
    F = kv.shape[0]
    cb = coef[i0:i0 + m]
    yp = ypos[i0:i0 + m]
    yn = yneg[i0:i0 + m]
    if C == 1:
        for t in range(m):
            ws[t] = cb[t, 0] * (int(yp[t] == 0) - int(yn[t] == 0))
        for j in range(F):
            g_out[j, 0] += dot_at(kv[j], ws, m)
        return
    for c0 in range(0, C, TILE_OUTPUTS):
        nc = min(TILE_OUTPUTS, C - c0)
        for j0 in range(0, F, TILE_KERNELS):
            nj = min(TILE_KERNELS, F - j0)
            signed_tile(kv, j0, nj, cb, yp, yn, m, c0, ws)
            for a in range(nj):
                for c in range(nc):
                    g_out[j0 + a, c0 + c] += ws[TILE_OUTPUTS * a + c]


@njit
def scatter_block(kv, m, coef, i0, ypos, yneg, g_out):
    """:func:`accumulate_block`'s sums row by row (many outputs, or a coefficient per kernel:
    ``coef[i, j]`` when ``coef`` has one column per kernel)."""
    F = kv.shape[0]
    per_kernel = 1 if coef.shape[1] > 1 else 0
    # Rows outer, kernels inner: the F accumulations are independent chains.
    for t in range(m):
        i = i0 + t
        cp = ypos[i]
        cn = yneg[i]
        for j in range(F):
            v = kv[j, t] * coef[i, j * per_kernel]
            g_out[j, cp] += v
            if cn >= 0:
                g_out[j, cn] -= v


@njit_inline
def add_block_scores(dense, kv, m, coef, i0, ypos, yneg, ws, g_out):
    """A block's share of the scores: :func:`accumulate_block` when ``dense``
    (:func:`dense_accumulation`), else :func:`scatter_block`."""
    if dense:
        accumulate_block(kv, m, coef, i0, ypos, yneg, ws, g_out)
    else:
        scatter_block(kv, m, coef, i0, ypos, yneg, g_out)


@njit
def kernel_scores(q, rows, n, spec, coef, ypos, yneg, g_out):
    """The fused hot loop: per-kernel scores of ``x`` in one pass over the buffer.

    ``g_out[j, c] = sum_i coef[i, j or 0] * ([ypos_i = c] - [yneg_i = c]) * K_j(S_i, x)``:
    the scores ``theta^j . phi_j(x, c)`` of every kernel ``j`` and output ``c`` under the raw
    (unscaled) coefficients.  ``coef`` has one column (a coefficient shared by all kernels,
    OBSCURE) or ``F`` columns (one per kernel).  ``yneg_i = -1`` means "no negative part"
    (binary and regression models).  ``q``, ``rows``, ``spec``: :class:`~onlinemkl._core.state.Query`
    (``xsq``/``xdiag`` from :func:`~onlinemkl._core.kernels.prepare_query`), ``Rows``, ``KernelSpec``.
    """
    F = spec.codes.shape[0]
    dense = dense_accumulation(coef, g_out)
    g_out[:, :] = 0.0
    work = block_work(spec.gptr.shape[0] - 1)
    kv = np.empty((F, ROW_BLOCK))
    ws = np.empty(ROW_BLOCK)
    codes, params, kgroup, sdiag, xdiag = spec.codes, spec.params, spec.kgroup, rows.sdiag, q.xdiag
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        # kernel_row_block's three steps called from here: a call with its records' 18 arrays
        # per block would cost 36 atomic reference counts more (docs/architecture.md)
        block_quantities(q, rows, i0, m, spec, work)
        block_values(codes, params, kgroup, -1, work, m, kv)
        normalise_block(params, sdiag, xdiag, i0, m, kv)
        add_block_scores(dense, kv, m, coef, i0, ypos, yneg, ws, g_out)


@njit_parallel
def kernel_scores_parallel(q, rows, n, spec, coef, ypos, yneg, g_out):
    """:func:`kernel_scores` with its blocks spread over threads.

    Each block's sums go to a slot of their own, then the slots are added in block order:
    the serial pass's sums, without writing the ``F x n`` kernel row and reading it back.
    Only the dense accumulation (:func:`dense_accumulation`); the caller takes the parallel
    row otherwise.
    """
    F = spec.codes.shape[0]
    C = g_out.shape[1]
    G = spec.gptr.shape[0] - 1
    n_blocks = (n + ROW_BLOCK - 1) // ROW_BLOCK
    parts = np.zeros((n_blocks, F, C))
    for b in numba.prange(n_blocks):
        i0 = b * ROW_BLOCK
        m = min(ROW_BLOCK, n - i0)
        kv = np.empty((F, ROW_BLOCK))
        kernel_row_block(q, rows, i0, m, spec, block_work(G), kv)
        accumulate_block(kv, m, coef, i0, ypos, yneg, np.empty(ROW_BLOCK), parts[b])
    g_out[:, :] = 0.0
    for b in range(n_blocks):
        for j in range(F):
            for c in range(C):
                g_out[j, c] += parts[b, j, c]


@njit
def accumulate_scores(K, n, coef, ypos, yneg, g_out):
    """Scores from a precomputed kernel row ``K[F, n]``: the sums of :func:`kernel_scores`, a block
    of rows at a time (copied to the same scratch as the fused pass, one compiled accumulation)."""
    g_out[:, :] = 0.0
    F = K.shape[0]
    dense = dense_accumulation(coef, g_out)
    kv = np.empty((F, ROW_BLOCK))
    ws = np.empty(ROW_BLOCK)
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        for j in range(F):
            for t in range(m):
                kv[j, t] = K[j, i0 + t]
        add_block_scores(dense, kv, m, coef, i0, ypos, yneg, ws, g_out)


@njit
def accumulate_per_kernel(kv, m, coef, i0, beta, n_out, bt, g):
    """``g[k, c] += sum_{t < m} (kv[k, t] coef[i0 + t, k]) beta[i0 + t, c]``; ``kv`` is overwritten.

    ``kv[k, t]`` becomes the weighted value ``kv[k, t] * coef[i0 + t, k]``, ``bt[c, t] =
    beta[i0 + t, c]`` (a transposed copy, scratch of ``>= n_out x m``), and each ``g[k, c]``
    gains the dot product of the two rows.  Zeros in ``beta`` add exact zeros.
    """
    F = kv.shape[0]
    cb = coef[i0:i0 + m]
    bb = beta[i0:i0 + m]
    for k in range(F):
        kk = kv[k]
        for t in range(m):
            kk[t] = kk[t] * cb[t, k]
    for c in range(n_out):
        bc = bt[c]
        for t in range(m):
            bc[t] = bb[t, c]
    for k in range(F):
        for c in range(n_out):
            g[k, c] += dot_at(kv[k], bt[c], m)


@njit
def dense_kernel_scores(q, rows, n, spec, coef, beta, n_out, g):
    """``g[k, c] = sum_i coef[i, k] beta[i, c] K_k(x, S_i)`` (raw implicit-group scores), one pass.

    The proximal learners' pass (:mod:`onlinemkl.proximal._step`, its evictions in
    :mod:`onlinemkl.proximal._evict`).  The buffer is read in blocks of :data:`ROW_BLOCK`
    rows, as OBSCURE's fused pass (:func:`kernel_scores`): every kernel's values on a block
    (:func:`kernel_row_block`), then the block's sums (:func:`accumulate_per_kernel`: a dot
    product for every (kernel, output) pair).  Every pass that scores against the buffer goes
    through this function, so they all sum alike.
    """
    F = spec.codes.shape[0]
    for k in range(F):
        for c in range(n_out):
            g[k, c] = 0.0
    if n <= 0:
        return
    width = min(n, ROW_BLOCK)  # scratch for the rows there are: a small buffer's pass allocates little
    work = block_work(spec.gptr.shape[0] - 1, width)
    kv = np.empty((F, width))
    bt = np.empty((n_out, width))
    codes, params, kgroup, sdiag, xdiag = spec.codes, spec.params, spec.kgroup, rows.sdiag, q.xdiag
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        # kernel_row_block's three steps called from here, as in kernel_scores
        block_quantities(q, rows, i0, m, spec, work)
        block_values(codes, params, kgroup, -1, work, m, kv)
        normalise_block(params, sdiag, xdiag, i0, m, kv)
        accumulate_per_kernel(kv, m, coef, i0, beta, n_out, bt, g)
