"""Run every ``benchmarks/bench_*.py`` and collect their Markdown reports into ``results/SUMMARY.md``.

Each benchmark runs in its own subprocess (``--quick`` is passed through) with a fresh
per-run ``NUMBA_CACHE_DIR`` unless one is set, and writes ``results/<name>.md`` / ``.json``
through ``_common.write_report``.  The reports a benchmark wrote are the Markdown files
it created or modified; SUMMARY.md lists every benchmark (status, wall time, reports) and then
includes each report.  A failing benchmark does not stop the others; its last output lines
go into the summary and the exit status is non-zero.

Usage::

    python benchmarks/run_all.py [--quick] [--only peers,fit] [--timeout 3600]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def discover(only):
    scripts = sorted(HERE.glob("bench_*.py"))
    if only:
        keep = {s.strip() for s in only.split(",") if s.strip()}
        scripts = [s for s in scripts if s.stem in keep or s.stem.removeprefix("bench_") in keep]
    return scripts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    ap.add_argument("--only", default="", help="comma-separated benchmark names (e.g. peers,fit)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per benchmark")
    args = ap.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    cache = os.environ.get("NUMBA_CACHE_DIR") or tempfile.mkdtemp(prefix="onlinemkl_bench_nc_")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    runs = []
    for script in discover(args.only):
        cmd = [sys.executable, str(script)] + (["--quick"] if args.quick else [])
        print(f"== {script.name} {'--quick' if args.quick else ''}", flush=True)
        before = {p: p.stat().st_mtime_ns for p in RESULTS.glob("*.md")}
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=str(HERE.parent), env=env, capture_output=True, text=True,
                                  timeout=args.timeout)
            status = "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        except subprocess.TimeoutExpired as exc:
            status = f"timeout after {args.timeout:.0f} s"
            out = (exc.stdout or b"") + (exc.stderr or b"")
            tail = (out.decode() if isinstance(out, bytes) else out).strip().splitlines()[-15:]
        wall = time.perf_counter() - t0
        reports = sorted(p for p in RESULTS.glob("*.md")
                         if p.name != "SUMMARY.md" and before.get(p) != p.stat().st_mtime_ns)
        runs.append({"script": script.name, "status": status, "seconds": wall, "reports": reports, "tail": tail})
        print(f"   {status} in {wall:.0f} s; reports: {', '.join(p.name for p in reports) or 'none'}", flush=True)

    lines = ["# Benchmark summary", "",
             f"Mode: {'quick' if args.quick else 'full'}; generated {time.strftime('%Y-%m-%d %H:%M:%S')} by "
             "`benchmarks/run_all.py`.", "",
             "| benchmark | status | seconds | reports |", "|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['script']} | {r['status']} | {r['seconds']:.0f} | "
                     f"{', '.join(p.name for p in r['reports']) or '-'} |")
    lines.append("")
    for r in runs:
        lines += [f"## {r['script']}", ""]
        if r["status"] != "ok":
            lines += ["```", *r["tail"], "```", ""]
        for p in r["reports"]:
            body = p.read_text().strip()
            # demote the report's headings one level below this section
            body = "\n".join("##" + ln if ln.startswith("#") else ln for ln in body.splitlines())
            lines += [body, ""]
    (RESULTS / "SUMMARY.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'SUMMARY.md'}")
    return 0 if all(r["status"] == "ok" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
