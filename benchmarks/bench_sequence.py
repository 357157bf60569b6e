"""Sequence labelling, Table 1 of Martins et al. (2010): does MKL beat each single kernel?

The question: does ``SequenceMKLLabeler`` reproduce the paper's finding that MKL over a linear,
a quadratic and a Gaussian kernel labels sequences more accurately than any one of them or their
uniform average, and at what training time?  Compared against those single kernels and the
average, all fitted by the same solver.  How to read the report: one row per model, as the
paper's Table 1: per-character test accuracy (mean ± std over seeds), training time, the chosen
``eta0``/``lam``, and MKL's kernel weights; the paper's own figures are under the title.

The paper's handwriting experiment (OCR words, structured SVM, Algorithm 3)
compares a chain model with a linear, a quadratic and a Gaussian kernel, their
uniform average and MKL of the three, by per-character test accuracy and
training time.  The OCR corpus is not available offline, so this benchmark
uses :func:`onlinemkl.datasets.digit_strings`: strings of 4-8 noisy 8x8 digits
from scikit-learn's ``load_digits`` whose labels follow a Markov chain with
strong transitions (disjoint train/test image pools).

Rows (all :class:`onlinemkl.SequenceMKLLabeler`, structured hinge, loss-augmented
Viterbi with Hamming cost, the same transition group):

* Linear, Quadratic, Gaussian: one kernel with the plain l2 regulariser
  (``regularizer='nonsparse', q=2``: ``0.5 sum_k ||theta_k||^2``, a standard
  structured SVM);
* Average (L+Q+G): the three kernels under the same l2 regulariser.  Its prox
  shrinks every group by the same factor and every gradient step adds the
  same coefficients to every group, so the model *is* the structured SVM of the
  fixed, equal-weight kernel ``K_L + K_Q + K_G`` (the paper's ``(L+Q+G)/3`` up
  to a factor absorbed by ``lam`` and ``eta0``);
* MKL: the three kernels with the squared l2,1 regulariser (Algorithm 2);
* MKL, per character: the MKL model without the chain (every character a
  length-1 sequence), for the value of the transitions.

As in the paper, the step size ``eta0`` and the regularisation ``lam`` are
chosen per row; here on a validation split of the training strings (the
first seed's data), not on the test set.  Then every row is retrained on the
whole training set for each seed (new strings, new order) and tested on the
held-out pool.  Linear and quadratic kernels are normalised to unit diagonal,
as in the paper; the Gaussian has ``gamma = 0.05`` (pixels in [0, 1]).

Run time on a shared 2-core machine: about 10 minutes; ``--quick`` about 1.

Usage::

    python benchmarks/bench_sequence.py [--quick]   # -> benchmarks/results/sequence.{json,md} (.quick.* with --quick)
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_report  # noqa: E402

from onlinemkl.datasets import digit_strings  # noqa: E402
from onlinemkl.kernels import RBF, Linear, Polynomial  # noqa: E402
from onlinemkl.sequence import SequenceMKLLabeler  # noqa: E402

LIN, QUAD, GAUSS = Linear(normalize=True), Polynomial(degree=2, normalize=True), RBF(gamma=0.05)
L2 = dict(regularizer="nonsparse", q=2.0)
MKL = dict(regularizer="sq_l21")
ROWS = [
    ("Linear (L)", (LIN,), L2, False),
    ("Quadratic (Q)", (QUAD,), L2, False),
    ("Gaussian (G)", (GAUSS,), L2, False),
    ("Average (L+Q+G)", (LIN, QUAD, GAUSS), L2, False),
    ("MKL b1 L + b2 Q + b3 G", (LIN, QUAD, GAUSS), MKL, False),
    ("MKL, per character (no chain)", (LIN, QUAD, GAUSS), MKL, True),
]


def char_accuracy(pred, ys):
    return float(np.mean(np.concatenate([np.asarray(p) == np.asarray(y) for p, y in zip(pred, ys)])))


def per_character(X, Y):
    return [x[i:i + 1] for x in X for i in range(len(x))], [[c] for y in Y for c in y]


def run_row(kernels, reg, per_char, params, X_train, y_train, X_test, y_test):
    model = SequenceMKLLabeler(kernels=kernels, gamma=None, **reg, **params)
    if per_char:
        X_train, y_train = per_character(X_train, y_train)
    t0 = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - t0
    if per_char:
        pred = [[model.predict_one(x[i:i + 1])[0] for i in range(len(x))] for x in X_test]
    else:
        pred = model.predict(X_test)
    return char_accuracy(pred, y_test), seconds, model


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small data, fewer epochs, seeds and settings")
    ap.add_argument("--out-dir", default=None, help="write the report here instead of benchmarks/results")
    args = ap.parse_args(argv)
    if args.quick:
        n_train, n_test, epochs, seeds = 120, 200, 5, (0, 1)
        grid = dict(eta0=(0.3, 1.0), lam=(1e-3,))
    else:
        n_train, n_test, epochs, seeds = 300, 500, 10, (0, 1, 2)
        grid = dict(eta0=(0.3, 1.0, 3.0), lam=(1e-3, 1e-2))
    data = dict(length=(4, 8), noise=0.3, transition_strength=0.8)

    # warm up the compiled code so that no row pays the compilation
    Xw, yw, _, _ = digit_strings(3, 0, seed=99, **data)
    SequenceMKLLabeler(kernels=(LIN, QUAD, GAUSS)).fit(Xw, yw).predict(Xw)

    # 1. per-row settings on a validation split (first seed; 25% of the training strings)
    X_train, y_train, _, _ = digit_strings(n_train, 0, seed=seeds[0], **data)
    cut = int(0.75 * n_train)
    chosen = {}
    for name, kernels, reg, per_char in ROWS:
        best = None
        for eta0, lam in itertools.product(grid["eta0"], grid["lam"]):
            params = dict(eta0=eta0, lam=lam, n_epochs=epochs, random_state=0)
            acc, _, _ = run_row(kernels, reg, per_char, params, X_train[:cut], y_train[:cut],
                                X_train[cut:], y_train[cut:])
            if best is None or acc > best[0]:
                best = (acc, eta0, lam)
        chosen[name] = best
        print(f"{name}: validation {best[0]:.4f} with eta0={best[1]}, lam={best[2]}", flush=True)

    # 2. every seed: fresh strings and order, train on the full training set, test on the held-out pool
    rows = []
    for name, kernels, reg, per_char in ROWS:
        _, eta0, lam = chosen[name]
        accs, secs, weights, n_sv = [], [], [], []
        for seed in seeds:
            X_train, y_train, X_test, y_test = digit_strings(n_train, n_test, seed=seed, **data)
            params = dict(eta0=eta0, lam=lam, n_epochs=epochs, random_state=seed)
            acc, sec, model = run_row(kernels, reg, per_char, params, X_train, y_train, X_test, y_test)
            accs.append(acc)
            secs.append(sec)
            weights.append(model.kernel_weights_)
            n_sv.append(model.n_support_)
        w = np.mean(weights, axis=0)
        rows.append({
            "kernel": name,
            "training time (s)": round(float(np.mean(secs)), 2),
            "test acc. per char (%)": f"{100 * np.mean(accs):.2f} ± {100 * np.std(accs):.2f}",
            "acc_mean": float(np.mean(accs)), "acc_std": float(np.std(accs)), "accs": accs, "seconds": secs,
            "eta0": eta0, "lam": lam, "validation acc.": round(chosen[name][0], 4),
            "support positions": int(np.mean(n_sv)),
            "kernel weights (L,Q,G,transitions)": " ".join(f"{v:.2f}" for v in w) if len(w) == 4 else "",
        })
        print(rows[-1], flush=True)

    n_chars = sum(len(y) for y in digit_strings(n_train, n_test, seed=seeds[0], **data)[3])
    notes = f"""
