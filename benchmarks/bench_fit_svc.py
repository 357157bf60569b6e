"""``fit`` against scikit-learn's SVC: accuracy, time and memory of a batch fit with the defaults.

The question: a user with a batch data set calls ``onlinemkl.OBSCUREClassifier().fit`` (several
epochs, default parameters).  Does it reach the held-out accuracy of what a scikit-learn user
would pick, ``SVC(C=10)`` with its RBF kernel, and in what time and memory, up to 20,000
examples?  The target: >= 1.0x that SVC's accuracy in <= 10x its CPU time, in bounded memory.
How to read the report: per data set and size, ``acc_vs_rbf`` (accuracy over the RBF SVC's;
>= 1 meets the target) and ``cpu_vs_rbf`` (CPU seconds over the RBF SVC's; <= 10 meets it),
beside the peak resident memory; ``acc_vs_mean`` and ``cpu_vs_mean`` compare with an SVC on the
mean of ``fit``'s default kernels (the same kernels as OBSCURE's, a reference no user runs).

What is measured
    Each data set (offline: scikit-learn's and river's bundled sets and generators) is
    shuffled once (seed 0) and split 70/30; inputs are standardised on the train part.  The
    letters-like sets are ``make_classification`` shapes of the UCI letters set (16 features,
    12 informative, 26 classes, 2 clusters per class; ``class_sep`` 1 and 2, and two seeds) at
    2,000 to 20,000 examples.  Every contestant fits the train part once and predicts the test
    part:

    - ``OBSCURE fit``: ``onlinemkl.OBSCUREClassifier(random_state=0)``, defaults (see
      ``docs/defaults.md``).  Its kernel matrices are precomputed when they fit in
      ``onlinemkl.obscure.sklearn.KERNEL_CACHE_BYTES``, else it keeps the class sums of every
      training example and computes kernel rows per chunk of an epoch, within that memory.
    - ``SVC rbf C=10``: ``sklearn.svm.SVC(C=10)`` (RBF kernel, ``gamma='scale'``, LIBSVM's own
      200 MB kernel cache): what a scikit-learn user picks; the reference of ``*_vs_rbf``.
    - ``SVC mean kernel``: ``sklearn.svm.SVC(kernel="precomputed")`` (C = 1) on the mean of
      ``fit``'s default kernels' Gram matrices (``onlinemkl.kernels.kernel_matrix``), the time including
      those matrices (train x train and test x train); the reference of ``*_vs_mean``.  The mean
      is accumulated over blocks of ``MEAN_BLOCK`` rows; the train matrix still takes
      8 n^2 bytes (1.6 GB at 14,000 examples).

    Each contestant runs in its own subprocess (after a warm-up fit on 200 examples, so that
    Numba's compilation is not timed; OBSCURE's twice, once through the float32 matrices' path,
    and once through the chunks of a cache too small for either); the child reports wall and
    CPU seconds of the fit and its peak resident memory (``ru_maxrss``) before and after the
    fit.  BLAS: one thread.

Timing: wall time on a shared 2-core machine; CPU time beside it (the fairer number when
other jobs run).  Ratios use CPU time.  Up to ``REPEAT_MAX`` training rows each contestant fits
``REPEATS`` times and reports the median (``repeats``): single sub-second timings moved by 2-4x
between runs (the mean-kernel SVC on digits: 0.04 to 0.15 s).

Run time on a shared 2-core machine: about half an hour (the 20k-example sets dominate);
``--quick`` (three small data sets) about 2 minutes.

Usage::

    python benchmarks/bench_fit_svc.py            # -> benchmarks/results/fit_svc.{json,md}
    python benchmarks/bench_fit_svc.py --quick    # -> benchmarks/results/fit_svc.quick.{json,md}
    python benchmarks/bench_fit_svc.py --datasets digits   # a partial run, written as .quick.*
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MEAN_BLOCK = 1000
WARM = 200
REPEATS, REPEAT_MAX = 5, 4000  # the median of 5 fits up to 4,000 training rows (sub-second times vary most)
CONTESTANTS = ("OBSCURE fit", "SVC rbf C=10", "SVC mean kernel")


def _river(name, cap):
    import itertools

    from river import datasets

    rows = list(itertools.islice(iter(getattr(datasets, name)()), cap))
    keys = sorted(rows[0][0])
    return np.array([[float(x.get(k, 0.0)) for k in keys] for x, _ in rows]), np.array([y for _, y in rows])


def _synth(make, n):
    import itertools

    rows = list(itertools.islice(iter(make()), n))
    keys = sorted(rows[0][0], key=str)
    return np.array([[float(x[k]) for k in keys] for x, _ in rows]), np.array([y for _, y in rows])


def load(name):
    """``(X, y)`` of a data set, as arrays."""
    from sklearn import datasets as skd

    if name == "digits":
        return skd.load_digits(return_X_y=True)
    if name == "breast_cancer":
        return skd.load_breast_cancer(return_X_y=True)
    if name == "ImageSegments":
        return _river("ImageSegments", None)
    if name == "Bananas":
        return _river("Bananas", None)
    if name == "Shuttle 20k":
        return _river("Shuttle", 20_000)
    if name.startswith("letters-like"):  # "letters-like sep 2 seed 0 10k"
        words = name.split()
        n = int(words[-1].rstrip("k")) * 1000
        return skd.make_classification(n_samples=n, n_features=16, n_informative=12, n_classes=26,
                                       n_clusters_per_class=2, class_sep=float(words[2]),
                                       random_state=int(words[4]))
    if name.startswith("26 classes"):
        n = int(name.split()[-1].rstrip("k")) * 1000
        return skd.make_classification(n_samples=n, n_features=16, n_informative=14, n_redundant=0,
                                       n_classes=26, n_clusters_per_class=2, class_sep=2.0, random_state=0)
    if name == "RandomRBF 10k":
        from river.datasets import synth

        return _synth(lambda: synth.RandomRBF(seed_model=7, seed_sample=7, n_classes=5, n_features=10,
                                              n_centroids=50), 10_000)
    if name == "Waveform 10k":
        from river.datasets import synth

        return _synth(lambda: synth.Waveform(seed=7), 10_000)
    raise KeyError(name)


DATASETS = ("breast_cancer", "digits", "ImageSegments", "Bananas", "RandomRBF 10k", "Waveform 10k", "Shuttle 20k",
            "26 classes 10k", "letters-like sep 1 seed 0 5k", "letters-like sep 1 seed 0 20k")
DATASETS += tuple(f"letters-like sep 2 seed {seed} {n}" for seed in (0, 1) for n in ("2k", "5k", "10k", "20k"))
QUICK = ("breast_cancer", "digits", "ImageSegments")


def split(X, y):
    from sklearn.preprocessing import StandardScaler

    order = np.random.default_rng(0).permutation(len(y))
    X, y = np.asarray(X, dtype=np.float64)[order], np.asarray(y)[order]
    n = int(0.7 * len(y))
    sc = StandardScaler().fit(X[:n])
    return sc.transform(X[:n]), y[:n], sc.transform(X[n:]), y[n:]


def mean_kernel(Xa, Xb=None):
    """The mean of ``fit``'s default kernels' matrices (``default_fit_kernels``) between the rows of
    ``Xa`` and ``Xb`` (default ``Xa``), accumulated over blocks of ``MEAN_BLOCK`` rows of ``Xa``."""
    from onlinemkl.kernels import default_fit_kernels, kernel_matrix

    Xb = Xa if Xb is None else Xb
    kernels = default_fit_kernels()
    K = np.empty((Xa.shape[0], Xb.shape[0]))
    for s in range(0, Xa.shape[0], MEAN_BLOCK):
        K[s:s + MEAN_BLOCK] = kernel_matrix(Xa[s:s + MEAN_BLOCK], Xb, kernels).mean(axis=0)
    return K


def child(dataset, contestant):
    """Run one contestant on one data set in this process; print one JSON line."""
    import resource

    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    from sklearn.svm import SVC

    from onlinemkl import OBSCUREClassifier

    Xtr, ytr, Xte, yte = split(*load(dataset))

    if contestant == "OBSCURE fit":
        def fit_predict(Xa, ya, Xb):
            m = OBSCUREClassifier(random_state=0).fit(Xa, ya)
            return m.predict(Xb), {"n_support": int(m._engine.n_support)}
    elif contestant == "SVC mean kernel":
        def fit_predict(Xa, ya, Xb):
            K = mean_kernel(Xa)
            m = SVC(kernel="precomputed").fit(K, ya)
            del K
            return m.predict(mean_kernel(Xb, Xa)), {"n_support": int(m.n_support_.sum())}
    else:
        def fit_predict(Xa, ya, Xb):
            m = SVC(C=10).fit(Xa, ya)
            return m.predict(Xb), {"n_support": int(m.n_support_.sum())}

    fit_predict(Xtr[:WARM], ytr[:WARM], Xte[:10])  # compile / warm
    if contestant == "OBSCURE fit":  # and the float32 kernel matrices' path (a cache too small for float64)
        import onlinemkl.obscure.sklearn as ob
        from onlinemkl.kernels import default_fit_kernels

        cap = ob.KERNEL_CACHE_BYTES
        F = len(default_fit_kernels())  # float32 blocks of WARM / 2 rows (as fit counts), not float64; chunks
        for small in ((8 * F + 12) * WARM * WARM, 8 * WARM * WARM):
            ob.KERNEL_CACHE_BYTES = small
            fit_predict(Xtr[:WARM], ytr[:WARM], Xte[:10])
        ob.KERNEL_CACHE_BYTES = cap
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    walls, cpus = [], []
    for _ in range(REPEATS if len(ytr) <= REPEAT_MAX else 1):
        t0, c0 = time.perf_counter(), time.process_time()
        pred, extra = fit_predict(Xtr, ytr, Xte)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    wall, cpu = float(np.median(walls)), float(np.median(cpus))
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"dataset": dataset, "contestant": contestant, "n_train": len(ytr), "n_test": len(yte),
                      "features": Xtr.shape[1], "classes": int(len(np.unique(ytr))),
                      "accuracy": float(np.mean(pred == yte)), "wall_s": wall, "cpu_s": cpu,
                      "peak_rss_mb": rss1, "rss_before_mb": rss0, "repeats": len(cpus), **extra}))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="three small data sets")
    ap.add_argument("--datasets", help="comma-separated subset of: " + ", ".join(DATASETS))
    ap.add_argument("--child", nargs=2, metavar=("DATASET", "CONTESTANT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    from _common import write_report

    names = args.datasets.split(",") if args.datasets else (QUICK if args.quick else DATASETS)
    env = {**os.environ, "ONLINEMKL_BACKGROUND_COMPILE": "0", "PYTHONPATH": str(HERE.parent)}
    rows = []
    for name in names:
        got = {}
        for contestant in CONTESTANTS:
            out = subprocess.run([sys.executable, __file__, "--child", name, contestant], env=env,
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(out.stderr, file=sys.stderr)
                raise SystemExit(f"{name} / {contestant} failed")
            got[contestant] = json.loads(out.stdout.strip().splitlines()[-1])
            print(got[contestant], flush=True)
        rbf, mean, ob = got["SVC rbf C=10"], got["SVC mean kernel"], got["OBSCURE fit"]
        for r in got.values():
            r["acc_vs_rbf"] = r["accuracy"] / rbf["accuracy"]
            r["cpu_vs_rbf"] = r["cpu_s"] / rbf["cpu_s"]
            r["acc_vs_mean"] = r["accuracy"] / mean["accuracy"]
            r["cpu_vs_mean"] = r["cpu_s"] / mean["cpu_s"]
            rows.append(r)
        print(f"{name}: OBSCURE {ob['accuracy']:.4f} in {ob['cpu_s']:.2f} s CPU; "
              f"SVC rbf C=10 {rbf['accuracy']:.4f} in {rbf['cpu_s']:.2f} s; "
              f"mean-kernel SVC {mean['accuracy']:.4f} in {mean['cpu_s']:.2f} s", flush=True)
    columns = ["dataset", "contestant", "n_train", "features", "classes", "accuracy", "acc_vs_rbf", "cpu_vs_rbf",
               "acc_vs_mean", "cpu_vs_mean", "wall_s", "cpu_s", "repeats", "peak_rss_mb", "n_support"]
    write_report("fit_svc", rows, columns=columns, title=__doc__.splitlines()[0].strip('"'),
                 notes=__doc__.split("Usage::")[0].split("\n", 1)[1], quick=args.quick or bool(args.datasets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
