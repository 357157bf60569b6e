"""Defaults against a batch SVC on held-out data: what does a user lose by not tuning anything?

The question: a user who installs onlinemkl runs ``StandardScaler() | OBSCUREClassifier()`` (or
``ProximalMKLClassifier()``, or ``ProximalMKLRegressor()`` for regression) with no parameters,
one pass over the stream.  How close does that come, on held-out data, to a batch kernel machine
fitted on all the training data (scikit-learn's ``SVC``; a tuned RBF ``KernelRidge`` for
regression), and how does it compare with the river model a user would otherwise pick?  Over
a wide spread of offline data sets (real, small tabular, and generated ones with known quirks:
irrelevant features, class imbalance, many features and few rows, many classes; for
regression heavy target scales, categorical inputs and a concept drift), with the same
configuration everywhere.

How to read the report: ``Summary per candidate`` first.  ``mean_heldout_vs_svc`` (held-out
accuracy over the mean-kernel SVC's; 1.0 = as good as the batch SVC) and, for regression,
``mean_heldout_vs_krr`` (held-out MAE over the tuned KRR's; 1.0 = as good, above 1 = worse)
answer the question; ``preq_vs_river`` / ``preq_mae_vs_river`` and ``speed_vs_river`` set the
default against river's best model on the same data set (picked with hindsight).  The tables
after it give every data set.

What is measured
    Every data set is a stream of ``(x_dict, y)``.  The first 70% is the train part: every
    online contestant makes ONE prequential pass over it (``predict_one`` then ``learn_one``
    per example, test-then-train); the prequential accuracy is the fraction predicted right
    before learning.  The last 30% is held out: predicted without learning (``predict_many``
    where the pipeline has it).

    Candidates (``CANDIDATES``; all behind ``river.preprocessing.StandardScaler() |``):
    ``OBSCURE default`` and ``ProximalMKL default`` (no parameters), and both with
    ``budget=500`` (``OBSCURE budget500``, ``ProximalMKL budget500``).

    river reference: river's models with their own defaults, as ``bench_peers.py`` builds
    them (StandardScaler | LR, one-vs-rest for multiclass; StandardScaler | RBFSampler | LR;
    StandardScaler | exact kNN over a window of 1000; ARF, seed 42) plus a Hoeffding tree and
    Gaussian naive Bayes (no scaler).  "river best" is the one with the highest prequential
    accuracy on that data set (chosen per data set, i.e. with hindsight: a user would not
    know which one to pick), reported with its name and examples/s.

    Batch reference: scikit-learn ``SVC`` fitted on the train part (``StandardScaler``
    fitted on the train part): (a) ``SVC()`` with its default RBF kernel; (b) ``SVC(kernel=
    'precomputed')`` on the MEAN of the Gram matrices of ``onlinemkl.kernels.default_kernels()``
    (RBF at 0.1/d, 1/d, 10/d, normalised linear, normalised quadratic), computed with
    onlinemkl's own public ``onlinemkl.kernels.kernel_matrix`` so that gamma_scale/d and the
    normalisation are resolved exactly as the learners resolve them.  Held-out accuracy.
    (b) is what the default kernel set can do with uniform weights and a full batch solver.

    ``fit`` (several epochs, for the record beside the one pass): scikit-learn's
    ``onlinemkl.OBSCUREClassifier(random_state=0)`` and ``ProximalMKLClassifier(random_state=0)``,
    defaults, fitted on the same standardised train arrays as the SVCs; held-out accuracy, and
    over the mean-kernel SVC's (``obscure_fit_vs_svc``).  Its time against the SVC is
    ``bench_fit_svc.py``'s; here no fit is timed.

    Ratios per data set and candidate: ``preq_vs_river`` = candidate prequential accuracy
    minus river best's (a difference, in accuracy points / 100); ``speed_vs_river`` =
    candidate examples/s over river best's; ``heldout_vs_svc`` = candidate held-out accuracy
    over the averaged-kernel SVC's (b).

Timing: ``time.perf_counter`` wall time of the prequential pass (predict + learn) per
contestant, so examples/s = train examples / seconds.  The machine is shared (2 cores, other
jobs running), so each candidate's pass and river best's are run ``REPEAT`` = 3 times on fresh
models (the passes are deterministic) and the best time is kept; the other river models are
timed once (JSON only).  Throughputs stay noisy to some tens of per cent on tiny data sets
(wine, iris: a pass takes milliseconds); CPU-time throughput is stored in the JSON too.
Numba compilation is excluded: ``ONLINEMKL_BACKGROUND_COMPILE=0`` is set before onlinemkl is
imported, ``onlinemkl.warmup(["obscure", "proximal"])`` runs first, and every candidate is
warmed on 30 examples of each data set before its timed pass.  BLAS is limited to one thread.

Data: river's Phishing, Bananas, ImageSegments (bundled order) and Shuttle (first 5,000
rows, bundled order); scikit-learn's digits, wine, breast_cancer, iris (shuffled once, seed
0); generated with fixed seeds, 2,000 rows each unless said (3,000 for the shapes of
many classes with few rows of each and of many features: ``N_MANY``): see ``DATASETS``.  Add a data set
by adding a function returning a list of ``(x_dict, y)`` to ``DATASETS``.  No downloads.
The regression half (data, river regressors, the KRR reference) is described in
``_defaults_regression.py``.

``--quick`` runs 3 small data sets per task (Phishing, wine, moons+8noise; TrumpApproval,
diabetes, friedman1) capped at 600 rows.  Run time on an idle 2-core machine: full about
5 minutes with a warm Numba cache (classification ~2.5, regression ~2; 28 minutes when other
jobs kept the load at 10); ``--quick`` under a minute warm, about 2 minutes with a cold cache.

Usage::

    python benchmarks/bench_defaults.py            # -> benchmarks/results/defaults.{json,md}
    python benchmarks/bench_defaults.py --quick    # -> benchmarks/results/defaults.quick.{json,md}
    python benchmarks/bench_defaults.py --task classification --datasets wine,iris \\
        --extra 'OBSCURE C10=OBSCUREClassifier(C=10.0)'

``--task``, ``--datasets``, ``--candidates``, ``--extra`` and ``--cap`` make a partial run, which
is written like a quick one (``defaults.quick.*``), never over the full result.  ``--extra
'name=expression'`` (repeatable; split at the FIRST ``=``, so a name may not contain ``=``; needs
``--task``) adds a candidate: the expression is evaluated with ``onlinemkl``,
``onlinemkl.river`` (as ``omr``), ``onlinemkl.kernels`` (as ``kernels``) and every public name of
the last two in scope, must return an onlinemkl river classifier (regressor with ``--task
regression``), and is put behind a StandardScaler.
"""

