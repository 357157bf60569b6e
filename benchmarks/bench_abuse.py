"""Hostile input: what does each attack on a model file, the server or a stream reader cost?

The question: a user loads model files, serves a model, reads streams that someone else may
have crafted.  For each attack (a zip bomb or a 16 GiB array declared in a model file, huge
state shapes, deep JSON, slow or silent clients, pipelined and endless lines, unterminated
quotes, a save killed halfway), what does the user see, how much memory and time does it take,
and what is lost?  With ``--before TREE`` every attack also runs on that source tree (e.g. an
older release), so both columns come from the same run on the same machine.  How to read the
report: one row per attack; ``*_outcome`` is what the user sees (an error naming the problem is
the goal; a crash or a load is a failure), ``*_memory_mib`` the growth of the child's peak
resident memory, ``*_seconds`` its wall time, ``*_lost`` the requests, rows or files lost.

Each attack runs in a child process with ``PYTHONPATH`` set to a source tree.  The cost of the
guards on legitimate input is ``bench_reliability.py``'s.

Run time on a shared 2-core machine: about 5 minutes per tree; ``--quick`` (a 256 MiB zip bomb
instead of 1 GiB) a little less.

Usage::

    python benchmarks/bench_abuse.py [--before /path/to/old/checkout] [--quick] [--only NAME ...]
    # -> benchmarks/results/abuse.{json,md}; --quick or --only: abuse.quick.{json,md}
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
BOMB_BYTES = int(os.environ.get("ONLINEMKL_BENCH_BOMB_BYTES", 1 << 30))


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _model(tmp: Path) -> Path:
    import numpy as np
    from river import preprocessing

    from onlinemkl.persist import save
    from onlinemkl.river import OBSCUREClassifier

    rng = np.random.default_rng(0)
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=100)
    for i in range(200):
        x = {f"f{j}": float(v) for j, v in enumerate(rng.normal(size=4))}
        pipe.learn_one(x, "ab"[int(x["f0"] > 0)])
    return save(pipe, tmp / "model.omkl")


def _craft(src: Path, dst: Path, edit=None, deflate=(), raw_meta=None) -> Path:
    """A crafted model file, as the tests craft them (``tests/system/test_persist_abuse.craft``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from test_persist_abuse import craft

    return craft(src, dst, edit, deflate, raw_meta)


def _load_outcome(path: Path) -> dict:
    from onlinemkl.persist import ModelFileError, load

    rss0, t0 = _rss_mib(), time.perf_counter()
    try:
        model = load(path)
        steps = getattr(model, "steps", None)
        last = list(steps.values())[-1] if steps else model
        fitted = getattr(last, "_engine", None) is not None
        outcome = f"loads ({type(last).__name__}{'' if fitted else ', unfitted'})"
    except ModelFileError as exc:
        outcome = f"ModelFileError: {str(exc).split(': ', 2)[-1][:90]}"
    except BaseException as exc:  # the attack escapes as a crash of the caller
        outcome = f"CRASH {type(exc).__name__}: {str(exc)[:70]}"
    return {"outcome": outcome, "memory_mib": round(_rss_mib() - rss0, 1), "seconds": round(time.perf_counter() - t0, 2)}


# -- the attacks (run in the child) ------------------------------------------------------------


def zip_bomb(tmp):
    """A deflated .npy entry of 1 GiB (256 MiB with --quick) in a ~1 MiB file, listed with its true size and hash."""
    import numpy as np

    good = _model(tmp)
    buf = io.BytesIO()
    np.save(buf, np.zeros(BOMB_BYTES // 8))

    def edit(meta, entries):
        entries["arrays/9/bomb.npy"] = buf.getvalue()

    path = _craft(good, tmp / "bomb.omkl", edit, deflate={"arrays/9/bomb.npy"})
    del buf
    out = _load_outcome(path)
    out["file_mib"] = round(path.stat().st_size / 2**20, 2)
    return out


def npy_16gib(tmp):
    """A stored entry whose .npy header declares 2**31 float64 (16 GiB) over 16 bytes of data."""
    good = _model(tmp)

    def edit(meta, entries):
        buf = io.BytesIO()
        import numpy as np

        np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (1 << 31,)})
        entries[meta["model"]["children"][1][1]["arrays"]["scores"]] = buf.getvalue() + b"\0" * 16

    return _load_outcome(_craft(good, tmp / "shape.omkl", edit))


def state_373gib(tmp):
    """A scratch shape in the state asking for 373 GiB (krow_shape)."""
    good = _model(tmp)

    def edit(meta, entries):
        meta["model"]["children"][1][1]["state"]["engine"]["krow_shape"] = [5, 10 ** 10]

    return _load_outcome(_craft(good, tmp / "krow.omkl", edit))


def state_inf(tmp):
    """An infinite number where the state holds a shape (OverflowError)."""
    good = _model(tmp)

    def edit(meta, entries):
        meta["model"]["children"][1][1]["state"]["engine"]["krow_shape"] = [5, 1e400]

    return _load_outcome(_craft(good, tmp / "inf.omkl", edit))


def deep_json(tmp):
    """meta.json nested 100000 levels deep (RecursionError)."""
    good = _model(tmp)
    deep = '{"format": "onlinemkl-model", "format_version": 1, "x": ' + "[" * 100000 + "]" * 100000 + "}"
    return _load_outcome(_craft(good, tmp / "deep.omkl", raw_meta=deep))


def other_class(tmp):
    """A river model's file whose class name was edited to the array API's class."""
    good = _model(tmp)

    def edit(meta, entries):
        meta["model"]["children"][1][1]["class"] = "onlinemkl.OBSCUREClassifier"

    return _load_outcome(_craft(good, tmp / "other.omkl", edit))


def _serve(model: Path, *extra):
    proc = subprocess.Popen([sys.executable, "-m", "onlinemkl.cli", "serve", "--model", str(model), "--port", "0",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    port = json.loads(proc.stdout.readline())["port"]
    return proc, ("127.0.0.1", port)


def _held(address, payload: bytes, cap: float, interval: float = 0.05) -> float:
    """Seconds the server keeps a connection that sends ``payload`` one byte per ``interval`` (up to ``cap``)."""
    sock = socket.create_connection(address, timeout=5)
    sock.settimeout(interval)
    t0 = time.monotonic()
    try:
        i = 0
        while time.monotonic() - t0 < cap:
            try:
                if payload:
                    sock.sendall(payload[i % len(payload): i % len(payload) + 1])
                    i += 1
                if sock.recv(65536) == b"":
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        return time.monotonic() - t0
    finally:
        sock.close()


def _slot_held(tmp, payload, *serve_args):
    """How long a server (started with ``serve_args``) keeps a client trickling ``payload`` (cap 40 s)."""
    proc, address = _serve(_model(tmp), *serve_args)
    try:
        held = _held(address, payload, 40.0)
    finally:
        proc.kill()
        proc.wait()
    return {"outcome": f"slot held {held:.1f} s" + (" (still open at the cap)" if held >= 40 else ""),
            "seconds": round(held, 1)}


def slow_loris(tmp):
    """One byte every 50 ms of a line that never ends, default limits; how long the slot is held (cap 40 s)."""
    return _slot_held(tmp, b'{"x": {"f0": 1.0' + b" " * 100000)


def silent_before_token(tmp):
    """A client that connects to a server with a token and says nothing; how long the slot is held (cap 40 s)."""
    return _slot_held(tmp, b"", "--token", "t0k")


def pipelined_depth2(tmp):
    """Requests per second of one client sending two requests per write for 2 s."""
    proc, address = _serve(_model(tmp))
    try:
        sock = socket.create_connection(address, timeout=10)
        rfile = sock.makefile("rb")
        batch = b'{"x": {"f0": 0.5}}\n{"x": {"f0": -0.5}}\n'
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 2.0:
            sock.sendall(batch)
            rfile.readline()
            rfile.readline()
            n += 2
        rate = n / (time.perf_counter() - t0)
        sock.close()
    finally:
        proc.kill()
        proc.wait()
    return {"outcome": f"{rate:.0f} requests/s", "seconds": 2.0}


def sigterm_pipelined(tmp):
    """200 learning requests in one write; SIGTERM after the first reply: requests lost."""
    proc, address = _serve(_model(tmp), "--save", str(tmp / "out.omkl"))
    try:
        sock = socket.create_connection(address, timeout=10)
        rfile = sock.makefile("rb")
        n = 200
        sock.sendall(b"".join(json.dumps({"x": {"f0": 0.01 * i, "f1": 1.0}, "y": "ab"[i % 2], "id": i}).encode()
                              + b"\n" for i in range(n)))
        got = 1 if rfile.readline() else 0
        proc.send_signal(signal.SIGTERM)
        while rfile.readline():
            got += 1
        proc.wait(timeout=60)
        sock.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {"outcome": f"{got} of {n} answered", "lost": n - got}


def endless_line(tmp):
    """read_csv(on_error="raise") on a source whose second line never ends (stopped after 10 s)."""
    from streams import StreamError, read_csv

    class Stopped(Exception):
        pass

    class Endless(io.RawIOBase):
        served = 0

        def readable(self):
            return True

        def readline(self, size=-1):
            if self.served == 0:
                self.served = 1
                return b"a,y\n"
            if time.perf_counter() - t0 > 10:
                raise Stopped
            n = 65536 if size is None or size < 0 else size
            self.served += n
            return b"7" * n

    src = Endless()
    rss0, t0 = _rss_mib(), time.perf_counter()
    try:
        list(read_csv(src))
        outcome = "no error"
    except StreamError as exc:
        outcome = f"StreamError: {str(exc)[:70]}"
    except Stopped:
        outcome = "still reading when stopped"
    return {"outcome": outcome + f" ({src.served / 2**20:.0f} MiB read)", "memory_mib": round(_rss_mib() - rss0, 1),
            "seconds": round(time.perf_counter() - t0, 2)}


def unterminated_quote(tmp):
    """A CSV with one unterminated quote on line 3, then 50000 good rows, read with on_error="skip"."""
    from streams import read_csv

    data = 'a,y\n1,0\n2,"1\n' + "".join(f"{i},{i % 2}\n" for i in range(50000))
    t0 = time.perf_counter()
    reader = read_csv(io.StringIO(data), on_error="skip")
    n = sum(1 for _ in reader)
    return {"outcome": f"{n} rows read; reported: line {reader.skipped[0][0]}", "lost": 50001 - n,
            "seconds": round(time.perf_counter() - t0, 2)}


def killed_save(tmp):
    """A save killed (SIGKILL) before its rename, then a normal save: temporary files left."""
    path = _model(tmp)
    code = ("import os, signal, sys; import onlinemkl.persist as p; from onlinemkl.river import OBSCUREClassifier as C; "
            "m = C(); m.learn_one({'a': 1.0}, 'x'); os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL); "
            f"p.save(m, {str(path)!r})")
    subprocess.run([sys.executable, "-c", code], env=os.environ.copy(), timeout=300)
    from onlinemkl.persist import load, save

    left = [n for n in os.listdir(tmp) if n.endswith(".tmp")]
    save(load(path), path)
    after = [n for n in os.listdir(tmp) if n.endswith(".tmp")]
    return {"outcome": f"{len(left)} left by the kill, {len(after)} after the next save", "lost": len(after)}


ATTACKS = [zip_bomb, npy_16gib, state_373gib, state_inf, deep_json, other_class, slow_loris, silent_before_token,
           pipelined_depth2, sigterm_pipelined, endless_line, unterminated_quote, killed_save]


def run_in(tree: Path, name: str) -> dict:
    cache = Path(tempfile.gettempdir()) / f"numba-abuse-{hashlib.sha1(str(tree).encode()).hexdigest()[:8]}"
    env = dict(os.environ, PYTHONPATH=str(tree), NUMBA_CACHE_DIR=str(cache))  # one cache per tree
    res = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True, env=env,
                         timeout=900, cwd=str(tree))
    if res.returncode != 0:
        return {"outcome": f"child failed ({res.returncode}): {res.stderr.strip().splitlines()[-1][:90]}"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="a source tree to measure as 'before' (e.g. the old main)")
    ap.add_argument("--only", nargs="*", help="attack names")
    ap.add_argument("--quick", action="store_true", help="a 256 MiB zip bomb instead of 1 GiB")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        os.environ["ONLINEMKL_BENCH_BOMB_BYTES"] = str(256 << 20)
    if args.child:
        fn = {f.__name__: f for f in ATTACKS}[args.child]
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(fn(Path(tmp))))
        return
    from _common import write_report

    names = [f.__name__ for f in ATTACKS]
    unknown = [n for n in args.only or () if n not in names]
    if unknown:
        ap.error(f"--only: unknown attack(s) {unknown}; choose from {names}")
    rows = []
    for fn in ATTACKS:
        if args.only and fn.__name__ not in args.only:
            continue
        row = {"attack": fn.__name__, "what": fn.__doc__.splitlines()[0]}
        for label, tree in (("before", args.before), ("after", TREE)):
            if tree is None:
                continue
            r = run_in(tree.resolve(), fn.__name__)
            for key in ("outcome", "memory_mib", "seconds", "lost"):
                if key in r:
                    row[f"{label}_{key}"] = r[key]
        rows.append(row)
        print(json.dumps(row), flush=True)
    order = [f.__name__ for f in ATTACKS]
    rows.sort(key=lambda r: order.index(r["attack"]))
    cols = ["attack", "what"] + [f"{lab}_{k}" for lab in ("before", "after")
                                 for k in ("outcome", "memory_mib", "seconds", "lost")
                                 if any(f"{lab}_{k}" in r for r in rows)]
    write_report("abuse", rows, columns=cols, title="Hostile input: what each attack costs", quick=args.quick or bool(args.only),
                 notes=f"""
Each attack in a fresh child process (`memory_mib`: growth of the child's peak RSS during the attack;
`seconds`: wall time; `lost`: requests, rows or files lost). `before` ran on
{args.before or '(not measured)'}, `after` on this tree. Command:
`python benchmarks/bench_abuse.py{' --before ' + str(args.before) if args.before else ''}`.
""")


if __name__ == "__main__":
    main(sys.argv[1:])
