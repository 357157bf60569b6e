"""OBSCURE (stage 1, stage 2, Pegasos-MKL) against the plain-numpy reference, incremental state
against recomputation, the paper's facts as thresholds, accuracy floors, bad input and bounded memory."""

import copy

import numpy as np
import pytest

import naive
from onlinemkl import OBSCUREClassifier
from onlinemkl._core import buffer as cb
from onlinemkl.obscure import _step as co
from onlinemkl.obscure import _fit as obscure_fit
from onlinemkl._core.state import LabelledRows
from onlinemkl.kernels import RBF, BSpline, Laplacian, Linear, Polynomial
from onlinemkl.obscure.engine import ObscureEngine, default_eta, hinge_losses

D = 6
# The fit-path comparisons use all five too: fit's BLAS kernel matrices sum a BSpline group's squared
# distances directly, so their diagonal is the exact K(x, x) the norm updates use (the expanded
# |x|^2 + |z|^2 - 2 x.z left 1 - ~1e-8 there; test_fit_with_bspline_norms_equal_recomputation).
KERNELS = (
    RBF(gamma=0.2, group=(0, 1, 2)),
    Linear(group=(3, 4, 5), normalize=True),
    Polynomial(degree=2, normalize=True),
    Laplacian(gamma=0.1),
    BSpline(h=5.0, group=(0, 1, 2)),
)


