"""Cold start, before against after: seconds from a new interpreter to a learner's first answer.

What a new user meets first is the compile time of a new process with an empty Numba cache, so
this benchmark times exactly that, end to end, for two checkouts in the same run: ``--a`` (before,
default ``/work/wt-base``, the old commit ad49ea8) and ``--b`` (after, default the checkout this
file is in).  Measuring both in one run on the same machine, interleaved row by row, makes the
ratio meaningful on a shared machine where absolute seconds drift with the load; the children's
CPU seconds (``getrusage(RUSAGE_CHILDREN)`` deltas) are reported beside the wall time for the same
reason.  ``*_exit_s`` is the time to the child's exit: since the background compilation
(``onlinemkl._lazy``) the first answer comes from Python while Numba compiles, and a process that
has answered finishes the compilation before it exits, so that the next run starts compiled.

Every measurement is a fresh child process with ``PYTHONPATH=<checkout>``, its working directory
outside both checkouts, and its own fresh empty ``NUMBA_CACHE_DIR`` (a temp dir); the parent never
imports onlinemkl.  The children use only public APIs that exist in both versions.  Rows:

* ``pipeline cold``  -- ``StandardScaler() | onlinemkl.river.OBSCUREClassifier()``: one
  ``learn_one``, then ``predict_one``; wall time from launching the interpreter to the child
  printing after that prediction (target <= 8 s);
* ``pipeline warm``  -- the same child again, on the cache the cold run wrote (target <= 2 s,
  the warm-demo target: a warm start should cost imports only);
* ``<learner> cold`` -- every other public learner's first use, a tiny learn + predict through
  its public API, empty cache (target <= 10 s);
* ``demo cold`` / ``demo warm`` -- ``python -m onlinemkl.cli demo --no-progress`` to its exit,
  with an empty cache and then again on the cache it wrote (targets <= 15 s and <= 2 s).

``--repeat N`` runs each row N times (each cold run with a new empty cache) and reports the
fastest wall time with its CPU time; every run's figures are in the JSON.  ``--quick`` keeps the
pipeline rows and one other learner.

``--stream`` measures a longer first run instead: 4,000 rows of river's ``RandomRBF`` through
``onlinemkl.river.ProximalMKLClassifier(budget=300)`` (predict, then learn, row by row) on an empty
cache, by default (``default``: compiled on first use) against compiling first
(``warmup``: ``onlinemkl.warmup(["proximal"], budget=True)``, then the same loop).  Per run: the
seconds from launch to the first prediction (an empty model's), to the first prediction of a
model that has learnt one row, and to the end; the two variants run back to back, ``--repeat``
times, on each checkout, and the report gives each default/warmup ratio of the same round.

Usage::

    python benchmarks/bench_coldstart.py [--a PATH] [--b PATH] [--quick] [--repeat N]
    python benchmarks/bench_coldstart.py --stream [--a PATH] [--b PATH] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_report  # noqa: E402

HERE = Path(__file__).resolve().parents[1]

CHILD = r'''
import sys
what = sys.argv[1]
import numpy as np
rng = np.random.default_rng(0)
X = rng.normal(size=(12, 3))
yc = np.array(["a", "b", "c"])[np.arange(12) % 3]
yr = X[:, 0] * X[:, 1] + X[:, 2]
rows = [{f"x{j}": float(v) for j, v in enumerate(r)} for r in X]
if what == "pipeline":
    from river import preprocessing
    import onlinemkl.river
    m = preprocessing.StandardScaler() | onlinemkl.river.OBSCUREClassifier()
    m.learn_one(rows[0], True)
    m.predict_one(rows[1])
elif what in ("river_proximal", "river_proximal_regressor"):
    import onlinemkl.river
    reg = what.endswith("regressor")
    m = (onlinemkl.river.ProximalMKLRegressor if reg else onlinemkl.river.ProximalMKLClassifier)(budget=6)
    for x, y in zip(rows, yr if reg else yc):
        m.learn_one(x, y.item())
    m.predict_one(rows[0])
elif what == "sequence":
    import onlinemkl
    m = onlinemkl.SequenceMKLLabeler(random_state=0)
    for s in range(0, 12, 4):
        m.learn_one(X[s:s + 4], [int(v > 0) for v in X[s:s + 4, 0]])
    m.predict_one(X[:4])
else:
    import onlinemkl
    m, y = {
        "sklearn_obscure": (lambda: onlinemkl.OBSCUREClassifier(random_state=0), yc),
        "sklearn_proximal": (lambda: onlinemkl.ProximalMKLClassifier(n_epochs=1, random_state=0), yc),
        "polymkl": (lambda: onlinemkl.PolyMKLRegressor(degree=2, n_iter=5, random_state=0), yr),
        "nonlinear": (lambda: onlinemkl.NonlinearKRRRegressor(degree=2, max_iter=2, random_state=0), yr),
    }[what]
    m().fit(X, y).predict(X)
import onlinemkl
print("DONE", onlinemkl.__file__, flush=True)
'''

STREAM_CHILD = r'''
import sys, time
variant, rows = sys.argv[1], int(sys.argv[2])
from river.datasets import synth
import onlinemkl
import onlinemkl.river
if variant == "warmup":
    onlinemkl.warmup(["proximal"], progress=False, budget=True)
model = onlinemkl.river.ProximalMKLClassifier(budget=300)
for i, (x, y) in enumerate(synth.RandomRBF(seed_model=42, seed_sample=42).take(rows)):
    model.predict_one(x)
    if i < 2:
        print(f"PREDICTED {i}", flush=True)
    model.learn_one(x, y)
print("DONE", onlinemkl.__file__, flush=True)
'''

#: Rows of RandomRBF in ``--stream``'s runs.
STREAM_ROWS = 4000

LEARNERS = ["river_proximal", "river_proximal_regressor", "sklearn_obscure", "sklearn_proximal",
            "sequence", "polymkl", "nonlinear"]
TARGETS = {"pipeline cold": 8.0, "pipeline warm": 2.0, "demo cold": 15.0, "demo warm": 2.0}


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_child(checkout: Path, cache: str, what: str) -> dict:
    """Launch one child; wall seconds to its DONE line (or exit, for the demo) and its CPU seconds."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ONLINEMKL_NO_CACHE")}
    env.update(PYTHONPATH=str(checkout), NUMBA_CACHE_DIR=cache)
    cmd = ([sys.executable, "-m", "onlinemkl.cli", "demo", "--no-progress"] if what == "demo"
           else [sys.executable, "-c", CHILD, what])
    with tempfile.TemporaryDirectory(prefix="coldstart_cwd_") as cwd, \
            tempfile.TemporaryFile("w+") as err:
        cpu0, t0 = child_cpu(), time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True)
        wall, out = None, []
        for line in proc.stdout:
            out.append(line)
            if line.startswith("DONE "):
                wall = time.perf_counter() - t0
        code = proc.wait()
        end = time.perf_counter() - t0
        cpu = child_cpu() - cpu0
        if code != 0:
            err.seek(0)
            raise RuntimeError(f"{what} in {checkout} exited {code}:\n{''.join(out)[-2000:]}{err.read()[-4000:]}")
    if what != "demo":
        loaded = out[-1].split(" ", 1)[1].strip() if out and out[-1].startswith("DONE ") else "?"
        if not Path(loaded).resolve().is_relative_to(checkout):  # the editable install must not win
            raise RuntimeError(f"{what}: imported onlinemkl from {loaded}, not from {checkout}")
    return {"wall_s": wall if wall is not None else end, "exit_s": end, "cpu_s": cpu}


