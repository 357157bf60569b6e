"""Kernel rows (compiled) and kernel matrices (BLAS) against scikit-learn and plain numpy.

Every kernel kind, with and without unit-diagonal normalisation, on feature groups and on
all features; the per-row, blocked, parallel and batch paths agree within stated tolerances.
"""

import pickle

import numba
import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist
from sklearn.metrics import pairwise

import naive
from onlinemkl._core import kernels as ck
from onlinemkl._core import scores as cs
from onlinemkl._core.state import Query, Rows, Work
from onlinemkl.kernel_arrays import CompiledKernels, resolve_group_columns
from onlinemkl.kernels import (
    RBF,
    BSpline,
    Laplacian,
    Linear,
    Polynomial,
    check_kernels,
    distance_kernel,
    kernel_matrix,
    mean_distance,
)

D = 7
G1 = (0, 1, 2)
G2 = (2, 4, 6, 5)  # unsorted, non-contiguous, overlaps G1


def _sk(kernel, A, B):
    """scikit-learn's pairwise kernel for the same definition (None for BSpline)."""
    cols = naive.group_columns(kernel, A.shape[1])
    a, b = A[:, cols], B[:, cols]
    dg = len(cols)
    if isinstance(kernel, Polynomial):
        return pairwise.polynomial_kernel(a, b, degree=kernel.degree, gamma=kernel.resolved_params(dg)[2],
                                          coef0=kernel.offset)
    if isinstance(kernel, Linear):
        return pairwise.linear_kernel(a, b)
    if isinstance(kernel, RBF):
        return pairwise.rbf_kernel(a, b, gamma=kernel.resolved_params(dg)[0])
    if isinstance(kernel, Laplacian):
        return pairwise.laplacian_kernel(a, b, gamma=kernel.resolved_params(dg)[0])
    return np.maximum(0.0, 1.0 - cdist(a, b) / kernel.resolved_params(dg)[0])


def _sk_normalized(kernel, A, B):
    K = _sk(kernel, A, B)
    if not kernel.normalize:
        return K
    dx = np.array([_sk(kernel, a[None], a[None])[0, 0] for a in A])
    dz = np.array([_sk(kernel, b[None], b[None])[0, 0] for b in B])
    return K / np.sqrt(dx[:, None] * dz[None, :])


BASE = [
    Linear(),
    Linear(group=G2),
    Polynomial(degree=3, offset=0.5),
    Polynomial(degree=2, offset=0.0, scale=0.3, group=G1),
    Polynomial(degree=1, offset=2.0),
    Polynomial(degree=2, scale=None, scale_scale=2.0, group=G2),  # relative scale scale_scale / |group|
    RBF(gamma=0.2),
    RBF(group=G2),  # relative bandwidth gamma_scale / |group|
    RBF(gamma_scale=3.0, group=G1),
    Laplacian(gamma=0.15),
    Laplacian(group=G1),
    BSpline(h=4.0),
    BSpline(group=G2),  # h = sqrt(2 |group|)
]
ALL = BASE + [type(k)(**{**k.__dict__, "normalize": True}) for k in BASE]


def _ids(k):
    return repr(k).replace(" ", "")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    S = rng.normal(size=(40, D)) * 1.3
    Q = rng.normal(size=(9, D))
    return S, Q


def compiled(kernels, d=D):
    c = CompiledKernels(check_kernels(kernels))
    c.set_columns(resolve_group_columns(c.groups, d))
    return c


def buffer_of(S, c):
    """The cached per-row quantities of a support buffer (squared group norms ``[n, G]``, diagonals
    in the stored form, kernel by kernel ``[F, n]``, as the buffer holds them)."""
    n = S.shape[0]
    ssq = np.zeros((n, c.n_groups))
    sdiag = np.zeros((c.n_kernels, n))
    for i in range(n):
        xdiag = np.empty(c.n_kernels)
        ck.prepare_query(S[i], c.spec(), ssq[i], xdiag)
        sdiag[:, i] = xdiag
    return ssq, sdiag


def rows(x, S, c, parallel=False, n=None):
    ssq, sdiag = buffer_of(S, c)
    q = Query(x, np.empty(c.n_groups), np.empty(c.n_kernels))
    ck.prepare_query(x, c.spec(), q.xsq, q.xdiag)
    n = S.shape[0] if n is None else n
    out = np.full((c.n_kernels, n), np.nan)
    fn = ck.kernel_row_parallel if parallel else ck.kernel_row
    fn(q, Rows(S, ssq, sdiag), n, c.spec(), out)
    return out