from __future__ import annotations

import os

os.environ.setdefault("ONLINEMKL_BACKGROUND_COMPILE", "0")  # before onlinemkl is imported

import argparse  # noqa: E402
import itertools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, single_thread_blas, write_report  # noqa: E402
from bench_peers import _to_arrays, has_predict_many, river_models  # noqa: E402

TRAIN_FRACTION = 0.7
N_GEN = 2000
N_MANY = 3000  # rows of the many-classes and many-features shapes (letters-like, musk-like, 40f/12c)
SHUTTLE_CAP = 5000
WARM_EXAMPLES = 30
REPEAT = 3  # timed passes of each candidate and of river best: best wall time kept
QUICK_DATASETS = ("Phishing", "wine", "moons+8noise")
QUICK_CAP = 600


# -- data sets: name -> () -> list of (x_dict, y) ----------------------------------------------

def _from_arrays(X, y, shuffle_seed=None, prefix="x"):
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if shuffle_seed is not None:
        order = np.random.default_rng(shuffle_seed).permutation(len(y))
        X, y = X[order], y[order]
    return [({f"{prefix}{j}": float(v) for j, v in enumerate(row)}, y_.item()) for row, y_ in zip(X, y)]


def _river_dataset(name, cap=None):
    from river import datasets

    return [(dict(x), y) for x, y in itertools.islice(iter(getattr(datasets, name)()), cap)]


