"""``onlinemkl demo``: prequential OBSCURE on river's bundled ImageSegments stream."""

from __future__ import annotations

import sys
import time

from ._errors import CommandError, option_message
from ._model import kernel_label
from ._warmup import compile_first, compile_note


def _demo(args) -> int:
    from river import datasets, metrics, preprocessing
    from tqdm import tqdm

    from ..river import OBSCUREClassifier

    data = datasets.ImageSegments()
    try:
        model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=args.budget)
    except (TypeError, ValueError) as exc:
        raise CommandError(option_message(str(exc), {"budget": "--budget"})) from None
    clf = model["OBSCUREClassifier"]
    acc = metrics.Accuracy()
    print(f"onlinemkl demo: OBSCURE, prequential pass over river's ImageSegments "
          f"({data.n_samples} examples, {data.n_features} features, {data.n_classes} classes)")
    t_compile = compile_first(clf, args)  # before the clock: examples/s excludes it
    t0 = time.perf_counter()
    n = 0
    bar = tqdm(data, total=data.n_samples, unit="ex", disable=args.no_progress, file=sys.stderr)
    for x, y in bar:
        y_pred = model.predict_one(x)
        if y_pred is not None:  # river's convention: no score before the first label is seen
            acc.update(y, y_pred)
        model.learn_one(x, y)
        n += 1
        if n % 200 == 0:
            bar.set_postfix(accuracy=f"{acc.get():.4f}", stored=clf.n_support_)
    bar.close()
    elapsed = time.perf_counter() - t0
    kernels = clf._engine.ck.kernels
    print(f"prequential accuracy : {acc.get():.4f}")
    print(f"examples per second  : {n / elapsed:,.0f} (predict + learn, scaler included)")
    note = compile_note(t_compile)
    if note:
        print(f"compile seconds      : {note}")
    print(f"stored examples      : {clf.n_support_}")
    print(f"stage                : {clf.stage_}")
    print("kernel weights       :")
    for k, w in zip(kernels, clf.kernel_weights_):
        print(f"  {w:6.3f}  {kernel_label(k)}")
    return 0