def _tol(ref):
    # absolute 1e-10 on the kernel's own scale (polynomial values reach ~1e3 here)
    return 1e-10 * max(1.0, float(np.abs(ref).max()))


@pytest.mark.parametrize("kernel", ALL, ids=_ids)
def test_compiled_row_matches_sklearn(kernel, data):
    S, Q = data
    c = compiled([kernel])
    for x in Q:
        got = rows(x, S, c)[0]
        ref = _sk_normalized(kernel, x[None], S)[0]
        np.testing.assert_allclose(got, ref, rtol=0, atol=_tol(ref))
        np.testing.assert_allclose(got, naive.kernel_matrix(kernel, x[None], S)[0], rtol=0, atol=_tol(ref))


def test_all_kernels_in_one_pass_match(data):
    """Many kernels on shared groups: one pass gives every kernel's row (group reuse is not mixing groups up)."""
    S, Q = data
    c = compiled(ALL)
    assert c.n_groups == 3
    for x in Q[:3]:
        got = rows(x, S, c)
        for j, k in enumerate(ALL):
            ref = naive.kernel_matrix(k, x[None], S)[0]
            np.testing.assert_allclose(got[j], ref, rtol=0, atol=_tol(ref), err_msg=repr(k))


@pytest.mark.parametrize("kernel", ALL, ids=_ids)
def test_kernel_matrix_matches_sklearn(kernel, data):
    S, Q = data
    K = kernel_matrix(Q, S, [kernel])
    assert K.shape == (1, Q.shape[0], S.shape[0])
    ref = _sk_normalized(kernel, Q, S)
    np.testing.assert_allclose(K[0], ref, rtol=0, atol=_tol(ref))


def test_kernel_matrix_default_and_symmetric(data):
    S, _ = data
    K = kernel_matrix(S)
    assert K.shape == (5, S.shape[0], S.shape[0])
    for j, k in enumerate(check_kernels(None)):
        ref = naive.kernel_matrix(k, S, S)
        np.testing.assert_allclose(K[j], ref, rtol=0, atol=_tol(ref))


@pytest.mark.parametrize("path", ["compiled_row", "kernel_matrix"])
def test_bspline_exact_at_near_duplicate_points(path, data):
    """sqrt of the expanded squared distance |x|^2+|s|^2-2x.s would turn its ~1e-15 rounding error
    into ~1e-8; groups that carry a BSpline kernel sum the squared distance directly."""
    S, _ = data
    kernel = BSpline(h=4.0)
    c = compiled([kernel])
    rng = np.random.default_rng(5)
    Q = S[:10] + 1e-9 * rng.normal(size=(10, D))  # within 1e-8 of a stored row
    if path == "compiled_row":
        got = np.array([rows(Q[i], S, c)[0, i] for i in range(10)])
    else:
        got = np.diag(kernel_matrix(Q, S[:10], [kernel])[0])
    ref = np.diag(naive.kernel_matrix(kernel, Q, S[:10]))
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10)


def test_bspline_compiled_row_exact_at_identical_points(data):
    """An identical point gives d2 = 0 exactly in the compiled pass (same summation order as ssq)."""
    S, _ = data
    c = compiled([BSpline(h=4.0), BSpline(h=3.0, group=G2, normalize=True)])
    for i in range(0, S.shape[0], 5):
        np.testing.assert_array_equal(rows(S[i], S, c)[:, i], 1.0)


def test_rbf_and_laplacian_exact_at_duplicate_points(data):
    S, _ = data
    c = compiled([RBF(gamma=0.2), Laplacian(gamma=0.3), RBF(gamma=0.5, normalize=True)])
    for i in range(0, S.shape[0], 7):
        np.testing.assert_allclose(rows(S[i], S, c)[:, i], 1.0, rtol=0, atol=1e-12)


def test_serial_and_parallel_rows_agree():
    rng = np.random.default_rng(1)
    S = rng.normal(size=(3001, 12))
    kernels = [RBF(gamma=0.1), RBF(gamma=1.0, group=(0, 1, 2, 3)), Linear(normalize=True), Polynomial(degree=2),
               Laplacian(gamma=0.2, group=(4, 5, 6)), BSpline(h=3.0, group=(7, 8, 9, 10, 11))]
    c = compiled(kernels, d=12)
    for x in (rng.normal(size=12), S[17].copy()):
        for n in (0, 1, 5, 3001):
            a = rows(x, S, c, n=n)
            b = rows(x, S, c, parallel=True, n=n)
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


