"""Kernel values over the support buffer: the first stage of the pipeline.

Every function here works from the same per-row quantities of one *feature
group*: the dot product ``x . s``, the squared Euclidean distance
``||x - s||^2`` and, only for groups that carry a Laplacian kernel, the L1
distance.  All kernels on a group are then evaluated from those numbers, so the
buffer is read once per example whatever the number of kernels.

Two shapes of the same computation:

* per row (:func:`row_quantities`, :func:`kernel_value`, :func:`normalise`): one
  stored example at a time, for the bookkeeping of single rows (eviction, norms);
* per block (:func:`kernel_row_block`): :data:`ROW_BLOCK` stored rows at once, the
  kind of each kernel dispatched once per block, every loop a straight body (the dot
  products eight rows at a time, :func:`~onlinemkl._core.simd.dots_block`, the exponentials through :func:`exp_neg_block`'s
  straight-line polynomial, with no call in the loop).
  Every pass over the buffer (kernel rows, scores, proximal scores, eviction scans)
  goes through it.

The two agree within a few ulps of the values (the sums run in another order,
the exponential is a polynomial in one and libm's in the other); the tests state
the tolerances.  Plain Numba throughout but for the dot products' intrinsic
(:mod:`onlinemkl._core.simd`, whose plain twin runs instead under ``NUMBA_DISABLE_JIT=1``,
which runs all of this as Python).

The squared distance comes from the cached squared norms,
``|x|^2 + |s|^2 - 2 x.s`` clipped at 0, except on groups that carry a
B1-spline kernel: there it is summed directly, ``sum_c (x_c - s_c)^2``, in the
same pass.  The expansion's rounding error (~1e-16 of the norms) is harmless
inside ``exp(-gamma d2)`` but the B1-spline takes its square root, which turns
it into an error of ~1e-8 at (near-)duplicate points; the direct sum is exact
to rounding of the distance itself.

Kernel specification arrays (built by :mod:`onlinemkl.kernels`):

``codes[F]``      kernel kind (``LINEAR`` ... ``BSPLINE``)
``params[F, 8]``  kind parameters (see :func:`kernel_value`); in column 3, 1.0 for
                  unit-diagonal normalisation; columns 4-7 the RBF ladder (``P_LADDER_*``)
``kgroup[F]``     the feature group of each kernel
``granges[R, 2]`` column ranges ``[start, stop)`` of all groups, concatenated
``gptr[G + 1]``   group ``g`` owns ``granges[gptr[g]:gptr[g + 1]]``
``gl1[G]``        per-group flags (bits): ``GROUP_L1`` where the group needs the
                  L1 distance (a Laplacian kernel), ``GROUP_SQDIST`` where its
                  squared distance is summed directly (a B1-spline kernel),
                  ``GROUP_DOT`` where a kernel reads the dot product (linear,
                  polynomial; a ``GROUP_SQDIST`` group without it skips the dots)
"""

from __future__ import annotations

import numba
import numpy as np

from .._config import njit, njit_contract, njit_inline, njit_parallel
from .simd import dots_block
from .state import Work

LINEAR = 0
POLYNOMIAL = 1
RBF = 2
LAPLACIAN = 3
BSPLINE = 4

#: Constants of :func:`exp_neg_block` (Cody-Waite reduction by ln 2, then a degree-13 Taylor polynomial).
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0  # 1.5 * 2^52: adding and subtracting it rounds to the nearest integer
#: Below this exponent the exponential is 0 (``exp(-708) = 3.3e-308``): no subnormal numbers.
EXP_FLOOR = -708.0

#: Columns of a kernel's parameter row ``params[j]``: three kind-specific parameters
#: (:func:`kernel_value`), the normalisation flag, then the ladder (see :func:`ladder_value`).
P_NORMALIZE = 3
P_LADDER_K = 4  # k >= 2: K_j = K_base^k; 0: computed directly
P_LADDER_BASE = 5  # the base kernel's index (< j, on the same group, itself direct)
P_LADDER_GAMMA = 6  # the base kernel's gamma (the per-row path evaluates the base itself)
P_LADDER_LO = 7  # base values below exp(EXP_FLOOR / k) give 0 (no subnormal numbers on the way)
N_PARAMS = 8
#: The exponents a ladder may have (integer ratios of two gammas that the default sets meet).
LADDER_KS = tuple(range(2, 17)) + (20, 25, 32, 50, 64, 100, 128)

#: Bits of the per-group flags ``gl1[g]``.
GROUP_L1 = 1
GROUP_SQDIST = 2
GROUP_DOT = 4

