"""Shared helpers for the benchmarks: the machine's memory floor, timing, and reports.

Every benchmark reports ratios measured in the same run (against a peer, or against the
time to read the same bytes from memory once), never absolute timings in assertions.
Reports are written as JSON (machine readable) and as a Markdown table (human readable).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from numba import njit

RESULTS = Path(__file__).resolve().parent / "results"


@njit(cache=True, fastmath=True)
def _stream_sum(a):
    """Sum of a C-contiguous array: the fastest plain read of every element we know.

    ``fastmath`` lets LLVM reassociate the sum, so it keeps several vector accumulators in
    registers and the loads are the only bottleneck.  Without ``fastmath`` (e.g. summing into
    a small array) LLVM keeps the accumulators in memory: the "floor" is then slower than a
    plain read, and every ratio against it flatters the code measured.
    """
    v = a.reshape(a.size)
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i]
    return s


def memory_floor(a: np.ndarray, repeat: int = 7) -> float:
    """Seconds to read ``a`` once from memory (best of ``repeat``): a compiled streaming sum.

    This is the floor of one pass over a support buffer of the same shape; buffers that fit in
    cache give a cache-speed floor, which is the honest comparison for the same buffer.
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    _stream_sum(a[:1])
    return best_time(lambda: _stream_sum(a), repeat=repeat)


def best_time(fn, repeat: int = 7, number: int = 1) -> float:
    """Best wall time of ``number`` calls of ``fn`` over ``repeat`` trials, per call."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def fill_rows(eng, n: int, d: int, rng):
    """Fill an engine's first ``n`` stored rows with standard normal values in ``d`` features, and
    their kernel caches (squared norms, diagonals) as learning would; returns the buffer."""
    from onlinemkl._core import kernels as ck

    b = eng.buf
    b.S[:n, :d] = rng.normal(size=(n, d))
    spec = eng.ck.spec()
    xdiag = np.empty(b.sdiag_t.shape[0])
    for i in range(n):
        ck.prepare_query(b.S[i, :d], spec, b.ssq[i], xdiag)
        b.sdiag_t[:, i] = xdiag
    return b


def obscure_engine(kernels, n_classes: int, n: int, d: int, budget, rng):
    """An OBSCURE engine (``lam=1e-3``, oldest-first eviction, stage 1) over ``n_classes`` classes
    whose first ``n`` stored rows are filled by :func:`fill_rows`; the caller sets their labels,
    coefficients and the engine's counters."""
    from onlinemkl.obscure.engine import ObscureEngine, default_p

    eng = ObscureEngine(kernels, default_p(len(kernels)), None, 1e-3, budget, "oldest", False, False)
    eng.set_features(d)
    eng.set_n_classes(n_classes)
    eng.buf.ensure_rows(n + 1)
    fill_rows(eng, n, d, rng)
    return eng


def prepared_query(eng, x):
    """``(spec, query)``: the engine's kernel spec and ``x`` as a query with its kernel caches
    (squared norms, diagonals), as the compiled kernel-row passes take them."""
    from onlinemkl._core import kernels as ck
    from onlinemkl._core.state import Query

    spec = eng.ck.spec()
    q = Query(x, np.empty(eng.ck.n_groups), np.empty(eng.ck.n_kernels))
    ck.prepare_query(x, spec, q.xsq, q.xdiag)
    return spec, q


def calls_for(seconds_per_call: float, target: float = 0.05) -> int:
    """How many calls of ``seconds_per_call`` make one timed trial of about ``target`` seconds (1..200)."""
    return int(max(1, min(200, target / max(seconds_per_call, 1e-7))))


def time_per_call(fn, repeat: int) -> float:
    """Best time per call of ``fn`` over ``repeat`` trials of about 50 ms each (one untimed-length
    trial first sizes them)."""
    t1 = best_time(fn, repeat=1)
    return best_time(fn, repeat=repeat, number=calls_for(t1))


