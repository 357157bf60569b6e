"""Compiled kernels of the polynomial-kernel MKL solvers (Afkanpour et al. 2013; Cortes et al. 2009).

nopython only: arrays, integers and floats in, no Python objects.

Base kernels come in one of two forms, chosen at the boundary by ``mode``:

* ``MODE_DENSE``: ``Kb`` of shape ``(r, n, n)`` holds every base kernel matrix
  (any kernel of :mod:`onlinemkl.kernels`);
* ``MODE_FACTOR``: ``Fb`` of shape ``(n, r)`` holds one feature per base kernel,
  ``K_j = f_j f_j'`` (the paper's set-up: one linear kernel per input variable
  plus a constant).  Then ``<A, K_j> = f_j' A f_j`` is one BLAS product for
  every ``j`` at once and product kernels are rank one.

The unused array is passed with shape zero.  A multi-index (a multiset of base
kernels) is a row of ``D`` int64 entries: the first ``d`` entries are the
sorted base-kernel indices, the rest are ``-1``.
"""

from __future__ import annotations

import numpy as np

from .._config import njit

MODE_DENSE = 0
MODE_FACTOR = 1


@njit
def base_sum(Kb, Fb, mode, n):
    """``S = K_1 + ... + K_r`` (n x n)."""
    if mode == MODE_FACTOR:
        return np.dot(Fb, Fb.T)
    S = np.zeros((n, n))
    for j in range(Kb.shape[0]):
        for a in range(n):
            for b in range(n):
                S[a, b] += Kb[j, a, b]
    return S


@njit
def hadamard_powers(S, D):
    """``P[d] = S^(o d)`` for ``d = 0..D`` (``P[0]`` is all ones)."""
    n = S.shape[0]
    P = np.empty((D + 1, n, n))
    for a in range(n):
        for b in range(n):
            P[0, a, b] = 1.0
    for d in range(1, D + 1):
        for a in range(n):
            for b in range(n):
                P[d, a, b] = P[d - 1, a, b] * S[a, b]
    return P


@njit
def quad(A, alpha):
    """``alpha' A alpha``."""
    n = alpha.shape[0]
    s = 0.0
    for a in range(n):
        t = 0.0
        for b in range(n):
            t += A[a, b] * alpha[b]
        s += alpha[a] * t
    return s


@njit
def degree_masses(P, alpha, wdeg, out):
    """``out[d] = rho_d^-2 alpha' S^(o d) alpha`` (clipped at 0 against round-off); returns the sum."""
    tot = 0.0
    for d in range(P.shape[0]):
        v = wdeg[d] * quad(P[d], alpha)
        if not v > 0.0:
            v = 0.0
        out[d] = v
        tot += v
    return tot


@njit
def kernel_scores(A, Kb, Fb, mode, out):
    """``out[j] = <A, K_j>`` for every base kernel ``j``."""
    if mode == MODE_FACTOR:
        AF = np.dot(A, Fb)
        n, r = Fb.shape
        for j in range(r):
            s = 0.0
            for a in range(n):
                s += AF[a, j] * Fb[a, j]
            out[j] = s
    else:
        n = A.shape[0]
        for j in range(Kb.shape[0]):
            s = 0.0
            for a in range(n):
                for b in range(n):
                    s += A[a, b] * Kb[j, a, b]
            out[j] = s


@njit
def _draw(p, total, u, order):
    """Index drawn from unnormalised non-negative weights ``p`` (sum ``total``) with uniform ``u``.

    The cumulative sum runs in the sequence ``order`` (a permutation), so that the draw does not
    depend on how the caller numbered the base kernels (river numbers features by first appearance).
    """
    target = u * total
    acc = 0.0
    last = -1
    for t in range(order.shape[0]):
        i = order[t]
        if p[i] > 0.0:
            last = i
            acc += p[i]
            if target < acc:
                return i
    return last  # round-off: the last index with positive weight


@njit
def _pick(pi, tot, u, order):
    """One step's base kernel: drawn from the weights ``pi`` (sum ``tot``) with uniform ``u``; any
    index (by ``u``, in ``order``) when every weight is zero (the current product is orthogonal
    to everything left)."""
    if not tot > 0.0:
        r = pi.shape[0]
        return order[min(int(u * r), r - 1)]
    return _draw(pi, tot, u, order)