#: Rows per block of the blocked passes: the per-group quantities and the kernel values of a
#: block ((3 G + F) x ROW_BLOCK floats) stay in the L1/L2 caches while every kernel of the
#: group reads them, and the per-block cost of dispatching each kernel is spread over many rows.
ROW_BLOCK = 1000


@njit
def exp_neg(x):
    """``exp(x)`` for ``x <= 0`` (arguments above 0 are taken as 0), 0 below :data:`EXP_FLOOR`."""
    x0 = x if x < 0.0 else 0.0
    return np.exp(x0) if x0 >= EXP_FLOOR else 0.0


@njit_contract
def exp_neg_block(z, m, out, j, bits):
    """``out[j, t] = exp_neg(z[t])`` for ``t < m`` (``out`` 2-D), within 1 ulp of libm, in loops LLVM vectorises.

    libm's ``exp`` is a call per element that no loop vectorises (Numba's SVML path needs an
    SVML build of LLVM), and the RBF and Laplacian kernels spend most of a kernel row in it.
    Here ``x = k ln2 + r`` with ``|r| <= ln2 / 2`` (Cody-Waite, two-part ln 2), ``exp(r)`` by its
    Taylor polynomial of degree 13 (truncation < 1e-17 relative) as a Horner chain that may
    fuse into multiply-adds, and ``2^k`` from its exponent bits: the integers go to ``bits``
    (int64 scratch of ``>= m`` entries), whose float64 view then scales the values, a second
    loop that vectorises as well.  (Indices run from 0: an index like ``o0 + t`` could be
    negative as far as LLVM knows, and Numba's wraparound check on it keeps a loop from
    vectorising; the same holds in every block loop below.  Rows are indexed, not taken as
    views: a view costs two atomic reference counts per call.)
    """
    for t in range(m):
        x = z[t]
        x0 = x if x < 0.0 else 0.0
        xc = x0 if x0 > EXP_FLOOR else EXP_FLOOR
        kf = (xc * _LOG2E + _ROUND) - _ROUND
        r = (xc - kf * _LN2_HI) - kf * _LN2_LO
        q = 1.0 / 6227020800.0
        q = q * r + 1.0 / 479001600.0
        q = q * r + 1.0 / 39916800.0
        q = q * r + 1.0 / 3628800.0
        q = q * r + 1.0 / 362880.0
        q = q * r + 1.0 / 40320.0
        q = q * r + 1.0 / 5040.0
        q = q * r + 1.0 / 720.0
        q = q * r + 1.0 / 120.0
        q = q * r + 1.0 / 24.0
        q = q * r + 1.0 / 6.0
        q = q * r + 0.5
        q = q * r + 1.0
        q = q * r + 1.0
        out[j, t] = q if x0 >= EXP_FLOOR else 0.0
        bits[t] = (np.int64(kf) + 1023) << 52  # 2^k, k in [-1022, 0]
    scale = bits.view(np.float64)
    for t in range(m):
        out[j, t] *= scale[t]


@njit_contract
def lane_dot(a, b, c0, c1):
    """``a[c0:c1] . b[c0:c1]`` for 1-D arrays."""
    acc = 0.0
    for c in range(c0, c1):
        acc += a[c] * b[c]
    return acc


@njit_contract
def row_dot(x, S, i, c0, c1):
    """``x[c0:c1] . S[i, c0:c1]`` (``S`` 2-D)."""
    acc = 0.0
    for c in range(c0, c1):
        acc += x[c] * S[i, c]
    return acc


@njit
def group_row_dot(x, S, i, granges, r0, r1):
    """The dot product of ``x`` and row ``i`` over the column ranges ``granges[r0:r1]``."""
    acc = 0.0
    for r in range(r0, r1):
        acc += row_dot(x, S, i, granges[r, 0], granges[r, 1])
    return acc


@njit_contract
def sqdist_block(x, S, i0, m, granges, r0, r1, sqds):
    """``sqds[t] = sum_c (x_c - S_{i0+t,c})^2`` over the group's column ranges, summed directly,
    four rows at a time (independent sums, as :func:`dots_block`)."""
    t = 0
    while t + 4 <= m:
        i = i0 + t
        q0 = q1 = q2 = q3 = 0.0
        for r in range(r0, r1):
            for c in range(granges[r, 0], granges[r, 1]):
                xc = x[c]
                e0 = xc - S[i, c]
                e1 = xc - S[i + 1, c]
                e2 = xc - S[i + 2, c]
                e3 = xc - S[i + 3, c]
                q0 += e0 * e0
                q1 += e1 * e1
                q2 += e2 * e2
                q3 += e3 * e3
        sqds[t] = q0
        sqds[t + 1] = q1
        sqds[t + 2] = q2
        sqds[t + 3] = q3
        t += 4
    while t < m:
        i = i0 + t
        acc = 0.0
        for r in range(r0, r1):
            for c in range(granges[r, 0], granges[r, 1]):
                e = x[c] - S[i, c]
                acc += e * e
        sqds[t] = acc
        t += 1