Digit strings (`onlinemkl.datasets.digit_strings`): {n_train} training and {n_test} test strings of
4-8 digits per seed (about {n_chars} test characters for seed {seeds[0]}), pixel noise 0.3, transition strength 0.8
(each digit's preferred successor has probability 0.82), disjoint train/test image pools.
Structured hinge (loss-augmented Viterbi, Hamming cost), {epochs} epochs, last iterate, invsqrt steps, no
projection (gamma=None). Single kernels and Average: l2 regulariser (a standard structured SVM; Average is exactly
the fixed equal-weight sum kernel L+Q+G); MKL: squared l2,1 (Algorithm 2). Kernel weights: mean over seeds.
Accuracy: mean ± std over seeds {list(seeds)} (new strings and order per seed). Training time: `fit` wall time,
mean over seeds, compilation excluded (it grows with the support positions stored: margin violations).
eta0 from {list(grid['eta0'])} and lam from {list(grid['lam'])} chosen per row
on a validation split (25% of the seed-{seeds[0]} training strings).
Paper (OCR, 20 epochs): L 72.8%, Q 85.5%, G 84.1%, average 84.3%, MKL 87.5%.
"""
    write_report("sequence", rows, quick=args.quick,
                 columns=["kernel", "training time (s)", "test acc. per char (%)", "eta0", "lam", "validation acc.",
                          "support positions", "kernel weights (L,Q,G,transitions)"],
                 title="Sequence labelling: Table 1 layout on digit strings", notes=notes,
                 extra={"settings": dict(n_train=n_train, n_test=n_test, epochs=epochs, seeds=list(seeds),
                                         grid={k: list(v) for k, v in grid.items()}, **data)},
                 out_dir=args.out_dir)


if __name__ == "__main__":
    main()
