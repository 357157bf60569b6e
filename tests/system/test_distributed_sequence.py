"""Merging sequence labellers and their divergence (onlinemkl.distributed.sequence).

One model merged is the identity; copies merge into the copy; without compression the merged
model's per-position emission scores and its transition, start and stop scores are the weighted
means of the models' (last and averaged model); with a budget the merge keeps it; divergence is
0 between copies, symmetric, and the squared distance of the scores' parts.
"""

import copy

import numpy as np
import pytest

from onlinemkl.distributed import divergence, merge, merge_states, state_divergence
from onlinemkl.kernels import RBF, Linear
from onlinemkl.sequence import SequenceMKLLabeler
from _helpers import engine_of

KERNELS = (Linear(normalize=True), RBF(gamma=0.5))
RNG = np.random.default_rng(3)
SEQS = [RNG.normal(size=(int(RNG.integers(2, 6)), 3)) for _ in range(60)]
LABELS = [["ab"[int(v > 0)] if i % 3 else "c" for i, v in enumerate(x[:, 0])] for x in SEQS]
DICT_SEQS = [[{f"f{j}": float(v) for j, v in enumerate(row)} for row in x] for x in SEQS]
TEST = [RNG.normal(size=(4, 3)) for _ in range(5)]


def fitted(kw, part, dicts=False, order=False):
    m = SequenceMKLLabeler(kernels=KERNELS, random_state=0, **kw)
    data = list(zip(DICT_SEQS if dicts else SEQS, LABELS))[part::2]
    if order:
        data = data[::-1]
    for xs, ys in data:
        m.learn_one(xs, ys)
    return m


def scores(model, xs, average=False):
    """Per-position emission scores and the transition, start and stop scores, by label name."""
    eng = engine_of(model)
    Y = eng.n_labels
    F = eng.ck.n_kernels
    rows = model._rows(xs, grow=False)
    sigma = eng.sigma
    T, S0, S1 = eng.T * sigma[F], eng.S0 * sigma[F], eng.S1 * sigma[F]
    from onlinemkl.sequence import _step as cs

    B = eng.beta
    if average:
        t = max(int(eng.istate[1]), 1)
        B = np.zeros_like(eng.beta)
        cs.averaged_class_vectors(eng.n_support, eng.beta, eng.avg_acc, eng.avg_base, eng.sigma_cum, t, B)
        sigma = np.ones(F + 1)
        T, S0, S1 = eng.Tavg / t, eng.S0avg / t, eng.S1avg / t
    buf = eng._position_rows(B)
    out = cs.model_scores(rows, buf, eng.n_support, eng.ck.spec(), sigma, T / (sigma[F] if not average else 1),
                          S0 / (sigma[F] if not average else 1), S1 / (sigma[F] if not average else 1), Y)
    U, Tm, S0m, S1m = out[3], out[4], out[5], out[6]
    labels = model.classes_
    return ({y: U[:, i] for i, y in enumerate(labels)},
            {(a, b): Tm[i, j] for i, a in enumerate(labels) for j, b in enumerate(labels)},
            {y: (S0m[i], S1m[i]) for i, y in enumerate(labels)})


CASES = {"svm": dict(), "crf_avg": dict(loss="crf", average=True)}


@pytest.fixture(scope="module", params=list(CASES))
def pair(request):
    kw = CASES[request.param]
    return kw, fitted(kw, 0), fitted(kw, 1, order=True)


def test_merging_one_model_is_the_identity(pair):
    _, a, _ = pair
    state = a._get_state()
    assert merge_states(a, [state]) is state
    m = merge([a])
    for xs in TEST:
        assert m.predict_one(xs) == a.predict_one(xs)


def test_merging_copies_is_the_copy(pair):
    _, a, _ = pair
    m = merge([a, copy.deepcopy(a), copy.deepcopy(a)], weights=[1, 2, 3])
    assert m.n_support_ == a.n_support_
    for avg in (False, True):
        for xs in TEST:
            for got, want in zip(scores(m, xs, avg), scores(a, xs, avg)):
                for k in want:
                    np.testing.assert_allclose(got[k], want[k], rtol=1e-9, atol=1e-9)
    for xs in TEST:
        assert m.predict_one(xs) == a.predict_one(xs)


def test_merged_scores_are_the_weighted_mean(pair):
    _, a, b = pair
    assert a.classes_ != b.classes_  # b saw its labels in another order: merged by name
    w = np.array([0.3, 0.7])
    m = merge([a, b], weights=w)
    assert m.n_support_ <= a.n_support_ + b.n_support_
    for avg in (False, True):
        for xs in TEST:
            sm, sa, sb = scores(m, xs, avg), scores(a, xs, avg), scores(b, xs, avg)
            for part in range(3):
                for k in sm[part]:
                    want = w[0] * np.asarray(sa[part].get(k, 0.0)) + w[1] * np.asarray(sb[part].get(k, 0.0))
                    np.testing.assert_allclose(sm[part][k], want, rtol=1e-9, atol=1e-9)
    m.learn_one(SEQS[0], LABELS[0])  # the merged model keeps learning