_SCORE_SETS = {
    "mixed groups": ([RBF(gamma=0.3), Linear(group=(0, 1)), Polynomial(degree=2, normalize=True)], 5),
    # the default set on one group of 16 columns: packed rows, ladders, normalised kernels
    "default d16": (None, 16),
    # seven kernels, five of them Gaussians on one group
    "seven": ([RBF(gamma_scale=s) for s in (0.1, 0.2, 1.0, 3.0, 10.0)] + [Linear(), Polynomial(degree=3)], 8),
}


@pytest.mark.parametrize("name", sorted(_SCORE_SETS))
@pytest.mark.parametrize("n, C", [(500, 4), (2 * ck.ROW_BLOCK + 13, 3), (ck.ROW_BLOCK + 5, 6), (300, 1)])
def test_kernel_scores_equal_accumulated_parallel_row(name, n, C):
    """The fused serial score pass, the parallel one and (parallel row -> accumulate_scores) all give the
    plain sum: several blocks, short tails, many outputs."""
    kernels, d = _SCORE_SETS[name]
    rng = np.random.default_rng(2)
    S = rng.normal(size=(n, d))
    c = compiled(kernels, d=d)
    F = c.n_kernels
    ssq, sdiag = buffer_of(S, c)
    coef = rng.normal(size=(n, 1))
    ypos = rng.integers(0, C, size=n)
    yneg = np.where(rng.random(n) < 0.5, -1, (ypos + 1) % C) if C > 1 else np.full(n, -1)
    x = rng.normal(size=d)
    spec, rows_ = c.spec(), Rows(S, ssq, sdiag)
    q = Query(x, np.empty(c.n_groups), np.empty(c.n_kernels))
    ck.prepare_query(x, spec, q.xsq, q.xdiag)
    g1 = np.empty((F, C))
    cs.kernel_scores(q, rows_, n, spec, coef, ypos, yneg, g1)
    K = rows(x, S, c, parallel=True)
    g2 = np.empty((F, C))
    cs.accumulate_scores(K, n, coef, ypos, yneg, g2)
    g3 = np.full((F, C), np.nan)  # the fused pass over threads: per-block slots added in block order
    cs.kernel_scores_parallel(q, rows_, n, spec, coef, ypos, yneg, g3)
    ref = np.zeros((F, C))
    for i in range(n):
        ref[:, ypos[i]] += coef[i, 0] * K[:, i]
        if yneg[i] >= 0:
            ref[:, yneg[i]] -= coef[i, 0] * K[:, i]
    for g in (g1, g2, g3):
        np.testing.assert_allclose(g, ref, rtol=1e-11, atol=1e-11 * np.abs(coef).sum())


def test_relative_bandwidths_resolve_on_group_size():
    assert RBF(gamma_scale=2.0).resolved_params(8)[0] == 0.25
    assert Laplacian().resolved_params(4)[0] == 0.25
    assert BSpline(h_scale=2.0).resolved_params(8)[0] == pytest.approx(8.0)
    assert Polynomial(scale=None, scale_scale=2.0).resolved_params(8) == (2.0, 1.0, 0.25)
    assert Polynomial(scale=0.3, scale_scale=2.0).resolved_params(8)[2] == 0.3  # an absolute scale wins
    c = compiled([RBF(group=(0, 1)), RBF()], d=D)
    assert c.params[0, 0] == 0.5 and c.params[1, 0] == pytest.approx(1.0 / D)


def test_relative_bandwidths_frozen_per_group_once_it_has_columns():
    """A group's parameters are resolved when it first has columns and kept when more join it."""
    names = {"a": 0, "b": 1}
    c = CompiledKernels(check_kernels([RBF(), Laplacian(group=("c", "d")), BSpline(group=("c",))]))

    def grow(n):
        c.set_columns(resolve_group_columns(c.groups, n, names.get))

    grow(2)
    assert c.gfrozen.tolist() == [True, False, False] and not c._resolved
    assert c.params[0, 0] == 0.5
    names["c"] = 2
    grow(3)
    assert c.gfrozen.tolist() == [True, True, True] and c._resolved
    assert c.params[0, 0] == 0.5 and c.params[1, 0] == 1.0 and c.params[2, 0] == pytest.approx(np.sqrt(2.0))
    names["d"] = 3
    grow(4)
    assert c.params[0, 0] == 0.5 and c.params[1, 0] == 1.0  # 'd' joined ('c', 'd'): gamma stays 1/1
    assert c.granges.tolist() == [[0, 4], [2, 4], [2, 3]]


