"""The sequence labeller's engine (online proximal MKL, structured case): variable lengths, empty
sequences, unseen labels, reallocation, budgets and the averaged model; on the digit-strings
benchmark (marked ``accuracy``) the chain beats an independent per-position classifier and MKL is
at least as accurate as the best single kernel, with both losses.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _helpers import engine_of
from _sequence_data import _assert_same, _snapshot, _trained

from onlinemkl.datasets import digit_strings
from onlinemkl.kernels import RBF, Linear, Polynomial
from onlinemkl.sequence import SequenceMKLLabeler

LIN, QUAD, GAUSS = Linear(normalize=True), Polynomial(degree=2, normalize=True), RBF(gamma=0.05)


def test_variable_lengths_empty_sequences_and_unseen_labels():
    model, X, Ys = _trained()
    assert {len(p) for p in model.predict(X)} == {len(y) for y in Ys} and len({len(y) for y in Ys}) > 1
    assert model.predict_one([]) == [] and model.predict_one(np.zeros((0, 4))) == []
    before = _snapshot(model)
    model.learn_one([], [])
    model.learn_one(np.zeros((0, 4)), [])
    _assert_same(before, _snapshot(model))  # an empty sequence is a no-op
    # labels: only labels seen in training are predicted; a new label joins when learnt
    assert set(itertools.chain(*model.predict(X))) <= {0, 1, 2}
    rng = np.random.default_rng(0)
    before = _snapshot(model)
    with pytest.raises(ValueError, match="label 'new' is text, but this model's classes are numbers"):
        model.learn_one(rng.normal(size=(3, 4)), [0, 1, "new"])  # the whole sequence refused
    _assert_same(before, _snapshot(model))
    for _ in range(15):
        model.learn_one(rng.normal(size=(3, 4)) + 6.0, [3, "3", 3.0])  # one new label, written three ways
    assert model.classes_[-1] == 3
    assert model.predict_one(np.full((2, 4), 6.0)) == [3, 3]
    # before any learning: no label to give
    fresh = SequenceMKLLabeler()
    assert fresh.predict_one(np.zeros((3, 2))) == [None, None, None] and fresh.predict_one([]) == []


def test_cached_records_follow_every_reallocation():
    """The sequence engine's cached records hold its current arrays after new rows, features,
    labels and a restored state (a stale record would update an orphaned array)."""
    rng = np.random.default_rng(4)
    model = SequenceMKLLabeler()

    def current(eng):
        cached = eng._records
        fresh = eng._build_records()
        return cached is None or all(a is b for rc, rf in zip(cached, fresh) for a, b in zip(rc, rf))

    for i in range(60):
        L = 2 + i % 4
        xs = [{f"f{j}": float(v) for j, v in enumerate(rng.normal(size=2 + i // 20))} for _ in range(L)]
        model.learn_one(xs, [int(v) for v in rng.integers(0, 2 + i // 20, size=L)])
        assert current(engine_of(model)), f"sequence {i}"
        model.predict_one(xs)
    other = SequenceMKLLabeler()
    other.learn_one([{"f0": 0.0}], [0])
    engine_of(other).set_state(*engine_of(model).get_state())
    assert current(engine_of(other))


def test_budget_and_averaged_model():
    model, X, Ys = _trained(n=40, budget=20, loss="crf", average=True)
    eng = engine_of(model)
    assert eng.n_support == 20 and eng.istate[3] > 0 and eng.buf.capacity <= 20
    np.testing.assert_allclose(eng.theta_sq, eng.recompute_theta_sq(), rtol=1e-7, atol=1e-10)
    assert all(len(p) == len(y) for p, y in zip(model.predict(X), Ys))
    w = model.kernel_weights_
    assert w.shape == (3,) and w.sum() == pytest.approx(1.0)


def _char_accuracy(pred, ys):
    return float(np.mean(np.concatenate([np.asarray(p) == np.asarray(y) for p, y in zip(pred, ys)])))


@pytest.fixture(scope="module")
def digits_task():
    # 200 training and 300 test strings of 4-8 noisy digits (about 1,200 / 1,800 characters)
    return digit_strings(200, 300, length=(4, 8), noise=0.3, transition_strength=0.8, seed=0)


BENCH = dict(lam=1e-3, eta0=1.0, n_epochs=5, random_state=0)


@pytest.fixture(scope="module")
def independent_accuracy(digits_task):
    """The same MKL learner without the chain: every character its own length-1 sequence.

    The structured hinge of a length-1 sequence is the multiclass hinge, so this is
    an independent per-character classifier with the same kernels, regulariser,
    step sizes and number of epochs; it is trained and decoded character by character.
    """
    X_train, y_train, X_test, y_test = digits_task
    chars_X = [x[i:i + 1] for x in X_train for i in range(len(x))]
    chars_y = [[c] for y in y_train for c in y]
    indep = SequenceMKLLabeler(kernels=(LIN, QUAD, GAUSS), **BENCH).fit(chars_X, chars_y)
    return _char_accuracy([[indep.predict_one(x[i:i + 1])[0] for i in range(len(x))] for x in X_test], y_test)


@pytest.mark.accuracy
@pytest.mark.parametrize("loss", ["svm", "crf"])
def test_chain_beats_an_independent_per_character_classifier(digits_task, independent_accuracy, loss):
    """Strong transitions (the preferred successor has probability 0.82): the chain model
    must beat the per-character classifier by a clear margin, with either loss."""
    X_train, y_train, X_test, y_test = digits_task
    chain = SequenceMKLLabeler(kernels=(LIN, QUAD, GAUSS), loss=loss, **BENCH).fit(X_train, y_train)
    acc_chain = _char_accuracy(chain.predict(X_test), y_test)
    print(f"{loss}: chain {acc_chain:.4f}, independent {independent_accuracy:.4f}")
    assert acc_chain >= independent_accuracy + 0.05
    assert acc_chain >= 0.9
    assert chain.kernel_weights_[-1] > 0.05  # the transition group is in use


@pytest.mark.accuracy
def test_mkl_is_at_least_as_accurate_as_the_best_single_kernel(digits_task):
    """Linear + quadratic + Gaussian with MKL (sq_l21) against each kernel alone, same settings.

    Tolerance 0.005: the test set has about 1,800 characters, so one character is 0.00055
    and the standard error of a paired difference of two models is about 0.003.
    """
    X_train, y_train, X_test, y_test = digits_task
    acc = {}
    for name, ks in (("linear", (LIN,)), ("quadratic", (QUAD,)), ("gaussian", (GAUSS,)), ("mkl", (LIN, QUAD, GAUSS))):
        model = SequenceMKLLabeler(kernels=ks, **BENCH).fit(X_train, y_train)
        acc[name] = _char_accuracy(model.predict(X_test), y_test)
    print(acc)
    best = max(acc[k] for k in ("linear", "quadratic", "gaussian"))
    assert acc["mkl"] >= best - 0.005


def _unary_scores(eng, xs, average):
    """Every position's unary scores ``U[i, c]`` and the transition scores of a model (last or averaged)."""
    from onlinemkl.sequence import _step as cs

    n, Y, F = eng.n_support, eng.n_labels, eng.n_kernels
    buf, spec = eng._position_rows(), eng.ck.spec()
    sigma, T, S0, S1 = eng.sigma, eng.T, eng.S0, eng.S1
    if average:
        t = int(eng.istate[cs.I_T])
        B = np.zeros_like(eng.beta)
        cs.averaged_class_vectors(n, eng.beta, eng.avg_acc, eng.avg_base, eng.sigma_cum, t, B)
        buf, sigma = eng._position_rows(B), np.ones(F + 1)
        T, S0, S1 = eng.Tavg / t, eng.S0avg / t, eng.S1avg / t
    _, _, _, U, Tc, S0c, S1c = cs.model_scores(np.ascontiguousarray(xs), buf, n, cs.KernelSpec(*spec), sigma,
                                               T, S0, S1, Y)
    return np.concatenate([U.ravel(), Tc.ravel(), S0c, S1c])