@njit
def l1_block(x, S, i0, m, granges, r0, r1, l1s):
    """``l1s[t] = sum_c |x_c - S_{i0+t,c}|`` over the group's column ranges."""
    for t in range(m):
        i = i0 + t
        acc = 0.0
        for r in range(r0, r1):
            for c in range(granges[r, 0], granges[r, 1]):
                acc += abs(x[c] - S[i, c])
        l1s[t] = acc


@njit_inline
def ladder_value(v, k, lo):
    """``v^k`` by squaring, for an RBF kernel on a ladder: ``exp(-k g s) = exp(-g s)^k``.

    When a kernel set holds Gaussian kernels whose gammas are integer multiples of an earlier
    one's on the same group (the default set's ``gamma_scale`` of 0.1, 1 and 10 are: 10x and
    100x), the narrower ones are powers of the widest one's values: a few multiplications
    each instead of an exponential (``CompiledKernels`` finds the ladders).  The powers
    ``v^(2^b)`` are multiplied in, lowest bit first; :func:`ladder_block` runs the same
    operations over a block.  A base
    value below ``lo = exp(EXP_FLOOR / k)`` gives 0 (where ``exp_neg`` of the kernel's own
    argument is 0 too), which keeps every intermediate power a normal number.  Relative
    error: about ``k + log2 k`` ulps of the base's, e.g. 2.5e-14 for ``k = 100``, the same
    order as the rounding of the argument ``g s`` itself feeds into a direct exponential.
    """
    c = v if v >= lo else 0.0
    r = 1.0
    first = True
    while True:
        if k & 1:
            r = c if first else r * c
            first = False
        k >>= 1
        if k == 0:
            return r
        c = c * c


@njit_contract
def ladder_block(out, b, j, m, k, lo, c):
    """``out[j, t] = ladder_value(out[b, t], k, lo)`` for ``t < m``: kernel ``j``'s values from its
    ladder base's, row ``b`` of the same 2-D ``out``.

    The default set's exponents (10 and 100) as straight chains in one loop each, which LLVM
    vectorises; any other ``k`` by one vectorised pass per squaring and product (``c``: scratch
    of ``>= m`` entries).  Only the powers the result needs are formed, so no intermediate goes
    subnormal (see :func:`ladder_value`), and the products come in :func:`ladder_value`'s order.
    """
    if k == 10:
        for t in range(m):
            v = out[b, t]
            c1 = v if v >= lo else 0.0
            c2 = c1 * c1
            c8 = (c2 * c2) * (c2 * c2)
            out[j, t] = c2 * c8
        return
    if k == 100:
        for t in range(m):
            v = out[b, t]
            c1 = v if v >= lo else 0.0
            c4 = (c1 * c1) * (c1 * c1)
            c8 = c4 * c4
            c32 = (c8 * c8) * (c8 * c8)
            c64 = c32 * c32
            out[j, t] = (c4 * c32) * c64
        return
    for t in range(m):
        v = out[b, t]
        c[t] = v if v >= lo else 0.0
    first = True
    while True:
        if k & 1:
            if first:
                for t in range(m):
                    out[j, t] = c[t]
                first = False
            else:
                for t in range(m):
                    out[j, t] *= c[t]
        k >>= 1
        if k == 0:
            return
        for t in range(m):
            c[t] = c[t] * c[t]


@njit_inline
def ladder_base(p, j):
    """The row of values kernel ``j`` is computed from: its ladder's base, or ``j`` itself."""
    return int(p[P_LADDER_BASE]) if p[P_LADDER_K] >= 2.0 else j


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
        if p[P_LADDER_K] >= 2.0:
            return ladder_value(exp_neg(-p[P_LADDER_GAMMA] * sqd), int(p[P_LADDER_K]), p[P_LADDER_LO])
        return exp_neg(-p[0] * sqd)
    elif code == LAPLACIAN:
        return exp_neg(-p[0] * l1)
    else:  # BSPLINE
        v = 1.0 - np.sqrt(sqd) / p[0]
        return v if v > 0.0 else 0.0