def test_single_resolved_flag_restores_per_group_state():
    """The learners save one flag; restored after the columns, it gives back the per-group state."""
    names = {"a": 0}
    c = CompiledKernels(check_kernels([RBF(), RBF(group=("z",))]))
    c.set_columns(resolve_group_columns(c.groups, 1, names.get))
    saved = (c._resolved, c.granges.copy(), c.gptr.copy())
    d = CompiledKernels(c.kernels)
    d.granges, d.gptr = saved[1], saved[2]
    d._resolved = saved[0]
    assert d.gfrozen.tolist() == [True, False]
    d._resolved = True
    assert d.gfrozen.tolist() == [True, True]


def test_group_flags_mark_l1_and_direct_distance_groups():
    c = compiled([RBF(), Laplacian(group=G1), BSpline(group=G2), Linear(group=G2), BSpline(group=G1)])
    expected = [0, ck.GROUP_L1 | ck.GROUP_SQDIST, ck.GROUP_SQDIST | ck.GROUP_DOT]
    assert c.gl1.tolist() == expected
    d = pickle.loads(pickle.dumps(c))
    assert d.gl1.tolist() == c.gl1.tolist() and d.gfrozen.tolist() == c.gfrozen.tolist()
    np.testing.assert_array_equal(d.params, c.params)


def test_bspline_group_row_quantities_are_direct_and_agree_across_paths(data):
    """A BSpline group's squared distance is the direct sum, the same in the per-row, blocked and batch paths,
    with (G2: a polynomial kernel reads them) or without (G1) the dot products; the other kernels on the
    group keep their values."""
    S, Q = data
    kernels = [BSpline(h=4.0, group=G2), RBF(gamma=0.3, group=G2), Polynomial(degree=2, group=G2, normalize=True),
               BSpline(h=3.0, group=G1, normalize=True), RBF(gamma=0.2, group=G1)]
    c = compiled(kernels)
    assert c.gl1.tolist() == [ck.GROUP_SQDIST | ck.GROUP_DOT, ck.GROUP_SQDIST]
    ssq, _ = buffer_of(S, c)
    codes, params, kgroup, granges, gptr, gl1 = c.arrays()
    n = S.shape[0]
    for x in Q:
        xsq = np.empty(2)
        ck.group_sqnorms(x, granges, gptr, xsq)
        dots, sqds, l1s = np.empty(2), np.empty(2), np.empty(2)
        per_row = np.empty((3, 2, n))
        for i in range(n):
            ck.row_quantities(Query(x, xsq, np.empty(0)), Rows(S, ssq, np.empty((0, 0))), i, c.spec(), dots, sqds,
                              l1s)
            per_row[:, :, i] = dots, sqds, l1s
        for g, cols in enumerate((list(G2), list(G1))):
            direct = np.array([np.sum((x[cols] - S[i, cols]) ** 2) for i in range(n)])
            np.testing.assert_allclose(per_row[1, g], direct, rtol=1e-14, atol=0)
        # rounding is relative to the terms' magnitudes (a sum that cancels has no relative bound)
        scale = np.abs(S[:, list(G2)]) @ np.abs(x[list(G2)])
        assert np.all(np.abs(per_row[0, 0] - S[:, list(G2)] @ x[list(G2)]) <= 1e-14 * scale)
        blocked = np.empty((3, 2, n))
        work = Work(blocked[0], blocked[1], blocked[2], np.empty(n), np.empty(n, dtype=np.int64))
        ck.block_quantities(Query(x, xsq, np.empty(0)), Rows(S, ssq, np.empty((0, 0))), 0, n, c.spec(), work)
        np.testing.assert_allclose(blocked[1], per_row[1], rtol=1e-14, atol=0)  # summed directly, alike
        l1 = (c.spec().gl1 & ck.GROUP_L1) != 0  # the L1 distances are written only where a kernel reads them
        np.testing.assert_allclose(blocked[2][l1], per_row[2][l1], rtol=1e-14, atol=0)
        assert np.all(np.abs(blocked[0, 0] - per_row[0, 0]) <= 1e-14 * scale)
    K = kernel_matrix(Q, S, kernels)
    for j, k in enumerate(kernels):
        ref = _sk_normalized(k, Q, S)
        np.testing.assert_allclose(K[j], ref, rtol=0, atol=_tol(ref))
        np.testing.assert_allclose(rows(Q[0], S, c)[j], ref[0], rtol=0, atol=_tol(ref))