def _river_synth(make, n=N_GEN):
    return [({str(k): float(v) for k, v in x.items()}, y) for x, y in itertools.islice(iter(make()), n)]


def _sk_real(loader):
    def load():
        X, y = loader(return_X_y=True)
        return _from_arrays(X, y, shuffle_seed=0)
    return load


def _moons_noise():
    from sklearn.datasets import make_moons

    X, y = make_moons(N_GEN, noise=0.3, random_state=0)
    extra = np.random.default_rng(0).normal(size=(N_GEN, 8))
    return _from_arrays(np.hstack([X, extra]), y)


def _letters_like():
    """26 classes of two clusters each over 16 features rounded to half units (the shape of UCI's
    letter recognition: many classes, ~80 training rows of each)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(N_MANY, n_features=16, n_informative=16, n_redundant=0, n_classes=26,
                               n_clusters_per_class=2, class_sep=2.0, random_state=5)
    return _from_arrays(np.round(X * 2), y)


def _musk_like():
    """166 correlated features from 16 latent ones, 200 small clusters of which 15% positive (the shape
    of UCI's musk: many features, few rows, a minority class made of many modes), 2% labels flipped."""
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(200, 16)) * 2.0
    positive = (np.arange(200) < 39).astype(int)
    comp = rng.integers(0, 200, N_MANY)
    Z = centres[comp] + rng.normal(size=(N_MANY, 16)) * 0.8
    X = np.tanh(Z @ rng.normal(size=(16, 166)) / 4.0) * 50 + rng.normal(size=(N_MANY, 166)) * 5
    y = np.where(rng.random(N_MANY) < 0.02, 1 - positive[comp], positive[comp])
    return _from_arrays(X, y)


def _make_datasets():
    from river.datasets import synth
    from sklearn import datasets as skd

    return {
        "Phishing": lambda: _river_dataset("Phishing"),
        "Bananas": lambda: _river_dataset("Bananas"),
        "ImageSegments": lambda: _river_dataset("ImageSegments"),
        "Shuttle[:5000]": lambda: _river_dataset("Shuttle", SHUTTLE_CAP),
        "digits": _sk_real(skd.load_digits),
        "wine": _sk_real(skd.load_wine),
        "breast_cancer": _sk_real(skd.load_breast_cancer),
        "iris": _sk_real(skd.load_iris),
        "clf 20f/5inf/3c flip.05": lambda: _from_arrays(*skd.make_classification(
            N_GEN, n_features=20, n_informative=5, n_classes=3, flip_y=0.05, random_state=0)),
        "clf 8f/10c": lambda: _from_arrays(*skd.make_classification(
            N_GEN, n_features=8, n_informative=6, n_redundant=2, n_classes=10, random_state=0)),
        "moons+8noise": _moons_noise,
        "circles": lambda: _from_arrays(*skd.make_circles(N_GEN, noise=0.1, factor=0.5, random_state=0)),
        "imbalanced 90/10": lambda: _from_arrays(*skd.make_classification(
            N_GEN, n_features=20, weights=[0.9, 0.1], random_state=0)),
        "wide 100f/300r": lambda: _from_arrays(*skd.make_classification(
            300, n_features=100, n_informative=10, random_state=0)),
        "Agrawal": lambda: _river_synth(lambda: synth.Agrawal(seed=0)),
        "SEA noise.1": lambda: _river_synth(lambda: synth.SEA(noise=0.1, seed=0)),
        "Hyperplane": lambda: _river_synth(lambda: synth.Hyperplane(seed=0)),
        "RandomRBF 5c/10f": lambda: _river_synth(lambda: synth.RandomRBF(
            seed_model=0, seed_sample=0, n_classes=5, n_features=10)),
        "LED irrelevant": lambda: _river_synth(lambda: synth.LED(seed=0, irrelevant_features=True)),
        "Waveform": lambda: _river_synth(lambda: synth.Waveform(seed=0)),
        "letters-like 26c/16f": _letters_like,
        "musk-like 166f": _musk_like,
        "clf 40f/12c": lambda: _from_arrays(*skd.make_classification(
            N_MANY, n_features=40, n_informative=15, n_classes=12, n_clusters_per_class=1, random_state=4)),
        "wide 166f/1000r": lambda: _from_arrays(*skd.make_classification(
            1000, n_features=166, n_informative=10, n_redundant=10, random_state=3)),
    }


