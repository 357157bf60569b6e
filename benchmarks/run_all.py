"""Run the benchmarks and collect their reports into ``results/SUMMARY.md``.

Each ``benchmarks/bench_<stem>.py`` runs in its own subprocess (``--quick`` is passed through)
with one fresh ``NUMBA_CACHE_DIR`` for the whole run unless one is set, and writes
``results/<stem>.json`` and ``results/<stem>.md`` (``<stem>.quick.*`` with ``--quick``).
SUMMARY.md lists every benchmark (status, wall time, report) and then includes each report.
A failing benchmark does not stop the others; its last output lines go into the summary and
the exit status is non-zero.  A ``--quick`` run writes ``results/SUMMARY.quick.md`` (git-ignored),
never over the committed summary; ``--collect`` runs nothing and rebuilds SUMMARY.md from the
reports already in ``results/``.

Usage::

    python benchmarks/run_all.py [--quick] [--only peers,fit_svc] [--timeout 3600]
    python benchmarks/run_all.py --collect
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


def stem(script: Path) -> str:
    """``bench_peers.py`` -> ``peers``: the name of the script's report."""
    return script.stem.removeprefix("bench_")


def discover(only: str = "") -> list[Path]:
    """The benchmark scripts, or those named in ``only`` (comma-separated stems or file stems)."""
    scripts = sorted(HERE.glob("bench_*.py"))
    if not only:
        return scripts
    keep = {s.strip() for s in only.split(",") if s.strip()}
    known = {stem(s) for s in scripts}
    unknown = sorted(k for k in keep if k not in known and k.removeprefix("bench_") not in known)
    if unknown:
        raise SystemExit(f"--only: unknown benchmark(s) {unknown}; choose from {sorted(known)}")
    return [s for s in scripts if stem(s) in keep or s.stem in keep]


def report_of(script: Path, quick: bool) -> Path:
    return RESULTS / f"{stem(script)}{'.quick' if quick else ''}.md"


def run(script: Path, quick: bool, timeout: float, env: dict) -> dict:
    """Run one benchmark; its status, wall seconds, report (if it wrote one) and last output lines."""
    report = report_of(script, quick)
    before = report.stat().st_mtime_ns if report.exists() else None
    cmd = [sys.executable, str(script)] + (["--quick"] if quick else [])
    print(f"== {script.name} {'--quick' if quick else ''}", flush=True)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=str(HERE.parent), env=env, capture_output=True, text=True, timeout=timeout)
        status = "ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})"
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
    except subprocess.TimeoutExpired as exc:
        status = f"timeout after {timeout:.0f} s"
        out = (exc.stdout or b"") + (exc.stderr or b"")
        tail = (out.decode() if isinstance(out, bytes) else out).strip().splitlines()[-15:]
    wall = time.perf_counter() - t0
    wrote = report.exists() and report.stat().st_mtime_ns != before
    if status == "ok" and not wrote:
        status = f"ok, but no {report.name} written"
    print(f"   {status} in {wall:.0f} s; report: {report.name if wrote else 'none'}", flush=True)
    return {"script": script.name, "status": status, "seconds": wall, "report": report if wrote else None,
            "tail": tail}


def summary(runs: list[dict], mode: str) -> str:
    lines = ["# Benchmark summary", "",
             f"Mode: {mode}; generated {time.strftime('%Y-%m-%d %H:%M:%S')} by `benchmarks/run_all.py`.  Each "
             "report says when and on what it was measured.", "",
             "| benchmark | status | seconds | report |", "|---|---|---|---|"]
    for r in runs:
        secs = "-" if r["seconds"] is None else f"{r['seconds']:.0f}"
        lines.append(f"| {r['script']} | {r['status']} | {secs} | {r['report'].name if r['report'] else '-'} |")
    lines.append("")
    for r in runs:
        lines += [f"## {r['script']}", ""]
        if not r["status"].startswith("ok") and r["status"] != "not run":
            lines += ["```", *r["tail"], "```", ""]
        if r["report"]:
            body = r["report"].read_text().strip()
            # demote the report's headings one level below this section
            body = "\n".join("##" + ln if ln.startswith("#") else ln for ln in body.splitlines())
            lines += [body, ""]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="pass --quick to every benchmark (SUMMARY.quick.md)")
    ap.add_argument("--only", default="", help="comma-separated benchmark names (e.g. peers,fit_svc)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per benchmark")
    ap.add_argument("--collect", action="store_true", help="run nothing: rebuild SUMMARY.md from results/")
    args = ap.parse_args(argv)
    scripts = discover(args.only)
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.collect:
        runs = [{"script": s.name, "status": "not run", "seconds": None,
                 "report": report_of(s, False) if report_of(s, False).exists() else None, "tail": []}
                for s in scripts]
        out = RESULTS / "SUMMARY.md"
        out.write_text(summary(runs, "collected (the committed results, not run now)"))
        print(f"wrote {out}")
        return 0
    cache = os.environ.get("NUMBA_CACHE_DIR") or tempfile.mkdtemp(prefix="onlinemkl_bench_nc_")
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    runs = [run(s, args.quick, args.timeout, env) for s in scripts]
    out = RESULTS / ("SUMMARY.quick.md" if args.quick else "SUMMARY.md")
    out.write_text(summary(runs, "quick" if args.quick else "full"))
    print(f"wrote {out}")
    return 0 if all(r["status"] == "ok" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
