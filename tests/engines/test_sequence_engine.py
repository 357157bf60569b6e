"""The sequence labeller (online proximal MKL, structured case) and the digit-strings data set.

* the compiled step against a plain-numpy reference (explicit stored positions,
  brute-force decoding and marginals by enumeration, exact group norms from
  Gram matrices, the prox of ``tests/naive_prox.py``);
* behaviour: variable lengths, empty sequences, unseen labels, dicts and
  arrays, bad input leaving the model unchanged, persistence;
* learning on the digit-strings benchmark: the chain beats an independent
  per-position classifier, MKL is at least as accurate as the best single
  kernel, both losses work.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from naive_prox import prox_norms
from onlinemkl import load
from onlinemkl.proximal import _prox as _cp
from onlinemkl.datasets import digit_strings, digit_transition_matrix
from onlinemkl.kernels import Linear, Polynomial, RBF
from onlinemkl.sequence import SequenceMKLLabeler

LIN, QUAD, GAUSS = Linear(normalize=True), Polynomial(degree=2, normalize=True), RBF(gamma=0.05)


# ---------------------------------------------------------------------------------------------
# plain-numpy reference of one step


def _k_lin(x, z):
    return float(x @ z)


def _k_quad(x, z):
    return float((x @ z + 1.0) ** 2)


def _k_rbf(gamma):
    return lambda x, z: float(np.exp(-gamma * np.sum((x - z) ** 2)))


def _normalised(k):
    def kn(x, z):
        d = k(x, x) * k(z, z)
        return k(x, z) / math.sqrt(d) if d > 0 else 0.0
    return kn


NAIVE_KERNELS = [_normalised(_k_lin), _normalised(_k_quad), _k_rbf(0.3)]
MODEL_KERNELS = (Linear(normalize=True), Polynomial(degree=2, normalize=True), RBF(gamma=0.3))


class NaiveSequenceModel:
    """The structured step written out: theta_k = sum_s a[s, k] sum_c u[s, c] phi_k(x_s, c)."""

    def __init__(self, kernels, loss, cost, prox_code, lam, prox_param, eta0, gamma):
        self.kernels, self.loss, self.cost = kernels, loss, cost
        self.prox_code, self.lam, self.prox_param, self.eta0, self.gamma = prox_code, lam, prox_param, eta0, gamma
        self.X, self.u, self.a = [], [], []  # stored positions, class vectors, per-kernel coefficients
        self.Y = 0
        self.T = np.zeros((0, 0))
        self.S0 = np.zeros(0)
        self.S1 = np.zeros(0)
        self.t = 0

    def _grow(self, Y):
        if Y > self.Y:
            T = np.zeros((Y, Y))
            T[: self.Y, : self.Y] = self.T
            self.T = T
            self.S0 = np.concatenate([self.S0, np.zeros(Y - self.Y)])
            self.S1 = np.concatenate([self.S1, np.zeros(Y - self.Y)])
            self.u = [np.concatenate([u, np.zeros(Y - u.size)]) for u in self.u]
            self.Y = Y

    def unary(self, xs):
        U = np.zeros((len(xs), self.Y))
        for i, x in enumerate(xs):
            for xs_, u, a in zip(self.X, self.u, self.a):
                U[i] += sum(a[k] * K(xs_, x) for k, K in enumerate(self.kernels)) * u
        return U

    def score(self, U, y):
        s = self.S0[y[0]] + self.S1[y[-1]] + sum(U[i, c] for i, c in enumerate(y))
        return s + sum(self.T[a, c] for a, c in zip(y[:-1], y[1:]))

    def norms_sq(self):
        F = len(self.kernels)
        out = np.zeros(F + 1)
        n = len(self.X)
        for k, K in enumerate(self.kernels):
            for s in range(n):
                for r in range(n):
                    out[k] += self.a[s][k] * self.a[r][k] * (self.u[s] @ self.u[r]) * K(self.X[s], self.X[r])
        out[F] = np.sum(self.T ** 2) + np.sum(self.S0 ** 2) + np.sum(self.S1 ** 2)
        return out

    def predict(self, xs):
        U = self.unary(xs)
        labellings = list(itertools.product(range(self.Y), repeat=len(xs)))
        return list(max(labellings, key=lambda y: self.score(U, y)))

    def learn(self, xs, ys, Y):
        self._grow(Y)
        self.t += 1
        eta = self.eta0 / math.sqrt(self.t)
        L, F = len(xs), len(self.kernels)
        U = self.unary(xs)
        labellings = list(itertools.product(range(self.Y), repeat=L))
        scores = np.array([self.score(U, y) for y in labellings])
        gold = self.score(U, ys)
        u = np.zeros((L, self.Y))
        dT, dS0, dS1 = np.zeros_like(self.T), np.zeros(self.Y), np.zeros(self.Y)

        def add_counts(y, w):
            dS0[y[0]] += w
            dS1[y[-1]] += w
            for i in range(L):
                u[i, y[i]] += w
            for a, c in zip(y[:-1], y[1:]):
                dT[a, c] += w

        if self.loss == "svm":
            aug = scores + self.cost * np.array([sum(a != b for a, b in zip(y, ys)) for y in labellings])
            j = int(np.argmax(aug))
            loss = max(aug[j] - gold, 0.0)
            if loss > 0:
                add_counts(ys, 1.0)
                add_counts(labellings[j], -1.0)
        else:
            log_z = np.logaddexp.reduce(scores)
            loss = max(log_z - gold, 0.0)
            p = np.exp(scores - log_z)
            add_counts(ys, 1.0)
            for y, py in zip(labellings, p):
                add_counts(y, -py)
        if loss > 0:
            for i in range(L):
                if np.any(u[i] != 0):
                    self.X.append(np.asarray(xs[i], dtype=float))
                    self.u.append(u[i].copy())
                    self.a.append(np.full(F, eta))
            self.T = self.T + eta * dT
            self.S0 = self.S0 + eta * dS0
            self.S1 = self.S1 + eta * dS1
        # proximal step on the group norms (Prop. 1), then the projection onto the gamma-ball
        b = np.sqrt(np.maximum(self.norms_sq(), 0.0))
        b_new = prox_norms(self.prox_code, b, eta * self.lam, self.prox_param)
        proj = 1.0
        if self.gamma and np.sum(b_new ** 2) > self.gamma ** 2:
            proj = self.gamma / math.sqrt(np.sum(b_new ** 2))
        fac = np.where(b > 0, b_new / np.where(b > 0, b, 1.0), 1.0) * proj
        self.a = [a * fac[:F] for a in self.a]
        self.T, self.S0, self.S1 = self.T * fac[F], self.S0 * fac[F], self.S1 * fac[F]
        return loss


def _small_problem(seed, n_seq=36, d=4, Y=3):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(Y, d))
    X, Ys = [], []
    for _ in range(n_seq):
        L = int(rng.integers(1, 5))
        y = [int(rng.integers(Y))]
        for _ in range(L - 1):
            y.append((y[-1] + 1) % Y if rng.random() < 0.7 else int(rng.integers(Y)))
        X.append(centers[y] + 0.8 * rng.normal(size=(L, d)))
        Ys.append(y)
    return X, Ys


@pytest.mark.parametrize("loss,regularizer,gamma", [
    ("svm", "sq_l21", None), ("svm", "sq_l21", 1.5), ("crf", "sq_l21", None), ("svm", "l21", None),
    ("crf", "nonsparse", 2.0),
])
def test_compiled_step_matches_numpy_reference(loss, regularizer, gamma):
    X, Ys = _small_problem(3)
    lam, eta0, q = 0.05, 0.7, 1.5
    model = SequenceMKLLabeler(kernels=MODEL_KERNELS, loss=loss, cost=1.0, regularizer=regularizer, lam=lam,
                               q=q, eta0=eta0, gamma=gamma)
    code = {"sq_l21": _cp.PROX_SQ_L21, "l21": _cp.PROX_L21, "nonsparse": _cp.PROX_NONSPARSE_Q}[regularizer]
    ref = NaiveSequenceModel(NAIVE_KERNELS, loss, 1.0, code, lam, q if regularizer == "nonsparse" else 0.0,
                             eta0, gamma)
    projected = 0
    for xs, ys in zip(X, Ys):
        model.learn_one(xs, ys)
        ref.learn(xs, [model._labels.index[y] for y in ys], len(model.classes_))
        eng = model._engine
        F, n, Y = eng.n_kernels, eng.n_support, eng.n_labels
        assert n == len(ref.X)
        coef = eng.buf.coef[:n] * eng.sigma[:F]
        np.testing.assert_allclose(coef, np.array(ref.a).reshape(n, F), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(eng.beta[:n, :Y], np.array(ref.u).reshape(n, Y), rtol=1e-9, atol=1e-12)
        sT = eng.sigma[F]
        np.testing.assert_allclose(sT * eng.T[:Y, :Y], ref.T, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sT * eng.S0[:Y], ref.S0, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(sT * eng.S1[:Y], ref.S1, rtol=1e-9, atol=1e-12)
        # incremental norms (eq. 17 with the cross terms inside a sequence) = exact norms
        np.testing.assert_allclose(eng.group_norms() ** 2, ref.norms_sq(), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(eng.theta_sq, eng.recompute_theta_sq(), rtol=1e-8, atol=1e-12)
        if gamma is not None:
            projected += bool(np.sum(eng.group_norms() ** 2) > 0.999 * gamma ** 2)
    if gamma is not None:
        assert projected > 0, "the projection never acted: the test does not exercise it"
    for xs in X[:10]:
        assert [model._labels.index[c] for c in model.predict_one(xs)] == ref.predict(xs)
    assert eng.istate[1] == len(X)


def test_gamma_auto_uses_the_sequence_loss_at_zero():
    X, Ys = _small_problem(5, n_seq=8)
    model = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),), lam=0.02, cost=2.0)
    for xs, ys in zip(X, Ys):
        model.learn_one(xs, ys)
    mean_len = np.mean([len(y) for y in Ys])
    # appendix E: ||theta*|| <= sqrt(2 L(0) / lam), L(0) = cost * mean length for the structured hinge
    assert model._engine.hyper[7] == pytest.approx(math.sqrt(2 * 2.0 * mean_len / 0.02))
    crf = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),), loss="crf", lam=0.02)
    for xs, ys in zip(X, Ys):
        crf.learn_one(xs, ys)
    assert crf._engine.hyper[7] == pytest.approx(math.sqrt(2 * math.log(3) * mean_len / 0.02))


# ---------------------------------------------------------------------------------------------
# the data set


def test_digit_strings_is_deterministic_with_disjoint_pools():
    a = digit_strings(30, 20, length=(2, 7), noise=0.2, seed=4, return_info=True)
    b = digit_strings(30, 20, length=(2, 7), noise=0.2, seed=4, return_info=True)
    for u, v in zip(a[0] + a[2], b[0] + b[2]):
        np.testing.assert_array_equal(u, v)
    assert a[1] == b[1] and a[3] == b[3]
    c = digit_strings(30, 20, length=(2, 7), noise=0.2, seed=5)
    assert c[1] != a[1]
    X_train, y_train, X_test, y_test, info = a
    assert not set(info["train_pool"].tolist()) & set(info["test_pool"].tolist())
    assert len(info["train_pool"]) + len(info["test_pool"]) == 1797
    assert set(np.concatenate(info["train_images"]).tolist()) <= set(info["train_pool"].tolist())
    assert set(np.concatenate(info["test_images"]).tolist()) <= set(info["test_pool"].tolist())
    for X, Y in ((X_train, y_train), (X_test, y_test)):
        for x, y in zip(X, Y):
            assert x.shape == (len(y), 64) and 2 <= len(y) <= 7
            assert x.min() >= 0.0 and x.max() <= 1.0
            assert all(isinstance(c, int) and 0 <= c <= 9 for c in y)


def test_digit_strings_images_and_transitions():
    from sklearn.datasets import load_digits

    digits = load_digits()
    X, y, _, _, info = digit_strings(400, 1, length=(5, 5), noise=0.0, seed=1, return_info=True)
    for x, labels, idx in zip(X[:20], y[:20], info["train_images"][:20]):
        np.testing.assert_array_equal(x, digits.data[idx] / 16.0)
        assert labels == digits.target[idx].tolist()
    P = info["P"]
    counts = np.zeros((10, 10))
    for labels in y:
        for a, c in zip(labels[:-1], labels[1:]):
            counts[a, c] += 1
    freq = counts / counts.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(freq, P, atol=0.1)
    assert np.allclose(np.diag(P), 0.02) and P.max() == pytest.approx(0.82)
    P0, _ = digit_transition_matrix(0.0, seed=1)
    assert np.allclose(P0, 0.1)


@pytest.mark.parametrize("kwargs", [dict(length=(0, 3)), dict(length=(5, 3)), dict(length=3), dict(noise=-1.0),
                                    dict(transition_strength=1.5), dict(seed=None), dict(n_train=-1),
                                    dict(test_fraction=1.0)])
def test_digit_strings_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        digit_strings(**{"n_train": 2, "n_test": 2, **kwargs})


# ---------------------------------------------------------------------------------------------
# behaviour


def _trained(n=30, **kw):
    X, Ys = _small_problem(7, n_seq=n)
    params = dict(kernels=(RBF(gamma=0.3), Linear()), random_state=0)
    params.update(kw)
    return SequenceMKLLabeler(**params).fit(X, Ys), X, Ys


def _snapshot(model):
    state, arrays = model._get_state()
    return state, {k: v.copy() for k, v in arrays.items()}


def _assert_same(snap_a, snap_b):
    assert snap_a[0] == snap_b[0]
    assert snap_a[1].keys() == snap_b[1].keys()
    for k in snap_a[1]:
        np.testing.assert_array_equal(snap_a[1][k], snap_b[1][k], err_msg=k)


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
        assert current(model._engine), f"sequence {i}"
        model.predict_one(xs)
    other = SequenceMKLLabeler()
    other.learn_one([{"f0": 0.0}], [0])
    other._engine.set_state(*model._engine.get_state())
    assert current(other._engine)


def test_dict_and_array_inputs_agree():
    X, Ys = _small_problem(8, n_seq=25)
    arr = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),), random_state=0)
    dic = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),), random_state=0)
    names = ["a", "b", "c", "d"]
    as_dicts = [[dict(zip(names, row)) for row in xs] for xs in X]
    for xs, xd, ys in zip(X, as_dicts, Ys):
        arr.learn_one(xs, ys)
        dic.learn_one(xd, ys)
    assert arr.predict(X) == dic.predict(as_dicts)
    # lists of rows are arrays; unseen dict features are ignored, missing ones read 0
    assert arr.predict_one([list(r) for r in X[0]]) == arr.predict_one(X[0])
    extra = [dict(d, unseen=5.0) for d in as_dicts[0]]
    assert dic.predict_one(extra) == dic.predict_one(as_dicts[0])
    with pytest.raises(TypeError, match="feature dicts"):
        arr.learn_one(as_dicts[0], Ys[0])
    with pytest.raises(TypeError, match="rows of numbers"):
        dic.predict_one(X[0])


BAD = [
    (lambda: ([[0.0, 1.0, 2.0, 3.0], [0.0, 1.0]], [0, 1]), ValueError, "xs is ragged: position 1"),
    (lambda: (np.array([[0.0, np.nan, 0.0, 0.0]]), [0]), ValueError, "xs contains NaN"),
    (lambda: (np.array([[0.0, np.inf, 0.0, 0.0]]), [0]), ValueError, "xs contains NaN"),
    (lambda: (np.zeros((2, 4)), [0]), ValueError, "xs has 2 positions but ys has 1"),
    (lambda: (np.zeros((2, 5)), [0, 1]), ValueError, "xs has 5 features"),
    (lambda: (np.zeros(4), [0, 0, 0, 0]), ValueError, "xs is a 1-D array"),
    (lambda: (np.zeros((2, 4)), [0, [1]]), TypeError, r"ys\[1\] = \[1\] is not hashable"),
    (lambda: (np.zeros((2, 4)), [0, float("nan")]), ValueError, r"ys\[1\] is NaN"),
    (lambda: ([[0.0] * 4, {"a": 1.0}], [0, 1]), TypeError, r"xs\[1\] is a feature dict"),
    (lambda: ([["a", "b", "c", "d"]], [0]), ValueError, "xs must hold numbers"),
    (lambda: ({"a": 1.0}, [0]), TypeError, "xs is a dict"),
    (lambda: (np.zeros((2, 4)), 3), TypeError, "ys must be a sequence"),
]


@pytest.mark.parametrize("make,exc,msg", BAD)
def test_bad_input_names_the_parameter_and_leaves_the_model_unchanged(make, exc, msg):
    model, X, Ys = _trained(n=12)
    before = _snapshot(model)
    xs, ys = make()
    with pytest.raises(exc, match=msg):
        model.learn_one(xs, ys)
    _assert_same(before, _snapshot(model))
    if "ys" not in msg and "positions but" not in msg:
        with pytest.raises(exc, match=msg):
            model.predict_one(xs)
    if "features" in msg:
        return  # any number of columns is valid for a fresh model
    # a fresh model rejecting its first sequence stays unfitted
    fresh = SequenceMKLLabeler()
    with pytest.raises(exc):
        fresh.learn_one(xs, ys)
    assert fresh._get_state() == ({"fitted": False}, {})


def test_bad_dict_features_and_fit_restores_the_previous_model():
    dic = SequenceMKLLabeler(kernels=(RBF(gamma=0.3),))
    dic.learn_one([{"a": 1.0}, {"a": 2.0}], ["x", "y"])
    before = _snapshot(dic)
    with pytest.raises(ValueError, match="xs: feature 'b'"):
        dic.learn_one([{"a": 1.0}, {"b": float("nan")}], ["x", "z"])
    with pytest.raises(TypeError, match="xs: feature 'b'"):
        dic.learn_one([{"b": "text"}], ["x"])
    _assert_same(before, _snapshot(dic))
    assert dic.classes_ == ["x", "y"]
    model, X, Ys = _trained(n=12)
    before = _snapshot(model)
    with pytest.raises(ValueError, match="sequence 3: xs contains NaN"):
        model.fit(X[:3] + [np.full((2, 4), np.nan)], Ys[:4])
    _assert_same(before, _snapshot(model))
    with pytest.raises(ValueError, match="3 sequences but 2 label sequences"):
        model.fit(X[:3], Ys[:2])


def test_hyperparameters_are_checked_at_the_first_step():
    for params, name in ((dict(loss="hinge"), "loss"), (dict(cost=-1.0), "cost"), (dict(lam=-1.0), "lam"),
                         (dict(group_weights=(1.0,)), "group_weights"), (dict(budget=0), "budget")):
        model = SequenceMKLLabeler(**params)
        with pytest.raises(ValueError, match=name):
            model.learn_one(np.zeros((1, 2)), [0])
        assert not hasattr(model, "_engine")


def test_budget_and_averaged_model():
    model, X, Ys = _trained(n=40, budget=20, loss="crf", average=True)
    eng = model._engine
    assert eng.n_support == 20 and eng.istate[3] > 0 and eng.buf.capacity <= 20
    np.testing.assert_allclose(eng.theta_sq, eng.recompute_theta_sq(), rtol=1e-7, atol=1e-10)
    assert all(len(p) == len(y) for p, y in zip(model.predict(X), Ys))
    w = model.kernel_weights_
    assert w.shape == (3,) and w.sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# persistence


@pytest.mark.parametrize("kind", ["arrays", "dicts", "crf_average_budget", "unfitted"])
def test_save_load_round_trip(tmp_path, kind):
    X, Ys = _small_problem(9, n_seq=40)
    params = dict(kernels=(RBF(gamma=0.3), Polynomial(degree=2, normalize=True)), random_state=0)
    if kind == "crf_average_budget":
        params.update(loss="crf", average=True, budget=25, eviction="least_impact")
    if kind == "dicts":
        X = [[{f"f{j}": v for j, v in enumerate(row) if v > -0.5} for row in xs] for xs in X]
    labels = [["ab"[0] * (c + 1) for c in ys] for ys in Ys]  # string labels
    model = SequenceMKLLabeler(**params)
    if kind != "unfitted":
        model.fit(X[:25], labels[:25])
    path = model.save(tmp_path / "seq.omkl")
    loaded = load(path)
    assert type(loaded) is SequenceMKLLabeler and loaded.get_params() == model.get_params()
    _assert_same(_snapshot(model), _snapshot(loaded))
    if kind == "unfitted":
        assert loaded.predict_one(np.zeros((2, 4))) == [None, None]
        return
    assert loaded.predict(X) == model.predict(X)
    for xs, ys in zip(X[25:], labels[25:]):  # continued learning is identical, bit for bit
        model.learn_one(xs, ys)
        loaded.learn_one(xs, ys)
    _assert_same(_snapshot(model), _snapshot(loaded))
    assert loaded.predict(X) == model.predict(X)


def test_load_rejects_an_inconsistent_state():
    model, X, Ys = _trained(n=10)
    state, arrays = model._get_state()
    for name, bad in (("beta", np.zeros((3, 3))), ("T", np.zeros((1, 1))), ("buf.coef", np.zeros((2, 1))),
                      ("istate", np.array([10 ** 6, 0, 0, 0, 0]))):
        fresh = SequenceMKLLabeler(**model.get_params())
        with pytest.raises(ValueError, match="inconsistent|shape"):
            fresh._set_state(state, dict(arrays, **{name: bad}))
        assert not hasattr(fresh, "_engine")
    other = SequenceMKLLabeler(**dict(model.get_params(), lam=0.5))
    with pytest.raises(ValueError, match="differ from the parameters"):
        other._set_state(state, arrays)
    with pytest.raises(ValueError, match="labels"):
        SequenceMKLLabeler(**model.get_params())._set_state(dict(state, labels=[0, 1]), arrays)


# ---------------------------------------------------------------------------------------------
# learning on the digit-strings benchmark


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