def crossover(rows: list[dict], key: str) -> dict:
    """Per ``d``: the smallest measured ``n`` from which ``row[key] > 1`` (the parallel path wins)
    at every larger ``n``; None if it loses at the largest."""
    out = {}
    for d in sorted({r["d"] for r in rows}):
        rs = sorted((r for r in rows if r["d"] == d), key=lambda r: r["n"])
        best = None
        for k in range(len(rs) - 1, -1, -1):
            if rs[k][key] > 1.0:
                best = rs[k]["n"]
            else:
                break
        out[d] = best
    return out


def quick_args(argv, doc: str, quick_help: str | None = None) -> argparse.Namespace:
    """The command line of a benchmark: its description (the first line of ``doc``) and ``--quick``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=quick_help)
    return ap.parse_args(argv)


def single_thread_blas():
    """Context manager limiting BLAS/OpenMP to one thread (threadpoolctl)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def _cpu_model() -> str:
    """The CPU's model name (Linux ``/proc/cpuinfo``), or ``platform.processor()`` elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine() -> dict:
    """What the numbers were measured on."""
    import numba

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "cpu_count": os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_model": _cpu_model(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }


def markdown_table(rows: list[dict], columns: list[str] | None = None, floatfmt: str = ".4g") -> str:
    """A Markdown table of ``rows`` (dicts) over ``columns`` (default: keys of the first row)."""
    if not rows:
        return "(no rows)\n"
    columns = columns or list(rows[0])

    def fmt(v):
        if isinstance(v, float):
            return format(v, floatfmt)
        return "" if v is None else str(v).replace("|", "\\|")  # a bare | would split the cell

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def quick_suffix(quick: bool) -> str:
    """The file-name suffix of a report: ``.quick`` for a ``--quick`` run (git-ignored), else none."""
    return ".quick" if quick else ""


def report_paths(name: str, quick: bool = False, out_dir: Path | str | None = None) -> tuple[Path, Path]:
    """Where a report named ``name`` goes: ``results/<name>.json`` and ``.md`` for a full run,
    ``results/<name>.quick.json`` and ``.md`` for a ``--quick`` run, so a smoke run never
    overwrites the committed result."""
    out = Path(out_dir) if out_dir else RESULTS
    return out / f"{name}{quick_suffix(quick)}.json", out / f"{name}{quick_suffix(quick)}.md"


def provenance(m: dict | None = None, quick: bool = False) -> str:
    """One line saying when and on what a report was measured (and whether it is a quick run)."""
    m = m or machine()
    line = (f"Measured {m.get('date', '?')} on {m.get('cpu_count', '?')} CPUs ({m.get('machine', '?')}), "
            f"Python {m.get('python', '?')}, numpy {m.get('numpy', '?')}, numba {m.get('numba', '?')}.")
    if m.get("cpu_model"):
        line = line.replace(" CPUs (", f" CPUs ({m['cpu_model']}, ", 1)
    if quick:
        line += (" **Quick or partial run** (`--quick`, or a subset of the benchmark): a smoke test, "
                 "not the full result.")
    return line


def write_report(name: str, rows: list[dict] | None, *, columns: list[str] | None = None,
                 title: str | None = None, notes: str = "", extra: dict | None = None,
                 quick: bool = False, out_dir: Path | str | None = None) -> tuple[Path, Path]:
    """Write the report ``name`` (see :func:`report_paths`) as JSON and as Markdown, print the
    Markdown and return both paths.

    The Markdown is self-contained: a one-line title, the date and machine, ``notes``, then the
    table of ``rows`` over ``columns`` (none when ``rows`` is None: ``notes`` hold the tables).
    The JSON holds the rows, the machine and ``extra``.
    """
    jpath, mpath = report_paths(name, quick, out_dir)
    jpath.parent.mkdir(parents=True, exist_ok=True)
    m = machine()
    payload = {"benchmark": name, "quick": quick, "machine": m, "rows": rows, **(extra or {})}
    jpath.write_text(json.dumps(payload, indent=2, default=float) + "\n")
    table = "" if rows is None else markdown_table(rows, columns)
    head = f"# {title or name}{' (quick run)' if quick else ''}\n\n{provenance(m, quick)}\n\n"
    md = head + (f"{notes.strip()}\n\n{table}" if notes else table)
    md = md.rstrip("\n") + "\n"
    mpath.write_text(md)
    print(md)
    print(f"wrote {jpath} and {mpath}")
    return jpath, mpath
