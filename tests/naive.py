"""Plain-numpy references for the kernels and for OBSCURE (``onlinemkl._core.kernels``/``obscure``).

Written from the paper (Orabona, Jie & Caputo 2012) and the kernel definitions, not from the
compiled code:

* kernels are evaluated from explicit differences (``sum((x - z)**2)``, not the
  ``|x|^2 + |z|^2 - 2 x.z`` expansion the compiled rows use);
* the OBSCURE reference keeps the *actual* (scaled) dual coefficients in a list, applies
  the stage-2 shrink and projection to every coefficient, and recomputes
  ``||theta^j||^2`` at every step as a quadratic form over the full Gram matrices of
  the stored examples (no incremental norm updates, no lazy scale).

The supports are ``(x_s, pos_s, neg_s, c_s)`` with
``theta^j = sum_s c_s (phi_j(x_s, pos_s) - phi_j(x_s, neg_s))`` (``neg_s = None``: no
negative part; binary problems use one output with ``c_s`` carrying the label's sign,
``z = -y phi(x)``).
"""

from __future__ import annotations

import math

import numpy as np

from onlinemkl.kernels import RBF, BSpline, Laplacian, Linear, Polynomial


# -- kernels --------------------------------------------------------------------------


def group_columns(kernel, n_features):
    return np.arange(n_features) if kernel.group is None else np.asarray(kernel.group, dtype=int)


def _kernel_values(kernel, dot, diff, n_group):
    """Raw kernel values of pairs of rows from their inner products ``dot()`` or their differences
    ``diff()`` (features on the last axis); each is computed only if the kernel needs it."""
    if isinstance(kernel, Polynomial):
        scale = kernel.scale if kernel.scale is not None else kernel.scale_scale / n_group
        return (scale * dot() + kernel.offset) ** kernel.degree
    if isinstance(kernel, Linear):
        return dot()
    d = diff()
    if isinstance(kernel, RBF):
        gamma = kernel.gamma if kernel.gamma is not None else kernel.gamma_scale / n_group
        return np.exp(-gamma * np.sum(d * d, axis=-1))
    if isinstance(kernel, Laplacian):
        gamma = kernel.gamma if kernel.gamma is not None else kernel.gamma_scale / n_group
        return np.exp(-gamma * np.sum(np.abs(d), axis=-1))
    if isinstance(kernel, BSpline):
        h = kernel.h if kernel.h is not None else kernel.h_scale * math.sqrt(2.0 * n_group)
        return np.maximum(0.0, 1.0 - np.sqrt(np.sum(d * d, axis=-1)) / h)
    raise TypeError(kernel)


def raw_kernel(kernel, A, B, n_group):
    """Unnormalised kernel matrix between rows of ``A`` and ``B`` (already restricted to the group)."""
    return _kernel_values(kernel, lambda: A @ B.T, lambda: A[:, None, :] - B[None, :, :], n_group)


def self_kernel(kernel, A, n_group):
    """Raw ``K(a, a)`` for every row of ``A`` (each row paired with itself, not a Gram matrix)."""
    return _kernel_values(kernel, lambda: np.einsum("ij,ij->i", A, A), lambda: A - A, n_group)


