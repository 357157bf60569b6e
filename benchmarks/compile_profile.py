"""Where a learner's first compilation goes: CPU seconds per compiled function, cold.

A diagnostic for first-run time (``bench_coldstart.py`` measures it), not a benchmark, so
``run_all.py`` does not run it and it keeps no result: it runs
``onlinemkl.warmup([learner], budget=...)`` in this process with a fresh, empty Numba cache and
records Numba's compile events (``numba.core.event``, ``numba:compile``), nested as Numba
compiles callees while typing their callers.  Per function: the CPU seconds inside its own
compilation (``exclusive``) and with its callees' (``inclusive``).  A function compiled while
another is typed appears under that caller in ``within``.  Two things to look for:

* a function that should not be there for this learner (code a configuration never runs, e.g.
  the eviction of a learner without a budget: see ARCHITECTURE's compile-time rules);
* ``raise_with_shape_context`` or ``ol_str_generic``: Numba's formatted shape error, compiled
  where an array is stored into a slice or a subscript (seconds for one error message).

With ``--split`` the first compilation hands the parts its step lists to a helper process, as a
user's does (``onlinemkl._split``; off otherwise, so that every function compiles here and is
timed): the title then gives this process's CPU seconds and the helper's, and the table shows
what this process still compiled; ``loaded`` lists what it loaded from the helper's cache.

Usage::

    python benchmarks/compile_profile.py obscure                 # no budget (the demo's variant)
    python benchmarks/compile_profile.py obscure --split         # with the helper process
    python benchmarks/compile_profile.py proximal --budget       # the variant with a budget
    python benchmarks/compile_profile.py polymkl --top 10 --out /tmp/profile   # also /tmp/profile/compile_profile.*

Run it on an idle machine; each call takes the learner's whole cold compilation (4-20 s).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

os.environ["ONLINEMKL_BACKGROUND_COMPILE"] = "0"  # compile in the foreground, where the events are
os.environ["ONLINEMKL_SPLIT_COMPILE"] = "1" if "--split" in sys.argv else "0"  # before onlinemkl loads
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="onlinemkl-compile-profile-")  # before numba loads
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from numba.core import event  # noqa: E402

from _common import write_report  # noqa: E402


class Recorder(event.Listener):
    """Compile events as ``{function: [exclusive, inclusive, count, caller]}`` (CPU seconds)."""

    def __init__(self):
        self.stack, self.seen = [], {}

    def on_start(self, ev):
        self.stack.append([ev.data["dispatcher"].py_func.__qualname__, time.process_time(), 0.0])

    def on_end(self, ev):
        name, t0, inner = self.stack.pop()
        spent = time.process_time() - t0
        row = self.seen.setdefault(name, [0.0, 0.0, 0, self.stack[-1][0] if self.stack else ""])
        row[0] += spent - inner
        row[1] += spent
        row[2] += 1
        if self.stack:
            self.stack[-1][2] += spent


def main(argv=None):
    from onlinemkl import _compile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("learner", choices=sorted(_compile.WARMUPS))
    ap.add_argument("--budget", action="store_true", help="the variant with a budget (default: without)")
    ap.add_argument("--split", action="store_true", help="hand parts to a helper process, as a user's first run does")
    ap.add_argument("--top", type=int, default=25, help="functions listed, by exclusive seconds")
    ap.add_argument("--out", metavar="DIR", default=None,
                    help="also write DIR/compile_profile.json and .md (never into benchmarks/results)")
    args = ap.parse_args(argv)
    rec = Recorder()
    event.register("numba:compile", rec)
    t0 = time.process_time()
    _compile.warmup([args.learner], progress=False, budget=args.budget)
    total = time.process_time() - t0
    helper = resource.getrusage(resource.RUSAGE_CHILDREN)
    helper_s = helper.ru_utime + helper.ru_stime
    rows = [{"function": name, "exclusive_s": ex, "inclusive_s": inc, "compiles": n, "within": caller}
            for name, (ex, inc, n, caller) in sorted(rec.seen.items(), key=lambda kv: -kv[1][0])][:args.top]
    title = f"Cold compilation of {args.learner} ({'with' if args.budget else 'without'} a budget): {total:.1f} CPU s"
    loaded = []
    if args.split:
        from onlinemkl._config import dispatchers

        loaded = sorted({f"{v.py_func.__module__}.{v.py_func.__name__}" for v in dispatchers() if v.stats.cache_hits})
        title += f" here, {helper_s:.1f} CPU s in the helper process"
    if args.out:
        write_report("compile_profile", rows, title=title, notes=__doc__.split("\n\n")[1],
                     extra={"total_cpu_s": total, "helper_cpu_s": helper_s, "loaded": loaded}, out_dir=args.out)
    else:
        from _common import markdown_table

        print(f"# {title}\n\n{markdown_table(rows)}")
        if args.split:
            print(f"\nloaded from the helper's cache: {', '.join(loaded) or 'nothing'}")


if __name__ == "__main__":
    main()
