"""OBSCURE's compiled steps and fit (stage 1, stage 2, Pegasos-MKL) against the plain-numpy
reference ``naive.py``, and the compiled paths (parallel rows, float32 and blocked kernel
matrices, read-only input) against each other.
"""

import naive
import numpy as np
import pytest
from _helpers import engine_of
from _obscure_data import KERNELS, D, engine_and_reference, make_data

from onlinemkl import OBSCUREClassifier
from onlinemkl.obscure import _fit as obscure_fit
from onlinemkl.obscure import _step as co
from onlinemkl.obscure.engine import default_eta


def assert_same_state(eng, ref, rtol=1e-9):
    sc = eng.fstate[co.F_SCALE]
    assert eng.n_support == len(ref.c)
    tsq = ref.theta_sq()
    np.testing.assert_allclose(eng.theta_sq * sc * sc, tsq, rtol=rtol, atol=rtol * max(tsq.max(), 1e-300))
    M = ref.coefficient_matrix()
    np.testing.assert_allclose(eng.coefficient_matrix() * sc, M, rtol=rtol, atol=rtol * np.abs(M).max())
    np.testing.assert_allclose(eng.kernel_weights(), ref.kernel_weights(), rtol=rtol, atol=rtol)
    assert eng.w_norm_p() == pytest.approx(ref.w_norm_p(), rel=rtol)


def assert_same_rows_summed(eng, ref, rtol=1e-9):
    """The engine's and the reference's coefficients summed per distinct stored row (and class pair
    sign pattern), group norms and kernel weights: the same predictor however the rows are split."""
    def summed(rows, M):
        out = {}
        for r, c in zip(rows, M):
            key = np.asarray(r, dtype=np.float64).tobytes()
            out[key] = out.get(key, 0.0) + c
        return out
    sc = eng.fstate[co.F_SCALE]
    mine = summed(eng.buf.S[:eng.n_support, :D], eng.coefficient_matrix() * sc)
    theirs = summed(ref.X, ref.coefficient_matrix())
    assert mine.keys() == theirs.keys()
    scale = max(np.abs(v).max() for v in theirs.values())
    for k in theirs:
        np.testing.assert_allclose(mine[k], theirs[k], rtol=rtol, atol=rtol * scale)
    tsq = ref.theta_sq()
    np.testing.assert_allclose(eng.theta_sq * sc * sc, tsq, rtol=rtol, atol=rtol * max(tsq.max(), 1e-300))
    np.testing.assert_allclose(eng.kernel_weights(), ref.kernel_weights(), rtol=rtol, atol=rtol)


def run_both(eng, ref, X, y, switch_at):
    for i in range(X.shape[0]):
        if i == switch_at:
            eng.switch_to_stage2()
            ref.switch_to_stage2()
            assert eng.hyper[co.H_R] == pytest.approx(ref.R, rel=1e-9)
            assert eng.hyper[co.H_LAM] == ref.lam
        lo, yh, up, _ = eng.learn(np.ascontiguousarray(X[i]), int(y[i]))
        rlo, ryh, rup = ref.step(X[i], int(y[i]))
        assert (yh, up) == (ryh, rup), f"step {i}: engine {(lo, yh, up)} reference {(rlo, ryh, rup)}"
        assert lo == pytest.approx(rlo, rel=1e-9, abs=1e-9), f"step {i}"
        if eng.stage == 2:
            assert eng.fstate[co.F_S] == pytest.approx(ref.s, rel=1e-9, abs=1e-12)
            assert eng.istate[co.I_T] == ref.t


