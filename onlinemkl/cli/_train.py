"""``onlinemkl train``: learn from a stream and save, with checkpoints and ``--resume``."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from ._distributed import train_workers
from ._errors import CommandError
from ._loop import Examples, _progress, _SignalGuard, _Stopped, learn_checked, open_run, rejected, start_run
from ._model import (TRAIN_KEY, _model_from_args, _print_weights, _train_extra, build_model, describe, final_step,
                     load_model, save_model, show_notes)
from ._source import _report_skips, rereadable
from ._warmup import compile_note, warmup_name


def _same_params(a, b) -> str | None:
    """None if two models have the same steps and parameters, else what differs."""
    from ..persist import _init_params

    sa = list(a.steps.values()) if hasattr(a, "steps") else [a]
    sb = list(b.steps.values()) if hasattr(b, "steps") else [b]
    if [type(s) for s in sa] != [type(s) for s in sb]:
        return f"the checkpoint is a {describe(b)}, the options build a {describe(a)}"
    for s1, s2 in zip(sa, sb):
        p1, p2 = _init_params(s1), _init_params(s2)
        for k in p1:
            if p1[k] != p2.get(k):
                return f"{type(s1).__name__} parameter {k}: options give {p1[k]!r}, the checkpoint has {p2.get(k)!r}"
    return None


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _train(args) -> int:
    if args.workers != 1:
        return train_workers(args)
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise CommandError(f"--checkpoint-every {args.checkpoint_every}: must be at least 1")
    if (args.checkpoint_every or args.resume) and not args.save:
        raise CommandError("--checkpoint-every and --resume need --save PATH (the checkpoint file)")
    if args.limit is not None and args.limit < 0:
        raise CommandError(f"--limit {args.limit}: must be >= 0")
    skip = 0
    meta = None
    resume = args.resume and Path(args.save).exists()
    if resume and args.model and _same_file(args.model, args.save):
        # --model M --save M --resume: M is a checkpoint of this run if it names this source,
        # else the model this run starts from.
        _, peek = load_model(args.save)
        resume = ((peek.get("extra") or {}).get(TRAIN_KEY) or {}).get("source") == args.source
    if resume:
        model, meta = load_model(args.save)
        info = (meta.get("extra") or {}).get(TRAIN_KEY) or {}
        if not args.model:
            if args.param or args.kernel or args.learner or args.no_scale:
                diff = _same_params(build_model(args, args.learner or warmup_name(final_step(model))), model)
                if diff:
                    raise CommandError(f"--resume: {args.save} was trained with other parameters ({diff}); "
                                       "use the same options, or another --save path")
        consumed = int(info.get("examples_consumed", 0))
        if info.get("source") not in (None, args.source):
            raise CommandError(f"--resume: {args.save} is a checkpoint of training on {info.get('source')}, not "
                               f"{args.source}; re-run with that source to finish it, or train the saved model "
                               f"on {args.source} with --model {args.save} (without --resume)")
        if rereadable(args.source):
            skip = consumed
            if info.get("complete") and info.get("source") == args.source:
                print(f"{args.save} is complete ({consumed} examples of {args.source}); nothing to resume")
                return 0
        print(f"resuming from {args.save}: {consumed} examples already learnt"
              + (f", skipping them in {args.source}" if skip else " (the source cannot be re-read: continuing)"),
              file=sys.stderr)
    else:
        model, meta = _model_from_args(args, new=False)
    n_done = 0  # examples of the source processed (learnt, rejected, or skipped as already learnt)
    n_learnt = 0
    n_rejected = 0
    since_ckpt = 0
    status = 0
    src = bar = examples = None
    t_compile = 0.0
    t0 = time.perf_counter()
    with _SignalGuard() as guard:
        try:
            # Under the guard: a signal while the source is sampled or the learner compiles
            # stops the run like one during learning (a checkpoint of what exists, 128 + n); during
            # the compilation, once it ends.
            model, src, notes = open_run(args, model, meta)
            show_notes(notes, "train")
            with guard.deferred():
                learner, t_compile = start_run(model, args, src)
            bar = _progress(args)
            t0 = time.perf_counter()
            examples = Examples(src, guard, lambda: args.limit is None or n_learnt < args.limit)
            for x, y in examples:
                if n_done < skip:
                    n_done += 1
                    guard.busy = False
                    guard.check()
                    continue
                try:
                    learn_checked(model, x, y)
                except (TypeError, ValueError) as exc:
                    rejected(args, src, exc, "train")
                    n_done += 1
                    n_rejected += 1
                    guard.busy = False
                    guard.check()
                    continue
                n_done += 1
                n_learnt += 1
                since_ckpt += 1
                if args.checkpoint_every and since_ckpt >= args.checkpoint_every:
                    save_model(model, args.save, _train_extra(src, n_done, False))
                    since_ckpt = 0
                guard.busy = False
                bar.update(1)
                guard.check()
            finished = True
        except _Stopped as stop:
            guard.busy = True  # a second signal must not interrupt the checkpoint below
            finished = False
            status = 128 + stop.signum
            if bar is not None:
                bar.close()
            name = signal.Signals(stop.signum).name
            if src is None:
                print(f"onlinemkl train: {name}: stopped before learning started (nothing written)",
                      file=sys.stderr)
                return status
            if args.save:
                save_model(model, args.save, _train_extra(src, n_done, False))
                print(f"onlinemkl train: {name}: stopped after {n_done} examples; checkpoint written to "
                      f"{args.save} (re-run with --resume to continue)", file=sys.stderr)
            else:
                print(f"onlinemkl train: {name}: stopped after {n_done} examples (no --save: nothing written)",
                      file=sys.stderr)
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - t0
    learner = final_step(model)
    exhausted = examples is not None and examples.exhausted
    if finished and args.save:
        save_model(model, args.save, _train_extra(src, n_done, exhausted))
    if exhausted and n_done < skip:
        print(f"onlinemkl train: warning: {args.source} has only {n_done} examples, but the checkpoint had "
              f"consumed {skip}: has the file changed?", file=sys.stderr)
    print(f"model            : {describe(model)}")
    print(f"examples learnt  : {n_learnt}" + (f" (after skipping {min(skip, n_done)} already learnt)" if skip else ""))
    print(f"seconds          : {elapsed:.2f} ({n_learnt / elapsed if elapsed > 0 else 0:,.0f} examples/s)")
    note = compile_note(t_compile)
    if note:
        print(f"compile seconds  : {note}")
    if hasattr(learner, "n_support_"):
        print(f"stored examples  : {learner.n_support_}")
    _print_weights(learner)
    _report_skips(src, n_rejected, "train")
    if args.save and finished:
        print(f"saved            : {args.save}")
    elif not args.save:
        print("saved            : no (pass --save PATH to keep the model)")
    return status