def test_dict_models_with_different_feature_and_label_orders_merge():
    a = fitted({}, 0, dicts=True)
    b = SequenceMKLLabeler(kernels=KERNELS, random_state=0)
    for xs, ys in list(zip(DICT_SEQS, LABELS))[1::2][::-1]:
        b.learn_one([dict(reversed(list(p.items()))) for p in xs], [y.upper() for y in ys])
    m = merge([a, b])
    assert m.classes_ == a.classes_ + [y for y in b.classes_ if y not in a.classes_]
    dx = [{f"f{j}": float(v) for j, v in enumerate(r)} for r in TEST[0]]
    sm, sa, sb = scores(m, dx), scores(a, dx), scores(b, dx)
    for y in sm[0]:
        want = 0.5 * (sa[0].get(y, 0.0) + sb[0].get(y, 0.0))
        np.testing.assert_allclose(sm[0][y], want, rtol=1e-9, atol=1e-9)


def test_budget_compresses_to_the_budget_and_keeps_accuracy():
    kw = dict(budget=40)
    a, b = fitted(kw, 0), fitted(kw, 1)
    m = merge([a, b, copy.deepcopy(a)])
    assert m.n_support_ <= 40
    assert np.allclose(engine_of(m).recompute_theta_sq(), engine_of(m).theta_sq, rtol=1e-8, atol=1e-10)
    acc = np.mean([np.mean(np.array(m.predict_one(x)) == np.array(y)) for x, y in zip(SEQS, LABELS)])
    acc_a = np.mean([np.mean(np.array(a.predict_one(x)) == np.array(y)) for x, y in zip(SEQS, LABELS)])
    assert acc >= acc_a - 0.15


def test_divergence_zero_between_copies_symmetric_and_exact(pair):
    _, a, b = pair
    assert divergence(a, copy.deepcopy(a)) == pytest.approx(0.0, abs=1e-9)
    dab, dba = divergence(a, b), divergence(b, a)
    assert dab > 0 and dab == pytest.approx(dba, rel=1e-9)
    # ||a - b||^2 = ||a||^2 + ||b||^2 - 2 <a, b>: the norms are the models' own group norms
    na = float(np.sum(engine_of(a).theta_sq * engine_of(a).sigma ** 2))
    z = SequenceMKLLabeler(kernels=KERNELS, random_state=0)
    assert state_divergence(a, a._get_state(), z._get_state()) == pytest.approx(na, rel=1e-8)


def test_bad_merges_are_refused():
    a = fitted({}, 0)
    d = fitted({}, 1, dicts=True)
    with pytest.raises(ValueError, match="input kind"):
        merge_states(a, [a._get_state(), d._get_state()])
    with pytest.raises(ValueError, match="same parameters"):
        merge([a, SequenceMKLLabeler(kernels=KERNELS, loss="crf")])


def test_an_unfitted_model_is_left_out_of_a_merge():
    a = fitted({}, 0)
    z = SequenceMKLLabeler(kernels=KERNELS, random_state=0)
    m = merge_states(a, [z._get_state(), a._get_state()], weights=[1, 1])
    assert m[1]["istate"][1] == engine_of(a).istate[1]  # the fitted model alone
    e = SequenceMKLLabeler(kernels=KERNELS, random_state=0)
    e.learn_one([], [])  # fitted, but nothing learnt
    b = fitted({}, 1)
    m = merge([e, a, b, copy.deepcopy(a)], weights=[5, 1, 1, 1])
    assert m.n_support_ > 0 and m.predict_one(TEST[0]) is not None
    mean = merge([a, b, copy.deepcopy(a)])
    for xs in TEST:
        np.testing.assert_allclose(scores(m, xs)[0]["a"], scores(mean, xs)[0]["a"], rtol=1e-9, atol=1e-9)
    assert state_divergence(a, z._get_state(), z._get_state()) == 0.0
    na = float(np.sum(engine_of(a).theta_sq * engine_of(a).sigma ** 2))  # divergence: unfitted is the zero model
    assert state_divergence(a, z._get_state(), a._get_state()) == pytest.approx(na, rel=1e-8)


def test_dynamic_averaging_runs_the_labeller():
    from onlinemkl.distributed import DynamicAveraging, fit_local

    data = list(zip(SEQS, LABELS))
    m, log = fit_local(SequenceMKLLabeler(kernels=KERNELS, budget=40), [data[0::2], data[1::2]],
                       sync=DynamicAveraging(0.0, period=10))
    assert log.syncs >= 2 and m.n_support_ <= 40
    assert len(m.predict_one(TEST[0])) == 4