DATASETS = _make_datasets()


# -- contestants -----------------------------------------------------------------------------

def _scaled(make_clf):
    def make():
        from river import preprocessing

        return preprocessing.StandardScaler() | make_clf()
    return make


def _obscure(**kw):
    from onlinemkl.river import OBSCUREClassifier

    return lambda: OBSCUREClassifier(**kw)


def _proximal(**kw):
    from onlinemkl.river import ProximalMKLClassifier

    return lambda: ProximalMKLClassifier(**kw)


#: The defaults, and the defaults under a budget of 500 stored examples.
CANDIDATES = {
    "OBSCURE default": _scaled(lambda: _obscure()()),
    "ProximalMKL default": _scaled(lambda: _proximal()()),
    "OBSCURE budget500": _scaled(lambda: _obscure(budget=500)()),
    "ProximalMKL budget500": _scaled(lambda: _proximal(budget=500)()),
}


def _extra_candidate(spec):
    """``'name=expression'`` -> (name, callable building the scaled model)."""
    name, sep, expr = spec.partition("=")
    if not sep or not name.strip() or not expr.strip():
        raise SystemExit(f"--extra {spec!r}: expected 'name=python expression'")
    import onlinemkl
    import onlinemkl.kernels as kernels
    import onlinemkl.river as omr

    scope = {"onlinemkl": onlinemkl, "omr": omr, "kernels": kernels}
    scope.update({k: getattr(kernels, k) for k in kernels.__all__})
    scope.update({k: getattr(omr, k) for k in omr.__all__})
    compile(expr, f"--extra {name}", "eval")  # fail now on a syntax error
    return name.strip(), _scaled(lambda: eval(expr, dict(scope)))


def all_river_models(multiclass):
    """bench_peers' river contestants plus a Hoeffding tree and Gaussian naive Bayes."""
    from river import naive_bayes, tree

    out = dict(river_models(multiclass))
    out["river HoeffdingTree"] = lambda: tree.HoeffdingTreeClassifier()
    out["river GaussianNB"] = lambda: naive_bayes.GaussianNB()
    return out


# -- running -----------------------------------------------------------------------------------

def _prequential(make, train):
    """One timed test-then-train pass; (model, correct, wall seconds, CPU seconds)."""
    model = make()
    correct = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for x, y in train:
        if model.predict_one(x) == y:
            correct += 1
        model.learn_one(x, y)
    return model, correct, time.perf_counter() - t0, time.process_time() - c0


def run_online(make, train, test, repeat=1):
    """Prequential pass over ``train``, then held-out predictions on ``test``.

    With ``repeat > 1`` the (deterministic) pass is run again on a fresh model and the best
    wall time is kept, as ``_common.best_time`` does: on a shared machine the minimum is the
    least disturbed measurement.
    """
    model, correct, wall, cpu = _prequential(make, train)
    t1 = time.perf_counter()
    xs_te = [x for x, _ in test]
    if has_predict_many(model):
        import pandas as pd

        yp = list(model.predict_many(pd.DataFrame(xs_te)))
    else:
        yp = [model.predict_one(x) for x in xs_te]
    pred_s = time.perf_counter() - t1
    held = float(np.mean([a == y for a, (_, y) in zip(yp, test)]))
    out = {"preq_acc": correct / len(train), "heldout_acc": held, "heldout_predict_s": pred_s}
    return retime(make, train, out, repeat, wall, cpu)