def run_stream(checkout: Path, variant: str) -> dict:
    """One ``--stream`` child on a new empty cache: seconds from launch to its first two
    predictions and to its end, and its CPU seconds."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ONLINEMKL_NO_CACHE")}
    with tempfile.TemporaryDirectory(prefix="coldstart_nc_") as cache, \
            tempfile.TemporaryDirectory(prefix="coldstart_cwd_") as cwd, tempfile.TemporaryFile("w+") as err:
        env.update(PYTHONPATH=str(checkout), NUMBA_CACHE_DIR=cache)
        cpu0, t0 = child_cpu(), time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", STREAM_CHILD, variant, str(STREAM_ROWS)], env=env,
                                cwd=cwd, stdout=subprocess.PIPE, stderr=err, text=True)
        marks = {}
        for line in proc.stdout:
            if line.startswith(("PREDICTED", "DONE")):
                marks[" ".join(line.split()[:2]) if line.startswith("PREDICTED") else "DONE"] = time.perf_counter() - t0
        code = proc.wait()
        if code != 0:
            err.seek(0)
            raise RuntimeError(f"stream {variant} in {checkout} exited {code}:\n{err.read()[-4000:]}")
    return {"first_prediction_s": marks["PREDICTED 0"], "first_learnt_prediction_s": marks["PREDICTED 1"],
            "total_s": marks["DONE"], "cpu_s": child_cpu() - cpu0}


def main_stream(args, sides):
    """``--stream``: default against warmup-first, back to back, per checkout and round."""
    rows, runs = [], []
    t_start = time.perf_counter()
    for rnd in range(args.repeat):
        for side, checkout in sides.items():
            got = {}
            for variant in ("default", "warmup"):
                got[variant] = run_stream(checkout, variant)
                runs.append({"round": rnd, "side": side, "variant": variant, **got[variant]})
                print(f"round {rnd} {side} {variant:8s}: first prediction {got[variant]['first_prediction_s']:6.2f} s, "
                      f"after one row {got[variant]['first_learnt_prediction_s']:6.2f} s, "
                      f"total {got[variant]['total_s']:6.2f} s (cpu {got[variant]['cpu_s']:6.2f})", flush=True)
            rows.append({"round": rnd, "side": side,
                         **{f"{v}_{k}": got[v][k] for v in got for k in ("first_prediction_s", "first_learnt_prediction_s", "total_s")},
                         "default/warmup total": got["default"]["total_s"] / got["warmup"]["total_s"]})
    load = os.getloadavg()
    notes = (f"A = `{sides['A']}` ({git_head(sides['A'])}), B = `{sides['B']}` ({git_head(sides['B'])}); "
             f"{STREAM_ROWS} RandomRBF rows, ProximalMKLClassifier(budget=300), empty cache per run; load "
             f"average at the end {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} on {os.cpu_count()} cores; whole "
             f"run {time.perf_counter() - t_start:.0f} s.\n\n" + __doc__.split("\n\n")[5])
    write_report(args.out or "coldstart_stream", rows, title="Cold first run of a stream: compiled on first use "
                 "against compiling first", notes=notes, extra={"runs": runs, "rows_per_run": STREAM_ROWS})


def measure(checkout: Path, what: str, warm: bool) -> tuple[dict, dict | None]:
    """A cold run in a new empty cache, and (``warm``) a second run on the cache it wrote."""
    with tempfile.TemporaryDirectory(prefix="coldstart_nc_") as cache:
        cold = run_child(checkout, cache, what)
        return cold, (run_child(checkout, cache, what) if warm else None)


def git_head(checkout: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", type=Path, default=Path("/work/wt-base"), help="the 'before' checkout")
    ap.add_argument("--b", type=Path, default=HERE, help="the 'after' checkout")
    ap.add_argument("--quick", action="store_true", help="pipeline rows and one other learner only")
    ap.add_argument("--repeat", type=int, default=1, help="runs per row (fastest reported)")
    ap.add_argument("--out", default=None, help="report name (default coldstart / coldstart_quick)")
    ap.add_argument("--stream", action="store_true", help="the 4,000-row RandomRBF stream, default against warmup")
    args = ap.parse_args(argv)
    sides = {"A": args.a.resolve(), "B": args.b.resolve()}
    if args.stream:
        return main_stream(args, sides)
    jobs = [("pipeline", True)] + [(w, False) for w in (LEARNERS[:1] if args.quick else LEARNERS)]
    if not args.quick:
        jobs.append(("demo", True))
    runs: dict[str, dict[str, list]] = {}
    t_start = time.perf_counter()
    for what, warm in jobs:
        for _ in range(args.repeat):
            for side, checkout in sides.items():  # interleaved: A and B see the same load
                cold, hot = measure(checkout, what, warm)
                runs.setdefault(f"{what} cold", {}).setdefault(side, []).append(cold)
                if hot is not None:
                    runs.setdefault(f"{what} warm", {}).setdefault(side, []).append(hot)
                print(f"{what:26s} {side}: cold {cold['wall_s']:6.2f} s (cpu {cold['cpu_s']:6.2f})"
                      + (f"  warm {hot['wall_s']:5.2f} s" if hot else ""), flush=True)
    order = [r for r in ("pipeline cold", "pipeline warm") if r in runs]
    order += [r for r in runs if r not in order and not r.startswith("demo")]
    order += [r for r in ("demo cold", "demo warm") if r in runs]
    rows = []
    for name in order:
        best = {s: min(runs[name][s], key=lambda r: r["wall_s"]) for s in sides}
        target = TARGETS.get(name, 10.0)
        rows.append({
            "row": name,
            "A_s": best["A"]["wall_s"], "B_s": best["B"]["wall_s"],
            "B/A": best["B"]["wall_s"] / best["A"]["wall_s"],
            "target_s": target, "B_meets": best["B"]["wall_s"] <= target,
            "A_exit_s": best["A"]["exit_s"], "B_exit_s": best["B"]["exit_s"],
            "A_cpu_s": best["A"]["cpu_s"], "B_cpu_s": best["B"]["cpu_s"],
            "B/A_cpu": best["B"]["cpu_s"] / best["A"]["cpu_s"],
        })
    load = os.getloadavg()
    notes = (f"A = `{sides['A']}` ({git_head(sides['A'])}), B = `{sides['B']}` ({git_head(sides['B'])}); "
             f"repeat {args.repeat}, fastest wall time shown with its CPU time; load average at the end "
             f"{load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} on {os.cpu_count()} cores; whole run "
             f"{time.perf_counter() - t_start:.0f} s.\n\n" + __doc__.split("\n\n")[2] + "\n\n"
             + __doc__.split("\n\n")[3])
    write_report(args.out or ("coldstart_quick" if args.quick else "coldstart"), rows,
                 title="Cold start: A (before) against B (after)", notes=notes,
                 extra={"a": str(sides["A"]), "b": str(sides["B"]), "a_head": git_head(sides["A"]),
                        "b_head": git_head(sides["B"]), "repeat": args.repeat, "runs": runs})


if __name__ == "__main__":
    main()