@njit
def sample_multi_index(P, alpha, wdeg, Kb, Fb, mode, u, order, z):
    """Algorithm 3: draw a multi-index with probability ``|g_i| / C`` (``g`` up to the factor lam/2).

    ``u`` holds ``D + 1`` uniforms in [0, 1); ``order`` is the permutation of the base kernels in
    which cumulative sums run (``np.arange(r)`` normally); the sorted multi-index is written
    to ``z`` (``-1`` padded).  Returns ``(d, C)``: the degree (``-1`` if every
    gradient component is zero) and ``C = sum_d rho_d^-2 alpha' S^(o d) alpha``,
    the l1 norm of the gradient over the multiset index set (each multiset
    ``m`` carries the prior ``c(m) rho_d^-2``, ``c(m)`` its number of orderings,
    so that the sum over multisets equals the sum over ordered tuples).

    Step ``i`` draws ``z_i`` from ``pi(j) = <M o S^(d-i), K_j> / <M o S^(d-i+1), 1>``
    with ``M = alpha alpha' o K_{z_1} o ... o K_{z_(i-1)}``; the product telescopes
    to ``rho_d^-2 alpha' (K_{z_1} o ... o K_{z_d}) alpha / C`` per ordered tuple.
    """
    D = P.shape[0] - 1
    for i in range(z.shape[0]):
        z[i] = -1
    delta = np.empty(D + 1)
    C = degree_masses(P, alpha, wdeg, delta)
    if not C > 0.0:
        return -1, 0.0
    d = _draw(delta, C, u[0], np.arange(D + 1))
    if d <= 0:
        return d, C
    r = Kb.shape[0] if mode == MODE_DENSE else Fb.shape[1]
    if mode == MODE_FACTOR:
        _sample_factor(P, alpha, Fb, d, u, order, z)
    else:
        _sample_dense(P, alpha, Kb, d, u, order, z, r)
    # canonical form: sorted (insertion sort on d <= D entries)
    for i in range(1, d):
        v = z[i]
        k = i - 1
        while k >= 0 and z[k] > v:
            z[k + 1] = z[k]
            k -= 1
        z[k + 1] = v
    return d, C


@njit
def _sample_factor(P, alpha, Fb, d, u, order, z):
    """Steps of Algorithm 3 with rank-one base kernels: ``M = v v'``, ``v = alpha o f_{z_1} o ...``,
    so ``pi(j) = (v o f_j)' S^(d-i) (v o f_j)``: one BLAS product per step, no n x n temporaries."""
    n, r = Fb.shape
    v = alpha.copy()
    W = np.empty((n, r))
    pi = np.empty(r)
    for i in range(1, d + 1):
        for a in range(n):
            for j in range(r):
                W[a, j] = v[a] * Fb[a, j]
        PW = np.dot(P[d - i], W)
        tot = 0.0
        for j in range(r):
            s = 0.0
            for a in range(n):
                s += W[a, j] * PW[a, j]
            if not s > 0.0:  # >= 0 up to round-off (Schur products of PSD matrices)
                s = 0.0
            pi[j] = s
            tot += s
        j = _pick(pi, tot, u[i], order)
        z[i - 1] = j
        for a in range(n):
            v[a] *= Fb[a, j]


@njit
def _sample_dense(P, alpha, Kb, d, u, order, z, r):
    """Steps of Algorithm 3 with dense base kernels (``M`` kept as an n x n matrix)."""
    n = alpha.shape[0]
    Fb = np.zeros((0, 0))
    M = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            M[a, b] = alpha[a] * alpha[b]
    A = np.empty((n, n))
    pi = np.empty(r)
    for i in range(1, d + 1):
        for a in range(n):
            for b in range(n):
                A[a, b] = M[a, b] * P[d - i, a, b]
        kernel_scores(A, Kb, Fb, MODE_DENSE, pi)
        tot = 0.0
        for j in range(r):
            if not pi[j] > 0.0:  # Schur products of PSD matrices: >= 0 up to round-off
                pi[j] = 0.0
            tot += pi[j]
        j = _pick(pi, tot, u[i], order)
        z[i - 1] = j
        for a in range(n):
            for b in range(n):
                M[a, b] *= Kb[j, a, b]


@njit
def product_features(z, Fb):
    """Feature of a product kernel in factor mode: ``prod_i f_{z_i}`` (n,)."""
    n = Fb.shape[0]
    g = np.ones(n)
    for i in range(z.shape[0]):
        j = z[i]
        if j < 0:
            break
        for a in range(n):
            g[a] *= Fb[a, j]
    return g


