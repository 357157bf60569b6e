"""``onlinemkl train --workers N`` and ``onlinemkl tune --grid KEY=V1,V2``: the command line of
:mod:`onlinemkl.distributed` (Ray when installed).

``train --workers N`` reads SOURCE in this process and deals it round robin to ``N`` Ray
workers, which learn by dynamic averaging (``--delta``; 0: average every ``--sync-every``
examples per worker), and saves the merged model.  ``tune`` reads SOURCE once (``--limit``)
and runs every candidate of the grid prequentially over it, in parallel on Ray (one after
another without Ray), then prints the table and saves the best model.
"""

from __future__ import annotations

import sys
import time

from ._errors import CommandError
from ._evaluate import METRICS, REGRESSION_METRICS, _is_regressor
from ._learners import parse_value
from ._loop import open_run
from ._model import _model_from_args, _train_extra, describe, model_task, save_model, show_notes
from ._warmup import progress_flag

__all__ = ["add_workers_options", "add_tune_command", "train_workers", "parse_grid"]


def add_workers_options(train) -> None:
    """The ``train`` options of distributed learning."""
    g = train.add_argument_group("distributed learning (needs Ray: pip install 'onlinemkl[ray]')")
    g.add_argument("--workers", metavar="N", type=int, default=1,
                   help="learn with N Ray workers, SOURCE dealt round robin, models merged by dynamic averaging "
                        "(default: 1, this process only)")
    g.add_argument("--delta", metavar="D", type=float, default=0.0,
                   help="--workers: synchronise when a worker's model is further than D (squared RKHS "
                        "distance) from the last average; 0 averages at every check, inf never (default: 0)")
    g.add_argument("--sync-every", metavar="N", type=int, default=1000,
                   help="--workers: examples per worker between two checks of --delta (default: 1000)")


def _ray_or_error(option):
    try:
        import ray  # noqa: F401
    except ImportError:
        raise CommandError(f"{option} needs Ray: python -m pip install 'onlinemkl[ray]' (or run without "
                           f"{option})") from None


def train_workers(args) -> int:
    """``train --workers N`` (N > 1)."""
    from ..distributed import DynamicAveraging, fit_ray

    if args.workers < 1:
        raise CommandError(f"--workers {args.workers}: must be at least 1")
    for option, given in (("--checkpoint-every", args.checkpoint_every), ("--resume", args.resume),
                          ("--limit", args.limit is not None)):
        if given:
            raise CommandError(f"{option} cannot be combined with --workers (checkpoints and limits are "
                               "per process); drop one of them")
    try:
        sync = DynamicAveraging(args.delta, args.sync_every)
    except ValueError as exc:
        raise CommandError(f"--delta/--sync-every: {exc}") from None
    _ray_or_error("--workers")
    model, meta = _model_from_args(args, new=False)
    model, src, notes = open_run(args, model, meta)
    if model_task(model) == "sequence":
        raise CommandError("--workers: the sequence learner learns in one process; drop --workers")
    show_notes(notes, "train")
    t0 = time.perf_counter()
    try:
        model, log = fit_ray(model, [src], num_workers=args.workers, sync=sync, progress=progress_flag(args))
    except TypeError as exc:
        raise CommandError(f"--workers: {exc}") from None
    elapsed = time.perf_counter() - t0
    if args.save:
        save_model(model, args.save, _train_extra(src, log.examples, True))
    print(f"model            : {describe(model)}")
    print(f"examples learnt  : {log.examples} by {log.workers} workers")
    print(f"seconds          : {elapsed:.2f} ({log.examples / elapsed if elapsed > 0 else 0:,.0f} examples/s, "
          "Ray's start included)")
    print(f"synchronisations : {log.syncs} ({log.messages} models sent, {log.bytes / 1e6:.2f} MB; final merge "
          f"{log.final_bytes / 1e6:.2f} MB)")
    print(f"saved            : {args.save if args.save else 'no (pass --save PATH to keep the model)'}")
    return 0


