"""Shared helpers for the benchmarks: the machine's memory floor, timing, and reports.

Every benchmark reports ratios measured in the same run (against a peer, or against the
time to read the same bytes from memory once), never absolute timings in assertions.
Reports are written as JSON (machine readable) and as a Markdown table (human readable).
"""

from __future__ import annotations

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


def single_thread_blas():
    """Context manager limiting BLAS/OpenMP to one thread (threadpoolctl)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


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
        return "" if v is None else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_report(name: str, rows: list[dict], *, columns: list[str] | None = None,
                 title: str | None = None, notes: str = "", extra: dict | None = None,
                 out_dir: Path | str | None = None) -> tuple[Path, Path]:
    """Write ``results/<name>.json`` and ``results/<name>.md``; print the table; return both paths."""
    out = Path(out_dir) if out_dir else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "machine": machine(), "rows": rows, **(extra or {})}
    jpath = out / f"{name}.json"
    jpath.write_text(json.dumps(payload, indent=2, default=float) + "\n")
    table = markdown_table(rows, columns)
    md = f"# {title or name}\n\n{notes.strip()}\n\n{table}" if notes else f"# {title or name}\n\n{table}"
    mpath = out / f"{name}.md"
    mpath.write_text(md)
    print(md)
    print(f"wrote {jpath} and {mpath}")
    return jpath, mpath