@pytest.mark.parametrize("average", [False, True])
def test_fit_stores_each_position_once_and_learns_the_same_model(average):
    """``fit``'s re-visits add to a position's row: the buffer holds at most one row per distinct
    position, and the model (last and averaged) scores as the model that stores every update as a
    new row (``learn_one`` without ids, the same steps), within 1e-9 relative; ``learn_one`` with a
    ``seq_id`` per sequence is ``fit`` exactly.  The squared l2,1 prox shrinks the groups at different
    rates, so one position's updates differ across kernels (a class vector per kernel keeps them)."""
    from _sequence_data import _small_problem

    X, Ys = _small_problem(3)
    kw = dict(kernels=(RBF(gamma=0.3), LIN, QUAD), regularizer="sq_l21", lam=0.05, n_epochs=4, random_state=0,
              average=average)
    merged = SequenceMKLLabeler(**kw).fit(X, Ys)
    appended, by_id = SequenceMKLLabeler(**kw), SequenceMKLLabeler(**kw)
    rng = np.random.default_rng(0)
    for _ in range(4):
        for i in rng.permutation(len(X)):
            appended.learn_one(X[i], Ys[i])
            by_id.learn_one(X[i], Ys[i], seq_id=i)
    em, ea = engine_of(merged), engine_of(appended)
    assert em.n_support <= sum(map(len, X)) and em.n_support < ea.n_support
    w = em.kernel_weights()
    assert np.ptp(w[:3] / engine_of(SequenceMKLLabeler(**dict(kw, n_epochs=1)).fit(X, Ys)).kernel_weights()[:3]) > 1e-3
    np.testing.assert_allclose(w, ea.kernel_weights(), rtol=1e-9)
    for xs in X:
        got, want = _unary_scores(em, xs, average), _unary_scores(ea, xs, average)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    _assert_same(_snapshot(merged), _snapshot(by_id))


def test_mkl_weights_leave_a_noise_kernel_where_the_regulariser_bites():
    """Two Gaussian kernels, one on the informative columns and one on noise columns: once the
    prox shrinks the groups noticeably (``sum_t eta_t lam`` ~ 0.3 here), MKL's squared l2,1
    prox drops the noise kernel's weight well below the fixed average's; at the default ``lam``
    the shrinkage is ~100 times weaker and the two weightings agree (the OCR words' case)."""
    from _sequence_data import _small_problem

    X, Ys = _small_problem(3, n_seq=40)
    rng = np.random.default_rng(1)
    X = [np.hstack([x, rng.normal(size=(len(x), 4))]) for x in X]  # columns 4-7 are noise
    kernels = (RBF(gamma=0.3, group=[0, 1, 2, 3]), RBF(gamma=0.3, group=[4, 5, 6, 7]))

    def weights(lam, **reg):
        return SequenceMKLLabeler(kernels=kernels, lam=lam, n_epochs=5, random_state=0, **reg).fit(X, Ys).kernel_weights_

    mkl, avg = weights(1e-2, regularizer="sq_l21"), weights(1e-2, regularizer="nonsparse", q=2)
    assert mkl[1] < 0.6 * avg[1] and mkl[0] > avg[0]
    np.testing.assert_allclose(weights(1e-4, regularizer="sq_l21"), weights(1e-4, regularizer="nonsparse", q=2),
                               atol=0.01)
