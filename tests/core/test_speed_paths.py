"""The fast paths give the same numbers as the plain ones (no timing here: see benchmarks/).

* blocked kernel rows / fused scores == the row-at-a-time reference (to 1e-11 relative: the
  sums run in another order, the exponential is a polynomial in one and libm's in the other);
* serial kernel row == parallel kernel row (the same tolerance);
* batch prediction (BLAS blocks: ``scores_many``, ``decision_function``,
  river ``predict_many`` / ``predict_proba_many``) == the per-example loop (to 1e-12);
* ``fit`` with precomputed kernel matrices == ``fit`` through per-example steps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from river import datasets, preprocessing

from onlinemkl import OBSCUREClassifier, _config
from onlinemkl.obscure import sklearn as _ob
from onlinemkl._core import kernels as ck
from onlinemkl._core import scores as cs
from onlinemkl._core.state import Query, Rows
from onlinemkl.kernel_arrays import CompiledKernels, resolve_group_columns
from onlinemkl.kernels import RBF, BSpline, Laplacian, Linear, Polynomial
from onlinemkl.river import OBSCUREClassifier as RiverOBSCURE
from _helpers import engine_of

KERNEL_SETS = {
    "default": None,
    "mixed_groups": (RBF(gamma=0.3, group=(0, 1, 2)), Laplacian(gamma=0.2, group=(0, 1, 2)),
                     Linear(normalize=True), Polynomial(degree=3, normalize=True, group=(3, 5, 6)),
                     BSpline(h=2.0, group=(4, 6)), RBF(gamma_scale=2.0)),
    # the batch path's other branches: unnormalised dot kernels, a degree-4 polynomial (generic
    # loop), one dot kernel alone on a group, two RBFs beside a B-spline (stored distances)
    "more": (Linear(), Polynomial(degree=4, offset=0.5), Laplacian(gamma=0.1),
             Polynomial(degree=2, group=(0, 1)),
             RBF(gamma=0.5, group=(2, 3, 4)), RBF(gamma=0.05, group=(2, 3, 4)), BSpline(h=3.0, group=(2, 3, 4)),
             RBF(gamma=1.5, group=(2, 3, 4))),  # a ladder (k = 3 on RBF(0.5)) beside stored distances
}


#: Tolerance of a blocked kernel value against the row-at-a-time reference: a few ulps of the
#: value, plus the rounding of the dot products (summed in another order) carried through
#: ``exp(-gamma d2)`` and the polynomial powers.
ROW_RTOL, ROW_ATOL = 1e-11, 1e-12


def _setup(kernels, n, d=7, seed=0):
    from onlinemkl.kernels import check_kernels

    ckern = CompiledKernels(check_kernels(kernels))
    ckern.set_columns(resolve_group_columns(ckern.groups, d))
    spec = ckern.spec()
    rng = np.random.default_rng(seed)
    S = rng.normal(size=(n + 3, d))
    G, F = ckern.n_groups, ckern.n_kernels
    ssq = np.empty((n + 3, G))
    sdiag = np.empty((F, n + 3))  # kernel by kernel, as the buffer holds them
    for i in range(n + 3):
        xdiag = np.empty(F)
        ck.prepare_query(S[i].copy(), spec, ssq[i], xdiag)
        sdiag[:, i] = xdiag
    x = rng.normal(size=d)
    q = Query(x, np.empty(G), np.empty(F))
    ck.prepare_query(x, spec, q.xsq, q.xdiag)
    return q, Rows(S, ssq, sdiag), spec


def _reference_row(q, rows, n, spec):
    """The row-at-a-time loop (one row's quantities, then every kernel): the reference."""
    codes, params, kgroup = spec.codes, spec.params, spec.kgroup
    G, F = spec.gptr.shape[0] - 1, codes.shape[0]
    out = np.empty((F, n))
    dots, sqds, l1s = np.empty(G), np.empty(G), np.empty(G)
    for i in range(n):
        ck.row_quantities(q, rows, i, spec, dots, sqds, l1s)
        for j in range(F):
            g = kgroup[j]
            v = ck.kernel_value(codes[j], params[j], dots[g], sqds[g], l1s[g])
            if params[j, 3] != 0.0:
                v = ck.normalise(v, q.xdiag[j], rows.sdiag[j, i])
            out[j, i] = v
    return out


@pytest.mark.parametrize("kset", list(KERNEL_SETS))
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 63, 64, 65, 203, 2 * ck.ROW_BLOCK + 77])
def test_blocked_row_equals_reference_and_parallel(kset, n):
    q, rows, spec = _setup(KERNEL_SETS[kset], n)
    ref = _reference_row(q, rows, n, spec)
    F = spec.codes.shape[0]
    serial = np.full((F, n + 3), -7.0)
    parallel = np.full((F, n + 3), -7.0)
    ck.kernel_row(q, rows, n, spec, serial)
    ck.kernel_row_parallel(q, rows, n, spec, parallel)
    np.testing.assert_allclose(serial[:, :n], ref, rtol=ROW_RTOL, atol=ROW_ATOL)
    np.testing.assert_allclose(parallel[:, :n], ref, rtol=ROW_RTOL, atol=ROW_ATOL)
    assert np.all(serial[:, n:] == -7.0) and np.all(parallel[:, n:] == -7.0)  # nothing past row n written


