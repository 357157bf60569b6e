"""``onlinemkl evaluate``: prequential evaluation with river metrics, and the learning-curve plot."""

from __future__ import annotations

import os
import signal
import sys
import time

from ._errors import CommandError
from ._loop import Examples, _progress, _SignalGuard, _Stopped, learn_checked, open_run, rejected, start_run
from ._model import _kernels_of, _model_from_args, _print_weights, _train_extra, describe, final_step, kernel_label, \
    model_task, save_model, show_notes
from ._source import _report_skips
from ._warmup import compile_note


METRICS = {
    "accuracy": "Accuracy", "balanced_accuracy": "BalancedAccuracy", "macro_f1": "MacroF1",
    "micro_f1": "MicroF1", "weighted_f1": "WeightedF1", "cohen_kappa": "CohenKappa", "mcc": "MCC",
    "log_loss": "CrossEntropy",
    "mae": "MAE", "rmse": "RMSE", "r2": "R2",
}
REGRESSION_METRICS = frozenset({"mae", "rmse", "r2"})
DEFAULT_METRICS = ("accuracy", "macro_f1")
DEFAULT_REGRESSION_METRICS = ("mae", "rmse", "r2")


def _is_regressor(learner) -> bool:
    from river import base

    return isinstance(learner, base.Regressor)


def _evaluate(args) -> int:
    from river import metrics as rm

    if args.every < 1:
        raise CommandError(f"--every {args.every}: must be at least 1")
    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401
        except ImportError:
            raise CommandError("--plot needs matplotlib: python -m pip install matplotlib") from None
    model, meta = _model_from_args(args, new=False)
    model, src, notes = open_run(args, model, meta)
    regression = _is_regressor(final_step(model))
    names = args.metric or list(DEFAULT_REGRESSION_METRICS if regression else DEFAULT_METRICS)
    wrong = [n for n in names if (n in REGRESSION_METRICS) != regression]
    if wrong:
        raise CommandError(f"--metric {wrong[0]}: not a {'regression' if regression else 'classification'} "
                           f"metric; this model is a {'regressor' if regression else 'classifier'} (choose from "
                           f"{', '.join(n for n in sorted(METRICS) if (n in REGRESSION_METRICS) == regression)})")
    metrics = {name: getattr(rm, METRICS[name])() for name in names}
    need_proba = any(not getattr(m, "requires_labels", True) for m in metrics.values())
    sequence = model_task(model) == "sequence"  # scored per token: each of a sequence's labels is one prediction
    if sequence and need_proba:
        raise CommandError("--metric log_loss scores probabilities; the sequence learner predicts labels: choose "
                           "another metric")
    show_notes(notes, "evaluate")
    learner, t_compile = start_run(model, args, src)
    curve = []  # (n, {metric: value}, kernel weights)
    n = 0
    n_tokens = 0
    n_rejected = 0
    bar = _progress(args)
    t0 = time.perf_counter()
    status = 0
    with _SignalGuard() as guard:
        examples = Examples(src, guard, lambda: args.limit is None or n < args.limit)
        try:
            for x, y in examples:
                try:
                    y_pred = model.predict_one(x)
                    proba = model.predict_proba_one(x) if need_proba else None
                    learn_checked(model, x, y)
                except (TypeError, ValueError) as exc:
                    guard.busy = False
                    n_rejected += 1
                    rejected(args, src, exc, "evaluate")
                    guard.check()
                    continue
                # river's convention (evaluate.progressive_val_score): a model that cannot
                # predict yet (no label seen) is not scored on that example.
                if sequence:
                    n_tokens += len(y)
                    for yt, pt in zip(y, y_pred):
                        if pt is not None:
                            for m in metrics.values():
                                m.update(yt, pt)
                elif y_pred is not None:
                    for m in metrics.values():
                        m.update(y, y_pred if getattr(m, "requires_labels", True) else proba)
                n += 1
                guard.busy = False
                bar.update(1)
                if n % args.every == 0:
                    w = getattr(learner, "kernel_weights_", None)
                    curve.append((n, {k: m.get() for k, m in metrics.items()}, None if w is None else list(w)))
                    bar.set_postfix({names[0]: f"{metrics[names[0]].get():.4f}"}, refresh=False)
                guard.check()
        except _Stopped as stop:
            guard.busy = True
            status = 128 + stop.signum
            print(f"onlinemkl evaluate: {signal.Signals(stop.signum).name}: stopped after {n} examples",
                  file=sys.stderr)
    bar.close()
    elapsed = time.perf_counter() - t0
    if n and (not curve or curve[-1][0] != n):
        w = getattr(learner, "kernel_weights_", None)
        curve.append((n, {k: m.get() for k, m in metrics.items()}, None if w is None else list(w)))
    rows = [(name, f"{m.get():.4f}") for name, m in metrics.items()]
    rows += [("sequences", str(n)), ("tokens", str(n_tokens))] if sequence else [("examples", str(n))]
    rows += [("seconds", f"{elapsed:.2f}"),
             ("examples/s", f"{n / elapsed if elapsed > 0 else 0:,.0f}")]
    note = compile_note(t_compile)
    if note:
        rows.append(("compile seconds", note))
    if hasattr(learner, "n_support_"):
        rows.append(("stored examples", str(learner.n_support_)))
    print(f"prequential evaluation (test-then-train) of {describe(model)} on {src.name}"
          + (" (metrics per token)" if sequence else ""))
    for k, v in rows:
        print(f"{k:<17}: {v}")
    _print_weights(learner)
    _report_skips(src, n_rejected, "evaluate")
    if args.plot:
        short = _short_curve(len(curve), n, args.every)
        if short:
            print(f"onlinemkl evaluate: warning: --plot: {short}", file=sys.stderr)
        if curve:
            _plot(curve, learner, args.plot, describe(model), src.name)
            print(f"plot             : {args.plot}" + (" (one point, no curve)" if len(curve) < 2 else ""))
        else:
            print("plot             : not written (no example evaluated)")
    if args.save:
        save_model(model, args.save, _train_extra(src, n, status == 0))
        print(f"saved            : {args.save}")
    return status