@pytest.mark.parametrize("pegasos", [False, True], ids=["obscure", "pegasos"])
@pytest.mark.parametrize("p", [1.01, 1.5, 2.0])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_steps_match_reference(n_classes, p, pegasos):
    X, y = make_data(240, n_classes, seed=int(10 * p) + n_classes)
    eng, ref = engine_and_reference(n_classes, p, pegasos=pegasos)
    run_both(eng, ref, X, y, switch_at=120)
    assert eng.stage == 2 and eng.istate[co.I_UPDATES] == ref.n_updates > 50
    assert_same_state(eng, ref)
    Xt, _ = make_data(20, n_classes, seed=99)
    for x in Xt:
        np.testing.assert_allclose(eng.scores_one(np.ascontiguousarray(x)), ref.scores(x), rtol=1e-9, atol=1e-9)
    # batch (BLAS) prediction path agrees with the per-example path
    np.testing.assert_allclose(eng.scores_many(Xt), np.array([ref.scores(x) for x in Xt]), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("eviction", ["oldest", "least_impact"])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_steps_with_budget_match_reference(n_classes, eviction):
    X, y = make_data(260, n_classes, seed=7 + n_classes)
    eng, ref = engine_and_reference(n_classes, 1.5, budget=25, eviction=eviction)
    run_both(eng, ref, X, y, switch_at=130)
    assert eng.evictions > 50
    assert_same_state(eng, ref)


@pytest.mark.parametrize("n_classes, budget, eviction", [(2, None, "oldest"), (3, None, "oldest"),
                                                         (3, 25, "oldest"), (2, 25, "least_impact"),
                                                         (14, None, "oldest"), (14, 25, "least_impact")])
def test_fit_matches_reference_fit(n_classes, budget, eviction):
    """``fit`` (precomputed kernel matrices, random epochs, R from the training loss) == the written-out loop.

    More than two classes: the scores come from the mixed kernel and only the two columns of
    ``g`` an update reads are summed (``obscure._fit.gather_mixed``); 14 classes: past
    ``DENSE_OUTPUTS`` too."""
    X, y = make_data(70, min(n_classes, 3), seed=3)
    if n_classes > 3:  # every class present: 5 examples each, by rank of a noisy projection
        y = np.argsort(np.argsort(X[:, 0] + X[:, 3] + y)) * n_classes // X.shape[0]
    labels = np.array([f"c{k:02d}" for k in range(n_classes)])
    y_lab = labels[(y > 0).astype(int)] if n_classes == 2 else labels[y]
    p, lam = 1.3, 0.02
    clf = OBSCUREClassifier(kernels=KERNELS, p=p, lam=lam, random_state=5, stage1_epochs=3, stage2_epochs=2,
                            budget=budget, eviction=eviction)
    clf.fit(X, y_lab)
    q = p / (p - 1)
    ref = naive.naive_fit(X, y, KERNELS, p, lam, default_eta(len(KERNELS), q), n_classes == 2, n_classes, seed=5,
                          stage1_epochs=3, stage2_epochs=2, budget=budget, eviction=eviction)
    if budget:
        assert engine_of(clf).evictions > 20
        assert_same_state(engine_of(clf), ref)
    else:
        # without a budget, fit adds an example's repeated updates to its row: fewer rows, the same sums
        assert clf.n_support_ < len(ref.c)
        assert_same_rows_summed(engine_of(clf), ref)
    assert clf.R_ == pytest.approx(ref.R, rel=1e-9)
    Xt, _ = make_data(15, n_classes, seed=11)
    s = clf.decision_function(Xt)
    sr = np.array([ref.scores(x) for x in Xt])
    np.testing.assert_allclose(s, sr[:, 0] if n_classes == 2 else sr, rtol=1e-9, atol=1e-9)


def test_pegasos_first_step_wipes_the_start_vector():
    """Pegasos-MKL multiplies the starting vector by 0 at t = 1 (paper, after Thm 3); OBSCURE keeps it."""
    X, y = make_data(100, 3, seed=1)
    for pegasos in (False, True):
        eng, _ = engine_and_reference(3, 1.5, pegasos=pegasos)
        for i in range(80):
            eng.learn(np.ascontiguousarray(X[i]), int(y[i]))
        n1 = eng.n_support
        eng.switch_to_stage2()
        eng.learn(np.ascontiguousarray(X[80]), int(y[80]))
        if pegasos:
            assert eng.n_support <= 1 and eng.fstate[co.F_S] == 0.0
        else:
            assert eng.n_support >= n1 and eng.fstate[co.F_S] > 0.0


@pytest.mark.parametrize("budget, eviction, n_classes", [(None, "oldest", 3), (15, "oldest", 3),
                                                        (15, "least_impact", 3), (None, "oldest", 2),
                                                        (None, "oldest", 14)])
def test_parallel_row_path_gives_identical_steps(monkeypatch, budget, eviction, n_classes):
    """``learn`` on buffers >= PARALLEL_MIN_ROWS (the fused pass over threads; the parallel kernel
    row past DENSE_OUTPUTS classes) == the fused serial pass: the same predictions and updates, the
    same numbers within rounding (the same sums in the same block order, compiled apart)."""
    from onlinemkl import _config

    X, y = make_data(200, n_classes, seed=31)
    runs = []
    for threshold in (10**9, 0):
        monkeypatch.setattr(_config, "PARALLEL_MIN_ROWS", threshold)
        eng, _ = engine_and_reference(n_classes, 1.5, budget=budget, eviction=eviction)
        out = []
        for i in range(200):
            if i == 100:
                eng.switch_to_stage2()
            out.append(eng.learn(np.ascontiguousarray(X[i]), int(y[i])))
        runs.append((out, eng))
    (o1, e1), (o2, e2) = runs
    assert [o[1:] for o in o1] == [o[1:] for o in o2]  # predictions and whether each step updated
    np.testing.assert_allclose([o[0] for o in o1], [o[0] for o in o2], rtol=1e-10, atol=1e-12)
    for a, b in ((e1.theta_sq, e2.theta_sq), (e1.fstate, e2.fstate), (e1.buf.coef, e2.buf.coef)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert np.array_equal(e1.buf.S, e2.buf.S)  # the stored rows themselves are copies


@pytest.mark.parametrize("n_classes", [2, 14])
def test_fit_with_float32_matrices_close_to_float64(monkeypatch, n_classes):
    """Where the float64 matrices exceed the cache but float32 ones fit, ``fit`` keeps them in
    float32, computed in row blocks within the cache: the model learnt is the float64 one up to
    the rounding of the kernel values (no margin decision flips on this set)."""
    import onlinemkl.obscure.engine as eo
    from onlinemkl.obscure import sklearn as ob

    X, y = make_data(300, min(n_classes, 3), seed=4)
    if n_classes > 3:
        y = np.argsort(np.argsort(X[:, 0] + X[:, 3] + y)) * n_classes // X.shape[0]
    params = dict(kernels=KERNELS, p=1.3, random_state=2, stage1_epochs=2, stage2_epochs=2)
    full = OBSCUREClassifier(**params).fit(X, y)
    F, N = len(KERNELS), X.shape[0]
    cap = N * N * F * 4 + 100 * N * (F + 3) * 8  # float32 matrices and 100 rows of float64 work
    assert cap < N * N * (F + 3) * 8
    shapes, dtypes = [], []
    real = eo.block_kernels

    def recording(Xq, S, ck, *stored):
        shapes.append((Xq.shape[0], S.shape[0]))
        return real(Xq, S, ck, *stored)

    real_run = eo.ObscureEngine._fit_run

    def run_recording(self, order, X_, Yi, Kt, *rest):
        dtypes.append(Kt.dtype)
        return real_run(self, order, X_, Yi, Kt, *rest)

    monkeypatch.setattr(ob, "KERNEL_CACHE_BYTES", cap)
    monkeypatch.setattr(eo, "block_kernels", recording)
    monkeypatch.setattr(eo.ObscureEngine, "_fit_run", run_recording)
    half = OBSCUREClassifier(**params).fit(X, y)
    # blocks of 100 rows against themselves and the later rows (the rest mirrored)
    assert shapes == [(100, 300), (100, 200), (100, 100)] and set(dtypes) == {np.dtype(np.float32)}
    assert half.stage1_updates_ == full.stage1_updates_
    Xt, _ = make_data(40, 3, seed=12)
    np.testing.assert_allclose(half.decision_function(Xt), full.decision_function(Xt), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(half.kernel_weights_, full.kernel_weights_, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_fit_in_bounded_kernel_blocks_matches_full_matrices(monkeypatch, n_classes):
    """Where the kernel matrices exceed the cache, ``fit`` computes them in blocks that respect
    it, and learns the same predictor as from the full matrices."""
    import onlinemkl.obscure.engine as eo
    from onlinemkl.obscure import sklearn as ob

    X, y = make_data(300, n_classes, seed=4)
    params = dict(kernels=KERNELS, p=1.3, random_state=2, stage1_epochs=2, stage2_epochs=2)
    full = OBSCUREClassifier(**params).fit(X, y)
    # blocks get half the cache, counted with 3 per-group products beside the F kernels: room for
    # about 90 rows against 390 columns (the chunk and up to 300 stored examples)
    cap = 2 * 8 * (len(KERNELS) + 3) * 90 * 390
    sizes = []
    real = eo.block_kernels

    def recording(Xq, S, ck, *stored):
        sizes.append(Xq.shape[0] * S.shape[0] * ck.n_kernels * 8)
        return real(Xq, S, ck, *stored)

    monkeypatch.setattr(ob, "KERNEL_CACHE_BYTES", cap)
    monkeypatch.setattr(ob, "MIN_CHUNK", 10 ** 9)  # no float32 matrices either (they would fit): blocks
    monkeypatch.setattr(eo, "block_kernels", recording)
    blocked = OBSCUREClassifier(**params).fit(X, y)
    assert len(sizes) > 2 * 4 and max(sizes) <= cap // 2  # several blocks per epoch, none past its share
    assert blocked.stage1_updates_ == full.stage1_updates_
    Xt, _ = make_data(40, n_classes, seed=12)
    np.testing.assert_allclose(blocked.decision_function(Xt), full.decision_function(Xt), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(blocked.kernel_weights_, full.kernel_weights_, rtol=1e-9, atol=1e-12)


def test_fit_with_a_budget_takes_small_chunks_whatever_the_cache(monkeypatch):
    """With a budget, past the kernel cache, a chunk is at most ``BLOCKED_CHUNK`` examples even
    when the cache would hold a larger block (a chunk's values among themselves are the part a
    large chunk pays for), and the model is the one of the full matrices."""
    import onlinemkl.obscure.engine as eo
    from onlinemkl.obscure import sklearn as ob

    X, y = make_data(600, 3, seed=5)
    params = dict(kernels=KERNELS, budget=80, random_state=1, stage1_epochs=2, stage2_epochs=1)
    full = OBSCUREClassifier(**params).fit(X, y)
    rows = []
    real = eo.block_kernels

    def recording(Xq, S, ck, *stored):
        rows.append(Xq.shape[0])
        return real(Xq, S, ck, *stored)

    F = len(KERNELS)
    cap = 600 * 600 * (F + 3) * 8 - 1  # not the full matrices; blocks of ~400 rows would fit in half
    monkeypatch.setattr(ob, "KERNEL_CACHE_BYTES", cap)
    monkeypatch.setattr(ob, "MIN_CHUNK", 10 ** 9)  # no float32 matrices: blocks
    monkeypatch.setattr(eo, "block_kernels", recording)
    blocked = OBSCUREClassifier(**params).fit(X, y)
    assert rows and max(rows) == eo.BLOCKED_CHUNK
    assert blocked.stage1_updates_ == full.stage1_updates_
    Xt, _ = make_data(40, 3, seed=13)
    np.testing.assert_allclose(blocked.decision_function(Xt), full.decision_function(Xt), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n_classes, pegasos, fold", [(2, False, False), (4, False, True), (4, True, False)])
def test_fit_in_chunks_over_class_sums_matches_full_matrices(n_classes, pegasos, fold):
    """Without a budget, ``fit`` past the cache keeps the class sums of every training example and
    computes per chunk only the chunk's kernel values among themselves and the rows of the
    examples it updated: the model of the full matrices' path, through Pegasos' first stage-2
    step (every row dropped) and a lazy scale folded into the coefficients."""
    X, y = make_data(150, n_classes, seed=5)
    yi = y if n_classes == 2 else y.astype(np.int64)
    engines = [engine_and_reference(n_classes, 1.5, pegasos=pegasos)[0] for _ in range(2)]
    full = engines[0].fit_pass_precomputed(X, yi)
    cap = 8 * (len(KERNELS) + 3) * 150 * 20  # chunks of 20 examples
    chunked = engines[1].fit_pass_blocked(X, yi, cap)
    assert chunked.class_sums is not None
    for eng, run in zip(engines, (full, chunked)):
        rng = np.random.default_rng(1)
        run(rng.permutation(150))
        eng.switch_to_stage2()
        run(rng.integers(0, 150, size=75))
        if fold:  # a scale the next step takes below the fold threshold
            eng.fstate[co.F_SCALE] *= 1e-97
        run(rng.integers(0, 150, size=75))
    a, b = engines
    assert b.istate[co.I_UPDATES] == a.istate[co.I_UPDATES] > 60 and b.n_support == a.n_support
    if fold:
        assert 1e-80 < b.fstate[co.F_SCALE] <= 1.0
    # raw sums: the chunks fold a scale a little earlier than the steps do, so compare them scaled
    sa, sb = full.class_sums * a.fstate[co.F_SCALE], chunked.class_sums * b.fstate[co.F_SCALE]
    np.testing.assert_allclose(sb, sa, rtol=1e-9, atol=1e-12 * np.abs(sa).max())
    np.testing.assert_allclose(chunked.train_scores(), full.train_scores(), rtol=1e-9, atol=1e-9)
    Xt, _ = make_data(30, n_classes, seed=13)
    np.testing.assert_allclose(b.scores_many(Xt), a.scores_many(Xt), rtol=1e-9, atol=1e-9)


def test_fit_in_chunks_computes_kernel_rows_of_updates_only(monkeypatch):
    """Past the cache, an epoch computes the chunks' own kernel values and the kernel rows of the
    examples it updated, not every example's row against the stored ones."""
    import onlinemkl.obscure.engine as eo
    from onlinemkl.obscure import sklearn as ob

    X, _ = make_data(400, 2, seed=6)
    y = np.where(X[:, 0] + X[:, 3] > 0, 1, -1)  # separable: few updates once learnt
    values = []
    real = eo.block_kernels

    def recording(Xq, S, ck, *stored):
        values.append(Xq.shape[0] * S.shape[0])
        return real(Xq, S, ck, *stored)

    chunk = eo.MIN_CHUNK
    monkeypatch.setattr(ob, "KERNEL_CACHE_BYTES", 2 * 8 * (len(KERNELS) + 3) * 400 * chunk)
    monkeypatch.setattr(ob, "MIN_CHUNK", 10 ** 9)  # no float32 matrices: blocks
    monkeypatch.setattr(eo, "block_kernels", recording)
    clf = OBSCUREClassifier(kernels=KERNELS, random_state=0, stage1_epochs=3, stage2_epochs=3).fit(X, y)
    updates = int(engine_of(clf).istate[co.I_UPDATES])
    epochs = 3 + 3
    assert sum(values) <= 400 * (updates + epochs * chunk)


def test_read_only_input_does_not_compile_again():
    """Numba types a read-only array apart from a writeable one: a read-only ``X`` (a memory map)
    reaches compiled code as a writeable copy, so ``fit`` and ``predict`` reuse the compiled
    variants (no new signature) and give the same model."""

    X, y = make_data(60, 3, seed=8)
    first = OBSCUREClassifier(kernels=KERNELS, random_state=0, stage1_epochs=1, stage2_epochs=1).fit(X, y)
    seen = (len(obscure_fit.obscure_fit_run.signatures), len(co.obscure_run.signatures))
    Xr, yr = X.copy(), y.copy()
    Xr.setflags(write=False)
    yr.setflags(write=False)
    again = OBSCUREClassifier(kernels=KERNELS, random_state=0, stage1_epochs=1, stage2_epochs=1).fit(Xr, yr)
    np.testing.assert_array_equal(again.decision_function(Xr), first.decision_function(X))
    assert (len(obscure_fit.obscure_fit_run.signatures), len(co.obscure_run.signatures)) == seen
