"""The mini-batch regressors (PolyMKL, non-linear KRR) stay within what their window supports: the
defaults beat the running mean on river's synthetic streams, and the prediction guard."""

import numpy as np
import pytest
from river import preprocessing, stats
from river.datasets import synth

import onlinemkl.river as omr
from onlinemkl import NonlinearKRRRegressor, PolyMKLRegressor, load
from onlinemkl.polymkl._active import _loo
from onlinemkl._window import NEAR_COPY, PREDICTION_MARGIN, duplicate_groups, loo_ridge

# Rows per stream: enough for the window to fill and the active set to outgrow it, which is where the
# defaults can diverge without the guards (predictions near 1e16 on Friedman around example 800).
ROWS = 900
STREAMS = [("Friedman", 1), ("Friedman", 2), ("Friedman", 7), ("Planes2D", 2)]


def _data(name, seed):
    return list(getattr(synth, name)(seed=seed).take(ROWS))


def _running_mean_mae(data):
    mean, err = stats.Mean(), []
    for _, y in data:
        err.append(abs(y - mean.get()))
        mean.update(y)
    return float(np.mean(err))


@pytest.mark.accuracy
@pytest.mark.parametrize("name, seed", STREAMS)
def test_river_defaults_beat_the_running_mean(name, seed):
    data = _data(name, seed)
    model = preprocessing.StandardScaler() | omr.PolyMKLRegressor(seed=0)
    err = []
    for x, y in data:
        err.append(abs(model.predict_one(x) - y))
        model.learn_one(x, y)
    assert np.mean(err) < _running_mean_mae(data)
    assert max(err[-300:]) < 10 * _running_mean_mae(data)


@pytest.mark.accuracy
@pytest.mark.parametrize("name, seed", STREAMS)
def test_sklearn_budget_200_batches_of_32_beat_the_running_mean(name, seed):
    data = _data(name, seed)
    X = np.array([[x[k] for k in sorted(x)] for x, _ in data])
    y = np.array([t for _, t in data])
    model, err = PolyMKLRegressor(budget=200, random_state=0), []
    for i in range(0, len(y), 32):
        p = model.predict(X[i:i + 32]) if i else np.zeros(len(y[i:i + 32]))
        err.extend(np.abs(p - y[i:i + 32]))
        model.partial_fit(X[i:i + 32], y[i:i + 32])
    assert np.mean(err) < _running_mean_mae(data)
    assert model.lam_ * 200 > 0 and len(model.multi_indices_) <= 100  # at most half the window's rows


def test_leave_one_out_matches_refits_when_features_outnumber_rows():
    """The SVD form stays exact where the features span the rows and the ridge is tiny (the hat matrix
    is nearly the identity and both the residual and 1 - H_ii are nearly 0): computed as a difference,
    that error comes out many times too low, and a tiny ridge looks best."""
    rng = np.random.default_rng(0)
    n, m = 12, 30
    B = rng.normal(size=(n, m))
    y = rng.normal(size=n)
    K = B @ B.T
    shifts = np.trace(K) / n * np.array([1e-13, 1e-6, 1.0])
    for c, got in zip(shifts, _loo(B, y, shifts)):
        e = [y[i] - K[i, np.arange(n) != i] @ np.linalg.solve(K[np.ix_(np.arange(n) != i, np.arange(n) != i)]
                                                            + c * np.eye(n - 1), y[np.arange(n) != i])
             for i in range(n)]
        assert got == pytest.approx(np.mean(np.square(e)), rel=1e-2)


def _leave_group_out_mse(K, y, c, groups):
    """Refit without each group of equal rows, predict its rows: the reference for both forms."""
    err = np.empty(len(y))
    for g in np.unique(groups):
        out, keep = groups == g, groups != g
        a = np.linalg.solve(K[np.ix_(keep, keep)] + c * np.eye(keep.sum()), y[keep])
        err[out] = y[out] - K[np.ix_(out, keep)] @ a
    return float(np.mean(err * err))