def retime(make, train, out, repeat, wall=np.inf, cpu=np.inf):
    """Re-run the prequential pass ``repeat`` more times (or until ``repeat`` in all); keep the best."""
    n_runs = 1 if np.isfinite(wall) else 0
    while n_runs < repeat:
        _, correct, w, c = _prequential(make, train)
        if correct / len(train) != out["preq_acc"]:
            print(f"    warning: a repeated pass scored {correct / len(train):.4f}, first {out['preq_acc']:.4f}")
        wall, cpu, n_runs = min(wall, w), min(cpu, c), n_runs + 1
    return dict(out, seconds=wall, ex_per_s=len(train) / wall, cpu_ex_per_s=len(train) / max(cpu, 1e-9),
                timing_runs=n_runs)


def warm(make, train):
    m = make()
    for x, y in train[:WARM_EXAMPLES]:
        m.predict_one(x)
        m.learn_one(x, y)
    m.predict_one(train[0][0])


def standardised_arrays(train, test, classes):
    """``(X, y, Xt, yt)``: the train and held-out parts as arrays (labels as indices into
    ``classes``), standardised with the train part's means and deviations."""
    from sklearn.preprocessing import StandardScaler

    keys = list(dict.fromkeys(k for x, _ in train for k in x))
    li = {c: i for i, c in enumerate(classes)}
    X, y = _to_arrays([x for x, _ in train], [y for _, y in train], keys, li)
    Xt, yt = _to_arrays([x for x, _ in test], [y for _, y in test], keys, li)
    scaler = StandardScaler().fit(X)
    X, Xt = scaler.transform(X), scaler.transform(Xt)
    return X, y, Xt, yt


def run_fits(train, test, classes):
    """Held-out accuracy of the scikit-learn faces' ``fit`` (defaults, ``random_state=0``) on the
    arrays the SVCs get (:func:`standardised_arrays`)."""
    from onlinemkl import OBSCUREClassifier, ProximalMKLClassifier

    X, y, Xt, yt = standardised_arrays(train, test, classes)
    return {name: float(np.mean(cls(random_state=0).fit(X, y).predict(Xt) == yt))
            for name, cls in (("obscure_fit_heldout", OBSCUREClassifier),
                              ("proximal_fit_heldout", ProximalMKLClassifier))}


def run_svcs(train, test, classes):
    """Held-out accuracy of SVC() and of SVC on the mean of the default kernels' Gram matrices."""
    from sklearn.svm import SVC

    from onlinemkl.kernels import default_kernels, kernel_matrix

    X, y, Xt, yt = standardised_arrays(train, test, classes)
    t0 = time.perf_counter()
    rbf = float(np.mean(SVC().fit(X, y).predict(Xt) == yt))
    t_rbf = time.perf_counter() - t0
    t0 = time.perf_counter()
    kernels = default_kernels()
    K = np.zeros((len(X), len(X)))
    Kt = np.zeros((len(Xt), len(X)))
    for k in kernels:  # one kernel at a time: bounded memory
        K += kernel_matrix(X, X, [k])[0]
        Kt += kernel_matrix(Xt, X, [k])[0]
    K /= len(kernels)
    Kt /= len(kernels)
    mkl = float(np.mean(SVC(kernel="precomputed").fit(K, y).predict(Kt) == yt))
    t_mkl = time.perf_counter() - t0
    return {"svc_rbf_heldout": rbf, "svc_meank_heldout": mkl, "svc_rbf_s": t_rbf, "svc_meank_s": t_mkl}


# -- main ----------------------------------------------------------------------------------------

