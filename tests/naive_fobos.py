"""Plain-numpy reference of online proximal MKL (``onlinemkl.proximal._step``), from Martins et al. (2011).

Written from the algorithm, not from the compiled code:

* the model is kept as its *actual* coefficients: implicit group ``k`` is
  ``theta_k = sum_s coef[s, k] sum_c beta[s, c] phi_k(x_s, c)`` and explicit group ``e``
  a dense weight matrix ``W[e]`` (rows = all columns, zero outside the group);
  every proximal factor and projection multiplies the coefficients at once
  (no lazy scale factors);
* group norms are recomputed at every step as quadratic forms over the Gram
  matrices of the stored examples (no eq. 17 bookkeeping);
* losses and their derivatives are written out here; the proximal operators on
  the norm vector come from ``tests/naive_prox.py`` (already checked against the
  optimality conditions and brute force);
* the averaged model is the running sum of the actual coefficients after each
  step, divided by ``t`` (restricted, with a budget, to the examples still
  stored: an evicted example takes its share of the average with it, because a
  kernel model can only hold what is stored).

One step (Algorithm 1): scores -> loss and derivative ``dl`` -> gradient step on
the loss only, ``theta += eta u`` with ``u = -dl`` (store ``x`` with class vector
``u``; with a full budget first evict the oldest / least-impact example) ->
sparse group lasso: soft-threshold the explicit weights by ``eta lam l1_ratio`` ->
Prop. 1 on the norms ``b' = prox_{eta lam R}(b)`` -> projection onto the
``gamma`` ball -> accumulate the average.
"""

from __future__ import annotations

import numpy as np

from naive import diag_table, group_columns, kernel_matrix
from naive_prox import prox_norms
from onlinemkl.kernels import Linear

HINGE, MULTICLASS_HINGE, LOGISTIC, MULTINOMIAL, SQUARED, EPSILON_INSENSITIVE = range(6)
PROX_SGL = 4


def naive_loss(code, s, y_cls, y_val, epsilon):
    """``(loss, dl)`` with ``dl = d loss / d s``."""
    s = np.asarray(s, dtype=float)
    dl = np.zeros_like(s)
    if code in (HINGE, LOGISTIC):
        y = 1.0 if y_cls > 0 else -1.0
        m = y * s[0]
        if code == HINGE:
            if 1.0 - m > 0:
                dl[0] = -y
                return 1.0 - m, dl
            return 0.0, dl
        dl[0] = -y / (1.0 + np.exp(m))
        return float(np.logaddexp(0.0, -m)), dl
    if code == SQUARED:
        dl[0] = s[0] - y_val
        return 0.5 * (s[0] - y_val) ** 2, dl
    if code == EPSILON_INSENSITIVE:
        a = abs(s[0] - y_val) - epsilon
        if a > 0:
            dl[0] = np.sign(s[0] - y_val)
            return a, dl
        return 0.0, dl
    if code == MULTICLASS_HINGE:
        others = [c for c in range(s.size) if c != y_cls]
        rival = others[int(np.argmax(s[others]))]
        m = 1.0 - s[y_cls] + s[rival]
        if m > 0:
            dl[y_cls], dl[rival] = -1.0, 1.0
            return m, dl
        return 0.0, dl
    # multinomial logistic
    p = np.exp(s - s.max())
    p /= p.sum()
    dl[:] = p
    dl[y_cls] -= 1.0
    return float(-np.log(p[y_cls])), dl