def kernel_matrix(kernel, X, Z):
    """``K(X, Z)`` as the model sees it (unit diagonal when ``normalize``; 0 where a diagonal is 0)."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    Z = np.atleast_2d(np.asarray(Z, dtype=float))
    cols = group_columns(kernel, X.shape[1])
    A, B = X[:, cols], Z[:, cols]
    K = raw_kernel(kernel, A, B, len(cols))
    if kernel.normalize:
        dx = self_kernel(kernel, A, len(cols))
        dz = self_kernel(kernel, B, len(cols))
        den = dx[:, None] * dz[None, :]
        K = np.where(den > 0, K / np.sqrt(np.where(den > 0, den, 1.0)), 0.0)
    return K


def kernel_diag(kernel, X):
    """``K(x, x)`` as the model sees it for every row of ``X``: the diagonal of ``kernel_matrix(kernel,
    X, X)``, by the same normalisation, without the whole matrix."""
    X = np.atleast_2d(np.asarray(X, dtype=float))
    cols = group_columns(kernel, X.shape[1])
    d = self_kernel(kernel, X[:, cols], len(cols))
    if not kernel.normalize:
        return d
    den = d * d
    return np.where(den > 0, d / np.sqrt(np.where(den > 0, den, 1.0)), 0.0)


def diag_table(kernels, X):
    """``(n, F)``: :func:`kernel_diag` of every kernel for every row of ``X``."""
    return np.stack([kernel_diag(k, X) for k in kernels], axis=1) if len(X) else np.zeros((0, len(kernels)))


def kernel_tensor(kernels, X, Z):
    return np.stack([kernel_matrix(k, X, Z) for k in kernels])


def effective_diag(kernels, x):
    """``K_j(x, x)`` as the model sees it, for every kernel."""
    return np.array([kernel_matrix(k, x[None], x[None])[0, 0] for k in kernels])


# -- OBSCURE ----------------------------------------------------------------------------


def qnorm(v, q):
    """``(sum_j v_j^q)^(1/q)`` for ``v >= 0``, scaled by the largest entry (q is ~100 for p = 1.01)."""
    m = np.max(v) if v.size else 0.0
    if m == 0.0:
        return 0.0
    return m * np.sum((v / m) ** q) ** (1.0 / q)


def mirror_weights(theta_norms, q):
    """Lemma 1 (B = inf): ``a_j = (1/q) (||theta^j|| / ||theta||_{2,q})^(q-2)``."""
    nq = qnorm(theta_norms, q)
    if nq == 0.0:
        return np.full(theta_norms.shape, 1.0 / q), 0.0
    return (1.0 / q) * (theta_norms / nq) ** (q - 2.0), nq


class NaiveObscure:
    """OBSCURE stage 1 (Algorithm 1) and stage 2 (Algorithm 2), one example at a time.

    ``step`` returns ``(loss, yhat, updated)`` like the engine: ``yhat`` is the
    prediction before the update, ``loss`` the hinge loss at ``w_t``.
    Margin error (update) when ``s_y <= max_{c != y} s_c + 1`` (the authors' toolbox;
    equals "loss > 0" except on the measure-zero boundary).
    """

    def __init__(self, kernels, p, eta, lam=None, binary=False, n_classes=2, budget=None,
                 eviction="oldest", pegasos=False):
        self.kernels = list(kernels)
        self.F = len(self.kernels)
        self.q = p / (p - 1.0)
        self.eta = eta
        self.lam = lam
        self.binary = binary
        self.n_out = 1 if binary else n_classes
        self.budget = budget
        self.eviction = eviction
        self.pegasos = pegasos
        self.X = []          # stored rows
        self.pos = []
        self.neg = []        # None: no negative part
        self.c = []          # actual coefficients
        self.stamp = []
        self.gram = np.zeros((self.F, 0, 0))  # K_j(x_s, x_r) of the stored rows
        self.clock = 0
        self.stage = 1
        self.t = 0
        self.s = 0.0
        self.R = math.inf
        self.loss_sum = 0.0
        self.loss_n = 0
        self.n_updates = 0

    # quantities recomputed from scratch
    def overlap(self):
        """``<phi(x_s, pos_s) - phi(x_s, neg_s), phi(x_r, pos_r) - phi(x_r, neg_r)> / K(x_s, x_r)``."""
        P = np.asarray(self.pos)
        N = np.array([-1 if v is None else v for v in self.neg])
        has = N >= 0
        O = (P[:, None] == P[None, :]).astype(float)
        O -= (P[:, None] == N[None, :]) & has[None, :]
        O -= (N[:, None] == P[None, :]) & has[:, None]
        O += (N[:, None] == N[None, :]) & has[:, None] & has[None, :]
        return O

    def theta_sq(self):
        """``||theta^j||^2 = sum_{s,r} c_s c_r <u_s, u_r>_j`` from the Gram matrices."""
        c = np.asarray(self.c, dtype=float)
        if c.size == 0:
            return np.zeros(self.F)
        O = self.overlap()
        return np.array([c @ (O * self.gram[j]) @ c for j in range(self.F)])

    def theta_norms(self):
        return np.sqrt(np.maximum(self.theta_sq(), 0.0))

    def w_norm_p(self):
        return qnorm(self.theta_norms(), self.q) / self.q

    def per_kernel_scores(self, x):
        """``g[j, c] = theta^j . phi_j(x, c)``."""
        g = np.zeros((self.F, self.n_out))
        if not self.c:
            return g
        K = kernel_tensor(self.kernels, x[None], np.asarray(self.X))[:, 0, :]  # (F, n)
        for s, cs in enumerate(self.c):
            g[:, self.pos[s]] += cs * K[:, s]
            if self.neg[s] is not None:
                g[:, self.neg[s]] -= cs * K[:, s]
        return g

    def scores(self, x):
        a, _ = mirror_weights(self.theta_norms(), self.q)
        return a @ self.per_kernel_scores(x)

    def predict_index(self, x):
        s = self.scores(x)
        if self.binary:
            return 1 if s[0] >= 0 else -1
        return int(np.argmax(s))

    # buffer
    def _put(self, slot, x, pos, neg, c):
        x = np.array(x, dtype=float)
        krow = None
        if self.X:
            krow = kernel_tensor(self.kernels, x[None], np.asarray(self.X))[:, 0, :]
        kxx = kernel_tensor(self.kernels, x[None], x[None])[:, 0, 0]
        n = len(self.c)
        if slot == n:
            G = np.zeros((self.F, n + 1, n + 1))
            G[:, :n, :n] = self.gram
            self.gram = G
            self.X.append(x)
            self.pos.append(pos)
            self.neg.append(neg)
            self.c.append(c)
            self.stamp.append(self.clock)
        else:
            self.X[slot] = x
            self.pos[slot] = pos
            self.neg[slot] = neg
            self.c[slot] = c
            self.stamp[slot] = self.clock
            krow = kernel_tensor(self.kernels, x[None], np.asarray(self.X))[:, 0, :]
        if krow is not None:
            m = krow.shape[1]
            self.gram[:, slot, :m] = krow
            self.gram[:, :m, slot] = krow
        self.gram[:, slot, slot] = kxx

    def _evictee(self, a):
        if self.eviction == "oldest":
            return int(np.argmin(self.stamp))
        vals = []
        for s in range(len(self.c)):
            mult = 1.0 if self.neg[s] is None else 2.0
            kss = np.array([self.gram[j, s, s] for j in range(self.F)])
            vals.append(np.sum(a ** 2 * self.c[s] ** 2 * mult * kss))
        best, best_val = 0, vals[0]
        for s in range(1, len(vals)):  # ties within 1e-12 (relative) go to the newer row
            if vals[s] < best_val * (1 - 1e-12) or (vals[s] <= best_val * (1 + 1e-12)
                                                    and self.stamp[s] > self.stamp[best]):
                best, best_val = s, min(best_val, vals[s])
        return best

    def _project(self, e, a):
        """Before row ``e`` is overwritten: ``c_p += c_e sum_j a_j^2 K_j(e, p) / sum_j a_j^2 K_j(p, p)``
        (the least-squares fit of ``c_e u_e`` by a multiple of ``u_p``) for the row ``p != e`` with the
        same class pair and coefficient sign maximising ``(sum_j a_j^2 K_j(e, p))^2 / sum_j a_j^2
        K_j(p, p)`` among those where ``sum_j a_j^2 K_j(e, p) > 0`` (never flipping a sign)."""
        w = a ** 2
        best, best_gain, best_delta = -1, 0.0, 0.0
        for p in range(len(self.c)):
            if p == e or self.pos[p] != self.pos[e] or self.neg[p] != self.neg[e] or self.c[p] * self.c[e] <= 0:
                continue
            num = float(w @ self.gram[:, e, p])
            den = float(w @ self.gram[:, p, p])
            if num > 0.0 and den > 0.0 and num * num / den > best_gain * (1 + 1e-12):  # near-ties: the first
                best, best_gain, best_delta = p, num * num / den, self.c[e] * num / den
        if best >= 0:
            self.c[best] += best_delta

    # the algorithm
    def switch_to_stage2(self, R=None, lam=None):
        if lam is not None:
            self.lam = lam
        if self.lam is None:
            self.lam = 1.0 / max(self.clock, 1)
        if R is None:
            mean_loss = self.loss_sum / max(self.loss_n, 1)
            R = math.sqrt(min(self.w_norm_p() ** 2 + 2.0 * mean_loss / self.lam, 2.0 / self.lam))
        self.R = R
        self.stage = 2
        self.t = 0
        self.s = 0.0

    def step(self, x, y):
        x = np.asarray(x, dtype=float)
        q = self.q
        norms = self.theta_norms()
        a, theta_q = mirror_weights(norms, q)
        g = self.per_kernel_scores(x)
        s = a @ g
        if self.binary:
            f = s[0]
            yhat = 1 if f >= 0 else -1
            m = 1.0 - y * f
            pos, neg, sign = 0, None, float(y)
        else:
            yhat = int(np.argmax(s))
            others = [c for c in range(self.n_out) if c != y]
            rival = others[int(np.argmax(s[others]))]
            m = 1.0 - (s[y] - s[rival])
            pos, neg, sign = y, rival, 1.0
        loss = max(0.0, m)
        err = m >= 0.0
        self.clock += 1
        self.loss_sum += loss
        self.loss_n += 1
        if self.stage == 2:
            lam = self.lam
            self.t += 1
            t = self.t
            kxx = effective_diag(self.kernels, x)
            mult = 1.0 if neg is None else 2.0
            # ||z_t||_{2,q}: ||phi_j(x,y) - phi_j(x,yhat)||^2 = 2 K_j(x,x); binary ||y phi_j(x)||^2 = K_j(x,x)
            z_q = qnorm(np.sqrt(mult * kxx), q) if err else 0.0
            if self.pegasos:
                s_t = 0.0
            else:
                d_t = lam * t + self.s
                s_t = self.s + 0.5 * (math.sqrt(d_t ** 2 + q * ((lam / q) * theta_q + z_q) ** 2 / self.R ** 2) - d_t)
            self.s = s_t
            eta_t = q / (lam * t + s_t)
            shrink = 1.0 - lam * eta_t / q
            if shrink <= 0.0:
                self.X, self.pos, self.neg, self.c, self.stamp = [], [], [], [], []
                self.gram = np.zeros((self.F, 0, 0))
            else:
                self.c = [shrink * c for c in self.c]
            step = eta_t
        else:
            step = self.eta
        updated = bool(err and step > 0)
        if updated:
            self.n_updates += 1
            slot = len(self.c)
            if self.budget is not None and slot >= self.budget:
                slot = self._evictee(a)
                self._project(slot, a)
            # theta <- theta - step * z,  z = -sign (phi(x,pos) - phi(x,neg))
            self._put(slot, x, pos, neg, sign * step)
        if self.stage == 2:
            nq = qnorm(self.theta_norms(), q)
            if nq > q * self.R:
                f = q * self.R / nq
                self.c = [f * c for c in self.c]
        return loss, yhat, updated

    def coefficient_matrix(self):
        """Per stored example, its coefficient on each output (the engine's ``coefficient_matrix``)."""
        M = np.zeros((len(self.c), self.n_out))
        for s, cs in enumerate(self.c):
            M[s, self.pos[s]] += cs
            if self.neg[s] is not None:
                M[s, self.neg[s]] -= cs
        return M

    def kernel_weights(self):
        norms = self.theta_norms()
        a, _ = mirror_weights(norms, self.q)
        w = a * norms
        return w / w.sum() if w.sum() > 0 else np.full(self.F, 1.0 / self.F)


def hinge_losses(S, yi, binary):
    if binary:
        return np.maximum(0.0, 1.0 - yi * S[:, 0])
    out = np.empty(S.shape[0])
    for i in range(S.shape[0]):
        others = np.delete(S[i], yi[i])
        out[i] = max(0.0, 1.0 - (S[i, yi[i]] - others.max()))
    return out


def naive_fit(X, yi, kernels, p, lam, eta, binary, n_classes, seed, stage1_epochs=5, stage2_epochs=5,
              pegasos=False, budget=None, eviction="oldest"):
    """``OBSCUREClassifier.fit`` written out: random stage-1 epochs until one without an update,
    ``R`` from the stage-1 solution's mean training hinge loss, random stage-2 draws."""
    model = NaiveObscure(kernels, p, eta, lam=lam, binary=binary, n_classes=n_classes, pegasos=pegasos,
                         budget=budget, eviction=eviction)
    rng = np.random.default_rng(seed)
    N = X.shape[0]
    for _ in range(stage1_epochs):
        errors = 0
        for i in rng.permutation(N):
            errors += model.step(X[i], yi[i])[2]
        if errors == 0:
            break
    if stage2_epochs > 0:
        S = np.array([model.scores(x) for x in X])
        mean_loss = hinge_losses(S, yi, binary).mean()
        R = math.sqrt(min(model.w_norm_p() ** 2 + 2.0 * mean_loss / lam, 2.0 / lam))
        model.switch_to_stage2(R=R, lam=lam)
        for _ in range(stage2_epochs):
            for i in rng.integers(0, N, size=N):
                model.step(X[i], yi[i])
    return model