@pytest.mark.parametrize("kset", list(KERNEL_SETS))
@pytest.mark.parametrize("n_coef", [1, "F"])
@pytest.mark.parametrize("n", [0, 5, 130, 2 * ck.ROW_BLOCK + 77])
# dense accumulation up to cs.DENSE_OUTPUTS outputs, the scatter above
@pytest.mark.parametrize("C", [2, 6, 13])
def test_fused_scores_equal_accumulated_reference(kset, n_coef, n, C):
    q, rows, spec = _setup(KERNEL_SETS[kset], n, seed=3)
    F = spec.codes.shape[0]
    rng = np.random.default_rng(5)
    coef = rng.normal(size=(n + 3, F if n_coef == "F" else 1))
    ypos = rng.integers(0, C, size=n + 3)
    yneg = np.where(rng.random(n + 3) < 0.3, -1, (ypos + rng.integers(1, C, size=n + 3)) % C)
    # a run of the same class
    ypos[: min(n, 20)] = 1
    yneg[: min(n, 20)] = 0
    g_fused = np.full((F, C), 9.0)
    cs.kernel_scores(q, rows, n, spec, coef, ypos, yneg, g_fused)
    K = _reference_row(q, rows, n, spec)
    g_ref = np.full((F, C), 9.0)
    cs.accumulate_scores(np.ascontiguousarray(K), n, coef, ypos, yneg, g_ref)
    # both equal the plain sum  sum_i coef_i K_j(x, s_i) ([ypos_i = c] - [yneg_i = c])
    Y = (ypos[:n, None] == np.arange(C)).astype(float) - (yneg[:n, None] == np.arange(C)).astype(float)
    W = coef[:n] if n_coef == "F" else np.repeat(coef[:n], F, axis=1)
    expect = np.einsum("jn,nj,nc->jc", K[:, :n], W, Y)
    scale = np.einsum("jn,nj,nc->jc", np.abs(K[:, :n]), np.abs(W), np.abs(Y)) + 1e-300
    assert np.all(np.abs(g_fused - expect) <= 1e-11 * scale)
    assert np.all(np.abs(g_ref - expect) <= 1e-11 * scale)


def _blobs(n=300, d=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=n)
    X = rng.normal(size=(n, d)) + y[:, None] * 0.8
    return X, y


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("budget", [None, 40])
def test_decision_function_equals_per_example_scores(classes, budget):
    X, y = _blobs(classes=classes)
    clf = OBSCUREClassifier(budget=budget, switch_after=100, random_state=0).partial_fit(
        X, y, classes=np.arange(classes))
    eng = engine_of(clf)
    batch = eng.scores_many(X, block=64)  # several blocks
    loop = np.array([eng.scores_one(np.ascontiguousarray(r)) for r in X])
    np.testing.assert_allclose(batch, loop, rtol=1e-12, atol=1e-12)
    df = clf.decision_function(X)
    np.testing.assert_allclose(df, loop[:, 0] if classes == 2 else loop, rtol=1e-12, atol=1e-12)


def test_serial_and_parallel_learn_identical(monkeypatch):
    X, y = _blobs(n=250, classes=3, seed=4)
    out = []
    for threshold in (10**12, 0):
        monkeypatch.setattr(_config, "PARALLEL_MIN_ROWS", threshold)
        clf = OBSCUREClassifier(switch_after=120, random_state=0).partial_fit(X, y, classes=[0, 1, 2])
        b = engine_of(clf).buf
        out.append((engine_of(clf).theta_sq.copy(), b.coef.copy(), engine_of(clf).fstate.copy()))
    for a, b in zip(*out):  # the same sums in the same block order; compiled apart, so within rounding
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _river_stream(name, n):
    import itertools

    ds = getattr(datasets, name)()
    return list(itertools.islice(iter(ds), n))


