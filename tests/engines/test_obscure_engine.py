"""OBSCURE's engine: incremental state against recomputation, budgets, the paper's facts as
thresholds, and its accuracy floors (marked ``accuracy``).
"""

import numpy as np
import pytest
from _helpers import engine_of
from _obscure_data import (
    KERNELS,
    D,
    engine_and_reference,
    make_data,
    recomputed_matches,
)

from onlinemkl import OBSCUREClassifier
from onlinemkl._core import buffer as cb
from onlinemkl._core.state import LabelledRows
from onlinemkl.kernels import RBF, Linear
from onlinemkl.obscure import _fit as obscure_fit
from onlinemkl.obscure import _step as co
from onlinemkl.obscure.engine import default_eta, hinge_losses


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
        assert engine_of(clf).buf.capacity <= budget
        recomputed_matches(engine_of(clf))
    eng = engine_of(clf)
    assert clf.stage_ == 2 and eng.evictions > 100 and eng.fstate[co.F_SCALE] != 1.0
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
    eng = engine_of(clf)
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
    recomputed_matches(engine_of(clf), rtol=1e-11)


def test_n_support_never_exceeds_budget_in_fit():
    X, y = make_data(300, 3, seed=8)
    for eviction in ("oldest", "least_impact"):
        clf = OBSCUREClassifier(kernels=KERNELS, budget=20, eviction=eviction, random_state=0).fit(X, y)
        assert clf.n_support_ <= 20 and engine_of(clf).buf.capacity <= 20
        recomputed_matches(engine_of(clf))  # ~2800 evictions; measured agreement 1e-14


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
        before = int(engine_of(clf).istate[co.I_UPDATES]) if hasattr(clf, "_engine") else 0
        clf.partial_fit(X, y, classes=[0, 1])
        updates_per_pass.append(int(engine_of(clf).istate[co.I_UPDATES]) - before)
        if updates_per_pass[-1] == 0:
            break
    assert updates_per_pass[-1] == 0, updates_per_pass
    assert sum(updates_per_pass) <= bound
    # and it stays converged: every training example has margin > 1, a further pass changes nothing
    assert np.all((2 * y - 1) * clf.decision_function(X) > 1.0)
    clf.partial_fit(X, y)
    assert int(engine_of(clf).istate[co.I_UPDATES]) == sum(updates_per_pass)
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
    eng = engine_of(clf)
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


@pytest.mark.accuracy
def test_digits_accuracy_floor():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    model = make_pipeline(StandardScaler(), OBSCUREClassifier(random_state=0)).fit(Xtr, ytr)
    assert model.score(Xte, yte) >= 0.97  # measured 0.985; the authors' toolbox: 0.983


@pytest.mark.accuracy
def test_fit_many_classes_accuracy_floor():
    """Past three classes, 'auto' epochs are 20 of stage 1 and none of stage 2.  Ten classes, three
    generated sets, three seeds each: mean held-out accuracy 0.8385 (measured; SVC(C=10) 0.8389;
    5 stage-1 and 10 stage-2 epochs 0.830, 5 and 5 0.817, which this floor rejects)."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    accs = []
    for data_seed in (1, 2, 3):
        X, y = make_classification(n_samples=900, n_features=10, n_informative=8, n_redundant=0, n_classes=10,
                                   n_clusters_per_class=2, class_sep=2.0, random_state=data_seed)
        X = StandardScaler().fit_transform(X)
        for seed in range(3):
            accs.append(OBSCUREClassifier(random_state=seed).fit(X[:600], y[:600]).score(X[600:], y[600:]))
    assert np.mean(accs) >= 0.835, accs


def test_fit_epochs_auto_count_classes():
    """'auto' runs 5 stage-1 epochs (fewer after one without margin errors) and 5 stage-2 epochs
    with two or three classes, 20 stage-1 epochs and no stage 2 with more (stage-2 steps: N each)."""
    X, y = make_data(60, 3, seed=2)
    for n_classes, epochs1, epochs2 in ((2, 5, 5), (3, 5, 5), (4, 20, 0)):
        yk = np.arange(60) % n_classes  # labels unrelated to X: every epoch has margin errors
        clf = OBSCUREClassifier(kernels=KERNELS, random_state=0).fit(X, yk)
        assert engine_of(clf).istate[co.I_T] == epochs2 * 60
        assert engine_of(clf).istate[co.I_CLOCK] == (epochs1 + epochs2) * 60
        assert clf.stage_ == (2 if epochs2 else 1)


@pytest.mark.accuracy
def test_river_image_segments_prequential_floor():
    from river import datasets, evaluate, metrics, preprocessing

    import onlinemkl.river

    model = preprocessing.StandardScaler() | onlinemkl.river.OBSCUREClassifier()
    acc = evaluate.progressive_val_score(datasets.ImageSegments(), model, metrics.Accuracy())
    assert acc.get() >= 0.88  # measured 0.892


def test_budget_keeps_arrays_bounded_on_a_long_stream():
    rng = np.random.default_rng(0)
    budget = 64
    clf = OBSCUREClassifier(kernels=KERNELS[:3], budget=budget, eviction="least_impact", switch_after=5000)
    shapes = set()
    for start in range(0, 20000, 1000):
        X = rng.normal(size=(1000, D))
        y = (np.floor(X[:, 0] * 2 + rng.normal(size=1000)) % 3).astype(int)  # noisy: updates never stop
        clf.partial_fit(X, y, classes=[0, 1, 2])
        eng = engine_of(clf)
        assert clf.n_support_ <= budget
        shapes.add(tuple(getattr(eng.buf, f).shape for f in ("S", "ssq", "sdiag", "ypos", "yneg", "coef", "tstamp"))
                   + (eng.g.shape, eng.scores.shape, eng.krow.shape))
    eng = engine_of(clf)
    assert eng.buf.capacity <= budget and eng.buf.S.shape[1] <= 2 * D
    assert eng.buf.nbytes() <= budget * (2 * D + 1 + 3 + 4 + 1) * 8
    assert eng.evictions > 10000 and clf.stage_ == 2
    assert len(shapes) == 1, shapes  # the arrays stopped growing after the first 1000 examples
    recomputed_matches(eng)  # > 10^4 evictions, still exact to rounding