def make_data(n, n_classes, seed, d=D, noise=0.5):
    """Noisy non-linear labels: updates keep happening in both stages."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if n_classes == 2:
        y = np.where(X[:, 0] * X[:, 1] + 0.3 * X[:, 3] + noise * rng.normal(size=n) > 0, 1, -1)
    else:
        y = (np.floor((X[:, 0] + X[:, 3] + noise * rng.normal(size=n)) * 1.2) % n_classes).astype(np.int64)
    return X, y


def engine_and_reference(n_classes, p, lam=0.01, budget=None, eviction="oldest", pegasos=False, kernels=KERNELS):
    binary = n_classes == 2
    q = p / (p - 1.0)
    eta = default_eta(len(kernels), q)
    eng = ObscureEngine(kernels, p, eta, lam, budget, eviction, pegasos, binary)
    eng.set_features(D)
    eng.set_n_classes(n_classes)
    ref = naive.NaiveObscure(kernels, p, eta, lam=lam, binary=binary, n_classes=n_classes, budget=budget,
                             eviction=eviction, pegasos=pegasos)
    return eng, ref


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


@pytest.fixture(scope="module", autouse=True)
def warm_up():
    """Compile once per module (the disk cache may be cold)."""
    X, y = make_data(30, 3, 0)
    OBSCUREClassifier(kernels=KERNELS, random_state=0, stage1_epochs=1, stage2_epochs=1).fit(X, y)
    OBSCUREClassifier(kernels=KERNELS, budget=5, switch_after=10).partial_fit(X, y, classes=[0, 1, 2]).predict(X)


# -- 2. the compiled steps against the numpy reference ------------------------------------------------


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
    assert eng.istate[co.I_EVICTIONS] > 50
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
        assert clf._engine.istate[co.I_EVICTIONS] > 20
        assert_same_state(clf._engine, ref)
    else:
        # without a budget, fit adds an example's repeated updates to its row: fewer rows, the same sums
        assert clf._engine.n_support < len(ref.c)
        assert_same_rows_summed(clf._engine, ref)
    assert clf.R_ == pytest.approx(ref.R, rel=1e-9)
    Xt, _ = make_data(15, n_classes, seed=11)
    s = clf.decision_function(Xt)
    sr = np.array([ref.scores(x) for x in Xt])
    np.testing.assert_allclose(s, sr[:, 0] if n_classes == 2 else sr, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n_classes, pegasos", [(2, False), (4, False), (4, True)])
def test_fit_class_sums_equal_recomputation(n_classes, pegasos):
    """``fit``'s per-kernel class scores of every training example (``obscure_fit_run``'s ``G``),
    kept up to date one update at a time through both stages, equal their recomputation from
    the stored rows; Pegasos drops every row at its first stage-2 step."""
    X, y = make_data(120, n_classes, seed=4)
    eng, _ = engine_and_reference(n_classes, 1.5, pegasos=pegasos)
    yi = y if n_classes == 2 else y.astype(np.int64)
    run = eng.fit_pass_precomputed(X, yi)
    rng = np.random.default_rng(0)
    run(rng.permutation(120))
    eng.switch_to_stage2()
    run(rng.integers(0, 120, size=120))
    assert eng.istate[co.I_UPDATES] > 60 and eng.fstate[co.F_SCALE] < 1.0
    kept = run.class_sums
    b = eng.buf
    fresh = np.empty_like(kept)
    obscure_fit.class_sums(run.kernel_matrices, run.sv_index(), LabelledRows(b.S, b.ssq, b.sdiag_t, b.ypos, b.yneg, b.coef, b.tstamp),
                  eng.n_support, fresh)
    # two orders of summation: within rounding of the sum of absolute terms (raw coefficients
    # grow as the stage-2 scale shrinks, to ~1e8 under Pegasos, and cancel in the sums)
    bound = np.abs(b.coef[:eng.n_support]).sum() * np.abs(run.kernel_matrices).max()
    np.testing.assert_allclose(kept, fresh, rtol=0, atol=1e-13 * bound)
    # and the scores fit reads from them are the per-example scores
    scores = run.train_scores()
    loop = np.array([eng.scores_one(np.ascontiguousarray(r)) for r in X])
    np.testing.assert_allclose(scores, loop.reshape(scores.shape), rtol=1e-9, atol=1e-9 * np.abs(loop).max())


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


# -- 3. incremental state against recomputation ------------------------------------------------------


def recomputed_matches(eng, rtol=1e-9):
    rec = eng.recompute_theta_sq()
    np.testing.assert_allclose(eng.theta_sq, rec, rtol=rtol, atol=rtol * max(rec.max(), 1e-300))


@pytest.mark.parametrize("eviction", ["oldest", "least_impact"])
@pytest.mark.parametrize("n_classes", [2, 5])
def test_incremental_norms_equal_recomputation_with_budget(n_classes, eviction):
    X, y = make_data(500, n_classes, seed=21)
    classes = np.unique(y)
    budget = 30
    clf = OBSCUREClassifier(kernels=KERNELS, p=1.2, budget=budget, eviction=eviction, switch_after=250)
    for start in range(0, 500, 50):
        clf.partial_fit(X[start:start + 50], y[start:start + 50], classes=classes)
        assert clf.n_support_ <= budget
        assert clf._engine.buf.capacity <= budget
        recomputed_matches(clf._engine)
    eng = clf._engine
    assert clf.stage_ == 2 and eng.istate[co.I_EVICTIONS] > 100 and eng.fstate[co.F_SCALE] != 1.0
    # fold the lazy scale: the model, and the norms against recomputation, do not change
    before = clf.decision_function(X[:40])
    cb.fold_scales(eng.n_support, eng.buf.coef, eng.fstate[co.F_SCALE:co.F_SCALE + 1], eng.theta_sq)
    assert eng.fstate[co.F_SCALE] == 1.0
    recomputed_matches(eng)
    np.testing.assert_allclose(clf.decision_function(X[:40]), before, rtol=1e-12, atol=1e-12)


def test_automatic_fold_of_an_extreme_scale():
    """When the lazy scale drifts past 1e-100 the step folds it; norms stay exact."""
    X, y = make_data(200, 3, seed=4)
    clf = OBSCUREClassifier(kernels=KERNELS, p=1.5, budget=40, switch_after=100).partial_fit(X, y, classes=[0, 1, 2])
    eng = clf._engine
    before = clf.decision_function(X[:20])
    # the same model, represented with scale 1e-101 and coefficients 1e101 larger
    eng.fstate[co.F_SCALE] *= 1e-101
    eng.buf.coef[:eng.n_support] *= 1e101
    eng.theta_sq *= 1e202
    np.testing.assert_allclose(clf.decision_function(X[:20]), before, rtol=1e-9)
    clf.partial_fit(X[:1], y[:1])
    assert 1e-3 < eng.fstate[co.F_SCALE] <= 1.0  # folded (then at most one shrink/projection)
    recomputed_matches(eng)


def test_fit_with_bspline_norms_equal_recomputation():
    """fit's precomputed BSpline matrix has the exact diagonal 1 the norm update uses (the squared
    distance is summed directly, not expanded from the norms: that left K(x, x) = 1 - ~1e-8)."""
    X, y = make_data(300, 3, seed=8)
    clf = OBSCUREClassifier(kernels=KERNELS, budget=20, random_state=0).fit(X, y)
    recomputed_matches(clf._engine, rtol=1e-11)


def test_n_support_never_exceeds_budget_in_fit():
    X, y = make_data(300, 3, seed=8)
    for eviction in ("oldest", "least_impact"):
        clf = OBSCUREClassifier(kernels=KERNELS, budget=20, eviction=eviction, random_state=0).fit(X, y)
        assert clf.n_support_ <= 20 and clf._engine.buf.capacity <= 20
        recomputed_matches(clf._engine)  # ~2800 evictions; measured agreement 1e-14


# -- 4. the paper's facts ----------------------------------------------------------------------------


def test_stage1_finite_updates_on_separable_data():
    """Theorem 4: on data separable by v with margin, stage 1 makes at most q (2/eta + L^2) ||v||^2 updates.

    v lives on the first (linear) kernel only: ``y u.x[:2] >= 1`` with ||u|| = 1/0.2, so
    ``||v||_{2,p} = ||u||``; L bounds ``||z||_{2,q} = (sum_j K_j(x,x)^(q/2))^(1/q)``.
    """
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(1500, 4))
    u0 = np.array([0.6, 0.8])
    m = X[:, :2] @ u0
    keep = np.abs(m) >= 0.2
    X, y = X[keep][:300], np.where(m[keep][:300] > 0, 1, 0)
    kernels = (Linear(group=(0, 1)), RBF(gamma=0.5, group=(2, 3)), Linear(normalize=True))
    p = 1.5
    q = p / (p - 1)
    clf = OBSCUREClassifier(kernels=kernels, p=p, switch_after=None)
    eta = default_eta(3, q)
    L = max((np.sum(X[i, :2] ** 2) ** (q / 2) + 1.0 + 1.0) ** (1 / q) for i in range(len(X)))
    bound = q * (2 / eta + L ** 2) * (1 / 0.2) ** 2
    updates_per_pass = []
    for _ in range(30):
        before = int(clf._engine.istate[co.I_UPDATES]) if hasattr(clf, "_engine") else 0
        clf.partial_fit(X, y, classes=[0, 1])
        updates_per_pass.append(int(clf._engine.istate[co.I_UPDATES]) - before)
        if updates_per_pass[-1] == 0:
            break
    assert updates_per_pass[-1] == 0, updates_per_pass
    assert sum(updates_per_pass) <= bound
    # and it stays converged: every training example has margin > 1, a further pass changes nothing
    assert np.all((2 * y - 1) * clf.decision_function(X) > 1.0)
    clf.partial_fit(X, y)
    assert int(clf._engine.istate[co.I_UPDATES]) == sum(updates_per_pass)
    # fit's stage 1 stops at the first epoch without a margin error on the same data
    f = OBSCUREClassifier(kernels=kernels, p=p, stage1_epochs=50, stage2_epochs=0, random_state=0).fit(X, y)
    assert f.stage1_updates_ <= bound
    assert np.all((2 * y - 1) * f.decision_function(X) > 1.0)


def test_multiple_cues_sparse_weights_select_the_informative_kernel():
    """Section 5.2 style: one informative cue among noise cues; with p close to 1 its kernel dominates.

    Threshold: with p = 1.01 (q = 101) the mirror map raises the ratios of the dual norms to
    the power 99, so any cue whose dual vector grows faster than the others' takes almost all
    the weight; we ask for >= 0.9 of the normalised ``||w^j||`` (measured ~1.0), and for more
    than the same cue gets with p = 2 (the plain sum of kernels, every ``a_j = 1/2``).
    """
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 12))
    y = (X[:, 0] * X[:, 1] + 0.5 * X[:, 2] > 0).astype(int)  # only features 0..3 carry the label
    kernels = tuple(RBF(gamma_scale=1.0, group=tuple(range(4 * k, 4 * k + 4))) for k in range(3))
    w = {}
    for p in (1.01, 2.0):
        clf = OBSCUREClassifier(kernels=kernels, p=p, random_state=0, stage1_epochs=3, stage2_epochs=2).fit(X, y)
        w[p] = clf.kernel_weights_
        assert w[p].sum() == pytest.approx(1.0)
    assert w[1.01][0] >= 0.9, w
    assert w[1.01][0] > w[2.0][0], w
    assert np.argmax(w[2.0]) == 0, w


def objective(clf, X, y):
    """``lambda/2 ||w||_{2,p}^2 + mean hinge`` (eq. 5) of a fitted classifier."""
    eng = clf._engine
    yi = np.searchsorted(clf.classes_, y)
    if eng.binary:
        yi = 2 * yi - 1
    S = eng.scores_many(X)
    return 0.5 * eng.hyper[co.H_LAM] * eng.w_norm_p() ** 2 + hinge_losses(S, yi, eng.binary).mean()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_stage2_lowers_the_objective(n_classes):
    """Stage 2, started from the stage-1 solution (same random stream), lowers the objective (eq. 5).

    Thresholds from Theorem 3's O(q log T / (lambda T)) rate: with lambda = 0.1 five epochs are
    well past the transient, so the objective is lower than stage 1's for every seed (measured
    -25% to -35%; asked: -15% on average).  With lambda = 0.01 the first stage-2 steps
    (eta_t = q / (lambda t + s_t), large) overshoot the near-optimal stage-1 solution; the
    objective then decreases with the epochs and is below stage 1's after 40 (measured -2% to -14%).
    Stage 2 also beats Pegasos-MKL (s_t = 0) early on, on average (the paper's Fig. comparisons).
    """
    gains, obscure_vs_pegasos = [], []
    for seed in range(3):
        X, y = make_data(150, n_classes, seed=100 + seed, noise=0.8)

        def obj(lam, epochs, pegasos=False):
            clf = OBSCUREClassifier(kernels=KERNELS[:3], p=1.5, lam=lam, random_state=seed, stage1_epochs=2,
                                    stage2_epochs=epochs, pegasos=pegasos).fit(X, y)
            return objective(clf, X, y)

        o1 = obj(0.1, 0)
        o2 = obj(0.1, 5)
        assert o2 < o1, (seed, o1, o2)
        gains.append((o1 - o2) / o1)
        o1, o_early, o_long = obj(0.01, 0), obj(0.01, 2), obj(0.01, 40)
        assert o_long < o1 and o_long < o_early, (seed, o1, o_early, o_long)
        obscure_vs_pegasos.append(obj(0.01, 1) - obj(0.01, 1, pegasos=True))
    assert np.mean(gains) > 0.15, gains
    assert np.mean(obscure_vs_pegasos) < 0, obscure_vs_pegasos


# -- 5. accuracy floors --------------------------------------------------------------------------------


def test_digits_accuracy_floor():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    model = make_pipeline(StandardScaler(), OBSCUREClassifier(random_state=0)).fit(Xtr, ytr)
    assert model.score(Xte, yte) >= 0.97  # measured 0.985; the authors' toolbox: 0.983


def test_fit_many_classes_accuracy_floor():
    """``stage2_epochs='auto'``: 10 stage-2 epochs past three classes.  Ten classes, three generated
    sets, three seeds each: mean held-out accuracy 0.830 (measured; 0.817 with 5 epochs,
    which this floor rejects)."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    accs = []
    for data_seed in (1, 2, 3):
        X, y = make_classification(n_samples=900, n_features=10, n_informative=8, n_redundant=0, n_classes=10,
                                   n_clusters_per_class=2, class_sep=2.0, random_state=data_seed)
        X = StandardScaler().fit_transform(X)
        for seed in range(3):
            accs.append(OBSCUREClassifier(random_state=seed).fit(X[:600], y[:600]).score(X[600:], y[600:]))
    assert np.mean(accs) >= 0.825, accs


def test_fit_stage2_epochs_auto_counts_classes():
    """'auto' runs 5 stage-2 epochs with two or three classes and 10 with more (stage-2 steps: N each)."""
    X, y = make_data(60, 3, seed=2)
    for n_classes, epochs in ((2, 5), (3, 5), (4, 10)):
        yk = np.arange(60) % n_classes
        clf = OBSCUREClassifier(kernels=KERNELS, random_state=0).fit(X, yk)
        assert clf._engine.istate[co.I_T] == epochs * 60


def test_river_image_segments_prequential_floor():
    from river import datasets, evaluate, metrics, preprocessing

    import onlinemkl.river

    model = preprocessing.StandardScaler() | onlinemkl.river.OBSCUREClassifier()
    acc = evaluate.progressive_val_score(datasets.ImageSegments(), model, metrics.Accuracy())
    assert acc.get() >= 0.88  # measured 0.892


# -- 6. bad input ----------------------------------------------------------------------------------------


def fitted():
    X, y = make_data(120, 3, seed=2)
    return OBSCUREClassifier(kernels=KERNELS[:3], budget=40, switch_after=60).partial_fit(X, y, classes=[0, 1, 2]), X


def snapshot(clf, X):
    eng = clf._engine
    arrays = {k: np.copy(v) for k, v in vars(eng).items() if isinstance(v, np.ndarray)}
    arrays.update({k: np.copy(v) for k, v in vars(eng.buf).items() if isinstance(v, np.ndarray)})
    return clf.decision_function(X), arrays, clf.get_params(), clf.n_features_in_, np.copy(clf.classes_)


def assert_unchanged(clf, X, snap):
    s, arrays, params, nf, classes = snap
    assert clf.get_params() == params and clf.n_features_in_ == nf and np.array_equal(clf.classes_, classes)
    eng = clf._engine
    for k, v in arrays.items():
        cur = getattr(eng, k) if hasattr(eng, k) and isinstance(getattr(eng, k), np.ndarray) else getattr(eng.buf, k)
        assert np.array_equal(cur, v), k
    assert np.array_equal(clf.decision_function(X), s)


BAD_X = [
    ("nan", lambda X: np.where(np.arange(X.size).reshape(X.shape) == 7, np.nan, X), "NaN"),
    ("inf", lambda X: np.where(np.arange(X.size).reshape(X.shape) == 3, np.inf, X), "infinite"),
    ("-inf", lambda X: np.where(np.arange(X.size).reshape(X.shape) == 3, -np.inf, X), "infinite"),
    ("too_few_features", lambda X: X[:, :-1], "features"),
    ("too_many_features", lambda X: np.hstack([X, X[:, :1]]), "features"),
    ("strings", lambda X: np.full(X.shape, "a", dtype=object), "numeric"),
    ("1d", lambda X: X[0], "2-D"),
    ("3d", lambda X: X[None], "2-D"),
    ("empty", lambda X: X[:0], "empty"),
]


@pytest.mark.parametrize("name, corrupt, msg", BAD_X, ids=[b[0] for b in BAD_X])
def test_bad_X_is_rejected_and_model_unchanged(name, corrupt, msg):
    clf, X = fitted()
    snap = snapshot(clf, X[:10])
    Xb = corrupt(X[:10].copy())
    y = np.zeros(len(Xb) if np.ndim(Xb) == 2 else 1, dtype=int)
    for call in (lambda: clf.partial_fit(Xb, y), lambda: clf.predict(Xb), lambda: clf.decision_function(Xb)):
        with pytest.raises(ValueError, match=msg):
            call()
    if "features" not in name:  # fit on a new number of features is a legitimate refit
        with pytest.raises(ValueError, match=msg):
            clf.fit(Xb, np.arange(len(y)) % 3)
    assert_unchanged(clf, X[:10], snap)


def test_complex_X_is_rejected():
    clf, X = fitted()
    with pytest.raises(ValueError, match="complex"):
        clf.partial_fit(X[:5] + 1j, np.zeros(5, dtype=int))


@pytest.mark.parametrize("ybad, kind, msg", [
    (lambda y: np.where(y == 0, 7, y), ValueError, r"label .*7\b.*declared classes"),          # not among the declared classes
    (lambda y: y + 0.5, ValueError, "continuous|Unknown label type"),   # regression targets
    (lambda y: y[:-1], ValueError, "one label per row"),
    (lambda y: np.vstack([y, y]), ValueError, "1-D"),
])
def test_bad_labels_are_rejected_and_model_unchanged(ybad, kind, msg):
    clf, X = fitted()
    snap = snapshot(clf, X[:10])
    _, y = make_data(120, 3, seed=2)
    with pytest.raises(kind, match=msg):
        clf.partial_fit(X[:20], ybad(y[:20]))
    assert_unchanged(clf, X[:10], snap)


def test_bad_classes_argument():
    X, y = make_data(30, 3, seed=2)
    with pytest.raises(ValueError, match="classes"):
        OBSCUREClassifier().partial_fit(X, y)
    with pytest.raises(ValueError, match="classes"):
        OBSCUREClassifier().partial_fit(X, y, classes=[1])
    clf, X = fitted()
    snap = snapshot(clf, X[:10])
    with pytest.raises(ValueError, match="classes"):
        clf.partial_fit(X[:5], y[:5], classes=[0, 1, 2, 3])
    assert_unchanged(clf, X[:10], snap)
    with pytest.raises(ValueError, match="single class"):
        OBSCUREClassifier().fit(X[:5], np.zeros(5))
    with pytest.raises(ValueError, match="loss='hinge'"):
        OBSCUREClassifier(loss="hinge").fit(X[:30], y)


BAD_PARAMS = [
    ("p", 1.0), ("p", 0.5), ("p", 2.5), ("p", float("nan")), ("p", "1.5"),
    ("lam", -0.1), ("lam", 0.0), ("lam", float("inf")),
    ("C", 0.0),
    ("C", -1.0),
    ("eta", 0.0), ("eta", -1.0),
    ("budget", 0), ("budget", -5), ("budget", 2.5), ("budget", True),
    ("eviction", "newest"), ("eviction", None),
    ("loss", "squared"),
    ("stage1_epochs", -1), ("stage2_epochs", 1.5), ("stage2_epochs", "many"), ("stage2_epochs", -1),
    ("switch_after", 0), ("switch_after", "never"),
    ("kernels", ()), ("kernels", ["rbf"]),
]


@pytest.mark.parametrize("name, value", BAD_PARAMS)
def test_bad_params_raise_naming_the_parameter(name, value):
    X, y = make_data(30, 3, seed=2)
    est = OBSCUREClassifier(**{name: value})
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
        est.fit(X, y)
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
        OBSCUREClassifier(**{name: value}).partial_fit(X, y, classes=[0, 1, 2])
    # refitting a fitted model with a bad parameter leaves the old model in place
    clf, X = fitted()
    snap = snapshot(clf, X[:10])
    clf.set_params(**{name: value})
    with pytest.raises((ValueError, TypeError), match=rf"\b{name}\b"):
        clf.fit(X, np.arange(len(X)) % 3)
    clf.set_params(**{name: snap[2][name]})
    assert_unchanged(clf, X[:10], snap)


def test_river_bad_input_leaves_model_unchanged():
    import onlinemkl.river

    rng = np.random.default_rng(0)
    m = onlinemkl.river.OBSCUREClassifier(budget=30)
    for _ in range(80):
        x = {"a": rng.normal(), "b": rng.normal()}
        m.learn_one(x, "pos" if x["a"] > 0 else "neg")
    probe = [{"a": rng.normal(), "b": rng.normal()} for _ in range(10)]
    before = [m.predict_proba_one(x) for x in probe]
    state = copy.deepcopy(m._get_state())
    for x, y, kind in [({"a": float("nan")}, "pos", ValueError), ({"a": float("inf"), "c": 1.0}, "pos", ValueError),
                       ({"a": "x"}, "pos", TypeError), ({"a": 1.0, "new": None}, "pos", TypeError),
                       ({"a": 1.0}, None, ValueError), ({"a": 1.0}, ["unhashable"], TypeError)]:
        with pytest.raises(kind):
            m.learn_one(x, y)
    after_state = m._get_state()
    assert after_state[0] == state[0]
    for k, v in state[1].items():
        assert np.array_equal(after_state[1][k], v), k
    assert [m.predict_proba_one(x) for x in probe] == before
    with pytest.raises(ValueError, match="p="):
        onlinemkl.river.OBSCUREClassifier(p=3)
    with pytest.raises(ValueError, match="eviction"):
        onlinemkl.river.OBSCUREClassifier(eviction="lru")
    with pytest.raises(ValueError, match="budget"):
        onlinemkl.river.OBSCUREClassifier(budget=0)


def test_river_one_class_prefix_does_not_freeze_the_model():
    import onlinemkl.river

    rng = np.random.default_rng(0)
    m = onlinemkl.river.OBSCUREClassifier()
    for _ in range(600):  # e.g. a sorted log, or a rare second class
        m.learn_one({"a": rng.normal(), "b": rng.normal()}, "A")
    correct = 0
    for _ in range(1000):
        x = {"a": rng.normal(), "b": rng.normal()}
        y = "A" if x["a"] > 0 else "B"
        correct += m.predict_one(x) == y
        m.learn_one(x, y)
    assert m.n_support_ > 0
    assert correct / 1000 > 0.8


# -- 7. bounded memory ------------------------------------------------------------------------------------


def test_budget_keeps_arrays_bounded_on_a_long_stream():
    rng = np.random.default_rng(0)
    budget = 64
    clf = OBSCUREClassifier(kernels=KERNELS[:3], budget=budget, eviction="least_impact", switch_after=5000)
    shapes = set()
    for start in range(0, 20000, 1000):
        X = rng.normal(size=(1000, D))
        y = (np.floor(X[:, 0] * 2 + rng.normal(size=1000)) % 3).astype(int)  # noisy: updates never stop
        clf.partial_fit(X, y, classes=[0, 1, 2])
        eng = clf._engine
        assert clf.n_support_ <= budget
        shapes.add(tuple(getattr(eng.buf, f).shape for f in ("S", "ssq", "sdiag", "ypos", "yneg", "coef", "tstamp"))
                   + (eng.g.shape, eng.scores.shape, eng.krow.shape))
    eng = clf._engine
    assert eng.buf.capacity <= budget and eng.buf.S.shape[1] <= 2 * D
    assert eng.buf.nbytes() <= budget * (2 * D + 1 + 3 + 4 + 1) * 8
    assert eng.istate[co.I_EVICTIONS] > 10000 and clf.stage_ == 2
    assert len(shapes) == 1, shapes  # the arrays stopped growing after the first 1000 examples
    recomputed_matches(eng)  # > 10^4 evictions, still exact to rounding


def test_river_budget_keeps_arrays_bounded():
    import onlinemkl.river

    rng = np.random.default_rng(1)
    m = onlinemkl.river.OBSCUREClassifier(budget=32, switch_after=2000)
    for t in range(6000):
        x = {f"f{k}": rng.normal() for k in range(4)}
        m.learn_one(x, int(x["f0"] > 0) if rng.random() > 0.2 else int(rng.random() > 0.5))
    eng = m._engine
    assert m.n_support_ <= 32 and eng.buf.capacity <= 32 and eng.buf.S.shape[1] <= 8
    assert eng.istate[co.I_EVICTIONS] > 500


# -- the parallel kernel-row path of the engine ----------------------------------------------------------


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


def test_river_relative_bandwidth_frozen_once_its_group_has_features():
    """A named group whose feature has not appeared yet must not keep RBF() on all features re-resolving
    gamma = 1/d each time a feature appears (theta_sq would no longer match the stored examples)."""
    import onlinemkl.river

    rng = np.random.default_rng(0)
    m = onlinemkl.river.OBSCUREClassifier(kernels=(RBF(), RBF(gamma=0.5, group=("c",))), switch_after=None)
    for t in range(150):
        x = {"a": rng.normal(), "b": rng.normal()}
        if t >= 100:
            x["d"] = rng.normal()  # a new feature: RBF() must keep gamma = 1/2 (resolved on the first example)
        m.learn_one(x, int(x["a"] > 0))
    eng = m._engine
    assert eng.ck.params[0, 0] == 0.5
    recomputed_matches(eng)


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

    def recording(Xq, S, ck):
        shapes.append((Xq.shape[0], S.shape[0]))
        return real(Xq, S, ck)

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

    def recording(Xq, S, ck):
        sizes.append(Xq.shape[0] * S.shape[0] * ck.n_kernels * 8)
        return real(Xq, S, ck)

    monkeypatch.setattr(ob, "KERNEL_CACHE_BYTES", cap)
    monkeypatch.setattr(ob, "MIN_CHUNK", 10 ** 9)  # no float32 matrices either (they would fit): blocks
    monkeypatch.setattr(eo, "block_kernels", recording)
    blocked = OBSCUREClassifier(**params).fit(X, y)
    assert len(sizes) > 2 * 4 and max(sizes) <= cap // 2  # several blocks per epoch, none past its share
    assert blocked.stage1_updates_ == full.stage1_updates_
    Xt, _ = make_data(40, n_classes, seed=12)
    np.testing.assert_allclose(blocked.decision_function(Xt), full.decision_function(Xt), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(blocked.kernel_weights_, full.kernel_weights_, rtol=1e-9, atol=1e-12)


def test_read_only_input_does_not_compile_again():
    """Numba types a read-only array apart from a writeable one: a read-only ``X`` (a memory map)
    reaches compiled code as a writeable copy, so ``fit`` and ``predict`` reuse the compiled
    variants (no new signature) and give the same model."""
    from onlinemkl.obscure import _fit as obscure_fit

    X, y = make_data(60, 3, seed=8)
    first = OBSCUREClassifier(kernels=KERNELS, random_state=0, stage1_epochs=1, stage2_epochs=1).fit(X, y)
    seen = (len(obscure_fit.obscure_fit_run.signatures), len(co.obscure_run.signatures))
    Xr, yr = X.copy(), y.copy()
    Xr.setflags(write=False)
    yr.setflags(write=False)
    again = OBSCUREClassifier(kernels=KERNELS, random_state=0, stage1_epochs=1, stage2_epochs=1).fit(Xr, yr)
    np.testing.assert_array_equal(again.decision_function(Xr), first.decision_function(X))
    assert (len(obscure_fit.obscure_fit_run.signatures), len(co.obscure_run.signatures)) == seen