# -- the OBSCURE papers' distance kernels --------------------------------------------------------


def test_mean_distance_is_mean_pairwise_distance():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 4))
    assert mean_distance(X) == pytest.approx(pdist(X).mean(), rel=1e-12)
    assert mean_distance(X, "sqeuclidean") == pytest.approx(pdist(X, "sqeuclidean").mean(), rel=1e-12)
    assert mean_distance(X, "l1") == pytest.approx(pdist(X, "cityblock").mean(), rel=1e-12)
    # subsampled: a mean over a sample, still close
    Xb = rng.normal(size=(3000, 2))
    assert mean_distance(Xb, max_samples=500) == pytest.approx(pdist(Xb[:1000]).mean(), rel=0.1)
    with pytest.raises(ValueError, match="metric"):
        mean_distance(X, "cosine")
    with pytest.raises(ValueError, match="2 rows"):
        mean_distance(X[:1])


def test_distance_kernel_with_gamma():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3))
    Dm = cdist(X, X)
    gamma = mean_distance(X)
    np.testing.assert_allclose(distance_kernel(Dm, gamma), np.exp(-Dm / gamma), rtol=1e-14)
    # the sqeuclidean variant is the RBF kernel with gamma = 1 / mean squared distance (Pendigits setup)
    g2 = mean_distance(X, "sqeuclidean")
    np.testing.assert_allclose(distance_kernel(cdist(X, X, "sqeuclidean"), g2),
                               kernel_matrix(X, X, [RBF(gamma=1.0 / g2)])[0], rtol=0, atol=1e-12)


def test_distance_kernel_default_gamma_is_mean_pairwise_distance():
    X = np.array([[0.0], [1.0], [3.0]])
    Dm = cdist(X, X)
    np.testing.assert_allclose(distance_kernel(Dm), np.exp(-Dm / mean_distance(X)), rtol=1e-12)


def test_distance_kernel_rejects_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        distance_kernel(np.array([[0.0, -1.0], [-1.0, 0.0]]))
    with pytest.raises(ValueError, match="finite"):
        distance_kernel(np.array([[0.0, np.nan], [np.nan, 0.0]]))
    with pytest.raises(ValueError, match="gamma"):
        distance_kernel(np.zeros((2, 2)))  # mean 0: no bandwidth
    with pytest.raises(ValueError, match="gamma"):
        distance_kernel(np.ones((2, 2)), gamma=-1.0)


# -- invalid parameters ---------------------------------------------------------------------------


@pytest.mark.parametrize("make, name", [
    (lambda: RBF(gamma=-1.0), "gamma"),
    (lambda: RBF(gamma=0.0), "gamma"),
    (lambda: RBF(gamma=float("inf")), "gamma"),
    (lambda: RBF(gamma=float("nan")), "gamma"),
    (lambda: RBF(gamma="wide"), "gamma"),
    (lambda: RBF(gamma=True), "gamma"),
    (lambda: RBF(gamma_scale=0), "gamma_scale"),
    (lambda: Laplacian(gamma=-0.5), "gamma"),
    (lambda: Polynomial(degree=0), "degree"),
    (lambda: Polynomial(degree=2.5), "degree"),
    (lambda: Polynomial(degree=True), "degree"),
    (lambda: Polynomial(degree=33), "degree"),
    (lambda: Polynomial(offset=-1.0), "offset"),
    (lambda: Polynomial(offset=float("nan")), "offset"),
    (lambda: Polynomial(scale=0.0), "scale"),
    (lambda: Polynomial(scale=-1.0), "scale"),
    (lambda: Polynomial(scale=None, scale_scale=0.0), "scale_scale"),
    (lambda: Polynomial(scale_scale=float("inf")), "scale_scale"),
    (lambda: BSpline(h=0.0), "h"),
    (lambda: BSpline(h=-2.0), "h"),
    (lambda: BSpline(h_scale=-1.0), "h_scale"),
    (lambda: Linear(group="abc"), "group"),
    (lambda: Linear(group=()), "group"),
    (lambda: Linear(group=(0, 0)), "group"),
    (lambda: Linear(group=5), "group"),
])
def test_invalid_kernel_parameters_name_the_parameter(make, name):
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}="):
        make()