def _short_curve(points, n, every):
    """Why the learning curve is not a curve (fewer than 2 points), or None.

    >>> print(_short_curve(1, 40, 100))
    only 40 examples, so the curve has 1 point (one every --every 100 examples, and the last);
    pass a smaller --every, e.g. --every 4, for a curve
    """
    if points >= 2:
        return None
    if n == 0:
        return "no example was evaluated: nothing to plot, no image written"
    fix = f"pass a smaller --every, e.g. --every {max(1, n // 10)}, for a curve" if n > 1 else \
        "a curve needs at least 2 examples"
    return (f"only {n} example{'s' if n != 1 else ''}, so the curve has 1 point (one every --every {every} "
            f"examples, and the last); {fix}")


def _plot(curve, learner, path, title, source):
    import matplotlib.pyplot as plt

    has_w = bool(curve) and curve[-1][2] is not None
    fig, axes = plt.subplots(2 if has_w else 1, 1, figsize=(9, 7 if has_w else 4), sharex=True, squeeze=False)
    xs = [c[0] for c in curve]
    marker = "o" if len(curve) <= 20 else None  # a single point (or a few) is visible
    ax = axes[0, 0]
    for name in (curve[0][1] if curve else {}):
        ax.plot(xs, [c[1][name] for c in curve], label=name, marker=marker)
    ax.set_ylabel("prequential metric")
    ax.set_title(f"{title} on {os.path.basename(source)}")
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    if has_w:
        ax = axes[1, 0]
        kernels = _kernels_of(learner)
        W = [c[2] for c in curve]
        for j in range(len(W[0])):
            label = kernel_label(kernels[j]) if kernels is not None and j < len(kernels) else f"kernel {j}"
            ax.plot(xs, [w[j] for w in W], label=label, marker=marker)
        ax.set_ylabel("kernel weight")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    axes[-1, 0].set_xlabel("examples")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    except OSError as exc:
        raise CommandError(f"cannot write the plot {path!r}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
