"""The sequence labeller's compiled step against a plain-numpy reference (explicit stored
positions, brute-force decoding and marginals by enumeration, exact group norms from Gram
matrices, the prox of ``tests/naive_prox.py``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _helpers import engine_of
from _sequence_data import _small_problem
from naive_prox import prox_norms

from onlinemkl.kernels import RBF, Linear, Polynomial
from onlinemkl.proximal import _prox as _cp
from onlinemkl.sequence import SequenceMKLLabeler
from onlinemkl.sequence import _step as _cs


def _k_lin(x, z):
    return float(x @ z)


def _k_quad(x, z):
    return float((x @ z + 1.0) ** 2)


def _k_rbf(gamma):
    return lambda x, z: float(np.exp(-gamma * np.sum((x - z) ** 2)))


def _normalised(k):
    def kn(x, z):
        d = k(x, x) * k(z, z)
        return k(x, z) / math.sqrt(d) if d > 0 else 0.0
    return kn


NAIVE_KERNELS = [_normalised(_k_lin), _normalised(_k_quad), _k_rbf(0.3)]

MODEL_KERNELS = (Linear(normalize=True), Polynomial(degree=2, normalize=True), RBF(gamma=0.3))


class NaiveSequenceModel:
    """The structured step written out: theta_k = sum_s a[s, k] sum_c u[s, c] phi_k(x_s, c)."""

    def __init__(self, kernels, loss, cost, prox_code, lam, prox_param, eta0, gamma):
        self.kernels, self.loss, self.cost = kernels, loss, cost
        self.prox_code, self.lam, self.prox_param, self.eta0, self.gamma = prox_code, lam, prox_param, eta0, gamma
        self.X, self.u, self.a = [], [], []  # stored positions, class vectors, per-kernel coefficients
        self.Y = 0
        self.T = np.zeros((0, 0))
        self.S0 = np.zeros(0)
        self.S1 = np.zeros(0)
        self.t = 0
        self._gram = {}  # k -> the Gram matrix of the stored positions so far

    def _grow(self, Y):
        if Y > self.Y:
            T = np.zeros((Y, Y))
            T[: self.Y, : self.Y] = self.T
            self.T = T
            self.S0 = np.concatenate([self.S0, np.zeros(Y - self.Y)])
            self.S1 = np.concatenate([self.S1, np.zeros(Y - self.Y)])
            self.u = [np.concatenate([u, np.zeros(Y - u.size)]) for u in self.u]
            self.Y = Y

    def unary(self, xs):
        U = np.zeros((len(xs), self.Y))
        for i, x in enumerate(xs):
            for xs_, u, a in zip(self.X, self.u, self.a):
                U[i] += sum(a[k] * K(xs_, x) for k, K in enumerate(self.kernels)) * u
        return U

    def score(self, U, y):
        s = self.S0[y[0]] + self.S1[y[-1]] + sum(U[i, c] for i, c in enumerate(y))
        return s + sum(self.T[a, c] for a, c in zip(y[:-1], y[1:]))

    def gram(self, k):
        """``K_k(x_s, x_r)`` over the stored positions; positions are only ever appended, so the
        values of the pairs seen before are kept and only the new rows' are computed."""
        n = len(self.X)
        G = self._gram.get(k, np.zeros((0, 0)))
        if G.shape[0] < n:
            old, K = G.shape[0], self.kernels[k]
            G = np.pad(G, ((0, n - old), (0, n - old)))
            for s in range(old, n):
                for r in range(s + 1):
                    G[s, r] = G[r, s] = K(self.X[s], self.X[r])
            self._gram[k] = G
        return G

    def norms_sq(self):
        """``||theta_k||^2 = sum_{s,r} a_sk a_rk <u_s, u_r> K_k(x_s, x_r)``, recomputed from the
        coefficients and class vectors as they are now."""
        F = len(self.kernels)
        out = np.zeros(F + 1)
        if self.X:
            A = np.array(self.a)
            UU = np.array(self.u) @ np.array(self.u).T
            for k in range(F):
                out[k] = A[:, k] @ (UU * self.gram(k)) @ A[:, k]
        out[F] = np.sum(self.T ** 2) + np.sum(self.S0 ** 2) + np.sum(self.S1 ** 2)
        return out

    def predict(self, xs):
        U = self.unary(xs)
        labellings = list(itertools.product(range(self.Y), repeat=len(xs)))
        return list(max(labellings, key=lambda y: self.score(U, y)))

    def learn(self, xs, ys, Y):
        self._grow(Y)
        self.t += 1
        eta = self.eta0 / math.sqrt(self.t)
        L, F = len(xs), len(self.kernels)
        U = self.unary(xs)
        labellings = list(itertools.product(range(self.Y), repeat=L))
        scores = np.array([self.score(U, y) for y in labellings])
        gold = self.score(U, ys)
        u = np.zeros((L, self.Y))
        dT, dS0, dS1 = np.zeros_like(self.T), np.zeros(self.Y), np.zeros(self.Y)

        def add_counts(y, w):
            dS0[y[0]] += w
            dS1[y[-1]] += w
            for i in range(L):
                u[i, y[i]] += w
            for a, c in zip(y[:-1], y[1:]):
                dT[a, c] += w

        if self.loss == "svm":
            aug = scores + self.cost * np.array([sum(a != b for a, b in zip(y, ys)) for y in labellings])
            j = int(np.argmax(aug))
            loss = max(aug[j] - gold, 0.0)
            if loss > 0:
                add_counts(ys, 1.0)
                add_counts(labellings[j], -1.0)
        else:
            log_z = np.logaddexp.reduce(scores)
            loss = max(log_z - gold, 0.0)
            p = np.exp(scores - log_z)
            add_counts(ys, 1.0)
            for y, py in zip(labellings, p):
                add_counts(y, -py)
        if loss > 0:
            for i in range(L):
                if np.any(u[i] != 0):
                    self.X.append(np.asarray(xs[i], dtype=float))
                    self.u.append(u[i].copy())
                    self.a.append(np.full(F, eta))
            self.T = self.T + eta * dT
            self.S0 = self.S0 + eta * dS0
            self.S1 = self.S1 + eta * dS1
        # proximal step on the group norms (Prop. 1), then the projection onto the gamma-ball
        b = np.sqrt(np.maximum(self.norms_sq(), 0.0))
        b_new = prox_norms(self.prox_code, b, eta * self.lam, self.prox_param)
        proj = 1.0
        if self.gamma and np.sum(b_new ** 2) > self.gamma ** 2:
            proj = self.gamma / math.sqrt(np.sum(b_new ** 2))
        fac = np.where(b > 0, b_new / np.where(b > 0, b, 1.0), 1.0) * proj
        self.a = [a * fac[:F] for a in self.a]
        self.T, self.S0, self.S1 = self.T * fac[F], self.S0 * fac[F], self.S1 * fac[F]
        return loss