@njit
def normalise(v, rx, rs):
    """Unit-diagonal normalisation ``K(x,z) / sqrt(K(x,x) K(z,z))`` as ``(v * rs) * rx``.

    ``rx``, ``rs`` are the stored diagonals of a normalised kernel, ``1 / sqrt(K(x,x))`` (0 where
    ``K(x,x)`` is not positive: the value is then 0), see :func:`stored_diag`.  Two multiplies
    a row instead of a square root and a division, within 3 ulps of the division (tested).
    """
    return (v * rs) * rx


@njit_inline
def stored_diag(raw, normalized):
    """What the buffer (``sdiag``) and a query (``xdiag``) hold for kernel ``j``: the raw
    ``K_j(x, x)``, or for a normalised kernel its reciprocal square root ``1 / sqrt(K_j(x, x))``,
    0 where ``K_j(x, x)`` is not positive (or NaN).  Positive exactly where the raw value is,
    which is all :func:`effective_diag` asks."""
    if normalized != 0.0:
        return 1.0 / np.sqrt(raw) if raw > 0.0 else 0.0
    return raw


@njit
def group_sqnorms(x, granges, gptr, out):
    """Squared norm of ``x`` restricted to each feature group (:func:`lane_dot`)."""
    G = gptr.shape[0] - 1
    for g in range(G):
        acc = 0.0
        for r in range(gptr[g], gptr[g + 1]):
            acc += lane_dot(x, x, granges[r, 0], granges[r, 1])
        out[g] = acc


@njit
def self_kernels(x, codes, params, kgroup, gsq, out):
    """``K_j(x, x)`` for every kernel in the stored form (:func:`stored_diag`: raw, or the
    reciprocal square root for a normalised kernel), the diagonal used by normalisation and norms."""
    for j in range(codes.shape[0]):
        out[j] = stored_diag(kernel_value(codes[j], params[j], gsq[kgroup[j]], 0.0, 0.0), params[j, P_NORMALIZE])


@njit
def row_quantities(q, rows, i, spec, dots, sqds, l1s):
    """Dot products, squared and L1 distances of the query ``q`` and stored row ``i`` per group
    (``q``, ``rows``, ``spec``: :class:`~onlinemkl._core.state.Query`, ``Rows``, ``KernelSpec``)."""
    x, xsq, S, ssq = q.x, q.xsq, rows.S, rows.ssq
    granges, gptr, gl1 = spec.granges, spec.gptr, spec.gl1
    G = gptr.shape[0] - 1
    for g in range(G):
        acc1 = 0.0
        acc2 = 0.0
        use_l1 = (gl1[g] & GROUP_L1) != 0
        direct = (gl1[g] & GROUP_SQDIST) != 0
        use_dot = not direct or (gl1[g] & GROUP_DOT) != 0
        acc = group_row_dot(x, S, i, granges, gptr[g], gptr[g + 1]) if use_dot else 0.0
        if direct or use_l1:
            for r in range(gptr[g], gptr[g + 1]):
                for c in range(granges[r, 0], granges[r, 1]):
                    e = x[c] - S[i, c]
                    if direct:
                        acc2 += e * e
                    if use_l1:
                        acc1 += abs(e)
        dots[g] = acc
        if direct:
            sqds[g] = acc2
        else:
            d2 = xsq[g] + ssq[i, g] - 2.0 * acc
            sqds[g] = d2 if d2 > 0.0 else 0.0
        l1s[g] = acc1


@njit
def prepare_query(x, spec, xsq, xdiag):
    """The per-query quantities every row function needs: group norms ``xsq`` and ``K_j(x, x)``
    (in the stored form) ``xdiag``."""
    group_sqnorms(x, spec.granges, spec.gptr, xsq)
    self_kernels(x, spec.codes, spec.params, spec.kgroup, xsq, xdiag)


@njit
def refresh_row_caches(rows, n, spec):
    """``ssq[:n]`` and ``sdiag[:, :n]`` recomputed from the stored rows ``S[:n]`` (:func:`prepare_query`
    row by row): they are derived from the rows, so a restored model does not trust a file's copies."""
    sdiag = rows.sdiag
    xdiag = np.empty(sdiag.shape[0])
    for i in range(n):
        prepare_query(rows.S[i], spec, rows.ssq[i], xdiag)
        for j in range(xdiag.shape[0]):
            sdiag[j, i] = xdiag[j]