def selection(args, task, registry, datasets, quick_datasets, quick_cap):
    """``(candidates, data set names, row cap)`` of ``task`` from the command line's arguments."""
    if args.candidates:
        wanted = [c.strip() for c in args.candidates.split(",") if c.strip()]
        unknown = [c for c in wanted if c not in registry]
        if unknown:
            raise SystemExit(f"--candidates: unknown {task} candidate(s) {unknown}; choose from {list(registry)}")
        candidates = {c: registry[c] for c in wanted}
    else:
        candidates = dict(registry)
    for spec in args.extra:
        name, make = _extra_candidate(spec)
        candidates[name] = make
    names = (args.datasets.split(",") if args.datasets else list(quick_datasets if args.quick else datasets))
    unknown = [n for n in names if n not in datasets]
    if unknown:
        raise SystemExit(f"--datasets: unknown {task} data set(s) {unknown}; choose from {list(datasets)}")
    cap = args.cap if args.cap is not None else (quick_cap if args.quick else None)
    return candidates, names, cap


def split(data, cap):
    """``(data, train, held-out)``: the first :data:`TRAIN_FRACTION` of ``data[:cap]`` and the rest."""
    if cap is not None:
        data = data[:cap]
    n_tr = int(round(TRAIN_FRACTION * len(data)))
    return data, data[:n_tr], data[n_tr:]


def race(makers, train, test, run, retime_best, metric, lower_is_better=False):
    """Every river model's prequential pass; ``(best label, its retimed result, all results)``.

    ``run(make, train, test)`` gives a result dict holding ``metric``; the best model by it is
    re-run ``REPEAT`` times by ``retime_best`` for its least disturbed time.
    """
    res = {}
    for label, make in makers.items():
        r = res[label] = run(make, train, test)
        print(f"  {label:28s} preq={r[metric]:.4g} held={r[metric.replace('preq', 'heldout')]:.4g} "
              f"{r['ex_per_s']:.0f} ex/s", flush=True)
    best = (min if lower_is_better else max)(res, key=lambda k: res[k][metric])
    b = res[best]
    res[best] = retime_best(makers[best], train, b, REPEAT, b["seconds"], len(train) / b["cpu_ex_per_s"])
    return best, res[best], res


def run_candidates(candidates, train, test, run, metric, fmt):
    """Each candidate's warmed, best-of-``REPEAT`` pass, printed: yields ``(label, result)``."""
    for label, make in candidates.items():
        warm(make, train)
        r = run(make, train, test, REPEAT)
        held = metric.replace("preq", "heldout")
        print(f"  {label:28s} preq={r[metric]:{fmt}} held={r[held]:{fmt}} {r['ex_per_s']:.0f} ex/s", flush=True)
        yield label, r


def summarise(rows, candidates, columns):
    """One summary row per candidate: ``columns`` maps a column name to ``f(that candidate's rows)``;
    the data set count and the geometric mean of the speed ratios come with every row."""
    out = []
    for label in candidates:
        rs = [r for r in rows if r["candidate"] == label]
        speeds = [r["speed_vs_river"] for r in rs]
        out.append({"candidate": label, "datasets": len(rs), **{k: f(rs) for k, f in columns.items()},
                    "geomean_speed_vs_river": float(np.exp(np.mean(np.log(speeds))))})
    return out


def _worst(rs, key, pick):
    r = pick(rs, key=lambda r: r[key])
    return f"{r[key]:+.3f} ({r['dataset']})" if key == "preq_vs_river" else f"{r[key]:.3f} ({r['dataset']})"


