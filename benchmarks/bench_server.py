"""Server throughput: how many prediction requests per second does ``onlinemkl serve`` answer?

The question: the request rate of the line-protocol server (``onlinemkl.serve.ModelServer``, what
``python -m onlinemkl serve`` runs) for one client on loopback, at pipeline depths 1 and 2.  It
is compared against the same server with TCP_NODELAY off (``without_nodelay``), which is what the
socket option buys.  How to read the report: ``with_nodelay`` is the server as shipped, in
requests per second; ``ratio`` = with / without (at depth 1 it is noise; at depth 2 it is
the ~40 ms wait a reply saves).

A client on loopback sends ``depth`` prediction requests in one write and reads their ``depth``
replies, over and over, for a fixed time. Without TCP_NODELAY the server's second reply waits
for the client's delayed acknowledgement of the first (Nagle's algorithm), about 40 ms on Linux;
with it every reply leaves at once. Both arms run in the same process, on the same model.

Run time: about 30 seconds; ``--quick`` about 10.

Usage::

    python benchmarks/bench_server.py [--quick]   # -> benchmarks/results/server.{json,md} (.quick.* with --quick)
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import quick_args, write_report  # noqa: E402


def model():
    import numpy as np
    from river import preprocessing

    from onlinemkl.river import OBSCUREClassifier

    rng = np.random.default_rng(0)
    pipe = preprocessing.StandardScaler() | OBSCUREClassifier(budget=200)
    for i in range(400):
        x = {f"f{j}": float(v) for j, v in enumerate(rng.normal(size=8))}
        pipe.learn_one(x, "ab"[int(x["f0"] + 0.3 * x["f1"] > 0)])
    return pipe


def rate(server, depth: int, seconds: float) -> tuple[float, int]:
    """Requests per second of one client at pipeline ``depth`` for about ``seconds``."""
    sock = socket.create_connection(server.address, timeout=10)
    rfile = sock.makefile("rb")
    # every feature the model learnt: the server refuses requests with missing feature names
    batch = b"".join(json.dumps({"x": {f"f{j}": 0.1 * k - 0.2 * j for j in range(8)}}).encode() + b"\n"
                     for k in range(depth))
    n = 0
    t0 = time.perf_counter()
    try:
        while time.perf_counter() - t0 < seconds:
            sock.sendall(batch)
            for _ in range(depth):
                reply = rfile.readline()
                if b"prediction" not in reply:
                    raise RuntimeError(f"the server did not answer with a prediction: {reply[:200]!r}")
            n += depth
        return n / (time.perf_counter() - t0), n
    finally:
        rfile.close()
        sock.close()


def main(argv=None):
    args = quick_args(argv, __doc__)
    from onlinemkl.serve import ModelServer

    seconds = 0.5 if args.quick else 2.0
    pipe = model()
    rows = []
    for depth in (1, 2):
        row = {"depth": depth}
        for _ in range(3):  # the arms alternate; each keeps its best of 3 (the machine is shared)
            for nodelay in (False, True):
                srv = ModelServer(pipe, port=0, log=None)
                srv.nodelay = nodelay
                srv.start()
                try:
                    rate(srv, depth, 0.2)  # warm: compiled paths, the connection thread
                    r, n = rate(srv, depth, seconds)
                finally:
                    srv.shutdown(timeout=5)
                key = "with_nodelay" if nodelay else "without_nodelay"
                if r > row.get(key, 0.0):
                    row[key], row["n_with" if nodelay else "n_without"] = r, n
        row["ratio"] = row["with_nodelay"] / row["without_nodelay"]
        rows.append(row)
    write_report(
        "server", rows, quick=args.quick,
        columns=["depth", "without_nodelay", "with_nodelay", "ratio", "n_without", "n_with"],
        title="Server: requests per second, one loopback client, with and without TCP_NODELAY",
        notes=f"""
Requests per second of one client sending `depth` prediction requests per write and reading the
replies (best of 3 alternating runs of {seconds:g} s per arm, same process, same model: StandardScaler | OBSCUREClassifier, 8
features, 200 stored examples). `with_nodelay` is the server as shipped; `without_nodelay` the
same server with TCP_NODELAY off (Nagle's algorithm on); `ratio` = with / without. At depth 1 no
reply waits for an acknowledgement, so the ratio there is the noise of the machine; at depth 2
the second reply does not wait ~40 ms for the client's delayed ACK.
Command: `python benchmarks/bench_server.py`.
""")


if __name__ == "__main__":
    main(sys.argv[1:])