def parse_grid(items) -> dict:
    """``["lam=1e-3,1e-4", "eta0=0.5,1"]`` -> ``{"lam": [0.001, 0.0001], "eta0": [0.5, 1]}``."""
    grid = {}
    for item in items or ():
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise CommandError(f"--grid {item!r}: expected KEY=V1,V2,... e.g. --grid lam=1e-3,1e-4")
        if key == "kernels":
            raise CommandError("--grid kernels=...: kernels cannot be gridded; use --kernel")
        if key in grid:
            raise CommandError(f"--grid {key} is given twice; list every value once: --grid {key}=V1,V2")
        grid[key] = [parse_value(v) for v in values.split(",")]
    if not grid:
        raise CommandError("tune needs at least one --grid KEY=V1,V2,...")
    return grid


def _tune(args) -> int:
    from river import metrics as rm

    from ..distributed.models import final_learner
    from ..distributed.ray import tune_local, tune_ray

    grid = parse_grid(args.grid)
    if args.limit is not None and args.limit < 1:
        raise CommandError(f"--limit {args.limit}: must be at least 1")
    model, meta = _model_from_args(args, new=False)
    model, src, notes = open_run(args, model, meta)
    if model_task(model) == "sequence":
        raise CommandError("tune ranks classifiers and regressors; the sequence learner is not supported: "
                           "run onlinemkl evaluate once per candidate")
    show_notes(notes, "tune")
    regression = _is_regressor(final_learner(model))
    name = args.metric or ("mae" if regression else "accuracy")
    if name == "log_loss":
        raise CommandError("--metric log_loss scores probabilities; tune ranks predictions: choose another metric")
    if (name in REGRESSION_METRICS) != regression:
        raise CommandError(f"--metric {name}: not a {'regression' if regression else 'classification'} metric")
    metric = getattr(rm, METRICS[name])()
    stream = []
    for x, y in src:
        stream.append((x, y))
        if args.limit is not None and len(stream) >= args.limit:
            break
    t0 = time.perf_counter()
    try:
        import ray  # noqa: F401

        result = tune_ray(model, grid, stream, metric=metric, progress=progress_flag(args))
    except ImportError:
        print("onlinemkl tune: Ray is not installed: running the candidates one after another "
              "(pip install 'onlinemkl[ray]' to run them in parallel)", file=sys.stderr)
        result = tune_local(model, grid, stream, metric=metric)
    except (TypeError, ValueError) as exc:
        raise CommandError(f"--grid: {exc}") from None
    elapsed = time.perf_counter() - t0
    print(result.frame().to_string(index=False))
    print(f"best             : {result.best_params} ({name} {result.best_score:.4f})")
    print(f"seconds          : {elapsed:.2f} for {len(result.table)} candidates over {len(stream)} examples")
    if args.save:
        save_model(result.best_model, args.save)
        print(f"saved            : {args.save}")
    return 0


def add_tune_command(sub, command, add_source, add_model) -> None:
    """The ``tune`` sub-command (``command``, ``add_source``, ``add_model``: the parser's helpers)."""
    tune = command(
        sub, "tune", _tune, "a grid of learner parameters, each candidate prequential, in parallel on Ray",
        "Read SOURCE once (up to --limit examples), then run every candidate of the grid (the product of "
        "the --grid lists) prequentially over it: predict each example, score, learn. Candidates run in "
        "parallel on Ray's local cluster when Ray is installed (pip install 'onlinemkl[ray]'), else one "
        "after another. Prints the table, best first, and saves the best model with --save.",
        example="onlinemkl tune data.csv --target label --learner proximal --grid lam=1e-3,1e-4 --grid eta0=0.5,1 \\\n"
                "    --save best.omkl",
        learners=True)
    add_source(tune)
    add_model(tune, new_only=True)
    tune.add_argument("--grid", metavar="KEY=V1,V2", action="append", default=None,
                      help="a learner parameter and its values (repeatable; the grid is their product)")
    tune.add_argument("--metric", "-m", choices=sorted(METRICS), default=None,
                      help="the river metric that ranks the candidates (default: accuracy, or mae for regressors)")
    tune.add_argument("--limit", metavar="N", type=int, default=None,
                      help="read at most N examples (default: the whole source, held in memory)")
    tune.add_argument("--save", metavar="PATH", default=None, help="save the best model here (default: not saved)")
