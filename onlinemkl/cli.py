"""The ``onlinemkl`` command.

``onlinemkl demo`` runs a prequential (test-then-train) pass of OBSCURE over
river's bundled ImageSegments stream (no download) and prints the accuracy,
the throughput, the stored examples and the learnt kernel weights.
"""

from __future__ import annotations

import argparse
import sys
import time


class CommandError(Exception):
    """An error reported as one line and a non-zero exit code, without a traceback."""


def _demo(args) -> int:
    from river import datasets, metrics, preprocessing
    from tqdm import tqdm

    from .river import OBSCUREClassifier

    data = datasets.ImageSegments()
    model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=args.budget)
    clf = model["OBSCUREClassifier"]
    acc = metrics.Accuracy()
    print(f"onlinemkl demo: OBSCURE, prequential pass over river's ImageSegments "
          f"({data.n_samples} examples, {data.n_features} features, {data.n_classes} classes)")
    print("compiling the kernels (cached on disk after the first run)...", flush=True)
    t0 = time.perf_counter()
    x0, y0 = next(iter(data))
    warm = model.clone()  # compile (or load from the cache) outside the timed loop
    warm.learn_one(x0, y0)
    warm.predict_one(x0)
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    n = 0
    bar = tqdm(data, total=data.n_samples, unit="ex", disable=args.no_progress, file=sys.stderr)
    for x, y in bar:
        acc.update(y, model.predict_one(x))
        model.learn_one(x, y)
        n += 1
        if n % 200 == 0:
            bar.set_postfix(accuracy=f"{acc.get():.4f}", stored=clf.n_support_)
    bar.close()
    elapsed = time.perf_counter() - t0
    kernels = clf._kernels
    print(f"prequential accuracy : {acc.get():.4f}")
    print(f"examples per second  : {n / elapsed:,.0f} (predict + learn, scaler included; "
          f"compile/load {t_compile:.1f} s)")
    print(f"stored examples      : {clf.n_support_}")
    print(f"stage                : {clf.stage_}")
    print("kernel weights       :")
    for k, w in zip(kernels, clf.kernel_weights_):
        print(f"  {w:6.3f}  {k!r}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="onlinemkl",
        description="Online multiple kernel learning (OBSCURE, online proximal MKL, ...).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo", help="prequential OBSCURE on river's bundled ImageSegments stream",
        description="Run a prequential (test-then-train) pass of OBSCURE over river's bundled "
                    "ImageSegments stream (no download); print accuracy, examples/s, stored examples "
                    "and kernel weights.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    demo.add_argument("--budget", type=int, default=None, help="maximum stored examples (None: unbounded)")
    demo.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except CommandError as exc:
        print(f"onlinemkl {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"onlinemkl {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