class NaiveFobos:
    """Reference online proximal MKL with ``P = F + E`` groups (see the module docstring)."""

    def __init__(self, kernels, explicit_groups, n_features, n_out, loss, prox, lam, param=0.0, weights=None,
                 schedule=1, eta0=1.0, sigma_sc=1.0, gamma=0.0, budget=0, policy="oldest", epsilon=0.1,
                 group_steps=0):
        self.kernels = tuple(kernels)
        self.F, self.E = len(self.kernels), len(explicit_groups)
        self.P = self.F + self.E
        self.d, self.C = n_features, n_out
        self.xcols = [group_columns(Linear(group=g), n_features) for g in explicit_groups]
        self.loss, self.prox, self.lam, self.param = loss, prox, lam, param
        self.weights = np.ones(self.P) if weights is None else np.asarray(weights, float)
        self.schedule, self.eta0, self.sigma_sc, self.gamma = schedule, eta0, sigma_sc, gamma
        self.budget, self.policy, self.epsilon = budget, policy, epsilon
        self.group_steps = group_steps
        self.X = np.zeros((0, n_features))
        self.beta = np.zeros((0, n_out))
        self.coef = np.zeros((0, self.F))
        self.avg = np.zeros((0, self.F))
        self.stamp = np.zeros(0, dtype=int)
        self.W = np.zeros((self.E, n_features, n_out))
        self.Wavg = np.zeros_like(self.W)
        self.t = 0
        self.n_projected = 0  # competing updates projected onto a row (``learn``'s ``compete``)

    # -- model quantities ----------------------------------------------------------------

    def group_scores(self, x, coef=None, W=None):
        """``g[k, c]``: group k's score of output c (actual units)."""
        coef = self.coef if coef is None else coef
        W = self.W if W is None else W
        g = np.zeros((self.P, self.C))
        x = np.asarray(x, float)
        if self.X.shape[0]:
            for k, ker in enumerate(self.kernels):
                kx = kernel_matrix(ker, x[None], self.X)[0]
                g[k] = (kx * coef[:, k]) @ self.beta
        for e, cols in enumerate(self.xcols):
            g[self.F + e] = x[cols] @ W[e][cols]
        return g

    def scores(self, x, average=False):
        if average:
            T = max(self.t, 1)
            return self.group_scores(x, self.avg / T, self.Wavg / T).sum(axis=0)
        return self.group_scores(x).sum(axis=0)

    def norms(self):
        """``||theta_k||`` recomputed from the Gram matrices and the weights."""
        b = np.zeros(self.P)
        if self.X.shape[0]:
            B = self.beta @ self.beta.T
            for k, ker in enumerate(self.kernels):
                K = kernel_matrix(ker, self.X, self.X)
                c = self.coef[:, k]
                b[k] = np.sqrt(max(c @ (K * B) @ c, 0.0))
        for e in range(self.E):
            b[self.F + e] = np.linalg.norm(self.W[e])
        return b

    def eta(self):
        if self.schedule == 0:
            return self.eta0
        if self.schedule == 1:
            return self.eta0 / np.sqrt(self.t)
        return 1.0 / (self.sigma_sc * self.t)

    def group_diagonals(self, x):
        """``K_k(x, x)`` of every group (explicit: ``||x_e||^2``)."""
        d = [kernel_matrix(ker, x[None], x[None])[0, 0] for ker in self.kernels]
        return np.array(d + [float(x[cols] @ x[cols]) for cols in self.xcols])

    def shares(self, x):
        """Each group's multiplier of the step: ones, or (``group_steps=1``) ``0.1 + 0.9 P b_k^1.5 /
        sum_l b_l^1.5`` from the norms before the step, rescaled to keep ``sum_k m_k K_k(x, x)``."""
        m = np.ones(self.P)
        bp = self.norms() ** 1.5
        if self.group_steps == 1 and bp.sum() > 0:
            m = 0.1 + 0.9 * self.P * bp / bp.sum()
            kd = self.group_diagonals(x)
            if kd.sum() > 0:
                m *= kd.sum() / (m @ kd)
        return m

    def _impacts(self):
        """``||Delta theta||^2`` of every stored row: the size of its contribution."""
        diag = diag_table(self.kernels, self.X)
        return (self.coef ** 2 * diag).sum(axis=1) * (self.beta ** 2).sum(axis=1)

    def _evictee(self):
        if self.policy == "oldest":
            return int(np.argmin(self.stamp))
        return int(np.argmin(self._impacts()))

    def _update_loses(self, x, u, steps):
        """A competing update (``compete``): smaller than every stored row under 'least_impact'."""
        if self.policy == "oldest":
            return False
        size = float((steps ** 2 * self.group_diagonals(x)[:self.F]).sum() * (u @ u))
        return size < self._impacts().min()

    def _project_update(self, x, u, steps):
        """The update ``steps_k u (x) phi_k(x)`` onto the stored row with a class vector parallel to
        ``u`` that captures most of it (the orthogonal projection per group); the rest is dropped."""
        kxj = np.array([kernel_matrix(ker, x[None], self.X)[0] for ker in self.kernels])  # (F, n)
        kjj = diag_table(self.kernels, self.X)
        best, partner = 0.0, -1
        for j in range(self.X.shape[0]):
            bj = self.beta[j]
            uj, jj, uu = u @ bj, bj @ bj, u @ u
            if jj == 0 or uj == 0 or uj * uj < (1 - 1e-12) * uu * jj:
                continue
            ok = kjj[j] > 0
            gain = float(np.sum((steps[ok] * kxj[ok, j]) ** 2 / kjj[j, ok]))
            if gain > best:
                best, partner = gain, j
        if partner >= 0:
            j = partner
            rho = (u @ self.beta[j]) / (self.beta[j] @ self.beta[j])
            self.coef[j] += np.where(kjj[j] > 0, rho * kxj[:, j] * steps / np.where(kjj[j] > 0, kjj[j], 1.0), 0.0)
        self.n_projected += 1

    # -- one step ----------------------------------------------------------------------

    def learn(self, x, y_cls=0, y_val=0.0, compete=False):
        """One step of Algorithm 1; returns ``(loss, updated)``.  ``compete`` (a replayed step): at a
        full budget the update competes with the stored rows for eviction; if it is the least, it
        is projected onto a stored row (:meth:`_project_update`) and nothing is evicted."""
        x = np.asarray(x, float)
        s = self.scores(x)
        loss, dl = naive_loss(self.loss, s, y_cls, y_val, self.epsilon)
        self.t += 1
        eta = self.eta()
        m = self.shares(x)
        if self.loss in (SQUARED, EPSILON_INSENSITIVE):
            # normalised step (normalised LMS): at most 1 / sum_k m_k K_k(x, x)
            kxx = float(m @ self.group_diagonals(x))
            eta = min(eta, 1.0 / kxx) if kxx * eta > 1.0 else eta
        u = -dl
        updated = bool(np.any(u != 0)) and eta > 0
        if updated:
            full = self.budget and self.X.shape[0] >= self.budget
            if full and compete and self._update_loses(x, u, eta * m[:self.F]):
                self._project_update(x, u, eta * m[:self.F])
            elif full:
                i = self._evictee()
                self.X[i], self.beta[i], self.coef[i], self.avg[i], self.stamp[i] = x, u, eta * m[:self.F], 0.0, self.t
            else:
                self.X = np.vstack([self.X, x])
                self.beta = np.vstack([self.beta, u])
                self.coef = np.vstack([self.coef, eta * m[:self.F]])
                self.avg = np.vstack([self.avg, np.zeros(self.F)])
                self.stamp = np.append(self.stamp, self.t)
            for e, cols in enumerate(self.xcols):
                self.W[e][cols] += eta * m[self.F + e] * np.outer(x[cols], u)
        if self.prox == PROX_SGL:  # l1 inside the explicit groups first (exact prox of the sum)
            thr = eta * self.lam * self.param
            self.W = np.sign(self.W) * np.maximum(np.abs(self.W) - thr, 0.0)
        b = self.norms()
        b_new = prox_norms(self.prox, b, eta * self.lam, self.param, self.weights)
        proj = 1.0
        if self.gamma > 0 and np.linalg.norm(b_new) > self.gamma:
            proj = self.gamma / np.linalg.norm(b_new)
        factor = np.where(b > 0, b_new / np.where(b > 0, b, 1.0), 1.0) * proj
        self.coef = self.coef * factor[: self.F]
        self.W = self.W * factor[self.F:, None, None]
        self.avg = self.avg + self.coef
        self.Wavg = self.Wavg + self.W
        return loss, updated

    def regulariser(self):
        """``R(theta)`` of the current model (sparse group lasso: group part plus the l1 part)."""
        b = self.norms()
        if self.prox in (1, 2):
            return 0.5 * float(np.dot(self.weights if self.prox == 2 else np.ones(self.P), b)) ** 2
        if self.prox == 3:
            return float(b.sum())
        if self.prox == PROX_SGL:
            return float(b.sum() + self.param * np.abs(self.W).sum())
        if self.prox == 5:
            return 0.5 * float(np.sum(b ** self.param))
        if self.prox == 6:
            return float(b.sum() + 0.5 * self.param * np.sum(b ** 2))
        return 0.0