def run_classification(candidates, names, cap):
    """The classification section of the report over the data sets ``names`` (rows capped at
    ``cap``): ``(markdown, json dict)`` from :func:`defaults_section`."""
    t_start = time.perf_counter()
    rows, refs, river_all = [], [], []
    with single_thread_blas():
        for dname in names:
            data, train, test = split(DATASETS[dname](), cap)
            n_tr = len(train)
            classes = sorted({y for _, y in data}, key=repr)
            multiclass = len(classes) > 2
            n_feat = len(data[0][0])
            print(f"== {dname}: {len(data)} rows ({n_tr} train / {len(test)} held-out), {n_feat} features, "
                  f"{len(classes)} classes", flush=True)

            best_label, best, river_res = race(all_river_models(multiclass), train, test, run_online, retime,
                                               "preq_acc")
            river_all += [{"dataset": dname, "contestant": k, "river_best": k == best_label, **v}
                          for k, v in river_res.items()]

            svc = run_svcs(train, test, classes)
            print(f"  SVC rbf held={svc['svc_rbf_heldout']:.4f}  SVC mean-kernel held={svc['svc_meank_heldout']:.4f}",
                  flush=True)
            fits = run_fits(train, test, classes)
            refs.append({"dataset": dname, "n_train": n_tr, "n_test": len(test), "features": n_feat,
                         "classes": len(classes), "river_best": best_label, "river_preq": best["preq_acc"],
                         "river_heldout": best["heldout_acc"], "river_ex_per_s": best["ex_per_s"],
                         "svc_rbf_heldout": svc["svc_rbf_heldout"], "svc_meank_heldout": svc["svc_meank_heldout"],
                         **fits, "obscure_fit_vs_svc": fits["obscure_fit_heldout"] / svc["svc_meank_heldout"]})

            for label, r in run_candidates(candidates, train, test, run_online, "preq_acc", ".4f"):
                rows.append({
                    "dataset": dname, "candidate": label, "preq_acc": r["preq_acc"], "heldout_acc": r["heldout_acc"],
                    "ex_per_s": r["ex_per_s"], "river_best": best_label, "river_preq": best["preq_acc"],
                    "river_ex_per_s": best["ex_per_s"], "svc_rbf_heldout": svc["svc_rbf_heldout"],
                    "svc_meank_heldout": svc["svc_meank_heldout"],
                    "preq_vs_river": r["preq_acc"] - best["preq_acc"],
                    "speed_vs_river": r["ex_per_s"] / best["ex_per_s"],
                    "heldout_vs_svc": r["heldout_acc"] / svc["svc_meank_heldout"],
                    "cpu_ex_per_s": r["cpu_ex_per_s"], "n_train": n_tr, "n_test": len(test),
                })
    total_s = time.perf_counter() - t_start

    summary = summarise(rows, candidates, {
        "preq_ge_river_best": lambda rs: sum(r["preq_vs_river"] >= 0 for r in rs),
        "mean_preq_vs_river": lambda rs: float(np.mean([r["preq_vs_river"] for r in rs])),
        "worst_preq_vs_river": lambda rs: _worst(rs, "preq_vs_river", min),
        "mean_heldout_vs_svc": lambda rs: float(np.mean([r["heldout_vs_svc"] for r in rs])),
        "worst_heldout_vs_svc": lambda rs: _worst(rs, "heldout_vs_svc", min),
        "mean_speed_vs_river": lambda rs: float(np.mean([r["speed_vs_river"] for r in rs])),
    })

    columns = ["dataset", "candidate", "preq_acc", "heldout_acc", "ex_per_s", "river_best", "river_preq",
               "river_ex_per_s", "svc_rbf_heldout", "svc_meank_heldout", "preq_vs_river", "speed_vs_river",
               "heldout_vs_svc"]
    return defaults_section(
        __doc__, "bench_defaults.py", cap, total_s, candidates,
        method="`river best`: river's most accurate model by prequential accuracy on each data set (picked "
               "with hindsight).  SVC (mean kernel): `SVC(kernel='precomputed')` on the mean of the Gram "
               "matrices of `default_kernels()` from `onlinemkl.kernels.kernel_matrix`.",
        summary_doc="`preq_ge_river_best`: data sets where the candidate's prequential accuracy >= river best's. "
                    "`*_preq_vs_river`: accuracy difference; `*_heldout_vs_svc`: held-out accuracy / SVC (mean "
                    "kernel) held-out accuracy; `*_speed_vs_river`: examples/s / river best's examples/s.",
        tables=(summary, refs, rows, river_all), columns=columns)