def test_invalid_kernel_lists_and_groups():
    with pytest.raises(ValueError, match="kernels"):
        check_kernels(())
    with pytest.raises(TypeError, match=r"kernels\[1\]"):
        check_kernels([RBF(), "rbf"])
    with pytest.raises(TypeError, match="kernels"):
        check_kernels(3)
    X = np.zeros((3, 4))
    with pytest.raises(ValueError, match="out of range"):
        kernel_matrix(X, kernels=[Linear(group=(1, 4))])
    with pytest.raises(ValueError, match="column index"):
        kernel_matrix(X, kernels=[Linear(group=("a",))])
    with pytest.raises(ValueError, match="features"):
        kernel_matrix(X, np.zeros((3, 5)), kernels=[Linear()])
    with pytest.raises(ValueError, match="NaN"):
        kernel_matrix(np.array([[np.nan, 1.0]]), kernels=[Linear()])
    with pytest.raises(ValueError, match="2-D"):
        kernel_matrix(np.zeros(3), kernels=[Linear()])


# -- the shared exponential ---------------------------------------------------------------------


def _exp_neg_block(a):
    out = np.full((3, a.shape[0] + 1), -1.0)
    ck.exp_neg_block(a, a.shape[0], out, 1, np.empty(a.shape[0], dtype=np.int64))
    assert np.all(out[0] == -1.0) and np.all(out[2] == -1.0) and out[1, -1] == -1.0  # only row 1's first len(a)
    return out[1, :a.shape[0]].copy()


def test_exp_neg_block_within_one_ulp_of_libm_and_zero_below_the_floor():
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.random(200_000) * 708.0, -rng.random(50_000) * 1e-3,
                        [0.0, -0.0, -1e-300, -np.log(2) / 2, -np.log(2), -700.0, ck.EXP_FLOOR]])
    out = _exp_neg_block(x)
    ref = np.exp(x)
    ulps = np.abs(out - ref) / np.spacing(ref)
    assert ulps.max() <= 1.0, ulps.max()
    assert ulps.mean() < 0.2
    # the scalar form (the per-row path: libm) agrees to the same ulp
    for v in x[::997]:
        assert abs(ck.exp_neg(v) - out[x == v][0]) <= np.spacing(np.exp(v))
    below = np.array([ck.EXP_FLOOR - 1e-9, -709.0, -745.0, -1e6, -np.inf])
    assert np.all(_exp_neg_block(below) == 0.0)
    assert all(ck.exp_neg(v) == 0.0 for v in below)
    # positive arguments are treated as 0 (kernels never pass one)
    assert ck.exp_neg(0.5) == 1.0 and _exp_neg_block(np.array([0.5]))[0] == 1.0


@pytest.mark.parametrize("m", [0, 1, 13, 512])
@pytest.mark.parametrize("C", [1, 2, 3, 5, 10])
@pytest.mark.parametrize("F", [1, 5, 7, 10])
def test_accumulate_block_equals_the_plain_sum(m, C, F):
    """The dense accumulation (tiles of kernels by outputs, or for one output a weight row and a
    dot product per kernel) against numpy: kernel and output counts that fill no tile, one, or
    leave a remainder."""
    rng = np.random.default_rng(10 * m + C + 1000 * F)
    n, i0 = 1200, 37
    coef = rng.normal(size=(n, 1)) * np.exp(rng.normal(size=(n, 1)) * 2)
    coef[::11] = 0.0
    ypos = rng.integers(0, C, size=n)
    yneg = np.where(rng.random(n) < 0.3, -1, (ypos + rng.integers(1, max(C, 2), size=n)) % max(C, 2))
    yneg[yneg >= C] = -1
    ypos[40:70] = 0  # a run of one class
    kv = rng.normal(size=(F, m + 2))
    g = np.full((F, C), 0.5)
    cs.accumulate_block(kv, m, coef, i0, ypos, yneg, np.empty(512), g)
    g_scatter = np.full((F, C), 0.5)
    cs.scatter_block(kv, m, coef, i0, ypos, yneg, g_scatter)
    s = (ypos[i0:i0 + m, None] == np.arange(C)).astype(float) - (yneg[i0:i0 + m, None] == np.arange(C))
    terms = np.abs(kv[:, :m]) @ np.abs(coef[i0:i0 + m] * s)
    expect = 0.5 + kv[:, :m] @ (coef[i0:i0 + m] * s)
    assert np.all(np.abs(g - expect) <= 1e-13 * (terms + 0.5))
    assert np.all(np.abs(g_scatter - expect) <= 1e-13 * (terms + 0.5))


