"""Scale-out with Ray: what do 2 workers, and a grid search on Ray, buy over one process?

The question: does ``onlinemkl.distributed.fit_ray`` (2 Ray workers, dynamic averaging) learn a
stream faster than one learner in one process, at what accuracy and network cost, and does
``tune_ray`` run a grid faster than ``tune_local``?  Compared against one learner (and
``tune_local``) in this process on the same examples.  How to read the report: ``speed-up`` is
the one-process seconds over the row's (2x is the ceiling on 2 free cores; the calibration line
says what the machine offered), beside the prequential and held-out accuracy and the models and
megabytes sent; the grid table likewise; the ``--cold`` section (when measured) gives the first
``fit_ray`` on an empty compile cache over one process that compiles first (target <= 1.3x).

1. A stream of 10^5 examples from river's RandomRBF generator (3 classes, 10 features),
   generated once in this process.  One ProximalMKLClassifier(budget=300) learns it
   prequentially (test-then-train) in this process; then ``fit_ray`` with 2 workers (each
   learning every other example, shipped to its actor) under dynamic averaging for several
   ``delta`` (0 = periodic averaging, inf = none), checks every ``period`` examples per worker.
   Reported: wall time (shipping the shards, learning, merges; the first call also starts the
   actors, later ones reuse them), prequential
   accuracy (each example predicted by its worker's model before learning it), accuracy of the
   final model on the next 5,000 examples, models sent and bytes.  ``ray.init`` is timed apart.
2. A grid of 8 candidates (lam x eta0 x budget) through ``tune_ray`` (twice: the first call starts
   Ray's worker processes) against ``tune_local`` (the same candidates one after another in this
   process) on 2*10^4 examples.

The machine has 2 cores shared with other jobs: the load average at the start and the end is
in the report.  ``--quick``: 2*10^4 examples, a grid on 5,000.

``--cold``: the first ``fit_ray`` on an empty compile cache against one process that compiles
first and then learns the same rows.  Each run is a fresh child process with its own fresh,
empty ``NUMBA_CACHE_DIR``; the two alternate back to back, ``--repeat`` times (default 2), and
each pair gives a ratio (the machine is shared, so ratios, not seconds).  ``one process``: the
learner learning 4,000 examples prequentially, each entry point compiled in the foreground at
its first call (no background compilation).  ``fit_ray cold``:
``fit_ray(ProximalMKLClassifier(budget=300), two shards of 2,000, num_workers=2)``, timed from
the call to its return (``ray.init`` apart, reported beside); the workers' compile counts (entry
points compiled, not loaded from the cache) are reported too.
The result replaces the ``cold`` entry of ``results/distributed.json`` and the matching section
of ``results/distributed.md`` (a full run keeps the last one).

Run time on a shared 2-core machine: about 10 minutes; ``--quick`` about 3; ``--cold`` about 5.

Usage::

    python benchmarks/bench_distributed.py [--quick]   # -> benchmarks/results/distributed.{json,md} (.quick.*)
    python benchmarks/bench_distributed.py --cold [--repeat 2]   # the cold section of distributed.*
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, machine, markdown_table, report_paths, write_report  # noqa: E402

HERE = Path(__file__).resolve().parents[1]

#: The child of ``--cold``: ``single`` (compile, then learn) or ``ray`` (the first fit_ray).
COLD_CHILD = r'''
import itertools, json, sys, time
what, n, budget = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
from river import metrics
from river.datasets import synth
from onlinemkl.river import ProximalMKLClassifier
data = list(itertools.islice(synth.RandomRBF(seed_model=7, seed_sample=7, n_classes=3, n_features=10), n))
learner = ProximalMKLClassifier(budget=budget)
out = {}
if what == "single":
    from onlinemkl._compile import compile_stats
    from onlinemkl._lazy import blocking
    acc = metrics.Accuracy()
    t0 = time.perf_counter()
    with blocking():  # each entry point compiles in the foreground at its first call
        for i, (x, y) in enumerate(data):
            acc.update(y, learner.predict_one(x))
            learner.learn_one(x, y)
            if i == 0:
                out["compile_seconds"] = time.perf_counter() - t0
    out["seconds"] = time.perf_counter() - t0
    out["accuracy"] = acc.get()
    out["compiled"] = compile_stats()["compiled"]
else:
    import inspect
    from onlinemkl.distributed import fit_ray
    from onlinemkl.distributed.ray import _POOL, ray_init, release_workers
    def compiled(host=None):  # a process's entry points compiled rather than loaded (also in an actor)
        from onlinemkl._compile import compile_stats
        return compile_stats()["compiled"]
    # progress=False where fit_ray has it (a checkout from before it did: --before)
    kw = {"progress": False} if "progress" in inspect.signature(fit_ray).parameters else {}
    t0 = time.perf_counter()
    ray = ray_init(num_cpus=2)
    out["ray_init_seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    model, log = fit_ray(learner, [data[0::2], data[1::2]], num_workers=2, metric=metrics.Accuracy(),
                         keep_workers=True, **kw)
    out["seconds"] = time.perf_counter() - t0
    out["accuracy"] = log.metric
    out["compiled"] = compiled()
    out["workers_compiled"] = ray.get([h.__ray_call__.remote(compiled) for h in _POOL["hosts"]])
    release_workers()
    ray.shutdown()
print("RESULT " + json.dumps(out))
'''


def cold_child(what, n, budget, checkout=HERE):
    """One fresh child of ``checkout`` on a fresh empty cache: its RESULT dict, with its wall time to exit."""
    with tempfile.TemporaryDirectory(prefix="omkl-cold-") as cache:
        env = dict(os.environ, PYTHONPATH=str(checkout), NUMBA_CACHE_DIR=cache)
        env.pop("ONLINEMKL_NO_CACHE", None)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", COLD_CHILD, what, str(n), str(budget)], env=env,
                              cwd=tempfile.gettempdir(), capture_output=True, text=True)
        wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"cold child {what} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return dict(json.loads(lines[-1][len("RESULT "):]), wall_to_exit=wall)


COLD_TITLE = "## First fit_ray on an empty compile cache"


def cold_markdown(cold) -> str:
    """The ``--cold`` section of ``distributed.md``."""
    rows = [{"pair": r["pair"], "run": r["run"], "seconds": r["seconds"], "ratio": r.get("ratio"),
             "first example s": r.get("compile_seconds"), "ray.init s": r.get("ray_init_seconds"),
             "compiled here": r["compiled"], "compiled by workers": r.get("workers_compiled"),
             "prequential acc": r["accuracy"]} for r in cold["rows"]]
    when = f"Measured {cold['date']}.  " if cold.get("date") else ""
    return (f"\n{COLD_TITLE}\n\n{when}{cold['notes']}\n\n" + markdown_table(rows) + "\n")


def attach_cold(cold) -> None:
    """Put ``cold`` into ``results/distributed.json`` and its section into ``distributed.md``,
    replacing the previous ones (the rest of both files stays)."""
    jpath, mpath = RESULTS / "distributed.json", RESULTS / "distributed.md"
    payload = json.loads(jpath.read_text()) if jpath.exists() else {"benchmark": "distributed", "rows": []}
    payload["cold"] = cold
    jpath.write_text(json.dumps(payload, indent=2, default=float) + "\n")
    md = mpath.read_text() if mpath.exists() else "# Distributed learning\n"
    if COLD_TITLE in md:
        head, _, rest = md.partition("\n" + COLD_TITLE)
        nxt = rest.find("\n## ")
        md = head + (rest[nxt:] if nxt >= 0 else "")
    mpath.write_text(md.rstrip("\n") + "\n" + cold_markdown(cold))
    print(cold_markdown(cold))
    print(f"wrote {jpath} and {mpath}")


def main_cold(repeat, before=None, n=4000, budget=300):
    load_start = os.getloadavg()
    rows = []
    for pair in range(1, repeat + 1):
        single = cold_child("single", n, budget)
        first = cold_child("ray", n, budget)
        ratio = first["seconds"] / single["seconds"]
        rows.append(dict(single, pair=pair, run="one process: compile, then learn"))
        rows.append(dict(first, pair=pair, run="fit_ray, 2 workers, first call", ratio=ratio))
        print(f"pair {pair}: one process {single['seconds']:.1f} s, first fit_ray {first['seconds']:.1f} s "
              f"({ratio:.2f}x), workers compiled {first['workers_compiled']}", flush=True)
        if before is not None:
            old = cold_child("ray", n, budget, before)
            rows.append(dict(old, pair=pair, run=f"fit_ray, first call, checkout {before}",
                             ratio=old["seconds"] / single["seconds"], before=True))
            print(f"pair {pair}: first fit_ray of {before} {old['seconds']:.1f} s "
                  f"({old['seconds'] / single['seconds']:.2f}x), workers compiled {old['workers_compiled']}",
                  flush=True)
    load_end = os.getloadavg()
    ratios = [r["ratio"] for r in rows if "ratio" in r and not r.get("before")]
    notes = (f"ProximalMKLClassifier(budget={budget}) on the first {n} examples of river RandomRBF(seed_model=7, "
             "seed_sample=7, n_classes=3, n_features=10); every run a fresh process with a fresh empty "
             "NUMBA_CACHE_DIR, the two alternating back to back.  'one process': the examples learnt "
             "prequentially, each entry point compiled in the foreground at its first call ('first example s': "
             "the first predict and learn, most of the compilation).  'fit_ray': the call "
             f"with two shards of {n // 2} (every other example), num_workers=2, default sync (periodic averaging "
             "every 100 examples per worker), timed from the call to its return; ray.init apart.  'ratio': fit_ray "
             f"seconds over the one process's of the same pair: {', '.join(f'{r:.2f}x' for r in ratios)} (target "
             "at most 1.3x).  'compiled': entry points this process compiled rather than loaded from the cache; "
             "'by workers': each Ray actor's.  Load average (1, 5, 15 min) at the start "
             f"{tuple(round(v, 1) for v in load_start)}, at the end {tuple(round(v, 1) for v in load_end)} on "
             f"{os.cpu_count()} cores: other jobs shared them.  Command: python benchmarks/bench_distributed.py "
             f"--cold --repeat {repeat}" + (f" --before {before}" if before else "") + "." +
             ("  The 'checkout' rows: the same first fit_ray from that checkout (the code before the "
              "workers loaded what the caller compiled), after the pair's two runs." if before else ""))
    attach_cold({"rows": rows, "ratios": ratios, "notes": notes, "load_start": load_start, "load_end": load_end,
                 "date": machine()["date"]})


def stream(n, offset=0):
    from river.datasets import synth

    gen = synth.RandomRBF(seed_model=7, seed_sample=7, n_classes=3, n_features=10)
    return list(itertools.islice(gen, offset, offset + n))


def prequential(model, data):
    from river import metrics

    acc = metrics.Accuracy()
    for x, y in data:
        acc.update(y, model.predict_one(x))
        model.learn_one(x, y)
    return acc.get()


def held_out(model, data):
    return sum(model.predict_one(x) == y for x, y in data) / len(data)


def spin(n):
    """Pure-Python work (the machine's parallelism, without onlinemkl in it)."""
    acc = 0
    for i in range(n):
        acc += i % 7
    return acc


def calibration(ray, n=10_000_000):
    """Seconds of two ``spin(n)`` one after another, and as two Ray tasks at once."""
    t0 = time.perf_counter()
    spin(n), spin(n)
    seq = time.perf_counter() - t0
    task = ray.remote(num_cpus=1)(spin)
    ray.get([task.remote(1000), task.remote(1000)])  # the task processes up
    t0 = time.perf_counter()
    ray.get([task.remote(n), task.remote(n)])
    return seq, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2*10^4 examples, a grid on 5,000")
    ap.add_argument("--cold", action="store_true",
                    help="only the first fit_ray on an empty compile cache against one process (see above)")
    ap.add_argument("--repeat", type=int, default=2, help="--cold: pairs of runs (default 2)")
    ap.add_argument("--before", type=Path, help="--cold: also the first fit_ray of this checkout in every pair")
    args = ap.parse_args(argv)
    if args.cold:
        return main_cold(args.repeat, args.before)
    from river import metrics

    from onlinemkl.distributed import DynamicAveraging, fit_ray
    from onlinemkl.distributed.ray import ray_init, tune_local, tune_ray
    from onlinemkl.river import ProximalMKLClassifier

    n = 20_000 if args.quick else 100_000
    n_grid = 5_000 if args.quick else 20_000
    period = 1000
    budget = 300
    load_start = os.getloadavg()
    data = stream(n + 5000)
    train, test = data[:n], data[n:]
    learner = ProximalMKLClassifier(budget=budget)
    prequential(learner.clone(), train[:200])  # compile (or load the cache) before the clock

    rows = []
    t0 = time.perf_counter()
    single = learner.clone()
    acc = prequential(single, train)
    t_single = time.perf_counter() - t0
    rows.append({"run": "one learner, this process", "workers": 1, "delta": None, "seconds": t_single,
                 "speed-up": 1.0, "prequential acc": acc, "held-out acc": held_out(single, test),
                 "checks": 0, "violations": 0, "syncs": 0, "models sent": 0, "MB sent": 0.0})

    t0 = time.perf_counter()
    ray = ray_init(num_cpus=2)
    t_init = time.perf_counter() - t0
    cal_seq, cal_par = calibration(ray)
    shards = [train[0::2], train[1::2]]
    for first, delta in ((True, 0.0), (False, 0.0), (False, 1.0), (False, 3.0), (False, math.inf)):
        t0 = time.perf_counter()
        model, log = fit_ray(learner, shards, sync=DynamicAveraging(delta, period), metric=metrics.Accuracy(),
                             keep_workers=True)
        secs = time.perf_counter() - t0
        kind = " (periodic)" if delta == 0 else " (no sync)" if math.isinf(delta) else ""
        rows.append({"run": ("fit_ray, actors start" if first else "fit_ray, actors kept") + kind,
                     "workers": 2, "delta": "inf" if math.isinf(delta) else delta, "seconds": secs,
                     "speed-up": t_single / secs, "prequential acc": log.metric,
                     "held-out acc": held_out(model, test), "checks": log.checks, "violations": log.violations,
                     "syncs": log.syncs, "models sent": log.messages, "MB sent": log.bytes / 1e6})

    grid = {"lam": [1e-3, 1e-4], "eta0": [0.5, 1.0], "budget": [100, 300]}
    gdata = train[:n_grid]
    t0 = time.perf_counter()
    seq = tune_local(learner, grid, gdata, metric=metrics.Accuracy())
    t_seq = time.perf_counter() - t0
    t0 = time.perf_counter()
    par = tune_ray(learner, grid, gdata, metric=metrics.Accuracy())  # releases the kept actors first
    t_par = time.perf_counter() - t0
    t0 = time.perf_counter()
    par2 = tune_ray(learner, grid, gdata, metric=metrics.Accuracy())  # Ray reuses the task processes
    t_par2 = time.perf_counter() - t0
    same = [r["Accuracy"] for r in seq.table] == [r["Accuracy"] for r in par.table] == [
        r["Accuracy"] for r in par2.table]
    grid_rows = [{"run": "tune_local (one after another)", "candidates": 8, "examples": n_grid, "seconds": t_seq,
                  "speed-up": 1.0, "best": str(seq.best_params), "best acc": seq.best_score},
                 {"run": "tune_ray (2 CPUs), first call", "candidates": 8, "examples": n_grid, "seconds": t_par,
                  "speed-up": t_seq / t_par, "best": str(par.best_params), "best acc": par.best_score},
                 {"run": "tune_ray (2 CPUs), second call", "candidates": 8, "examples": n_grid, "seconds": t_par2,
                  "speed-up": t_seq / t_par2, "best": str(par2.best_params), "best acc": par2.best_score}]
    ray.shutdown()
    load_end = os.getloadavg()

    notes = (f"Stream: river RandomRBF(seed_model=7, seed_sample=7, n_classes=3, n_features=10), {n} examples "
             f"for training, the next 5000 held out; ProximalMKLClassifier(budget={budget}); fit_ray checks "
             f"every {period} examples per worker.  ray.init(num_cpus=2): {t_init:.1f} s (not in the rows).  "
             f"Load average (1, 5, 15 min) at the start {tuple(round(v, 1) for v in load_start)}, at the end "
             f"{tuple(round(v, 1) for v in load_end)} on {os.cpu_count()} cores: other jobs shared them, so "
             "wall times and speed-ups are noisy.  What the machine offered: two runs of a pure-Python loop "
             f"took {cal_seq:.2f} s one after another and {cal_par:.2f} s as two Ray tasks at once "
             f"({cal_seq / cal_par:.2f}x, 2x on two free cores).\n\n"
             "fit_ray's seconds include shipping the shards, the synchronisations and the final merge; the "
             "first call also starts the 2 actors (a Python process each, importing onlinemkl and loading the "
             "compiled code from the cache); later calls reuse them (keep_workers=True).  A tune_ray call's "
             "first tasks start Ray's worker processes likewise; a second call reuses them.")
    previous = report_paths("distributed", args.quick)[0]
    cold = json.loads(previous.read_text()).get("cold") if previous.exists() else None
    _, md = write_report("distributed", rows, quick=args.quick, title="Distributed learning: 2 Ray workers vs one learner; a grid on Ray",
                         notes=notes, extra={"ray_init_seconds": t_init, "calibration_seconds": [cal_seq, cal_par], "grid": grid_rows, "load_start": load_start,
                                             "load_end": load_end, "grid_tables_equal": same})
    section = (f"\n## Grid of 8 (lam x eta0 x budget), prequential on the first {n_grid} examples\n\n"
               f"The same table both ways: {same}.\n\n" + markdown_table(grid_rows))
    md.write_text(md.read_text() + section)
    print(section)
    if cold is not None and not args.quick:
        attach_cold(cold)  # the last --cold measurement stays in the report


if __name__ == "__main__":
    main()