@njit
def product_kernel(z, Kb, Fb, mode, n, out):
    """``out = K_{z_1} o ... o K_{z_d}`` (all ones for the empty multi-index)."""
    for a in range(n):
        for b in range(n):
            out[a, b] = 1.0
    if mode == MODE_FACTOR:
        g = product_features(z, Fb)
        for a in range(n):
            for b in range(n):
                out[a, b] = g[a] * g[b]
    else:
        for i in range(z.shape[0]):
            j = z[i]
            if j < 0:
                break
            for a in range(n):
                for b in range(n):
                    out[a, b] *= Kb[j, a, b]


@njit
def combined_kernel(Z, w, Kb, Fb, mode, n):
    """``sum_m w_m K_m`` over the multi-indices (rows of ``Z``), dense n x n."""
    K = np.zeros((n, n))
    m = Z.shape[0]
    if mode == MODE_FACTOR:
        G = np.empty((n, m))
        for k in range(m):
            g = product_features(Z[k], Fb)
            for a in range(n):
                G[a, k] = g[a]
        Gw = G.copy()
        for k in range(m):
            for a in range(n):
                Gw[a, k] *= w[k]
        # copied element by element: a slice assignment between arrays compiles a shape check
        # with a formatted error message (seconds of first-run compile time, see buffer.put_row)
        P = np.dot(Gw, G.T)
        for a in range(n):
            for b in range(n):
                K[a, b] = P[a, b]
    else:
        tmp = np.empty((n, n))
        for k in range(m):
            if w[k] == 0.0:
                continue
            product_kernel(Z[k], Kb, Fb, mode, n, tmp)
            for a in range(n):
                for b in range(n):
                    K[a, b] += w[k] * tmp[a, b]
    return K


@njit
def cg_solve(K, shift, y, x, tol, maxiter):
    """Solve ``(K + shift I) x = y`` by conjugate gradients, warm-started from ``x`` (in place).

    Stops when ``||residual|| <= tol ||y||``; returns the number of iterations, or ``maxiter + 1``
    if it did not converge (the caller then solves directly: an ill-conditioned system, where CG in
    floating point can stall or diverge).
    """
    n = y.shape[0]
    r = y - (np.dot(K, x) + shift * x)
    ynorm = np.sqrt(np.dot(y, y))
    if ynorm == 0.0:
        for a in range(n):
            x[a] = 0.0
        return 0
    thr = tol * ynorm
    rs = np.dot(r, r)
    if np.sqrt(rs) <= thr:
        return 0
    p = r.copy()
    it = 0
    while it < maxiter:
        Ap = np.dot(K, p) + shift * p
        pAp = np.dot(p, Ap)
        if not pAp > 0.0:
            return maxiter + 1
        a_ = rs / pAp
        x += a_ * p
        r -= a_ * Ap
        rs_new = np.dot(r, r)
        it += 1
        if np.sqrt(rs_new) <= thr:
            return it
        p = r + (rs_new / rs) * p
        rs = rs_new
    return maxiter + 1


@njit
def scale_update(Ktheta, KI, step_w, s):
    """``Ktheta <- s (Ktheta + step_w KI)`` in place (one coordinate step, then the l2-ball scaling)."""
    n = Ktheta.shape[0]
    for a in range(n):
        for b in range(n):
            Ktheta[a, b] = s * (Ktheta[a, b] + step_w * KI[a, b])


@njit
def cortes_gradient(U, alpha, Kb, Fb, mode, dgr, out):
    """``out[k] = -d alpha' (U^(o(d-1)) o K_k) alpha`` with ``U = sum_r mu_r K_r`` (Cortes et al., Prop. 1).

    ``U`` is the degree-(d-1) Hadamard power, precomputed by the caller.
    """
    n = alpha.shape[0]
    A = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            A[a, b] = U[a, b] * alpha[a] * alpha[b]
    kernel_scores(A, Kb, Fb, mode, out)
    for k in range(out.shape[0]):
        out[k] = -dgr * out[k]


@njit
def power_kernel_predict(Fq, Fw, mu, dgr, alpha):
    """``out[q] = sum_a (sum_k mu_k Fq[q,k] Fw[a,k])^dgr alpha_a``, row by row.

    Explicit loops (no BLAS) so that a row's prediction does not depend on the other rows of the
    batch: ``predict_one`` and ``predict_many`` agree bit for bit, even for ill-conditioned kernels.
    """
    nq, r = Fq.shape
    n = Fw.shape[0]
    out = np.zeros(nq)
    for q in range(nq):
        s = 0.0
        for a in range(n):
            u = 0.0
            for k in range(r):
                u += mu[k] * Fq[q, k] * Fw[a, k]
            s += u ** dgr * alpha[a]
        out[q] = s
    return out