# -- RBF ladders: narrower Gaussians as powers of a wider one's values -----------------------------


def _ladders(kernels, d=16):
    c = CompiledKernels(check_kernels(kernels))
    c.set_columns(resolve_group_columns(c.groups, d))
    return [(int(c.params[j, ck.P_LADDER_K]), int(c.params[j, ck.P_LADDER_BASE])) for j in range(c.n_kernels)]


def test_ladders_found_only_where_they_are_exact():
    # the default set: gamma_scale 0.1, 1, 10 -> the two narrower ones from the widest (0.1/16 * 10
    # is not 1/16 in floating point: the 8-ulp tolerance matters), each from a direct base
    assert _ladders(None)[:3] == [(0, 0), (10, 0), (100, 0)]
    assert _ladders(None, d=7)[:3] == [(0, 0), (10, 0), (100, 0)]
    # a base must come first, be on the same group, and be computed directly; k in LADDER_KS
    assert _ladders([RBF(gamma=1.0), RBF(gamma=0.5)]) == [(0, 0), (0, 0)]
    assert _ladders([RBF(gamma=0.5), RBF(gamma=1.0, group=(0, 1))]) == [(0, 0), (0, 0)]
    assert _ladders([RBF(gamma=0.5), RBF(gamma=1.25)]) == [(0, 0), (0, 0)]  # ratio 2.5
    assert _ladders([RBF(gamma=0.5), RBF(gamma=0.5 * 129)]) == [(0, 0), (0, 0)]
    assert _ladders([RBF(gamma=0.5), RBF(gamma=0.5 * 128)]) == [(0, 0), (128, 0)]
    assert _ladders([RBF(gamma=0.5), RBF(gamma=0.5 * 17)]) == [(0, 0), (0, 0)]  # not in LADDER_KS
    assert _ladders([RBF(gamma=1e-300), RBF(gamma=1e300)]) == [(0, 0), (0, 0)]
    assert _ladders([RBF(gamma=0.5), RBF(gamma=0.5 * (3 + 1e-9))]) == [(0, 0), (0, 0)]
    # the smallest k wins, and a ladder kernel is no base: 0.2 = 0.1 * 2, 0.4 = 0.2 * 2 but 0.2 is a ladder
    assert _ladders([RBF(gamma=0.1), RBF(gamma=0.2), RBF(gamma=0.4), Laplacian(gamma=0.2)]) == \
        [(0, 0), (2, 0), (4, 0), (0, 0)]
    assert _ladders([RBF(gamma=0.1), RBF(gamma=0.3), RBF(gamma=0.6)]) == [(0, 0), (3, 0), (6, 0)]


@numba.njit(cache=False)
def _ladder_scalar(v, k, lo, out):
    for i in range(v.shape[0]):
        out[i] = ck.ladder_value(v[i], k, lo)


@pytest.mark.parametrize("k", [2, 3, 5, 10, 16, 100, 127, 128])
def test_ladder_block_equals_scalar_ladder_and_exp(k):
    """The blocked passes give the scalar chain's numbers; both are exp(-k g s) to ~k ulps, 0 below the floor."""
    rng = np.random.default_rng(k)
    s = np.concatenate([rng.exponential(3.0, size=500) / k, [0.0, ck.EXP_FLOOR / -k * 0.999, 708.5 / k, 800.0 / k]])
    base = _exp_neg_block(-s)
    lo = np.exp(ck.EXP_FLOOR / k)
    rows = np.full((3, s.size + 1), -1.0)
    rows[0, :s.size] = base
    ck.ladder_block(rows, 0, 2, s.size, k, lo, np.empty(s.size))
    blocked = rows[2]
    scalar = np.empty_like(s)
    _ladder_scalar(base, k, lo, scalar)
    np.testing.assert_allclose(blocked[:s.size], scalar, rtol=4e-16 * k, atol=0)
    assert np.all(rows[1] == -1.0) and blocked[-1] == -1.0  # nothing outside the block written
    assert np.array_equal(rows[0, :s.size], base)
    exact = np.exp(-np.longdouble(k) * s.astype(np.longdouble))  # k s rounded in double costs up to 8e-14
    live = base >= lo
    assert np.all(np.abs(scalar[live] - exact[live]) <= (k + 2 * np.log2(k) + 4) * 2.0 ** -52 * exact[live])
    assert np.all(scalar[~live] == 0.0) and np.all(exact[~live] < 1e-300)
    assert scalar[s.size - 4] == 1.0  # distance 0: exactly 1


