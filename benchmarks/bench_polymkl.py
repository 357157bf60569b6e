"""Polynomial-kernel MKL, Afkanpour et al. (2013) section 5.2: does PolyMKLRegressor learn sparse polynomials?

The question: on the paper's synthetic data (a target that is a sum of a few monomials), how close
does :class:`onlinemkl.PolyMKLRegressor` come to the target as the input dimension ``r`` grows,
against the paper's other methods (uniform coordinate descent, Cortes et al.'s non-linear
combination, the uniform cubic kernel, a tuned RBF kernel ridge and a Lasso over every monomial)?
How to read the report: one row per ``r``; each method's test MSE relative to the test variance
(``*_mse``: 0 = exact, 1.0 = predicting the mean; lower is better) and training seconds
(``*_s``); ``active`` is the default solver.

Section 5.2: inputs uniform on [-1, 1]^r, target = equal-weight sum of 10 monomials of degree
1..3 drawn uniformly among all such monomials (noise free, standardised), 500 training, 1000
validation and 1000 test points, five seeds of the data.  Methods:

* ``active``: :class:`onlinemkl.PolyMKLRegressor` with its defaults and ``degree=3`` (the
  active-set solver, ``lam='auto'``);
* ``stoch``: the same with ``solver='stochastic'`` (Algorithms 2 + 3, averaged iterate);
* ``ucd``: uniform coordinate descent over the same index set and iterations;
* ``cortes2``, ``cortes3``: :class:`onlinemkl.NonlinearKRRRegressor`, d = 2 and 3, defaults;
* ``uniform3``: the fixed kernel ``(1 + x.z)^3`` = ``(sum_i kappa_i)^3`` with the constant;
* ``rbf``: scikit-learn ``KernelRidge`` with an RBF kernel, gamma and ridge tuned on the
  validation set;
* ``lasso``: scikit-learn ``LassoCV`` over every explicit monomial of degree 1..3.

The table reports the test MSE (relative to the test variance, 1.0 = predicting the mean) and
the training time (single-threaded BLAS, Numba compiled beforehand), means over the seeds.

Section 5.1: the objective ``J(theta)`` reached by the stochastic solver and UCD (final value,
time, iterations in the notes and the JSON); ``--plot FILE`` also draws it against time.

Run time on a shared 2-core machine: about a quarter of an hour; ``--quick`` (r = 5, 10, 20, two
seeds, fewer iterations) about 2 minutes.

Usage::

    python benchmarks/bench_polymkl.py [--quick] [--plot benchmarks/results/polymkl.png]
    # -> benchmarks/results/polymkl.{json,md} (.quick.* with --quick); the figure the docs show
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import single_thread_blas, write_report  # noqa: E402

from onlinemkl import NonlinearKRRRegressor, PolyMKLRegressor  # noqa: E402

LAMS = (1e-5, 1e-4, 1e-3, 1e-2)


def synthetic(r, seed, n_train=500, n_val=1000, n_test=1000, n_terms=10):
    """The paper's section 5.2 data: 10 random monomials of degree <= 3 (uniform over all of them)."""
    rng = np.random.default_rng(seed)
    terms = [m for d in (1, 2, 3) for m in itertools.combinations_with_replacement(range(r), d)]
    chosen = [terms[i] for i in rng.choice(len(terms), size=n_terms, replace=False)]
    X = rng.uniform(-1, 1, size=(n_train + n_val + n_test, r))
    y = np.zeros(X.shape[0])
    for m in chosen:
        y += np.prod(X[:, list(m)], axis=1)
    y = (y - y[:n_train].mean()) / y[:n_train].std()
    a, b = n_train, n_train + n_val
    return (X[:a], y[:a]), (X[a:b], y[a:b]), (X[b:], y[b:]), chosen


def _mse(model, X, y):
    return float(np.mean((model.predict(X) - y) ** 2))


def tuned(make, grid, train, val, test):
    """Fit ``make(g)`` for every ``g`` in ``grid``; select on validation; (test MSE / var, seconds, g)."""
    best = None
    for g in grid:
        model = make(g)
        t0 = time.perf_counter()
        model.fit(*train)
        secs = time.perf_counter() - t0
        v = _mse(model, *val)
        if best is None or v < best[0]:
            best = (v, model, secs, g)
    _, model, secs, g = best
    return _mse(model, *test) / float(np.var(test[1])), secs, g


def lasso_monomials(train, test):
    """scikit-learn's LassoCV over every monomial of degree 1..3 (explicit features): (MSE / var, s)."""
    from sklearn.linear_model import LassoCV
    from sklearn.preprocessing import PolynomialFeatures

    t0 = time.perf_counter()
    poly = PolynomialFeatures(3, include_bias=False)
    F = poly.fit_transform(train[0])
    model = LassoCV(cv=5, alphas=30, max_iter=3000, random_state=0).fit(F, train[1])
    secs = time.perf_counter() - t0
    pred = model.predict(poly.transform(test[0]))
    return float(np.mean((pred - test[1]) ** 2) / np.var(test[1])), secs