@njit
def _top_insert(score, z, d, top_z, top_s, kmin):
    """Put a multiset in the top list in place of its weakest entry; returns the new weakest."""
    top_s[kmin] = score
    for i in range(top_z.shape[1]):
        top_z[kmin, i] = z[i] if i < d else -1
    kmin = 0
    for k in range(1, top_s.shape[0]):
        if top_s[k] < top_s[kmin]:
            kmin = k
    return kmin


@njit
def screen_top(Ft, alpha, wdeg, first, top_z, top_s):
    """The ``top_s.shape[0]`` multisets of base kernels ``first..r-1`` of degree 1..D with the largest
    screening score ``rho_d^-2 (alpha' g_m)^2 / ||g_m||^2`` (rank-one base kernels, ``g_m`` the
    product of the rows of ``Ft`` (r x n) named by ``m``), found by scoring every one of them.

    With ``alpha`` the residual (the KRR dual), ``(alpha' g)^2 / ||g||^2`` is the decrease of the
    squared residual that kernel ``m`` alone would bring (orthogonal matching pursuit's rule).
    Prefixes ``p`` of length ``0..D-2`` are enumerated in lexicographic order with their partial
    products ``v = alpha o f_{p_1} o ...`` (and ``f_{p_1}^2 o ...``); for each, two BLAS products
    ``W Ft'`` with ``W = v o f_j`` (rows ``j >= last(p)``) score every multiset ``p + j + k``
    (``k >= j``) at once, and the row sums of ``W`` the degree-1 multisets.  Writes the winners to
    ``top_z`` (rows, ``-1`` padded) and ``top_s`` (scores, unsorted; ``-1`` where fewer exist).
    """
    r, n = Ft.shape
    D = top_z.shape[1]
    K = top_s.shape[0]
    for k in range(K):
        top_s[k] = -1.0
        for i in range(D):
            top_z[k, i] = -1
    kmin = 0
    Ft2 = Ft * Ft
    V = np.empty((D + 1, n))
    V2 = np.empty((D + 1, n))
    for a in range(n):
        V[0, a] = alpha[a]
        V2[0, a] = 1.0
    z = np.full(D + 2, -1)
    L = 0  # length of the current prefix
    while True:
        lo = first if L == 0 else z[L - 1]
        m = r - lo
        if m > 0:
            W = np.empty((m, n))
            W2 = np.empty((m, n))
            for t in range(m):
                for a in range(n):
                    W[t, a] = V[L, a] * Ft[lo + t, a]
                    W2[t, a] = V2[L, a] * Ft2[lo + t, a]
            if L == 0:
                for t in range(m):
                    s1 = 0.0
                    s2 = 0.0
                    for a in range(n):
                        s1 += W[t, a]
                        s2 += W2[t, a]
                    score = wdeg[1] * s1 * s1 / s2 if s2 > 0.0 else 0.0
                    if score > top_s[kmin]:
                        z[0] = lo + t
                        kmin = _top_insert(score, z, 1, top_z, top_s, kmin)
            if L + 2 <= D:
                T = np.dot(W, Ft[lo:].T)
                T2 = np.dot(W2, Ft2[lo:].T)
                for t in range(m):
                    z[L] = lo + t
                    for u in range(t, m):
                        sc = T[t, u]
                        s2 = T2[t, u]
                        score = wdeg[L + 2] * sc * sc / s2 if s2 > 0.0 else 0.0
                        if score > top_s[kmin]:
                            z[L + 1] = lo + u
                            kmin = _top_insert(score, z, L + 2, top_z, top_s, kmin)
        # next prefix (odometer over non-decreasing prefixes of length <= D - 2)
        if L < D - 2 and m > 0:
            z[L] = lo
            L += 1
        else:
            while L > 0:
                z[L - 1] += 1
                if z[L - 1] < r:
                    break
                L -= 1
            if L == 0:
                break
        j = z[L - 1]
        for a in range(n):
            V[L, a] = V[L - 1, a] * Ft[j, a]
            V2[L, a] = V2[L - 1, a] * Ft2[j, a]