def defaults_section(doc, script, cap, total_s, candidates, method, summary_doc, tables, columns):
    """One task's section of the report: ``(markdown, json dict)``.  The markdown holds the method
    notes, the summary per candidate, the references per data set, then one row per data set
    and candidate (``tables``: summary, references, rows, river's runs)."""
    summary, refs, rows, river_all = tables
    md = (
        f"{doc.split(chr(10) * 2)[1]}\n\n"
        f"Train = first {int(TRAIN_FRACTION * 100)}% (one prequential pass), held-out = last "
        f"{100 - int(TRAIN_FRACTION * 100)}%.  examples/s: wall time (`perf_counter`) of the prequential pass, "
        f"best of {REPEAT} (noisy on a shared machine).  {method}"
        f"{' Rows capped at ' + str(cap) + '.' if cap else ''}  Run time {total_s:.0f} s.  Full method: the "
        f"docstring of `benchmarks/{script}`.\n\n"
        f"### Summary per candidate\n\n{summary_doc}\n\n"
        + markdown_table(summary)
        + "\n### References per data set\n\n" + markdown_table(refs)
        + "\n### Per data set and candidate\n\n" + markdown_table(rows, columns)
    )
    data = {"summary": summary, "references": refs, "rows": rows, "river_all": river_all,
            "candidates": list(candidates), "cap": cap, "total_seconds": total_s}
    return md, data


TASKS = ("classification", "regression")


def _load(avg):
    return "/".join(f"{v:.1f}" for v in avg)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 small data sets per task, capped at 600 rows")
    ap.add_argument("--task", choices=("both",) + TASKS, default="both", help="which half to run (default both)")
    ap.add_argument("--datasets", default=None, help="comma-separated names from the task's DATASETS (needs --task)")
    ap.add_argument("--candidates", default=None,
                    help="comma-separated names from the task's CANDIDATES (default: all; needs --task)")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=EXPR",
                    help="an extra candidate: NAME=python expression returning an onlinemkl river model (needs --task)")
    ap.add_argument("--cap", type=int, default=None, help="cap every data set at this many rows")
    args = ap.parse_args(argv)
    for opt in ("datasets", "candidates", "extra"):
        if getattr(args, opt) and args.task == "both":
            ap.error(f"--{opt} names one task's data sets or models: add --task classification or --task regression")
    partial = args.task != "both" or bool(args.datasets or args.candidates or args.extra) or args.cap is not None
    tasks = TASKS if args.task == "both" else (args.task,)

    import _defaults_regression as reg
    import onlinemkl

    t0 = time.perf_counter()
    load_start = os.getloadavg()
    learners = {"classification": ["obscure", "proximal"], "regression": ["proximal-regressor"]}
    compile_s = onlinemkl.warmup([w for t in tasks for w in learners[t]], progress=False)
    print(f"warm-up (compile or cache load): {compile_s}", flush=True)
    sections, data = [], {}
    for task in tasks:
        if task == "classification":
            sel = selection(args, task, CANDIDATES, DATASETS, QUICK_DATASETS, QUICK_CAP)
            md, data[task] = run_classification(*sel)
        else:
            sel = selection(args, task, reg.CANDIDATES, reg.DATASETS, reg.QUICK_DATASETS, reg.QUICK_CAP)
            md, data[task] = reg.run(*sel)
        sections.append(f"## {task.capitalize()}\n\n{md}")
    warm_s = sum(compile_s.values()) if isinstance(compile_s, dict) else compile_s
    notes = (f"Each default learner, one prequential pass, against river's best model and a batch kernel "
             f"machine on held-out data; whole run {time.perf_counter() - t0:.0f} s, of which {warm_s:.0f} s "
             "compiling or loading the compiled code (not in any timing).  Load average (1/5/15 min) "
             f"{_load(load_start)} at the start and {_load(os.getloadavg())} at the end (the throughputs "
             "are comparable only between runs at a similar load).\n\n" + "\n".join(sections))
    write_report("defaults", None, title="Default learners against a batch SVC / KRR and river's best",
                 notes=notes, quick=args.quick or partial,
                 extra={**data, "extra_specs": args.extra, "warmup_seconds": compile_s,
                        "loadavg_start": load_start, "loadavg_end": os.getloadavg()})


if __name__ == "__main__":
    main()
