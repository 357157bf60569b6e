"""Cold start: seconds from a new interpreter to a learner's first answer, and to the demo's end.

The question: what a new user meets first is a new process with an empty Numba compile cache.
How long until the first prediction of the default river pipeline, of every other public learner,
and until ``python -m onlinemkl demo`` has finished, cold and then warm (on the cache the cold run
wrote)?  Compared against targets (pipeline cold <= 8 s, warm <= 2 s; other learners <= 10 s;
demo cold <= 15 s, warm <= 2 s) and, with ``--a PATH``, against another checkout measured in the
same run.  How to read the report: one row per measurement, ``B_s`` the seconds of this checkout
(``B_meets``: within the target), ``B_exit_s`` to the child's exit, ``B_cpu_s`` its CPU seconds;
with ``--a``, the ``A_*`` columns and ``B/A`` ratios (< 1: this checkout is faster).

Every measurement is a fresh child process with ``PYTHONPATH=<checkout>``, its working directory
outside the checkouts, and its own fresh empty ``NUMBA_CACHE_DIR`` (a temp dir); the parent never
imports onlinemkl.  With ``--a``, both checkouts run in the same run, interleaved row by row, so the
ratio means something on a shared machine where absolute seconds drift with the load; the
children's CPU seconds (``getrusage(RUSAGE_CHILDREN)`` deltas) are reported beside the wall time
for the same reason.  ``*_exit_s`` is the time to the child's exit: the first answer comes from
Python while Numba compiles in the background (``onlinemkl._lazy``), and a process that has
answered finishes the compilation before it exits, so that the next run starts compiled.  The
children use only public APIs.  Rows:

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
pipeline rows and one other learner.  ``benchmarks/compile_profile.py`` says where one
learner's compile time goes.

Run time on a shared 2-core machine: about 7 minutes per checkout; ``--quick`` about 1.

Usage::

    python benchmarks/bench_coldstart.py [--quick] [--repeat N]   # -> benchmarks/results/coldstart.{json,md}
    python benchmarks/bench_coldstart.py --a /path/to/other/checkout   # also that checkout, as A
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
    ap.add_argument("--a", type=Path, default=None, help="another checkout to measure alike, as A (optional)")
    ap.add_argument("--b", type=Path, default=HERE, help="the checkout measured as B (default: this one)")
    ap.add_argument("--quick", action="store_true", help="pipeline rows and one other learner only")
    ap.add_argument("--repeat", type=int, default=1, help="runs per row (fastest reported)")
    args = ap.parse_args(argv)
    for opt in ("a", "b"):
        path = getattr(args, opt)
        if path is not None and not (path / "onlinemkl" / "__init__.py").is_file():
            ap.error(f"--{opt} {path}: not a checkout of onlinemkl (no onlinemkl/__init__.py in it)")
    sides = ({"A": args.a.resolve()} if args.a else {}) | {"B": args.b.resolve()}
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
        b, a = best["B"], best.get("A")
        row = {"row": name, "B_s": b["wall_s"], "target_s": target, "B_meets": b["wall_s"] <= target,
               "B_exit_s": b["exit_s"], "B_cpu_s": b["cpu_s"]}
        if a is not None:
            row.update({"A_s": a["wall_s"], "B/A": b["wall_s"] / a["wall_s"], "A_exit_s": a["exit_s"],
                        "A_cpu_s": a["cpu_s"], "B/A_cpu": b["cpu_s"] / a["cpu_s"]})
        rows.append(row)
    load = os.getloadavg()
    notes = (", ".join(f"{side} = `{path}` ({git_head(path)})" for side, path in sides.items()) + "; "
             f"repeat {args.repeat}, fastest wall time shown with its CPU time; load average at the end "
             f"{load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f} on {os.cpu_count()} cores; whole run "
             f"{time.perf_counter() - t_start:.0f} s.\n\n" + __doc__.split("\n\n")[1] + "\n\n"
             + __doc__.split("\n\n")[3])
    write_report("coldstart", rows, title="Cold start: seconds to the first answer on an empty compile cache",
                 notes=notes, quick=args.quick,
                 extra={"a": str(sides.get("A")), "b": str(sides["B"]), "a_head": git_head(sides["A"]) if "A" in sides
                        else None, "b_head": git_head(sides["B"]), "repeat": args.repeat, "runs": runs})


if __name__ == "__main__":
    main()