@njit
def effective_diag(stored, normalized):
    """``K_j(x, x)`` as the model sees it, from the stored diagonal (:func:`stored_diag`): 1 for a
    normalised kernel (0 where its diagonal is not positive), else the raw value itself."""
    if normalized != 0.0:
        return 1.0 if stored > 0.0 else 0.0
    return stored


@njit
def block_quantities(q, rows, i0, m, spec, work):
    """:func:`row_quantities` for the ``m`` stored rows ``i0 .. i0+m-1`` at once, into ``work``:
    ``work.dots[g, t]``, ``work.sqds[g, t]``, ``work.l1s[g, t]`` for row ``i0 + t``.

    Only what a group's kernels read is written: ``l1s[g]`` where the group has the
    ``GROUP_L1`` flag, ``dots[g]`` unless the group is ``GROUP_SQDIST`` without ``GROUP_DOT``
    (no kernel of :func:`block_values` reads the others).
    """
    x, xsq, S, ssq = q.x, q.xsq, rows.S, rows.ssq
    granges, gptr, gl1 = spec.granges, spec.gptr, spec.gl1
    dots, sqds, l1s = work.dots, work.sqds, work.l1s
    G = gptr.shape[0] - 1
    for g in range(G):
        r0 = gptr[g]
        r1 = gptr[g + 1]
        direct = (gl1[g] & GROUP_SQDIST) != 0
        if direct and (gl1[g] & GROUP_DOT) == 0:
            pass  # no kernel of the group reads a dot product
        elif r1 - r0 == 1:  # one column range (the common case)
            dots_block(x, S, i0, m, granges[r0, 0], granges[r0, 1], dots[g])
        else:
            for t in range(m):
                dots[g, t] = group_row_dot(x, S, i0 + t, granges, r0, r1)
        if direct:
            sqdist_block(x, S, i0, m, granges, r0, r1, sqds[g])
        else:
            xg = xsq[g]
            ss = ssq[i0:i0 + m]
            dg = dots[g]
            qg = sqds[g]
            for t in range(m):
                d2 = xg + ss[t, g] - 2.0 * dg[t]
                qg[t] = d2 if d2 > 0.0 else 0.0
        if (gl1[g] & GROUP_L1) != 0:
            l1_block(x, S, i0, m, granges, r0, r1, l1s[g])


@njit
def block_values(codes, params, kgroup, g, work, m, out):
    """Raw (unnormalised) kernel values on a block: ``out[j, t]`` for ``t < m`` from the shared
    quantities of kernel ``j``'s group, ``work.dots[r, t]``, ``work.sqds[r, t]``, ``work.l1s[r, t]``.

    ``g < 0``: every kernel, each from its own group's row ``r = kgroup[j]`` (the blocked
    passes); ``g >= 0``: only the kernels of group ``g``, from row ``r = 0`` (the batch path,
    one group at a time).  The kind is dispatched once per block and kernel, not once per
    row, and each loop has a straight body; the formulas are those of :func:`kernel_value`.
    A ladder kernel reads its base's values in ``out[ladder_base(params[j], j)]`` (computed
    before: a ladder's base has a lower index).  ``work.scratch`` and ``work.bits`` are work
    space.  One call for all kernels, and the 2-D arrays indexed by row (``out[j, t]``) rather
    than through row views: every array a call takes or a view makes costs two atomic
    reference-count operations, which per kernel and block would cost as much as the
    arithmetic of a small block.
    """
    dots, sqds, l1s, scratch = work.dots, work.sqds, work.l1s, work.scratch
    for j in range(codes.shape[0]):
        if g >= 0 and kgroup[j] != g:
            continue
        r = kgroup[j] if g < 0 else 0
        code = codes[j]
        if code == LINEAR:
            for t in range(m):
                out[j, t] = dots[r, t]
        elif code == POLYNOMIAL:
            deg = int(params[j, 0])
            p1 = params[j, 1]
            p2 = params[j, 2]
            if deg == 2:
                for t in range(m):
                    b = p2 * dots[r, t] + p1
                    out[j, t] = b * b
            elif deg == 3:
                for t in range(m):
                    b = p2 * dots[r, t] + p1
                    out[j, t] = (b * b) * b
            else:
                for t in range(m):
                    b = p2 * dots[r, t] + p1
                    v = 1.0
                    for _ in range(deg):
                        v *= b
                    out[j, t] = v
        elif code == RBF and params[j, P_LADDER_K] >= 2.0:
            ladder_block(out, int(params[j, P_LADDER_BASE]), j, m, int(params[j, P_LADDER_K]), params[j, P_LADDER_LO],
                         scratch)
        elif code == RBF or code == LAPLACIAN:
            ng = -params[j, 0]
            if code == RBF:
                for t in range(m):
                    scratch[t] = ng * sqds[r, t]
            else:
                for t in range(m):
                    scratch[t] = ng * l1s[r, t]
            exp_neg_block(scratch, m, out, j, work.bits)
        else:  # BSPLINE
            h = params[j, 0]
            for t in range(m):
                v = 1.0 - np.sqrt(sqds[r, t]) / h
                out[j, t] = v if v > 0.0 else 0.0