@pytest.mark.parametrize("name,loss", [("Phishing", "multiclass_hinge"), ("Phishing", "hinge"),
                                       ("ImageSegments", "multiclass_hinge")])
def test_river_predict_many_equals_predict_one(name, loss):
    data = _river_stream(name, 400)
    model = preprocessing.StandardScaler() | RiverOBSCURE(loss=loss, budget=150, switch_after=200)
    for x, y in data[:300]:
        model.learn_one(x, bool(y) if loss == "hinge" else y)
    X = pd.DataFrame([x for x, _ in data[300:]])
    many = model.predict_many(X)
    one = [model.predict_one(x) for x, _ in data[300:]]
    assert list(many) == one
    pm = model.predict_proba_many(X)
    for k, (x, _) in enumerate(data[300:]):
        p1 = model.predict_proba_one(x)
        for label, v in p1.items():
            assert abs(pm.iloc[k][label] - v) <= 1e-12
    assert list(pm.index) == list(X.index)


def test_river_predict_many_unfitted_and_unknown_columns():
    model = RiverOBSCURE()
    X = pd.DataFrame({"a": [1.0, 2.0]})
    assert list(model.predict_many(X)) == [None, None]
    model.learn_one({"a": 1.0}, "u")
    model.learn_one({"a": -1.0}, "v")
    # an unseen column is ignored, a missing one reads 0, as predict_one does
    X = pd.DataFrame({"a": [1.0, -1.0], "zzz": [5.0, 5.0]})
    assert list(model.predict_many(X)) == [model.predict_one({"a": 1.0, "zzz": 5.0}),
                                           model.predict_one({"a": -1.0})]
    with pytest.raises(ValueError, match="'a'"):
        model.predict_many(pd.DataFrame({"a": [np.nan]}))


def test_river_row_fast_path_same_rules():
    """The adapter's fast row builder keeps the feature map's rules: bad values are rejected
    before any column is added, ints and bools read as floats."""
    model = RiverOBSCURE()
    model.learn_one({"a": 1, "b": True, "c": 0.5}, "u")
    assert model._row({"a": 2, "b": False, "c": np.float64(1.5)}, grow=False).tolist() == [2.0, 0.0, 1.5]
    n = len(model._features)
    for bad in (float("inf"), float("nan"), "x"):
        with pytest.raises((ValueError, TypeError)):
            model.learn_one({"new": 1.0, "a": bad}, "u")
        assert len(model._features) == n
        assert engine_of(model).n_features == n


def test_fit_precomputed_equals_fit_in_smallest_blocks(monkeypatch):
    """Full kernel matrices and the bounded blocks (cache 0: chunks of MIN_CHUNK) learn the same model."""
    X, y = _blobs(n=200, classes=3, seed=7)
    fast = OBSCUREClassifier(random_state=1, stage1_epochs=2, stage2_epochs=2).fit(X, y)
    monkeypatch.setattr(_ob, "KERNEL_CACHE_BYTES", 0)
    slow = OBSCUREClassifier(random_state=1, stage1_epochs=2, stage2_epochs=2).fit(X, y)
    np.testing.assert_allclose(engine_of(fast).theta_sq, engine_of(slow).theta_sq, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fast.decision_function(X), slow.decision_function(X), rtol=1e-9, atol=1e-10)
    assert fast.n_support_ == slow.n_support_