def test_ladder_kernel_rows_match_sklearn_and_the_direct_exponential():
    """Rows with ladders (default set) against sklearn's rbf_kernel: the same agreement the direct path has."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 16))
    Z = rng.normal(size=(40, 16))
    K = kernel_matrix(X, Z)
    c = CompiledKernels(check_kernels(None))
    c.set_columns(resolve_group_columns(c.groups, 16))
    for j in range(3):
        R = pairwise.rbf_kernel(X, Z, gamma=c.params[j, 0])
        np.testing.assert_allclose(K[j], R, rtol=1e-13, atol=1e-300)


def test_ladder_kernels_in_the_symmetric_training_matrices():
    """fit's own kernel matrices (one symmetric product, upper triangle mirrored) with ladders
    equal the general path and scikit-learn."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(70, 16))
    K = kernel_matrix(X)  # Z defaults to X: the symmetric path
    K2 = kernel_matrix(X, X.copy())
    np.testing.assert_allclose(K, K2, rtol=1e-13, atol=1e-15)
    assert all(np.array_equal(K[j], K[j].T) for j in range(K.shape[0]))
    c = CompiledKernels(check_kernels(None))
    c.set_columns(resolve_group_columns(c.groups, 16))
    for j in (1, 2):  # the ladder kernels
        np.testing.assert_allclose(K[j], pairwise.rbf_kernel(X, gamma=c.params[j, 0]), rtol=1e-13, atol=1e-300)


# -- normalisation by stored reciprocal roots ---------------------------------------------------


def test_stored_diag_and_normalise_within_three_ulps_of_the_division():
    """A normalised kernel's stored diagonal is 1/sqrt(K(x,x)) (0 where K(x,x) is not positive),
    and normalise multiplies by the two roots: within 3 ulps of v / sqrt(K(x,x) K(z,z))."""
    rng = np.random.default_rng(5)
    raw = np.exp(rng.normal(size=(2, 100_000)) * 20)
    v = rng.normal(size=100_000) * np.sqrt(raw[0] * raw[1])
    rx = np.array([ck.stored_diag(a, 1.0) for a in raw[0, :2000]])
    rs = np.array([ck.stored_diag(a, 1.0) for a in raw[1, :2000]])
    assert np.array_equal(rx, 1.0 / np.sqrt(raw[0, :2000]))
    got = np.array([ck.normalise(v[i], rx[i], rs[i]) for i in range(2000)])
    want = v[:2000] / np.sqrt(raw[0, :2000] * raw[1, :2000])
    assert np.max(np.abs(got - want) / np.spacing(np.abs(want))) <= 3.0
    for bad in (0.0, -1.0, np.nan, -np.inf):
        assert ck.stored_diag(bad, 1.0) == 0.0  # normalised value 0, effective diagonal 0
        assert ck.effective_diag(ck.stored_diag(bad, 1.0), 1.0) == 0.0
    assert ck.stored_diag(4.0, 1.0) == 0.5 and ck.effective_diag(0.5, 1.0) == 1.0
    assert ck.stored_diag(4.0, 0.0) == 4.0  # unnormalised kernels keep the raw value


def test_stored_diagonals_of_a_buffer_are_reciprocal_roots_for_normalised_kernels():
    rng = np.random.default_rng(6)
    S = rng.normal(size=(20, 6))
    c = compiled([Linear(normalize=True), Polynomial(degree=2), Polynomial(degree=3, normalize=True)], d=6)
    ssq, sdiag = buffer_of(S, c)
    sq = (S ** 2).sum(axis=1)
    np.testing.assert_allclose(sdiag[0], 1.0 / np.sqrt(sq), rtol=1e-15)
    np.testing.assert_allclose(sdiag[1], (sq + 1.0) ** 2, rtol=1e-15)
    np.testing.assert_allclose(sdiag[2], (sq + 1.0) ** -1.5, rtol=1e-14)