def test_leave_one_out_leaves_equal_rows_out_together():
    """With repeated rows in the window, each row is left out with its copies (a copy left in the fit
    predicts it perfectly, so plain leave-one-out picks the smallest ridge): both leave-one-out forms
    match refits without the whole group, and rows without copies keep the plain formula."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(14, 3))
    X = np.vstack([X, X[:5], X[:2]])  # two rows three times, three rows twice
    n = X.shape[0]
    y = X[:, 0] - X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    groups = duplicate_groups(X)
    assert groups is not None and np.bincount(groups).max() == 3
    assert duplicate_groups(X[:14]) is None
    B = np.column_stack([X, X ** 2, np.ones(n)])
    K = B @ B.T
    shifts = np.trace(K) / n * np.array([1e-6, 1e-2, 1.0])
    for c, got in zip(shifts, _loo(B, y, shifts, groups)):
        assert got == pytest.approx(_leave_group_out_mse(K, y, c, groups), rel=1e-6)
    lam, _, loo = loo_ridge(K, y, grid=shifts / (np.trace(K) / n), groups=groups)
    assert loo == pytest.approx(_leave_group_out_mse(K, y, lam * n, groups), rel=1e-6)


def test_near_copies_are_paired_and_distinct_close_rows_are_not_chained():
    """A row and a slightly moved copy of it (within ``NEAR_COPY`` deviations in every column, each the
    other's nearest neighbour) share a group; dense one-dimensional data, whose neighbours are all
    within the tolerance, is paired at most, never chained into large groups."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 4))
    moved = X[:6] + 0.2 * NEAR_COPY * rng.uniform(-1, 1, size=(6, 4))
    groups = duplicate_groups(np.vstack([X, moved]))
    assert groups is not None
    assert all(groups[i] == groups[40 + i] for i in range(6))
    assert np.bincount(groups).max() == 2 and len(set(groups[:40].tolist())) == 40
    assert duplicate_groups(np.vstack([X, X[:6] + 3 * NEAR_COPY])) is None
    assert duplicate_groups(np.vstack([X, moved]), tol=0.0) is None  # exact copies only
    line = np.linspace(0, 1, 500)[:, None]  # neighbours 0.007 deviations apart
    g = duplicate_groups(line)
    assert g is None or np.bincount(g).max() <= 2


def test_repeated_rows_do_not_drive_the_ridge_down():
    """Every row twice in a row (a duplicated stream) leaves the chosen ridge where the plain stream puts
    it (the same shift ``n lam`` per distinct row, within a factor of two either way), for both mini-batch
    learners' leave-one-out; a copy left in each fit would drive it 2.4x (KRR) and 16x (PolyMKL) lower."""
    data = list(synth.Planes2D(seed=1).take(200))
    X = np.array([[x[k] for k in sorted(x)] for x, _ in data])
    y = np.array([t for _, t in data])
    for make in (lambda: PolyMKLRegressor(budget=200, random_state=0), lambda: NonlinearKRRRegressor(budget=200)):
        plain, twice = make().fit(X, y), make().fit(np.repeat(X, 2, axis=0), np.repeat(y, 2))
        assert plain.lam_ / 2 < twice.lam_ * 2 < plain.lam_ * 4


@pytest.mark.parametrize("make", [lambda: PolyMKLRegressor(degree=3, budget=40, random_state=0),
                                  lambda: NonlinearKRRRegressor(degree=2, budget=40)])
def test_predictions_kept_within_the_window_target_range_widened_by_the_margin(make):
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(40, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=40)
    model = make().fit(X, y)
    engine = model._fitted_engine()
    lo, hi = engine.target_bounds()
    width = y.max() - y.min()
    assert (lo, hi) == pytest.approx((y.min() - PREDICTION_MARGIN * width, y.max() + PREDICTION_MARGIN * width))
    inside = model.predict(X)
    assert np.all((inside > lo) & (inside < hi))  # a sane fit is untouched
    far = model.predict(np.full((3, 3), 1e6) * np.array([[1.0], [-1.0], [0.5]]))
    assert np.all((far >= lo) & (far <= hi))
    # a broken dual (what a near-singular solve gives) still predicts within the bounds
    arr = "alpha_pred" if hasattr(engine, "alpha_pred") else "alpha"
    setattr(engine, arr, getattr(engine, arr) * 1e12)
    wild = model.predict(X)
    assert np.all((wild >= lo) & (wild <= hi)) and np.any((wild == lo) | (wild == hi))


def test_guard_holds_after_save_and_load(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(60, 2))
    y = X[:, 0] * X[:, 1]
    model = PolyMKLRegressor(degree=2, budget=30, random_state=0).fit(X, y)
    model.save(tmp_path / "m.omkl")
    again = load(tmp_path / "m.omkl")
    Q = np.vstack([X[:5], np.full((2, 2), 50.0)])
    np.testing.assert_array_equal(again.predict(Q), model.predict(Q))
    assert again._fitted_engine().target_bounds() == model._fitted_engine().target_bounds()


def test_the_window_rules_are_checked():
    """A crafted ``rules`` setting (a model file's) is refused naming the rule, before any allocation."""
    from onlinemkl._window import check_rules, default_rules

    assert check_rules(default_rules()) == default_rules()
    for bad, name in ((dict(default_rules(), ridge_grid=[-7.0, 2.0, 10 ** 9]), "ridge_grid"),
                      (dict(default_rules(), prediction_margin=float("nan")), "prediction_margin"),
                      (dict(default_rules(), near_copy=-1.0), "near_copy"),
                      (dict(default_rules(), local_ridge_grid="x"), "local_ridge_grid")):
        with pytest.raises(ValueError, match=name):
            check_rules(bad)
    with pytest.raises(ValueError, match="keys"):
        check_rules({"prediction_margin": 1.0})


def test_the_ridge_search_around_a_tiny_last_choice_stays_above_the_grid_floor():
    """The local grid around the last shift is clipped to the global grid's ends for the current kernel,
    so the ridge cannot ratchet down by 10^1.5 per round into rounding noise."""
    from onlinemkl.polymkl._active import _choose_shift
    from onlinemkl._window import LAM_GRID

    engine = PolyMKLRegressor()._new_engine()

    rng = np.random.default_rng(3)
    G = rng.normal(size=(20, 40))  # more kernels than rows: a tiny ridge interpolates
    w = np.ones(40)
    y = rng.normal(size=20)
    scale = float(np.sum(G * G)) / 20
    c, loo = _choose_shift(engine, G, w, y, True, 1e-12 * scale)
    assert c >= scale * LAM_GRID[0] * (1 - 1e-12) and np.isfinite(loo)
