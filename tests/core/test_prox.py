"""Compiled group proximal operators (``onlinemkl.proximal._prox``) against references and theory.

Four kinds of evidence: agreement with the plain-numpy references of
``naive_prox`` on many random inputs; the optimality (KKT) conditions of
``min_x 0.5||x - b||^2 + lam R(x)`` at the output; brute-force minimisation with
scipy, both on the norms and on full group vectors (Prop. 1); edge cases and
the integer-code dispatcher.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize

import naive_prox as naive
from onlinemkl.proximal import _prox as cp

CODES = [
    cp.PROX_NONE,
    cp.PROX_SQ_L21,
    cp.PROX_WEIGHTED_SQ_L1,
    cp.PROX_L21,
    cp.PROX_SPARSE_GROUP_LASSO,
    cp.PROX_NONSPARSE_Q,
    cp.PROX_ELASTIC_NET,
]


# --------------------------------------------------------------------------- helpers


def run(fn, *args):
    """Call a compiled operator with a fresh output (the last argument)."""
    b = args[0]
    out = np.full(b.shape[0], np.nan)
    fn(*args, out)
    return out


def dispatch(code, b, lam, param=0.0, weights=None):
    w = np.ones_like(b) if weights is None else weights
    out = np.full(b.shape[0], np.nan)
    cp.prox_group_norms(code, b, lam, param, w, out)
    return out


def random_norms(rng, p):
    """Group norms with a mix of scales, exact zeros and ties."""
    kind = rng.integers(4)
    if kind == 0:
        b = rng.random(p) * 10.0 ** rng.uniform(-3, 3)
    elif kind == 1:
        b = rng.integers(0, 4, size=p).astype(float)  # many ties and zeros
    elif kind == 2:
        b = np.exp(rng.normal(0.0, 2.0, size=p))
    else:
        b = rng.random(p)
        b[rng.random(p) < 0.3] = 0.0
    return b


def random_lam(rng, b):
    """lam relative to the scale of b, from negligible to overwhelming."""
    scale = b.max() if b.max() > 0 else 1.0
    return float(scale * 10.0 ** rng.uniform(-4, 1.5) / max(1, b.shape[0]))


def close(actual, expected, b, rtol=1e-12):
    # thresholded outputs b - tau lose digits to cancellation: absolute slack ~ rtol * max(b)
    assert_allclose(actual, expected, rtol=rtol, atol=rtol * max(1.0, float(np.max(b, initial=0.0))))


# --------------------------------------------------------------------------- vs references


def test_sq_l21_matches_references():
    rng = np.random.default_rng(0)
    for _ in range(250):
        b = random_norms(rng, int(rng.integers(1, 30)))
        lam = random_lam(rng, b)
        got = run(cp.prox_sq_l21, b, lam)
        close(got, naive.prox_sq_l21(b, lam), b)
        close(got, naive.prox_sq_l21_rho_search(b, lam), b)


def test_weighted_sq_l1_matches_reference():
    rng = np.random.default_rng(1)
    for _ in range(250):
        p = int(rng.integers(1, 30))
        b = random_norms(rng, p)
        d = 10.0 ** rng.uniform(-1, 1, size=p)  # weights reorder the groups (keys b/d)
        lam = random_lam(rng, b)
        close(run(cp.prox_weighted_sq_l1, b, d, lam), naive.prox_weighted_sq_l1(b, d, lam), b)


def test_separable_operators_match_references():
    rng = np.random.default_rng(2)
    for _ in range(300):
        b = random_norms(rng, int(rng.integers(1, 20)))
        lam = random_lam(rng, b)
        sigma = float(rng.uniform(0.0, 5.0))
        close(run(cp.prox_l21, b, lam), naive.prox_l21(b, lam), b)
        close(run(cp.prox_elastic_net, b, lam, sigma), naive.prox_elastic_net(b, lam, sigma), b)
        v = rng.normal(size=b.shape[0]) * 3.0
        close(run(cp.prox_l1_within, v, lam), naive.soft_threshold(v, lam), np.abs(v))


@pytest.mark.parametrize("q", [1.01, 1.1, 1.5, 1.9, 2.0, 2.5, 3.0, 6.0])
def test_nonsparse_matches_bisection(q):
    rng = np.random.default_rng(3)
    for _ in range(30):
        b = np.exp(rng.normal(0.0, 3.0, size=12))
        b[rng.random(12) < 0.2] = 0.0
        lam = float(10.0 ** rng.uniform(-6, 6))
        got = run(cp.prox_nonsparse_q, b, lam, q)
        ref = naive.prox_nonsparse_q(b, lam, q)
        # relative accuracy on every group, however small its new norm
        assert_allclose(got, ref, rtol=1e-12, atol=1e-300)


def test_nonsparse_extreme_inputs_stay_accurate():
    """q close to 1 (roots far below b), huge/tiny lam and b: relative accuracy eps/(q-1)."""
    rng = np.random.default_rng(4)
    for q in (1.001, 1.003, 1.02, 8.0, 20.0):
        b = 10.0 ** rng.uniform(-8, 8, size=60)
        lam = 10.0 ** rng.uniform(-8, 8, size=60)
        got = np.array([cp.nonsparse_q_root(bk, lk, q) for bk, lk in zip(b, lam)])
        ref = naive.prox_nonsparse_q(b, lam, q)  # lam per group (broadcasts)
        assert np.all((got >= 0) & (got <= b))
        big = ref > 1e-290  # below that both are (sub)normal noise around 0
        assert_allclose(got[big], ref[big], rtol=max(1e-12, 4e-16 / (q - 1.0)))
        assert np.all(got[~big] <= 1e-280)


# --------------------------------------------------------------------------- optimality conditions


def kkt_cases(seed, n=200):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        b = random_norms(rng, int(rng.integers(1, 25)))
        yield rng, b, random_lam(rng, b)


def test_kkt_sq_l21():
    for _, b, lam in kkt_cases(10):
        x = run(cp.prox_sq_l21, b, lam)
        tau = lam * x.sum()  # the subgradient of lam * 0.5 (sum x)^2 on x >= 0
        tol = 1e-12 * max(1.0, b.max())
        on = x > 0
        assert np.all(x >= 0)
        assert_allclose(b[on] - x[on], tau, rtol=0, atol=tol)
        assert np.all(b[~on] <= tau + tol)


def test_kkt_weighted_sq_l1():
    for rng, b, lam in kkt_cases(11):
        d = 10.0 ** rng.uniform(-1, 1, size=b.shape[0])
        x = run(cp.prox_weighted_sq_l1, b, d, lam)
        s = lam * np.dot(d, x)
        tol = 1e-12 * max(1.0, b.max())
        on = x > 0
        assert np.all(x >= 0)
        assert_allclose(b[on] - x[on], d[on] * s, rtol=0, atol=tol * d.max())
        assert np.all(b[~on] <= d[~on] * s + tol * d.max())


def test_kkt_l21_elastic_net_l1():
    for rng, b, lam in kkt_cases(12):
        tol = 1e-12 * max(1.0, b.max())
        x = run(cp.prox_l21, b, lam)
        on = x > 0
        assert_allclose(b[on] - x[on], lam, rtol=0, atol=tol)
        assert np.all(b[~on] <= lam + tol)
        sigma = float(rng.uniform(0, 4))
        x = run(cp.prox_elastic_net, b, lam, sigma)
        on = x > 0
        assert_allclose(b[on] - x[on], lam * (1.0 + sigma * x[on]), rtol=0, atol=tol)
        assert np.all(b[~on] <= lam + tol)
        v = rng.normal(size=b.shape[0])
        w = run(cp.prox_l1_within, v, lam)
        on = w != 0
        assert np.all(np.sign(w[on]) == np.sign(v[on]))
        assert_allclose(v[on] - w[on], lam * np.sign(w[on]), rtol=0, atol=1e-12)
        assert np.all(np.abs(v[~on]) <= lam + 1e-12)


@pytest.mark.parametrize("q", [1.05, 1.5, 2.0, 3.0])
def test_kkt_nonsparse(q):
    for _, b, lam in kkt_cases(13, n=100):
        x = run(cp.prox_nonsparse_q, b, lam, q)
        assert np.all((x >= 0) & (x <= b))
        # x - b + lam (q/2) x^(q-1) = 0 (R = 0.5 sum x^q); evaluation error ~ eps * b
        resid = x - b + lam * 0.5 * q * x ** (q - 1.0)
        assert np.all(np.abs(resid) <= 1e-13 * np.maximum(b, 1e-300))


def test_kkt_sparse_group_lasso_full_vector():
    """l1 soft-threshold then group soft-threshold satisfies the KKT of the *sum* on each group."""
    rng = np.random.default_rng(14)
    for _ in range(300):
        v = rng.normal(size=int(rng.integers(1, 8))) * 2.0
        lam1, lam2 = rng.uniform(0, 1.5, size=2)
        u = run(cp.prox_l1_within, v, lam1)
        b = np.array([np.linalg.norm(u)])
        scale = run(cp.group_scale_factors, b, run(cp.prox_l21, b, lam2))
        w = u * scale[0]
        # v - w in lam1 d||w||_1 + lam2 d||w||_2
        if np.any(w != 0):
            r = v - w - lam2 * w / np.linalg.norm(w)  # must be lam1 * s, s in d||w||_1
            on = w != 0
            assert_allclose(r[on], lam1 * np.sign(w[on]), atol=1e-12)
            assert np.all(np.abs(r[~on]) <= lam1 + 1e-12)
        else:
            # exists s in [-1,1]^n with ||v - lam1 s|| <= lam2, i.e. ||soft(v, lam1)|| <= lam2
            assert np.linalg.norm(naive.soft_threshold(v, lam1)) <= lam2 + 1e-12


# --------------------------------------------------------------------------- brute force (scipy)


def compiled_norm_prox(code, lam, param, weights):
    return lambda b: dispatch(code, np.ascontiguousarray(b, dtype=float), lam, param, weights)


BRUTE_CODES = [cp.PROX_SQ_L21, cp.PROX_WEIGHTED_SQ_L1, cp.PROX_L21, cp.PROX_NONSPARSE_Q, cp.PROX_ELASTIC_NET]


def brute_params(rng, code, p):
    param = {cp.PROX_NONSPARSE_Q: float(rng.uniform(1.2, 3.0)), cp.PROX_ELASTIC_NET: float(rng.uniform(0, 2))}
    weights = rng.uniform(0.3, 2.0, size=p)
    return float(rng.uniform(0.05, 1.5)), param.get(code, 0.0), weights


@pytest.mark.parametrize("code", BRUTE_CODES)
def test_brute_force_on_norms(code):
    """On b >= 0 every R is smooth, so L-BFGS-B with bounds solves the norm problem tightly."""
    rng = np.random.default_rng(20 + code)
    for _ in range(15):
        p = int(rng.integers(1, 7))
        b = rng.random(p) * 3.0
        lam, param, weights = brute_params(rng, code, p)

        def f(x):
            return 0.5 * np.sum((x - b) ** 2) + lam * naive.regulariser(code, x, param, weights)

        x_c = compiled_norm_prox(code, lam, param, weights)(b)
        best = min(
            (minimize(f, x0, method="L-BFGS-B", bounds=[(0, None)] * p, options=dict(ftol=1e-15, gtol=1e-12))
             for x0 in (b, np.zeros(p), rng.random(p) * 3.0)),
            key=lambda r: r.fun,
        )
        assert f(x_c) <= best.fun + 1e-12
        # 1-strong convexity: ||x - x*||^2 / 2 <= f(x) - f(x*)
        assert np.linalg.norm(best.x - x_c) <= 1e-5


@pytest.mark.parametrize("code", BRUTE_CODES + [cp.PROX_SPARSE_GROUP_LASSO])
def test_brute_force_full_vectors_prop1(code):
    """Prop. 1: norm-space prox + rescaling minimises 0.5||theta - theta0||^2 + lam R(theta) over full vectors."""
    rng = np.random.default_rng(40 + code)
    for _ in range(3):
        p = int(rng.integers(2, 5))
        dims = rng.integers(1, 4, size=p)
        splits = np.cumsum(dims)[:-1]
        theta0 = rng.normal(size=int(dims.sum()))
        lam, param, weights = brute_params(rng, code, p)
        l1 = float(rng.uniform(0.1, 0.8)) if code == cp.PROX_SPARSE_GROUP_LASSO else 0.0

        def f(x):
            norms = np.array([np.linalg.norm(g) for g in np.split(x, splits)])
            return (0.5 * np.sum((x - theta0) ** 2) + lam * naive.regulariser(code, norms, param, weights)
                    + lam * l1 * np.abs(x).sum())

        # compiled path: within-group l1 (sparse group lasso only), norms, prox, scale factors
        start = run(cp.prox_l1_within, theta0, lam * l1) if l1 > 0 else theta0
        groups = np.split(start, splits)
        b = np.array([np.linalg.norm(g) for g in groups])
        factors = run(cp.group_scale_factors, b, dispatch(code, b, lam, param, weights))
        x_c = np.concatenate([g * s for g, s in zip(groups, factors)])

        best = None
        for x0 in (theta0, rng.normal(size=theta0.shape[0]), x_c + 1e-3 * rng.normal(size=theta0.shape[0])):
            r = minimize(f, x0, method="Powell", options=dict(xtol=1e-12, ftol=1e-15, maxfev=50000))
            if best is None or r.fun < best.fun:
                best = r
        best = minimize(f, best.x, method="Powell", options=dict(xtol=1e-12, ftol=1e-15, maxfev=50000))
        assert f(x_c) <= best.fun + 1e-10
        assert np.linalg.norm(best.x - x_c) <= 1e-5


# --------------------------------------------------------------------------- edge cases


def all_code_outputs(b, lam, q=1.5, sigma=0.7, weights=None):
    params = {cp.PROX_NONSPARSE_Q: q, cp.PROX_ELASTIC_NET: sigma}
    return {code: dispatch(code, b, lam, params.get(code, 0.0), weights) for code in CODES}


def test_all_groups_zero():
    b = np.zeros(5)
    for lam in (0.0, 0.3, 1e12):
        for code, out in all_code_outputs(b, lam).items():
            assert_array_equal(out, 0.0, err_msg=f"code {code}")
    assert_array_equal(run(cp.prox_l1_within, np.zeros(4), 0.5), 0.0)
    assert_array_equal(run(cp.group_scale_factors, b, b), 0.0)  # 0/0 guarded


def test_lam_zero_is_identity():
    rng = np.random.default_rng(5)
    b = rng.random(9) * 4.0
    b[2] = 0.0
    for code, out in all_code_outputs(b, 0.0, weights=rng.random(9) + 0.1).items():
        assert_array_equal(out, b, err_msg=f"code {code}")
    for q in (1.3, 2.0, 3.5):
        assert_array_equal(run(cp.prox_nonsparse_q, b, 0.0, q), b)
    v = rng.normal(size=6)
    assert_array_equal(run(cp.prox_l1_within, v, 0.0), v)


def test_single_group_closed_forms():
    b = np.array([2.5])
    lam = 0.8
    assert_allclose(run(cp.prox_sq_l21, b, lam), b / (1 + lam), rtol=1e-15)
    d = np.array([1.7])
    assert_allclose(run(cp.prox_weighted_sq_l1, b, d, lam), b / (1 + lam * d**2), rtol=1e-15)
    assert_allclose(run(cp.prox_l21, b, lam), b - lam, rtol=1e-15)
    assert_allclose(run(cp.prox_elastic_net, b, lam, 0.5), (b - lam) / (1 + 0.4), rtol=1e-15)
    assert_allclose(run(cp.prox_nonsparse_q, b, lam, 2.0), b / (1 + lam), rtol=1e-15)


def test_ties_are_treated_symmetrically():
    b = np.array([2.0, 1.0, 2.0, 2.0, 0.5, 1.0])
    for lam in (0.05, 0.3, 1.0, 50.0):
        x = run(cp.prox_sq_l21, b, lam)
        assert x[0] == x[2] == x[3] and x[1] == x[5]
        close(x, naive.prox_sq_l21_rho_search(b, lam), b)
        w = run(cp.prox_weighted_sq_l1, b, np.full(6, 0.5), lam)
        assert w[0] == w[2] == w[3] and w[1] == w[5]
        close(w, naive.prox_weighted_sq_l1(b, np.full(6, 0.5), lam), b)
    # a tie exactly at the threshold: b = (3, 1), lam = 0.5 gives tau = 1 with or without group 2
    assert_allclose(run(cp.prox_sq_l21, np.array([3.0, 1.0]), 0.5), [2.0, 0.0], atol=1e-15)


def test_very_large_lam():
    rng = np.random.default_rng(6)
    b = rng.random(8) + 0.1
    lam = 1e12
    for code in (cp.PROX_L21, cp.PROX_SPARSE_GROUP_LASSO, cp.PROX_ELASTIC_NET):
        assert_array_equal(dispatch(code, b, lam, 0.7), 0.0)
    # squared l1 never empties the model: only the largest group survives, at ~ y_1 / (1 + lam)
    x = run(cp.prox_sq_l21, b, lam)
    top = np.argmax(b)
    assert np.count_nonzero(x) == 1 and x[top] > 0
    # b_top - tau cancels: the output carries the input's absolute rounding, ~eps * b (its conditioning)
    assert_allclose(x[top], b[top] / (1 + lam), rtol=0, atol=4 * np.finfo(float).eps * b[top])
    d = rng.uniform(0.5, 2.0, size=8)
    x = run(cp.prox_weighted_sq_l1, b, d, lam)
    assert np.flatnonzero(x).tolist() == [int(np.argmax(b / d))]
    # non-sparse shrinks every group but keeps it positive (for q > 1 the penalty is flat at 0)
    x = run(cp.prox_nonsparse_q, b, lam, 1.5)
    assert np.all((x > 0) & (x < 1e-20))


def test_q2_closed_form_equals_newton():
    rng = np.random.default_rng(7)
    for _ in range(200):
        bk = float(10.0 ** rng.uniform(-6, 6))
        lam = float(10.0 ** rng.uniform(-6, 6))
        assert_allclose(cp.nonsparse_q_root(bk, lam, 2.0), bk / (1.0 + lam), rtol=1e-14)


def test_q_at_most_one_falls_back_to_group_soft_threshold():
    b = np.array([0.2, 1.0, 3.0])
    assert_allclose(run(cp.prox_nonsparse_q, b, 0.8, 1.0), np.maximum(0, b - 0.4), rtol=1e-15)
    # continuity towards the limit: q slightly above 1 is close to it on groups well above lam/2
    assert_allclose(run(cp.prox_nonsparse_q, b, 0.8, 1.0 + 1e-6)[1:], [0.6, 2.6], rtol=1e-5)


def test_weights_one_equal_unweighted_exactly():
    rng = np.random.default_rng(8)
    for _ in range(200):
        b = random_norms(rng, int(rng.integers(1, 20)))
        lam = random_lam(rng, b)
        assert_array_equal(run(cp.prox_weighted_sq_l1, b, np.ones_like(b), lam), run(cp.prox_sq_l21, b, lam))


def test_zero_weight_group_is_unpenalised():
    b = np.array([1.0, 2.0, 0.5, 3.0])
    d = np.array([1.0, 0.0, 1.0, 1.0])
    lam = 0.4
    x = run(cp.prox_weighted_sq_l1, b, d, lam)
    assert x[1] == 2.0
    # the others: squared l1 on groups 0, 2, 3 alone
    assert_allclose(x[[0, 2, 3]], naive.prox_sq_l21(b[[0, 2, 3]], lam), rtol=1e-14)


def test_in_place_output():
    rng = np.random.default_rng(9)
    b = random_norms(rng, 10) + 0.01
    w = rng.uniform(0.5, 2.0, size=10)
    for code, expected in all_code_outputs(b, 0.3, weights=w).items():
        buf = b.copy()
        cp.prox_group_norms(code, buf, 0.3, {5: 1.5, 6: 0.7}.get(code, 0.0), w, buf)
        assert_array_equal(buf, expected, err_msg=f"code {code}")
    v = rng.normal(size=7)
    buf = v.copy()
    cp.prox_l1_within(buf, 0.4, buf)
    assert_array_equal(buf, naive.soft_threshold(v, 0.4))


def test_group_scale_factors_rescale_to_new_norms():
    rng = np.random.default_rng(15)
    groups = [rng.normal(size=3), np.zeros(2), rng.normal(size=4)]
    b = np.array([np.linalg.norm(g) for g in groups])
    b_new = run(cp.prox_sq_l21, b, 0.2)
    factors = run(cp.group_scale_factors, b, b_new)
    assert factors[1] == 0.0
    assert_allclose([np.linalg.norm(g * s) for g, s in zip(groups, factors)], b_new, rtol=1e-14)
    # and the rescaled groups are the reference Prop. 1 prox
    ref = naive.prox_full_vector(groups, lambda n: naive.prox_sq_l21(n, 0.2))
    for g, s, r in zip(groups, factors, ref):
        assert_allclose(g * s, r, rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------- dispatcher


def test_codes_are_the_documented_integers():
    assert CODES == [0, 1, 2, 3, 4, 5, 6]


def test_dispatcher_equals_direct_calls():
    rng = np.random.default_rng(16)
    for _ in range(50):
        p = int(rng.integers(1, 12))
        b = random_norms(rng, p)
        lam = random_lam(rng, b)
        w = rng.uniform(0.2, 3.0, size=p)
        q, sigma = float(rng.uniform(1.05, 3.0)), float(rng.uniform(0, 3))
        direct = {
            cp.PROX_NONE: b,
            cp.PROX_SQ_L21: run(cp.prox_sq_l21, b, lam),
            cp.PROX_WEIGHTED_SQ_L1: run(cp.prox_weighted_sq_l1, b, w, lam),
            cp.PROX_L21: run(cp.prox_l21, b, lam),
            cp.PROX_SPARSE_GROUP_LASSO: run(cp.prox_l21, b, lam),
            cp.PROX_NONSPARSE_Q: run(cp.prox_nonsparse_q, b, lam, q),
            cp.PROX_ELASTIC_NET: run(cp.prox_elastic_net, b, lam, sigma),
        }
        params = {cp.PROX_NONSPARSE_Q: q, cp.PROX_ELASTIC_NET: sigma}
        for code in CODES:
            assert_array_equal(dispatch(code, b, lam, params.get(code, 0.0), w), direct[code], err_msg=f"code {code}")
            close(dispatch(code, b, lam, params.get(code, 0.0), w), naive.prox_norms(code, b, lam, params.get(code, 0.0), w), b)
        assert_array_equal(dispatch(99, b, lam, 0.0, w), b)  # unknown code: identity, no raise


@pytest.mark.parametrize("n", [0, 1, 2, 7, 40])
def test_argsort_groups_is_numpys_stable_argsort(n):
    """The prox operators' small sort: ties keep their order, NaN goes last, as numpy's stable sort."""
    from onlinemkl.proximal._prox import argsort_groups

    rng = np.random.default_rng(n)
    keys = np.round(rng.normal(size=n), 1)  # ties
    if n > 4:
        keys[[1, 3]] = np.nan
        keys[2] = np.inf
    np.testing.assert_array_equal(argsort_groups(keys), np.argsort(keys, kind="stable"))