@pytest.mark.parametrize("kset", list(KERNEL_SETS))
def test_scores_many_equals_scores_one_mixed_kernels(kset):
    """The BLAS + vectorised-exp batch path on every kernel kind, several and
    non-contiguous feature groups, blocks of a few rows."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(260, 7))
    y = (X[:, 0] + X[:, 4] > 0).astype(int) + (X[:, 6] > 0.8).astype(int)
    clf = OBSCUREClassifier(kernels=KERNEL_SETS[kset], switch_after=100).partial_fit(X, y, classes=[0, 1, 2])
    eng = engine_of(clf)
    # Fresh queries: at a query equal to a stored row the squared distance is 0 up to the
    # rounding of |x|^2 + |s|^2 - 2 x.s, and the B-spline's sqrt magnifies that (1e-16 -> 1e-8)
    # in both paths alike; that is the formula's conditioning, not a batch/loop difference.
    Q = rng.normal(size=(90, 7))
    loop = np.array([eng.scores_one(np.ascontiguousarray(r)) for r in Q])
    for block in (1, 7, 4096):
        np.testing.assert_allclose(eng.scores_many(Q, block=block), loop, rtol=1e-12, atol=1e-12)


def test_block_kernels_symmetric_equals_general():
    """``block_kernels(X, X)`` (symmetric product, half computed and mirrored) equals the
    general path on a copy of X, and the per-example kernel row."""
    from onlinemkl.kernel_arrays import block_kernels
    from onlinemkl.kernels import check_kernels

    rng = np.random.default_rng(2)
    X = rng.normal(size=(70, 7))
    ckern = CompiledKernels(check_kernels(KERNEL_SETS["mixed_groups"]))
    ckern.set_columns(resolve_group_columns(ckern.groups, 7))
    K_sym = block_kernels(X, X, ckern)
    K_gen = block_kernels(X, X.copy(), ckern)
    np.testing.assert_allclose(K_sym, K_gen, rtol=1e-12, atol=1e-13)
    for j in range(K_sym.shape[0]):
        np.testing.assert_array_equal(K_sym[j], K_sym[j].T)
    G, F = ckern.n_groups, ckern.n_kernels
    ssq = np.empty((70, G))
    sdiag = np.empty((F, 70))  # kernel by kernel, as the buffer holds them
    for i in range(70):
        xdiag = np.empty(F)
        ck.prepare_query(X[i].copy(), ckern.spec(), ssq[i], xdiag)
        sdiag[:, i] = xdiag
    row = np.empty((F, 70))
    ck.kernel_row(Query(X[3].copy(), ssq[3], sdiag[:, 3].copy()), Rows(X, ssq, sdiag), 70, ckern.spec(), row)
    np.testing.assert_allclose(K_sym[:, 3, :], row, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("kset", sorted(KERNEL_SETS))
def test_block_kernels_with_stored_rows_gives_the_same_bits(kset):
    """``StoredRows`` (the stored side's columns, norms and self-kernels made once, as ``fit``'s
    chunks take them) changes nothing: the values are those of ``block_kernels`` alone, bit
    for bit, for every kernel family and grouping; and it refuses another array than its own."""
    from onlinemkl.kernel_arrays import StoredRows, block_kernels
    from onlinemkl.kernels import check_kernels

    rng = np.random.default_rng(5)
    X, Q = rng.normal(size=(60, 7)), rng.normal(size=(9, 7))
    ckern = CompiledKernels(check_kernels(KERNEL_SETS[kset]))
    ckern.set_columns(resolve_group_columns(ckern.groups, 7))
    stored = StoredRows(X, ckern)
    for rows in (Q, Q[:1], X[:5]):
        np.testing.assert_array_equal(block_kernels(rows, X, ckern, stored), block_kernels(rows, X, ckern))
    with pytest.raises(ValueError, match="another array"):
        block_kernels(Q, X.copy(), ckern, stored)


@pytest.mark.parametrize("F", [1, 2, 5])
@pytest.mark.parametrize("C", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("m", [0, 1, 7, 8, 130])
def test_proximal_block_accumulation_equals_the_plain_sum(F, C, m):
    """accumulate_per_kernel (weighted values x transposed beta, a dot product per pair) against the
    plain sum, every kernel and output, beta with zeros (as the multiclass hinge's rows)."""
    from onlinemkl._core import scores as cf

    rng = np.random.default_rng(100 * F + 10 * C + m)
    n, i0 = m + 40, 17
    kv = rng.normal(size=(F, 256))
    kv0 = kv.copy()
    coef = rng.normal(size=(n + i0, F))
    beta = rng.normal(size=(n + i0, C)) * (rng.random((n + i0, C)) < 0.5)
    g = np.full((F, C), 0.25)
    cf.accumulate_per_kernel(kv, m, coef, i0, beta, C, np.empty((C, 256)), g)
    terms = kv0[:, None, :m] * coef[i0:i0 + m].T[:, None, :] * beta[i0:i0 + m].T[None, :, :]
    expect = 0.25 + terms.sum(axis=2)
    assert np.all(np.abs(g - expect) <= 1e-13 * (np.abs(terms).sum(axis=2) + 0.25))
    assert np.array_equal(kv[:, :m], kv0[:, :m] * coef[i0:i0 + m].T)  # the weighted values, as documented
