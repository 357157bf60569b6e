"""The sequence labeller's word-at-once kernel scores (``sequence/_step.word_kernel_scores``,
matrix products) against a plain-numpy reference and against the per-position pass."""

from __future__ import annotations

import numpy as np
import pytest

from onlinemkl.sequence import _step as cs
from onlinemkl._core.kernels import prepare_query
from onlinemkl._core.state import KernelSpec, Query, Rows
from onlinemkl.kernel_arrays import CompiledKernels, resolve_group_columns
from onlinemkl.kernels import RBF, BSpline, Laplacian, Linear, Polynomial


def _buffer(kernels, n, d, Y, seed):
    """A model of ``n`` stored rows over ``d`` features, its query caches filled as learning does."""
    ck = CompiledKernels(kernels)
    ck.set_columns(resolve_group_columns(ck.groups, d, None))
    spec = KernelSpec(*ck.spec())
    rng = np.random.default_rng(seed)
    F, G = spec.codes.shape[0], spec.gptr.shape[0] - 1
    S = rng.integers(0, 2, size=(n + 3, d)).astype(np.float64)  # binary pixels, as the OCR words; spare rows
    ssq, sdiag = np.zeros((n + 3, G)), np.zeros((F, n + 3))
    xd = np.empty(F)
    for i in range(n):
        prepare_query(S[i], spec, ssq[i], xd)
        sdiag[:, i] = xd
    B = np.zeros((F, n + 3, Y + 2))  # a class vector per kernel and row; spare label slots
    B[:, :, :Y] = rng.normal(size=(F, n + 3, Y))
    buf = cs.PositionRows(S, ssq, sdiag, B, np.zeros(n + 3, dtype=np.int64), np.zeros_like(B), np.zeros((n + 3, F)))
    return spec, buf, rng


def _reference(kernels, xs, buf, n, Y):
    """``g[i, k, c] = sum_s B[k, s, c] K_k(x_i, S_s)`` from the kernels' own formulas."""
    def gram(k, A, B):
        dots = A @ B.T
        sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * dots
        if isinstance(k, Linear):
            K, da, db = dots, (A * A).sum(1), (B * B).sum(1)
        elif isinstance(k, Polynomial):
            K = (k.scale * dots + k.offset) ** k.degree
            da, db = (k.scale * (A * A).sum(1) + k.offset) ** k.degree, (k.scale * (B * B).sum(1) + k.offset) ** k.degree
        else:
            K, da, db = np.exp(-k.gamma * np.maximum(sq, 0.0)), np.ones(len(A)), np.ones(len(B))
        return K / np.sqrt(np.outer(da, db)) if k.normalize else K

    out = np.empty((xs.shape[0], len(kernels), Y))
    for k, kern in enumerate(kernels):
        K = gram(kern, xs, buf.S[:n])
        out[:, k, :] = K @ buf.B[k, :n, :Y]
    return out


def _scores(xs, buf, n, spec, Y):
    L, F, G = xs.shape[0], spec.codes.shape[0], spec.gptr.shape[0] - 1
    gpos, xsqs, xdiags, U = np.empty((L, F, Y)), np.empty((L, G)), np.empty((L, F)), np.empty((L, Y))
    sigma = np.linspace(0.5, 2.0, F + 1)
    cs.unary_scores(xs, buf, n, spec, sigma, gpos, xsqs, xdiags, U)
    assert np.allclose(U, np.einsum("k,ikc->ic", sigma[:F], gpos), rtol=1e-12, atol=1e-12)
    return gpos


KERNELS = (Linear(normalize=True), Polynomial(degree=2, normalize=True), RBF(gamma=0.1))


@pytest.mark.parametrize("n", [0, 1, 37, 300])
@pytest.mark.parametrize("L", [1, 6])
def test_word_scores_match_the_numpy_reference(n, L):
    spec, buf, rng = _buffer(KERNELS, n, 16, 5, seed=n + L)
    assert cs.blas_ready(spec, 16)
    xs = rng.integers(0, 2, size=(L, 16)).astype(np.float64)
    got = _scores(xs, buf, n, spec, 5)
    want = _reference(KERNELS, xs, buf, n, 5) if n else np.zeros_like(got)
    assert np.allclose(got, want, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(want).max()))


def _per_position(xs, buf, n, spec, Y):
    """``g[i]`` by one :func:`~onlinemkl.sequence._step.position_scores` pass per position."""
    F, G = spec.codes.shape[0], spec.gptr.shape[0] - 1
    out = np.empty((xs.shape[0], F, Y))
    rows = Rows(buf.S, buf.ssq, buf.sdiag)
    for i, x in enumerate(xs):
        q = Query(x.copy(), np.empty(G), np.empty(F))
        prepare_query(q.x, spec, q.xsq, q.xdiag)
        cs.position_scores(q, rows, n, buf.B, spec, Y, out[i])
    return out


def test_word_scores_agree_with_the_per_position_pass():
    """The two passes agree on every kernel the matrix products serve; a Laplacian kernel (an L1
    distance per pair) takes the per-position pass."""
    spec, buf, rng = _buffer(KERNELS, 120, 16, 4, seed=1)
    xs = rng.integers(0, 2, size=(7, 16)).astype(np.float64)
    fast = _scores(xs, buf, 120, spec, 4)
    slow = _per_position(xs, buf, 120, spec, 4)
    assert np.allclose(fast, slow, rtol=1e-10, atol=1e-10 * np.abs(fast).max())
    lap_spec, _, _ = _buffer((Laplacian(gamma=0.1),), 1, 16, 4, seed=0)
    assert not cs.blas_ready(lap_spec, 16)


@pytest.mark.parametrize("binary", [True, False])
def test_b1_spline_word_scores_skip_the_pairs_beyond_its_reach(binary):
    """A B1-spline kernel takes the matrix-product path: a pair the products place beyond ``h``
    (with a margin over their rounding) is exactly 0, the others are summed directly as the
    per-position pass does, so the scores are that pass's up to the order of the sums, also at an
    exact duplicate, at distance exactly ``h`` and just inside it, and with real-valued rows."""
    kernels = (Linear(normalize=True), BSpline(h=2.0), RBF(gamma=0.1))
    spec, buf, rng = _buffer(kernels, 300, 16, 4, seed=2)
    if not binary:
        buf.S[:] += rng.normal(scale=0.3, size=buf.S.shape)
        for i in range(300):
            prepare_query(buf.S[i], spec, buf.ssq[i], buf.sdiag[:, i])
    assert cs.blas_ready(spec, 16)
    xs = rng.integers(0, 2, size=(6, 16)).astype(np.float64)
    xs[0] = buf.S[5]  # distance 0
    xs[1] = buf.S[7]
    xs[1, :4] = 1.0 - xs[1, :4] if binary else xs[1, :4] + 1.0  # distance exactly h = 2
    xs[2] = buf.S[9]
    xs[2, 0] += 2.0 - 1e-12  # just inside h
    fast = _scores(xs, buf, 300, spec, 4)
    slow = _per_position(xs, buf, 300, spec, 4)
    assert np.allclose(fast, slow, rtol=1e-12, atol=1e-12 * np.abs(slow).max())
    d = np.sqrt(((xs[:, None, :] - buf.S[None, :300]) ** 2).sum(-1))
    want = np.maximum(0.0, 1.0 - d / 2.0) @ buf.B[1, :300, :4]
    assert np.allclose(fast[:, 1], want, rtol=1e-12, atol=1e-12)
    assert 0.0 < (d < 2.0).mean() < 0.5  # the kernel is sparse here: most pairs were skipped
