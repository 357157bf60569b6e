"""The sequence labeller's word-at-once kernel scores (``sequence/_step.word_kernel_scores``,
matrix products) against a plain-numpy reference and against the per-position pass."""

from __future__ import annotations

import numpy as np
import pytest

from onlinemkl.sequence import _step as cs
from onlinemkl._core.kernels import prepare_query
from onlinemkl._core.state import KernelSpec
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


def test_word_scores_agree_with_the_per_position_pass():
    """A kernel the matrix products do not serve (B1-spline, Laplacian) takes the per-position pass;
    the two agree on the kernels both serve."""
    spec, buf, rng = _buffer(KERNELS, 120, 16, 4, seed=1)
    xs = rng.integers(0, 2, size=(7, 16)).astype(np.float64)
    fast = _scores(xs, buf, 120, spec, 4)
    slow_spec, slow_buf, _ = _buffer(KERNELS + (BSpline(h=4.0),), 120, 16, 4, seed=1)
    assert not cs.blas_ready(slow_spec, 16)
    assert np.array_equal(slow_buf.S, buf.S)
    slow_buf.B[:3] = buf.B
    slow = _scores(xs, slow_buf, 120, slow_spec, 4)
    # same rows, same leading class vectors: the first three kernels' scores match
    assert np.allclose(fast, slow[:, :3], rtol=1e-10, atol=1e-10 * np.abs(fast).max())
    lap_spec, _, _ = _buffer((Laplacian(gamma=0.1),), 1, 16, 4, seed=0)
    assert not cs.blas_ready(lap_spec, 16)
