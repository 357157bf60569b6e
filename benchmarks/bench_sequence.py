"""Sequence labelling, Table 1 of Martins et al. (2010) on the OCR words: does MKL beat each kernel?

The question: does ``SequenceMKLLabeler`` reproduce the paper's handwriting experiment, where
MKL over a linear, a quadratic and a Gaussian kernel labels the letters of handwritten words
more accurately than any one kernel or their fixed average, and MKL over a linear and a
B1-spline kernel comes close at a fraction of the time?  Compared against the paper's own
Table 1 and against a linear-chain CRF (python-crfsuite, L-BFGS) on the same pixels.
How to read the report: one row per model as the paper's table (per-character test accuracy, mean ±
std over the folds run; training time of 20 epochs; the chosen ``eta0`` and ``C``; the kernel
weights ``||theta_k|| / sum_l ||theta_l||``, the transitions last), the paper's figures beside
them; then the CRF peer with its ratios; then the objective and the weights along the epochs
(the paper's Fig. 1) for MKL and the average, also drawn into ``results/sequence.png``.

Data: :func:`onlinemkl.datasets.load_ocr_words` (6,877 words, 52,152 16x8 binary characters,
Taskar et al.'s 10 folds).  The paper's protocol: for each fold, train on it (~690 words) and
test on the nine others; 20 epochs of the structured SVM (loss-augmented Viterbi, Hamming
cost); ``eta0`` from {0.01, 0.1, 1, 10}, the one with the lowest objective after 5 epochs;
``C = 1 / (lam m)`` (``m`` training words) the best of {0.1, 1, 10, 1e2, 1e3, 1e4}; linear and
quadratic kernels normalised to unit diagonal, Gaussian ``sigma^2 = 5`` (``gamma = 0.1``),
B1-spline ``h`` with ~95 % zeros in the training kernel matrix.  Here ``C`` is chosen by
accuracy on held-out words of the selection folds (the words of the other selection folds), never
on the test words of folds outside them; ``eta0`` as the paper.  The training objective is
:meth:`SequenceMKLLabeler.objective` (``lam R(theta)`` + the mean structured loss).

Rows: Linear, Quadratic, Gaussian, B1-spline: one kernel, l2 regulariser
(``regularizer='nonsparse', q=2``, a standard structured SVM); Average: the kernels under
the same l2 regulariser (every step adds the same coefficients to every kernel group and the
prox shrinks them alike, so the model is the structured SVM of the fixed sum kernel); MKL: the
squared l2,1 regulariser (Algorithm 2); MKL (CRF): MKL with the CRF loss.  Every model keeps
the transitions as one more group.  Training time: CPU time of the 20 epochs (BLAS on one
thread, the compilation excluded; each position stored once, its re-visits added to its row).

The full protocol (6 C x 4 eta0 per row and selection fold, then 10 folds) takes many hours on
a shared 2-core machine, so the options say how much runs and the report says exactly what
ran: ``--select-folds`` (default 0) and ``--C`` (default a part of the paper's grid),
``--folds`` (default 0 1 2), ``--test-words`` (test words sampled per fold, default all).
``--rows`` runs some rows only; with ``--merge`` the report keeps the other rows of the current
report when it ran the same protocol (folds, epochs, test words, ``C``, ``eta0`` grid), and says
when each row was measured.

Usage::

    python benchmarks/bench_sequence.py [--quick]   # -> benchmarks/results/sequence.{json,md,png}
    python benchmarks/bench_sequence.py --rows 5,6 --merge ...   # the other rows kept from the report
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, report_paths, single_thread_blas, write_report  # noqa: E402

from onlinemkl.datasets import load_ocr_words  # noqa: E402
from onlinemkl.kernels import RBF, BSpline, Linear, Polynomial  # noqa: E402
from onlinemkl.sequence import SequenceMKLLabeler  # noqa: E402

LIN, QUAD, GAUSS = Linear(normalize=True), Polynomial(degree=2, normalize=True), RBF(gamma=0.1)
L2 = dict(regularizer="nonsparse", q=2.0)
MKL = dict(regularizer="sq_l21")
ETA0S = (0.01, 0.1, 1.0, 10.0)
PAPER = {  # Table 1: training time (s), accuracy per character (%), std
    "Linear (L)": (6, 72.8, 4.4), "Quadratic (Q)": (116, 85.5, 0.3), "Gaussian (G)": (123, 84.1, 0.4),
    "Average (L+Q+G)": (118, 84.3, 0.3), "MKL b1 L + b2 Q + b3 G": (279, 87.5, 0.4),
    "B1-spline (B1)": (8, 75.4, 0.9), "Average (L+B1)": (15, 83.0, 0.3), "MKL b1 L + b2 B1": (15, 85.2, 0.3),
}


PROTOCOL = {"folds": "--folds", "epochs": "--quick", "select_epochs": "--quick", "test_words": "--test-words",
            "C": "--C", "eta0": "--eta0"}  # settings a merged report's rows must share, and the option of each


def merge_previous(previous, source, rows, settings, all_names, date):
    """The rows of this run (stamped ``measured``: ``date``) and those of ``previous`` (an earlier
    report's JSON payload, read from ``source``) that this run did not run, in the table's order;
    returns ``(rows, kept)``, ``kept`` the names of the rows taken from ``previous``.

    Rows are only comparable under one protocol, so ``previous`` must have run the same
    :data:`PROTOCOL` settings as ``settings``, else this raises ``SystemExit`` naming the setting
    and the option that changes it.  A report without an ``eta0`` setting ran the default grid."""
    if previous is None:
        raise SystemExit(f"--merge: no earlier report at {source} to keep rows from; run without --merge")
    old = dict(previous.get("settings") or {})
    old.setdefault("eta0", list(ETA0S))
    for key, option in PROTOCOL.items():
        if key not in old or list(np.atleast_1d(old[key])) != list(np.atleast_1d(settings[key])):
            raise SystemExit(f"--merge: the report at {source} ran {key}={old.get(key)!r} and this run "
                             f"{key}={settings[key]!r}; rows of different protocols are not comparable: "
                             f"run with the report's {option}, or without --merge to start a new report")
    new = {r["kernel"]: {**r, "measured": date} for r in rows}
    earlier = previous.get("machine", {}).get("date", "?")
    old_rows = {r["kernel"]: {**r, "measured": r.get("measured", earlier)} for r in previous.get("rows") or []
                if r.get("kernel") in all_names and r["kernel"] not in new}
    merged = {**old_rows, **new}
    return [merged[n] for n in all_names if n in merged], [n for n in all_names if n in old_rows]


def rows_for(b1):
    """(name, kernels, regulariser, loss) of every row; ``b1`` the B1-spline kernel."""
    return [
        ("Linear (L)", (LIN,), L2, "svm"),
        ("Quadratic (Q)", (QUAD,), L2, "svm"),
        ("Gaussian (G)", (GAUSS,), L2, "svm"),
        ("Average (L+Q+G)", (LIN, QUAD, GAUSS), L2, "svm"),
        ("MKL b1 L + b2 Q + b3 G", (LIN, QUAD, GAUSS), MKL, "svm"),
        ("B1-spline (B1)", (b1,), L2, "svm"),
        ("Average (L+B1)", (LIN, b1), L2, "svm"),
        ("MKL b1 L + b2 B1", (LIN, b1), MKL, "svm"),
        ("MKL (CRF loss) L + Q + G", (LIN, QUAD, GAUSS), MKL, "crf"),
    ]


def spline_width(X, zeros=0.95, sample=1500, seed=0):
    """``h`` such that ``max(0, 1 - ||x - x'|| / h)`` is zero on a fraction ``zeros`` of the pairs
    of training characters: the ``1 - zeros`` quantile of their distances (on a sample)."""
    P = np.concatenate(X)
    P = P[np.random.default_rng(seed).choice(P.shape[0], min(sample, P.shape[0]), replace=False)]
    sq = (P * P).sum(1)
    d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * P @ P.T, 0.0))
    return float(np.quantile(d[np.triu_indices_from(d, 1)], 1.0 - zeros))


def spline_zeros(X, h, sample=1500, seed=0):
    """The fraction of pairs of (a sample of) training characters at distance >= ``h``."""
    P = np.concatenate(X)
    P = P[np.random.default_rng(seed).choice(P.shape[0], min(sample, P.shape[0]), replace=False)]
    sq = (P * P).sum(1)
    d = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * P @ P.T, 0.0))
    return float(np.mean(d[np.triu_indices_from(d, 1)] >= h))


def train(model, X, y, epochs, seed, start=0, order=None, each_epoch=None):
    """Epochs ``start .. epochs - 1`` of ``model.fit``'s loop (the same random orders and the same
    model: each word learnt under its index as ``seq_id``, so a re-visited position adds to its row
    as in ``fit``), one ``learn_one`` at a time; returns the CPU seconds spent learning.
    ``each_epoch(e)`` runs after every epoch (outside the timing)."""
    rng = order if order is not None else np.random.default_rng(seed)
    seconds = 0.0
    for e in range(start, epochs):
        perm = rng.permutation(len(X))
        t0 = time.process_time()
        for i in perm:
            model.learn_one(X[i], y[i], seq_id=int(i))
        seconds += time.process_time() - t0
        if each_epoch is not None:
            each_epoch(e)
    return seconds, rng


def accuracy(model, X, y):
    return float(model.score(X, y))


def fit_row(kernels, reg, loss, lam, X, y, epochs, seed, select_epochs, trace=None, eta0s=ETA0S):
    """Paper's step choice: every ``eta0`` of :data:`ETA0S` for ``select_epochs`` epochs, the one
    with the lowest training objective goes on to ``epochs``.  Returns ``(model, eta0, seconds,
    objectives)`` where ``seconds`` is the chosen model's training time over all its epochs."""
    best = None
    for eta0 in eta0s:
        m = SequenceMKLLabeler(kernels=kernels, loss=loss, lam=lam, eta0=eta0, gamma=None, random_state=seed, **reg)
        sec, rng = train(m, X, y, select_epochs, seed)
        obj = m.objective(X, y)
        if not np.isfinite(obj):
            continue
        if best is None or obj < best[0]:
            best = (obj, eta0, m, sec, rng)
    obj, eta0, m, sec, rng = best
    hook = None
    if trace is not None:
        trace.append((select_epochs, obj, m.kernel_weights_.tolist()))

        def hook(e):
            trace.append((e + 1, m.objective(X, y), m.kernel_weights_.tolist()))
    more, _ = train(m, X, y, epochs, seed, start=select_epochs, order=rng, each_epoch=hook)
    return m, eta0, sec + more


def split(f, n_train, n_test, seed=0):
    """Training words of fold ``f`` (the first ``n_train``; None: all) and ``n_test`` test words
    sampled from the nine other folds (0: all)."""
    X_all, y_all, folds = load_ocr_words()
    tr = np.flatnonzero(folds == f)[:n_train]
    te = np.flatnonzero(folds != f)
    if n_test:
        te = np.sort(np.random.default_rng([seed, f]).choice(te, n_test, replace=False))
    return ([X_all[i] for i in tr], [y_all[i] for i in tr], [X_all[i] for i in te], [y_all[i] for i in te])


def run_row(task):
    """One row: C on the selection folds, then the chosen C on every fold run.  Returns
    ``(row, trace, C)``; ``trace`` the objective and weights along the epochs (MKL and the average
    of L+Q+G on the first fold), else None."""
    name, kernels, reg, loss, args, n_train, n_valid, epochs, select_epochs = task
    X_all, y_all, folds = load_ocr_words()
    with single_thread_blas():
        w = SequenceMKLLabeler(kernels=kernels, loss=loss, **reg).fit(X_all[:3], y_all[:3])  # compile
        w.objective(X_all[:2], y_all[:2])
        w.predict(X_all[:2])
        scores = {}
        for C in args.C:
            if len(args.C) == 1:
                break
            accs = []
            for f in args.select_folds:
                X, y, _, _ = split(f, n_train, 0)
                pool = np.flatnonzero((folds != f) & (folds <= 4))
                va = np.sort(np.random.default_rng(f).choice(pool, n_valid, replace=False))
                m, eta0, _ = fit_row(kernels, reg, loss, 1.0 / (C * len(X)), X, y, epochs, f, select_epochs,
                                     eta0s=args.eta0)
                accs.append(accuracy(m, [X_all[i] for i in va], [y_all[i] for i in va]))
            scores[C] = float(np.mean(accs))
            print(f"{name}: C={C:g} validation {scores[C]:.4f}", flush=True)
        C = max(scores, key=scores.get) if scores else args.C[0]
        accs, secs, weights, etas, supports, trace = [], [], [], [], [], None
        for f in args.folds:
            X, y, Xt, yt = split(f, n_train, args.test_words)
            tr = [] if (f == args.folds[0] and name in ("Average (L+Q+G)", "MKL b1 L + b2 Q + b3 G")) else None
            m, eta0, sec = fit_row(kernels, reg, loss, 1.0 / (C * len(X)), X, y, epochs, f, select_epochs, tr,
                                   eta0s=args.eta0)
            trace = tr if tr is not None else trace
            accs.append(accuracy(m, Xt, yt))
            secs.append(sec)
            weights.append(m.kernel_weights_)
            supports.append(m.n_support_)
            etas.append(eta0)
            print(f"{name} fold {f}: {accs[-1]:.4f} in {sec:.1f} CPU-s, eta0={eta0}, "
                  f"weights {np.round(m.kernel_weights_, 3)}", flush=True)
    paper = PAPER.get(name)
    row = {
        "kernel": name,
        "test acc. per char (%)": f"{100 * np.mean(accs):.2f} ± {100 * np.std(accs):.2f}",
        "paper (%)": f"{paper[1]} ± {paper[2]}" if paper else "",
        "training time (s)": round(float(np.mean(secs)), 1), "n_support": int(np.mean(supports)),
        "paper time (s)": paper[0] if paper else "",
        "C": C, "eta0": "/".join(f"{e:g}" for e in etas),
        "kernel weights (then transitions)": " ".join(f"{v:.3f}" for v in np.mean(weights, axis=0)),
        "acc_mean": float(np.mean(accs)), "acc_std": float(np.std(accs)), "accs": accs, "seconds": secs,
        "folds": list(args.folds), "validation": scores,
    }
    return row, trace, C


def crf_features(x):
    """python-crfsuite items: the pixels that are on (and a bias), as the kernels see them."""
    return [{"b": 1.0, **{f"p{j}": 1.0 for j in np.flatnonzero(row)}} for row in x]


def run_crf(X, y, X_test, y_test, c2=1.0, max_iterations=100):
    import pycrfsuite

    trainer = pycrfsuite.Trainer(verbose=False)
    for x, w in zip(X, y):
        trainer.append(crf_features(x), list(w))
    trainer.set_params({"c1": 0.0, "c2": c2, "max_iterations": max_iterations})
    path = RESULTS / ".crf-model.tmp"
    t0 = time.perf_counter()
    trainer.train(str(path))
    seconds = time.perf_counter() - t0
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    right = total = 0
    for x, w in zip(X_test, y_test):
        pred = tagger.tag(crf_features(x))
        right += sum(p == c for p, c in zip(pred, w))
        total += len(w)
    tagger.close()
    path.unlink()
    return right / total, seconds


def draw(traces, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for name, tr in traces.items():
        ep = [t[0] for t in tr]
        a.plot(ep, [t[1] for t in tr], marker="o", label=name)
        w = np.array([t[2] for t in tr])
        for k, lab in enumerate(["L", "Q", "G", "transitions"][: w.shape[1]]):
            b.plot(ep, w[:, k], marker=".", linestyle="-" if "MKL" in name else ":", label=f"{name[:3]} {lab}")
    a.set_xlabel("epoch")
    a.set_ylabel("objective lam R(theta) + mean loss")
    a.set_yscale("log")
    a.legend()
    b.set_xlabel("epoch")
    b.set_ylabel("||theta_k|| / sum_l ||theta_l||")
    b.legend(fontsize=7, ncol=2)
    fig.suptitle("OCR fold 0: objective and group weights along the epochs (Martins et al. Fig. 1)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 epochs, 200 training words, 300 test words, fold 0")
    ap.add_argument("--folds", type=int, nargs="+", default=[0, 1, 2], help="training folds to run (paper: 0-9)")
    ap.add_argument("--select-folds", type=int, nargs="+", default=[0], help="folds C is chosen on (within 0-4)")
    ap.add_argument("--C", type=float, nargs="+", default=[1.0, 10.0, 100.0], help="the C grid (paper: 0.1 ... 1e4)")
    ap.add_argument("--test-words", type=int, default=0, help="test words sampled per fold (0: all)")
    ap.add_argument("--eta0", type=float, nargs="+", default=list(ETA0S), help="the eta0 grid (paper: 0.01 ... 10)")
    ap.add_argument("--jobs", type=int, default=1, help="rows trained in this many processes at once")
    ap.add_argument("--rows", default="", help="comma-separated row numbers to run (default all)")
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of the current report that this run does not run (same protocol only)")
    ap.add_argument("--out-dir", default=None, help="write the report here instead of benchmarks/results")
    args = ap.parse_args(argv)
    epochs, select_epochs, n_train, n_valid = 20, 5, None, 1500
    if args.quick:
        epochs, select_epochs, n_train, n_valid = 5, 2, 200, 300
        args.folds, args.select_folds, args.test_words, args.C = [0], [0], 300, [10.0]
    if any(f > 4 for f in args.select_folds):
        ap.error("--select-folds: C is chosen on folds 0-4 only")
    settings = {"folds": args.folds, "select_folds": args.select_folds, "C": args.C, "eta0": list(args.eta0),
                "epochs": epochs, "select_epochs": select_epochs, "test_words": args.test_words}
    previous, source = None, report_paths("sequence", args.quick, args.out_dir)[0]
    if args.merge:  # refuse a different protocol before hours of training, not after
        import json

        previous = json.loads(source.read_text()) if source.exists() else None
        merge_previous(previous, source, [], settings, [], "")
    X0, y0, _, _ = split(0, n_train, 0)
    b1 = BSpline(h=spline_width(X0))
    zeros = spline_zeros(X0, b1.h)
    rows_def = rows_for(b1)
    all_names = [r[0] for r in rows_def]
    if args.rows:
        rows_def = [rows_def[int(i)] for i in args.rows.split(",")]
    tasks = [(name, kernels, reg, loss, args, n_train, n_valid, epochs, select_epochs) for name, kernels, reg, loss
             in rows_def]
    if args.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs) as pool:
            done = list(pool.map(run_row, tasks))
    else:
        done = [run_row(t) for t in tasks]
    rows = [r for r, _, _ in done]
    traces = {name: tr for (_, tr, _), (name, *_) in zip(done, rows_def) if tr}
    chosen = {name: c for (_, _, c), (name, *_) in zip(done, rows_def)}
    ran, kept = [r[0] for r in rows_def], []
    if args.merge:
        rows, kept = merge_previous(previous, source, rows, settings, all_names, time.strftime("%Y-%m-%dT%H:%M:%S"))
        traces = {**{k: v for k, v in (previous.get("traces") or {}).items() if k in kept}, **traces}
        chosen = {**{k: v for k, v in (previous.get("chosen_C") or {}).items() if k in kept}, **chosen}
    in_table = ran + kept
    with single_thread_blas():
        # 3. the CRF peer on the same folds, against the L and MKL rows
        crf = []
        for f in args.folds:
            X, y, Xt, yt = split(f, n_train, args.test_words)
            acc, sec = run_crf(X, y, Xt, yt)
            crf.append((acc, sec))
            print(f"CRF fold {f}: {acc:.4f} in {sec:.1f} s", flush=True)

    by = {r["kernel"]: r for r in rows}
    crf_acc, crf_sec = float(np.mean([a for a, _ in crf])), float(np.mean([s for _, s in crf]))
    peer = {"CRF (python-crfsuite, L-BFGS, c2=1, 100 iterations)": {
        "acc_mean": crf_acc, "acc_std": float(np.std([a for a, _ in crf])), "seconds": crf_sec}}
    for ref in ("Linear (L)", "MKL b1 L + b2 Q + b3 G"):
        if ref in by:
            peer[f"vs {ref}"] = {"accuracy points": round(100 * (by[ref]["acc_mean"] - crf_acc), 2),
                                 "time ratio (ours / CRF)": round(by[ref]["training time (s)"] / crf_sec, 2)}
    rows.append({"kernel": "CRF peer: python-crfsuite (pixels, L-BFGS)",
                 "test acc. per char (%)": f"{100 * crf_acc:.2f} ± {100 * np.std([a for a, _ in crf]):.2f}",
                 "training time (s)": round(crf_sec, 1), "paper (%)": "", "paper time (s)": "", "C": "", "eta0": "",
                 "kernel weights (then transitions)": "", "n_support": ""})

    fig_lines = []
    for name, tr in traces.items():
        fig_lines.append(f"{name}: " + "; ".join(f"epoch {e}: objective {o:.4f}, weights "
                                                  + " ".join(f"{v:.3f}" for v in w) for e, o, w in tr))
    png = None
    if traces:
        try:
            png = (Path(args.out_dir) if args.out_dir else RESULTS) / ("sequence.quick.png" if args.quick
                                                                        else "sequence.png")
            png.parent.mkdir(parents=True, exist_ok=True)
            draw(traces, png)
        except ImportError:
            png = None
    n_test = args.test_words or "all"
    ran_line = "".join(f"; kept from the report of {d} (same protocol): "
                       + ", ".join(r["kernel"] for r in rows if r["kernel"] in kept and r["measured"] == d)
                       for d in dict.fromkeys(r["measured"] for r in rows if r["kernel"] in kept))
    if len(in_table) < len(all_names):
        ran_line += "; not run: " + ", ".join(n for n in all_names if n not in in_table)
    c_line = (f"C = 1/(lam m) fixed at {args.C[0]:g} for every row (no C selection ran; paper: the best of 0.1 ... 1e4)"
              if len(args.C) == 1 else
              f"C = 1/(lam m) from {args.C} (paper: 0.1 ... 1e4) chosen per row by accuracy on {n_valid} words of "
              f"folds 0-4 outside the training fold, trained on selection folds {args.select_folds}")
    notes = f"""
What ran: rows {ran}{ran_line};
training folds {args.folds} (paper: all 10), each tested on {n_test} words of the nine other folds;
{epochs} epochs; eta0 from {list(args.eta0)} by the lowest training objective after {select_epochs} epochs (as the paper);
{c_line}{' (quick: 200 training words per fold)' if args.quick else ''}.
Structured hinge (Hamming cost 1; the CRF row: the CRF loss), last iterate, invsqrt steps, no projection (gamma=None). Gaussian gamma 0.1
(sigma^2 = 5); B1-spline h = {b1.h:.3f} ({100 * zeros:.1f} % zeros on training characters). Single-threaded BLAS.
CRF peer: python-crfsuite on the same folds and test words, features = the pixels that are on, L-BFGS
(c2 = 1, 100 iterations); against our rows: {peer}.
Objective and weights along the epochs, fold {args.folds[0]} (the paper's Fig. 1{', drawn in ' + png.name if png else ''}):
{chr(10).join(fig_lines)}
"""
    write_report("sequence", rows, quick=args.quick,
                 columns=["kernel", "test acc. per char (%)", "paper (%)", "training time (s)", "paper time (s)", "C",
                          "eta0", "kernel weights (then transitions)", "n_support"],
                 title="Sequence labelling: Martins et al. Table 1 on the OCR words", notes=notes,
                 extra={"crf": peer, "traces": traces, "chosen_C": chosen, "settings": {**settings, "h": b1.h}},
                 out_dir=args.out_dir)


if __name__ == "__main__":
    main()