@pytest.mark.parametrize("loss,regularizer,gamma", [
    ("svm", "sq_l21", None), ("svm", "sq_l21", 1.5), ("crf", "sq_l21", None), ("svm", "l21", None),
    ("crf", "nonsparse", 2.0),
])
def test_compiled_step_matches_numpy_reference(loss, regularizer, gamma):
    X, Ys = _small_problem(3)
    lam, eta0, q = 0.05, 0.7, 1.5
    model = SequenceMKLLabeler(kernels=MODEL_KERNELS, loss=loss, cost=1.0, regularizer=regularizer, lam=lam,
                               q=q, eta0=eta0, gamma=gamma)
    code = {"sq_l21": _cp.PROX_SQ_L21, "l21": _cp.PROX_L21, "nonsparse": _cp.PROX_NONSPARSE_Q}[regularizer]
    ref = NaiveSequenceModel(NAIVE_KERNELS, loss, 1.0, code, lam, q if regularizer == "nonsparse" else 0.0,
                             eta0, gamma)
    projected = 0
    for xs, ys in zip(X, Ys):
        model.learn_one(xs, ys)
        ref.learn(xs, [model._labels.index[y] for y in ys], len(model.classes_))
        eng = engine_of(model)
        F, n, Y = eng.n_kernels, eng.n_support, eng.n_labels
        assert n == len(ref.X)
        # each kernel's class vectors (scales applied) = the reference's coefficient times class vector
        B = eng.beta[:, :n, :Y] * eng.sigma[:F, None, None]
        want = np.array(ref.a).reshape(n, F).T[:, :, None] * np.array(ref.u).reshape(n, Y)[None]
        np.testing.assert_allclose(B, want, rtol=1e-9, atol=1e-12)
        sT = eng.sigma[F]
        np.testing.assert_allclose(sT * eng.T[:Y, :Y], ref.T, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sT * eng.S0[:Y], ref.S0, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sT * eng.S1[:Y], ref.S1, rtol=1e-9, atol=1e-12)
        # incremental norms (eq. 17 with the cross terms inside a sequence) = exact norms
        np.testing.assert_allclose(eng.group_norms() ** 2, ref.norms_sq(), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(eng.theta_sq, eng.recompute_theta_sq(), rtol=1e-8, atol=1e-12)
        if gamma is not None:
            projected += bool(np.sum(eng.group_norms() ** 2) > 0.999 * gamma ** 2)
    if gamma is not None:
        assert projected > 0, "the projection never acted: the test does not exercise it"
    for xs in X[:10]:
        assert [model._labels.index[c] for c in model.predict_one(xs)] == ref.predict(xs)
    assert eng.istate[1] == len(X)


def test_gamma_auto_uses_the_sequence_loss_at_zero():
    X, Ys = _small_problem(5, n_seq=8)
    model = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),), lam=0.02, cost=2.0)
    for xs, ys in zip(X, Ys):
        model.learn_one(xs, ys)
    mean_len = np.mean([len(y) for y in Ys])
    # appendix E: ||theta*|| <= sqrt(2 L(0) / lam), L(0) = cost * mean length for the structured hinge
    assert engine_of(model).hyper[_cs.H_GAMMA] == pytest.approx(math.sqrt(2 * 2.0 * mean_len / 0.02))
    crf = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),), loss="crf", lam=0.02)
    for xs, ys in zip(X, Ys):
        crf.learn_one(xs, ys)
    assert engine_of(crf).hyper[_cs.H_GAMMA] == pytest.approx(math.sqrt(2 * math.log(3) * mean_len / 0.02))


def test_eta0_auto_is_the_default_and_steps_further_with_the_crf_loss():
    """``eta0='auto'`` (the default) is 1.0 with the structured hinge and ``CRF_ETA0`` with the CRF
    loss, whose gradient shrinks as the marginals grow confident; a number is kept with either."""
    from onlinemkl.sequence.engine import CRF_ETA0

    X, Ys = _small_problem(5, n_seq=3)
    kern = (RBF(gamma=0.3),)
    assert SequenceMKLLabeler().get_params()["eta0"] == "auto"
    for loss, eta0, want in (("svm", "auto", 1.0), ("crf", "auto", CRF_ETA0), ("crf", 1.0, 1.0), ("svm", 3.0, 3.0)):
        model = SequenceMKLLabeler(kernels=kern, loss=loss, eta0=eta0).fit(X, Ys)
        assert engine_of(model).hyper[_cs.H_ETA0] == want, (loss, eta0)
    assert CRF_ETA0 == 10.0

