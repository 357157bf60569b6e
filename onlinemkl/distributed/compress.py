"""Compression of a merged model back to its budget, as the learner's own step evicts.

:func:`compress` takes the union of the merged models' rows (:class:`onlinemkl.distributed.merge._Union`)
and evicts by the learner's rule until ``budget`` rows remain: OBSCURE projects the chosen row onto a
partner first, as its step does (:func:`obscure_partner`, ``onlinemkl._core.buffer.project_onto``);
the proximal learners go through their compiled eviction (:func:`compress_proximal`,
``onlinemkl.proximal._step.compress_rows``).  :func:`group_norms` recomputes the group norms from rows.
"""

from __future__ import annotations

import numpy as np

from .._lazy import lazy_module

_cb = lazy_module("onlinemkl._core.buffer")
_co = lazy_module("onlinemkl.obscure._step")
_cf = lazy_module("onlinemkl.proximal._step")


def group_norms(coef, B, K):
    """``theta_sq[j] = sum_c M_j[:, c]' K_j M_j[:, c]`` with ``M_j = coef[:, j] * B``, and
    ``G[j] = K_j M_j`` (the scores of the stored rows)."""
    F = K.shape[0]
    theta_sq = np.zeros(F)
    G = np.zeros((F,) + B.shape)
    for j in range(F):
        M = coef[:, j if coef.shape[1] > 1 else 0][:, None] * B
        G[j] = K[j] @ M
        theta_sq[j] = float(np.sum(M * G[j]))
    return theta_sq, G


def obscure_partner(r, alive, coef, cls, K, wsq):
    """``(p, delta)``: the row OBSCURE's step would project row ``r``'s contribution onto (same
    class pair and coefficient sign, the largest ``(sum_j wsq_j K_j(r, p))^2 / sum_j wsq_j
    K_j(p, p)`` with a positive numerator) and the coefficient it adds; ``(-1, 0)`` if none."""
    same = (cls[alive, 0] == cls[r, 0]) & (cls[alive, 1] == cls[r, 1]) & (coef[alive, 0] * coef[r, 0] > 0.0)
    cand = alive[same & (alive != r)]
    if cand.shape[0] == 0:
        return -1, 0.0
    num = wsq @ K[:, r, cand]
    den = wsq @ K[:, cand, cand]
    ok = (num > 0.0) & (den > 0.0)
    if not np.any(ok):
        return -1, 0.0
    gain = np.where(ok, num * num / np.where(ok, den, 1.0), -1.0)
    i = int(np.argmax(gain))
    return int(cand[i]), float(coef[r, 0] * num[i] / den[i])


def compress(u, eng, K, B, theta_sq, G, budget):
    """Evict rows by the learner's own rule until ``budget`` remain (proximal:
    :func:`compress_proximal`).  OBSCURE's chosen row is first projected onto a partner as its
    step does (:func:`obscure_partner`, ``onlinemkl._core.buffer.project_onto``), then removed;
    only its least-impact rule reads the norms (through the mirror weights): there they are
    updated after every change; otherwise they are recomputed once from the rows kept."""
    n = u.X.shape[0]
    ssq = np.zeros((n, eng.ck.n_groups))
    sdiag = np.zeros((eng.ck.n_kernels, n))  # kernel by kernel, as the buffer holds them
    eng.ck.refresh_row_caches(np.ascontiguousarray(u.X), n, ssq, sdiag)
    if u.kind != "obscure":
        return compress_proximal(u, eng, K, B, budget, (ssq, sdiag))
    alive = np.arange(n)
    coef = np.ascontiguousarray(u.coef)
    F = K.shape[0]
    policy = int(eng.ihyper[_co.IH_POLICY])
    track = policy == _cb.EVICT_LEAST_IMPACT
    params = eng.ck.params
    a = np.full(F, 1.0)
    while alive.shape[0] > budget:
        m = alive.shape[0]
        c, st, sd = coef[alive], u.stamps[alive], sdiag[:, alive]
        if track:
            _co.mirror_weights(theta_sq, eng.q, a)
        e = int(_cb.choose_evictee(policy, m, st, c, np.ascontiguousarray(u.cls[alive, 1]), sd, params, a * a))
        r = alive[e]
        p, d = obscure_partner(r, alive, coef, u.cls, K, a * a)
        if p >= 0:
            if track:
                for j in range(F):  # ||theta + d_p k_p||^2 = ||theta||^2 + 2 d_p . G_p + K_pp |d_p|^2
                    d_p = d * B[p]
                    theta_sq[j] += 2.0 * float(d_p @ G[j, p]) + K[j, p, p] * float(d_p @ d_p)
                    G[j] += K[j][:, p:p + 1] * d_p[None, :]
            coef[p, 0] += d
            if coef is not u.coef:  # ascontiguousarray copied it
                u.coef[p, 0] += d
        if track:
            for j in range(F):  # ||theta - m_r k_r||^2 = ||theta||^2 - 2 m_r . G_r + K_rr |m_r|^2
                m_r = coef[r, 0] * B[r]
                theta_sq[j] -= 2.0 * float(m_r @ G[j, r]) - K[j, r, r] * float(m_r @ m_r)
                G[j] -= K[j][:, r:r + 1] * m_r[None, :]
        alive = np.delete(alive, e)
    u.keep(alive)
    if not track:
        theta_sq = group_norms(u.coef, B[alive], K[:, alive][:, :, alive])[0]
    return np.maximum(theta_sq, 0.0)


def compress_proximal(u, eng, K, B, budget, caches):
    """Evict as the proximal step does at a full budget (the learner's choice, then the projection
    onto a partner row, :func:`onlinemkl.proximal._step.compress_rows`) until ``budget`` rows remain.
    The union is handed over as a buffer with unit scales (the merged model's scales are folded
    into ``coef``) and its averaged coefficients as the running sums (``avg_base = sigma_cum =
    0``), so an evicted row's share of the averaged model moves to its partner as in a step.
    The norms are recomputed from the kept rows' kernel matrix."""
    n, F = u.X.shape[0], K.shape[0]
    C = B.shape[1]
    ssq, sdiag = caches
    coef = np.array(u.coef, dtype=float, order="C")
    avg = np.zeros_like(coef) if u.avg is None else np.array(u.avg, dtype=float, order="C")
    rows = _cf.ProxRows(np.array(u.X, dtype=float, order="C"), ssq, sdiag, coef, np.array(B, dtype=float, order="C"),
                        np.array(u.stamps, dtype=np.int64), avg, np.zeros((n, F)))
    istate = np.zeros(_cf.N_ISTATE, dtype=np.int64)
    istate[_cf.I_N] = n
    ihyper = eng.ihyper.copy()
    ihyper[_cf.IH_NOUT] = C
    st = _cf.GroupState(np.zeros(F), np.ones(F), np.zeros(F), np.ones(F), istate, eng.hyper.copy(), ihyper)
    order = np.arange(n, dtype=np.int64)
    m = int(_cf.compress_rows(int(budget), tuple(rows), tuple(eng.ck.spec()), tuple(st), order))
    kept = order[:m]
    u.keep(kept)
    u.coef = coef[:m].copy()
    if u.avg is not None:
        u.avg = avg[:m].copy()
    return np.maximum(group_norms(u.coef, B[kept], K[:, kept][:, :, kept])[0], 0.0)