def run_synthetic(rs, seeds, lasso_max_r, skip=()):
    """Every method at every r, mean over the seeds of the data: our learners with their defaults
    (degree 3, or 2 for cortes2), the RBF kernel tuned on the validation set, LassoCV by CV."""
    from sklearn.kernel_ridge import KernelRidge

    methods = {
        "active": lambda s: PolyMKLRegressor(degree=3, random_state=s),
        "stoch": lambda s: PolyMKLRegressor(degree=3, solver="stochastic", random_state=s),
        "ucd": lambda s: PolyMKLRegressor(degree=3, solver="ucd", random_state=s),
        "cortes2": lambda s: NonlinearKRRRegressor(degree=2),
        "cortes3": lambda s: NonlinearKRRRegressor(degree=3),
        "uniform3": lambda s: PolyMKLRegressor(degree=3, solver="uniform"),
    }
    methods = {k: v for k, v in methods.items() if k not in skip}
    rows = []
    for r in rs:
        acc = {}
        for seed in seeds:
            train, val, test, chosen = synthetic(r, seed + r)
            n = train[0].shape[0]
            for name, make in methods.items():
                model = make(seed)
                t0 = time.perf_counter()
                model.fit(*train)
                secs = time.perf_counter() - t0
                acc.setdefault(name, []).append((_mse(model, *test) / float(np.var(test[1])), secs))
            grid = [(g / r, lam) for g in (0.1, 1.0, 10.0) for lam in LAMS]
            mse, secs, _ = tuned(lambda p: KernelRidge(kernel="rbf", gamma=p[0], alpha=n * p[1]), grid, train, val,
                                 test)
            acc.setdefault("rbf", []).append((mse, secs))
            if r <= lasso_max_r:
                acc.setdefault("lasso", []).append(lasso_monomials(train, test))
            print(f"r={r} seed={seed}: " + ", ".join(f"{k}={v[-1][0]:.4f}/{v[-1][1]:.2f}s" for k, v in acc.items()),
                  flush=True)
        row = {"r": r, "n_kernels": math.comb(r + 1 + 3, 3)}  # multisets of size <= 3 of r + 1 base kernels
        for name, vals in acc.items():
            row[f"{name}_mse"] = float(np.mean([v[0] for v in vals]))
            row[f"{name}_s"] = float(np.mean([v[1] for v in vals]))
        row["active_mse_max"] = float(np.max([v[0] for v in acc["active"]]))
        rows.append(row)
    return rows


def run_convergence(r, n_iter, lam=1e-4, seed=0, plot=None):
    """Objective vs time of the stochastic solver and UCD on one synthetic data set (last iterate);
    drawn into the image file ``plot`` when given."""
    train, _, _, _ = synthetic(r, seed + 1000)
    curves = {}
    for solver in ("stochastic", "ucd"):
        m = PolyMKLRegressor(degree=3, lam=lam, n_iter=n_iter, solver=solver, iterate="last",
                             random_state=seed).fit(*train)
        curves[solver] = (np.asarray(m._engine.history_t), m.objective_)
    if plot:
        draw_convergence(curves, r, lam, Path(plot))
    return {s: {"final_objective": float(J[-1]), "seconds": float(t[-1]), "iterations": int(len(J))}
            for s, (t, J) in curves.items()}


def draw_convergence(curves, r, lam, path):
    """The objective against training time per solver (matplotlib), saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for solver, (t, J) in curves.items():
        ax.plot(t, J, label=solver)
    ax.set_xlabel("training time (s)")
    ax.set_ylabel("objective J(theta) = lam/2 y'(K_theta + n lam I)^-1 y")
    ax.set_yscale("log")
    ax.set_title(f"Convergence, synthetic r={r}, D=3, n=500, lam={lam:g}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="r in (5, 10, 20), 2 seeds, Lasso up to r = 20")
    ap.add_argument("--lasso-max-r", type=int, default=100, help="largest r for the explicit-monomial Lasso")
    ap.add_argument("--plot", metavar="FILE", default=None, help="also draw the convergence curves into this image")
    args = ap.parse_args(argv)
    rs = (5, 10, 20) if args.quick else (5, 10, 20, 40, 70, 100)
    seeds = range(2) if args.quick else range(5)
    lasso_max_r = min(args.lasso_max_r, 20) if args.quick else args.lasso_max_r
    n_iter = 200 if args.quick else 2000
    # compile every Numba function once, outside the timings
    warm = synthetic(4, 0, n_train=30, n_val=5, n_test=5)[0]
    for solver in ("active", "stochastic", "ucd", "uniform"):
        PolyMKLRegressor(degree=3, n_iter=3, solver=solver, random_state=0).fit(*warm)
    NonlinearKRRRegressor(degree=2, max_iter=2).fit(*warm)
    with single_thread_blas():
        rows = run_synthetic(rs, seeds, lasso_max_r)
        conv = run_convergence(20, n_iter, plot=args.plot)
    cols = ["r", "n_kernels"] + [f"{m}_{k}" for m in ("active", "stoch", "ucd", "cortes2", "cortes3", "uniform3",
                                                      "rbf", "lasso") for k in ("mse", "s")] + ["active_mse_max"]
    notes = (f"Test MSE relative to the test variance (1.0 = predicting the mean) and training seconds, mean over "
             f"{len(seeds)} seeds of the data (500 training points). active (the default solver), stoch "
             f"(Algorithm 2 + 3), ucd, cortes2/3 (NonlinearKRRRegressor degree 2/3), uniform3 (the kernel "
             f"(1 + x.z)^3): every parameter at its default (lam='auto', standardised inside) except degree; "
             f"rbf: KernelRidge with gamma in (0.1, 1, 10)/r and lam in {LAMS} picked on a 1000-point validation "
             f"set; lasso: LassoCV (5 folds) over the explicit monomials of degree 1..3 (up to r = {lasso_max_r}). "
             f"active_mse_max: the worst seed. n_kernels = C(r+1+3, 3) product kernels (with the constant). "
             f"Single-threaded BLAS. Convergence (section 5.1, r=20, lam=1e-4, last iterate, {n_iter} "
             f"iterations): {conv}.")
    write_report("polymkl", rows, columns=cols, quick=args.quick,
                 title="Polynomial-kernel MKL, Afkanpour et al. section 5.2 synthetic", notes=notes,
                 extra={"convergence": conv, "n_iter": n_iter, "lams": LAMS, "seeds": list(seeds)})


if __name__ == "__main__":
    main()