@njit
def kernel_row_block(q, rows, i0, m, spec, work, out):
    """``out[j, t] = K_j(x, S_{i0+t})`` for ``t < m`` (one block): the block's shared per-group
    quantities (:func:`block_quantities`), then every kernel's values from them (:func:`block_values`),
    normalised where the kernel is (:func:`normalise`, as the per-row path).

    ``q``, ``rows``, ``spec``, ``work``: :class:`~onlinemkl._core.state.Query`, ``Rows``,
    ``KernelSpec``, ``Work`` (:func:`block_work`); ``out``: at least ``F x m``.  Every blocked
    pass over the buffer goes through here or, the fused score pass
    (:func:`~onlinemkl._core.scores.kernel_scores`), through its three steps called one by one.
    """
    block_quantities(q, rows, i0, m, spec, work)
    block_values(spec.codes, spec.params, spec.kgroup, -1, work, m, out)
    normalise_block(spec.params, rows.sdiag, q.xdiag, i0, m, out)


@njit
def normalise_block(params, sdiag, xdiag, i0, m, out):
    """``out[j, t] *= sdiag[j, i0 + t] xdiag[j]`` for ``t < m`` and every normalised kernel ``j``:
    :func:`normalise` over a block, with the stored rows' diagonals kernel by kernel
    (``sdiag[F, cap]``), so each kernel's loop reads a contiguous row and vectorises."""
    for j in range(params.shape[0]):
        if params[j, P_NORMALIZE] != 0.0:
            xj = xdiag[j]
            sd = sdiag[j, i0:i0 + m]
            for t in range(m):
                out[j, t] = (out[j, t] * sd[t]) * xj


@njit
def block_work(n_groups, width=ROW_BLOCK):
    """Scratch of one blocked pass (:class:`~onlinemkl._core.state.Work`) for blocks of at most
    ``width`` rows: the float arrays are row ranges of one allocation (a view costs two reference
    counts, an allocation a ``malloc`` and a ``free``: on a small buffer a pass's fixed cost)."""
    G = n_groups
    f = np.empty((3 * G + 1, width))
    return Work(f[:G], f[G:2 * G], f[2 * G:3 * G], f[3 * G], np.empty(width, dtype=np.int64))


@njit
def kernel_row(q, rows, n, spec, out):
    """Kernel values of the query against stored rows ``0..n-1``: ``out[j, i] = K_j(x, S_i)``.

    ``q.xsq``/``q.xdiag`` come from :func:`prepare_query`.  One pass over the buffer in blocks of
    :data:`ROW_BLOCK` rows, each computed into a block's scratch and copied.
    """
    F = spec.codes.shape[0]
    work = block_work(spec.gptr.shape[0] - 1)
    kv = np.empty((F, ROW_BLOCK))
    for i0 in range(0, n, ROW_BLOCK):
        m = min(ROW_BLOCK, n - i0)
        kernel_row_block(q, rows, i0, m, spec, work, kv)
        for j in range(F):
            for r in range(m):  # element by element: no slice stored into a slice (buffer.put_row)
                out[j, i0 + r] = kv[j, r]


@njit_parallel
def kernel_row_parallel(q, rows, n, spec, out):
    """:func:`kernel_row` with blocks of rows spread over threads (the same values)."""
    F = spec.codes.shape[0]
    G = spec.gptr.shape[0] - 1
    for b in numba.prange((n + ROW_BLOCK - 1) // ROW_BLOCK):
        i0 = b * ROW_BLOCK
        m = min(ROW_BLOCK, n - i0)
        kv = np.empty((F, ROW_BLOCK))
        kernel_row_block(q, rows, i0, m, spec, block_work(G), kv)
        for j in range(F):
            for r in range(m):  # element by element: no slice stored into a slice (buffer.put_row)
                out[j, i0 + r] = kv[j, r]
