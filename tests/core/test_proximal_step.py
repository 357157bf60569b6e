"""Online proximal MKL's compiled step (``onlinemkl.proximal._step``) against the plain-numpy
reference ``tests/naive_fobos.py`` for a few hundred examples per case: every regulariser, every
loss (regression too), implicit and explicit groups, budgets with both eviction policies,
averaging on and off (~1e-9).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _proximal_data import (
    KERNELS,
    D,
    _close,
    _engine_and_reference,
    _stream,
)

from onlinemkl.proximal import ProximalMKLClassifier, ProximalMKLRegressor
from onlinemkl.proximal import _step as _cf

C, R = ProximalMKLClassifier, ProximalMKLRegressor

REFERENCE_CASES = [
    # (estimator, n_classes (0: regression), n_examples)
    (C(kernels=KERNELS, lam=0.01), 2, 250),
    (C(kernels=KERNELS, loss="logistic", regularizer="l21", lam=0.02, explicit_groups=((0, 1), None), budget=40), 2, 250),
    (C(kernels=KERNELS, loss="logistic", regularizer="sparse_group_lasso", lam=0.02, l1_ratio=0.5,
       explicit_groups=((0, 1), None), budget=40, eviction="least_impact"), 3, 250),
    (C(kernels=KERNELS, regularizer="nonsparse", q=1.3, lam=0.05, schedule="constant", eta0=0.3,
       explicit_groups=((0, 1),)), 4, 250),
    (C(kernels=KERNELS, regularizer="elastic_net", sigma=0.5, lam=0.05, schedule="strongly_convex",
       explicit_groups=((0, 1),)), 3, 250),
    (C(kernels=KERNELS, regularizer="weighted_sq_l1", group_weights=[1, 2, 0.5, 1.5, 1], lam=0.05, gamma=2.0,
       explicit_groups=((0, 1),)), 3, 250),
    (C(kernels=KERNELS, loss="logistic", regularizer="none", budget=25, eviction="least_impact"), 3, 200),
    # strong group lasso: groups are zeroed and revived along the way
    (C(kernels=KERNELS, regularizer="l21", lam=0.6, explicit_groups=((2,), (5,))), 2, 250),
    (C(kernels=KERNELS, regularizer="sq_l21", lam=0.1, schedule="strongly_convex", gamma="auto", budget=30), 2, 250),
    # a long stream with strong shrinkage: the lazy scales fall by many decades (folds; averaged model)
    (C(kernels=KERNELS, regularizer="elastic_net", sigma=5.0, lam=0.2, schedule="constant", eta0=0.5, budget=15,
       average=True), 3, 1500),
    (R(kernels=KERNELS, explicit_groups=((0, 1),)), 0, 250),
    (R(kernels=KERNELS, loss="epsilon_insensitive", epsilon=0.2, regularizer="l21", lam=0.05, budget=30), 0, 250),
    (R(kernels=KERNELS, regularizer="elastic_net", lam=0.02, eviction="least_impact", budget=50,
       explicit_groups=(None,)), 0, 250),
    # the step split among the groups by their norms (the river regressor's default)
    (R(kernels=KERNELS, explicit_groups=((0, 1),), group_steps="norms", eta0=0.5), 0, 250),
    (R(kernels=KERNELS, loss="epsilon_insensitive", regularizer="l21", lam=0.05, budget=30, group_steps="norms"),
     0, 250),
    # the same split for the classifiers (an option there, not the default)
    (C(kernels=KERNELS, explicit_groups=((0, 1),), group_steps="norms"), 3, 250),
    (C(kernels=KERNELS, loss="logistic", budget=25, group_steps="norms"), 2, 200),
]


@pytest.mark.parametrize("est, n_classes, n", REFERENCE_CASES,
                         ids=[f"{type(e).__name__[12:]}-{e.regularizer}-{e.loss}-{i}"
                              for i, (e, _, _) in enumerate(REFERENCE_CASES)])
def test_compiled_step_matches_reference(est, n_classes, n):
    regression = n_classes == 0
    X, y = _stream(n, n_classes, regression, seed=n_classes + n)
    Xt = np.random.default_rng(99).normal(size=(7, D))
    eng, ref = _engine_and_reference(est, n_classes, regression)
    n_zeroed = 0
    for i in range(n):
        yc, yv = (0, float(y[i])) if regression else (int(y[i]), 0.0)
        loss, _, updated, _ = eng._step(X[i], yc, yv)
        loss_ref, updated_ref = ref.learn(X[i], yc, yv)
        assert updated == updated_ref, f"step {i}"
        assert _close(loss, loss_ref), f"step {i}: loss {loss} != {loss_ref}"
        if i % 25 == 24:
            assert _close(eng.group_norms(), ref.norms()), f"step {i}"
            n_zeroed += int(np.sum(eng.group_norms() == 0.0))
            # lazily scaled squared norms (eq. 17) equal the recomputation from the buffer
            assert _close(eng.theta_sq, eng.recompute_theta_sq(), 1e-9)
    assert eng.n_support == ref.X.shape[0]
    if eng.istate[_cf.I_EVICTIONS] and (regression or n_classes == 2 or est.loss == "hinge"):
        assert ref.n_merges > 0  # evictions merged into partners (one output: always possible)
    ref_scores = np.array([ref.scores(x) for x in Xt])
    ref_avg = np.array([ref.scores(x, average=True) for x in Xt])
    assert _close(eng.scores_many(Xt, average=False), ref_scores)
    assert _close(eng.scores_many(Xt, average=True), ref_avg)
    for k, x in enumerate(Xt[:3]):  # the per-example compiled scoring path as well
        assert _close(eng.scores_one(x, average=False), ref_scores[k])
        assert _close(eng.scores_one(x, average=True), ref_avg[k])
    if est.regularizer == "l21" and est.lam >= 0.5:
        assert n_zeroed > 0  # the zeroing path was exercised


def test_group_gamma_auto_is_appendix_e_radius():
    est = C(kernels=KERNELS, regularizer="sq_l21", lam=0.1, gamma="auto")
    eng = est._new_engine(np.arange(2))
    assert eng.hyper[_cf.H_GAMMA] == pytest.approx(math.sqrt(2 * 1.0 / 0.1))  # hinge: L(0) = 1
    eng = C(kernels=KERNELS, loss="logistic", lam=0.1)._new_engine(np.arange(4))
    assert eng.hyper[_cf.H_GAMMA] == pytest.approx(math.sqrt(2 * math.log(4) / 0.1))


@pytest.mark.parametrize("budget", [None, 5])
def test_the_compile_plan_names_the_types_the_step_calls_its_parts_with(monkeypatch, budget):
    """A first compilation hands parts of ``fobos_run``'s call tree to a helper process and compiles
    others ahead of it (:mod:`onlinemkl._split`).  A part is found only under the exact types the
    step (or, for the prediction pass, ``predict_one``) calls it with; under any other it is compiled
    once more and the split saves nothing.  So after a learner's steps and a prediction, every part
    the plan lists must be among its dispatcher's compiled signatures."""
    from onlinemkl._split import Plan, cached
    from onlinemkl.proximal import engine as ep
    from onlinemkl.river import ProximalMKLClassifier as RiverClassifier

    calls, step = [], ep._cf.fobos_run
    monkeypatch.setattr(ep._cf, "fobos_run", lambda *args: calls.append(args) or step(*args))
    model = RiverClassifier(kernels=KERNELS, budget=budget)
    rng = np.random.default_rng(0)
    for i in range(8):
        model.learn_one({"a": rng.normal(), "b": rng.normal()}, i % 3)
    model.predict_one({"a": 0.5, "b": -0.5})
    plan = _cf.fobos_run_parts(*calls[0])
    assert isinstance(plan, Plan) and plan.helper and plan.here
    assert (budget is not None) == any(d is _cf.evict_projected for d, _ in plan.helper)
    # compiled in this process, or (the step loaded from a warm cache) in the run that cached the step
    missing = [(d.py_func.__name__, sig) for d, sig in plan.helper + plan.here
               if tuple(sig) not in d.overloads and not cached(d, tuple(sig))]
    assert missing == []
