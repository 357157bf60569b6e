"""OBSCURE's replay under a budget: one compiled call per replay against one ``learn`` per step.

With ``budget=k`` and more than two classes OBSCURE replays stored rows after each margin error
while its buffer has room (``replay='auto'``: 5 steps, each adding to its own row or nothing;
once the buffer is full it replays its reservoir, which ``replay s`` and ``replay calls`` do not
count, ``replayed steps`` does).  With two classes it replays its reservoir from the start (since
``defaults_obud2.md``), so on Phishing both variants now take the same steps through the same
code; ``budget_replay_speed.md`` was measured before that.  This benchmark runs
``StandardScaler() | OBSCUREClassifier(budget=500)``, one prequential pass
(``predict_one`` then ``learn_one``) over each stream, with the replay taken two ways in the
same process:

* ``per step``: the loop ``stream_step`` ran before (one ``engine.learn`` call per replayed
  step, its label and hint read in Python), set on the engine as ``replay_stored_rows``;
* ``one call``: ``ObscureEngine.replay_stored_rows`` (the draws, rows and labels read first,
  then ``obscure_run``'s ``REPLAY_BOUND`` mode: every step in one compiled call).

Both take the same steps (``tests/test_replay.py`` holds them bit for bit), so the accuracies
must be equal.  CPU time (``time.process_time``) of the whole pass, best of ``--rounds``
passes, alternating the variants; ``replay s`` is the CPU time inside the replay calls of the
best pass (what the change can save), ``replay calls`` and ``replayed steps`` count them.
A first, untimed pass of each variant compiles everything.

Usage::

    python benchmarks/bench_budget_replay.py [--rounds 3] [--budget 500] [--name budget_replay_speed]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_report  # noqa: E402


def per_step_replay(engine):
    """The replay of stored rows as ``stream_step`` took it before: one ``learn`` per step."""
    b = engine.buf
    hint = np.ones(3, dtype=np.int64)  # binding: add to row s or do nothing
    mem = engine.replay
    for s in [mem._draw(engine.n_support) for _ in range(mem.steps)] if engine.n_support else []:
        label = (1 if b.coef[s, 0] > 0.0 else -1) if engine.binary else int(b.ypos[s])
        hint[0], hint[1] = s, b.tstamp[s]
        engine.learn(b.S[s, :engine.n_features].copy(), label, hint)


def one_pass(data, budget: int, variant: str) -> dict:
    from river import metrics, preprocessing

    from onlinemkl._core import obscure as _co
    from onlinemkl.river import OBSCUREClassifier

    model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=budget)
    engine = model["OBSCUREClassifier"]._engine
    replay = (lambda: per_step_replay(engine)) if variant == "per step" else engine.replay_stored_rows
    spent = {"s": 0.0, "calls": 0}

    def timed_replay():
        t = time.process_time()
        replay()
        spent["s"] += time.process_time() - t
        spent["calls"] += 1

    engine.replay_stored_rows = timed_replay
    acc = metrics.Accuracy()
    clock0 = time.process_time()
    for x, y in data:
        y_pred = model.predict_one(x)
        if y_pred is not None:
            acc.update(y, y_pred)
        model.learn_one(x, y)
    cpu = time.process_time() - clock0
    steps = int(engine.istate[_co.I_CLOCK]) - len(data)
    return {"cpu": cpu, "accuracy": acc.get(), "replay_s": spent["s"], "calls": spent["calls"], "steps": steps,
            "stored": engine.n_support}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--name", default="budget_replay_speed")
    args = ap.parse_args(argv)
    from river import datasets

    streams = {"ImageSegments": list(datasets.ImageSegments()), "Phishing": list(datasets.Phishing())}
    variants = ("per step", "one call")
    for data in streams.values():  # compile every variant first (untimed)
        for v in variants:
            one_pass(data[:300], args.budget, v)
    rows = []
    for name, data in streams.items():
        best = {}
        for _ in range(args.rounds):
            for v in variants:
                r = one_pass(data, args.budget, v)
                if v not in best or r["cpu"] < best[v]["cpu"]:
                    best[v] = r
        accs = {best[v]["accuracy"] for v in variants}
        assert len(accs) == 1, f"{name}: the variants disagree: {best}"
        for v in variants:
            r = best[v]
            rows.append({"stream": name, "n": len(data), "variant": v, "cpu s": r["cpu"],
                         "us/example": 1e6 * r["cpu"] / len(data), "replay s": r["replay_s"],
                         "replay share": r["replay_s"] / r["cpu"], "replay calls": r["calls"],
                         "replayed steps": r["steps"], "accuracy": r["accuracy"], "stored": r["stored"]})
        a, b = best["per step"], best["one call"]
        rows.append({"stream": name, "n": len(data), "variant": "speed-up (per step / one call)",
                     "cpu s": a["cpu"] / b["cpu"], "replay s": a["replay_s"] / max(b["replay_s"], 1e-12)})
    notes = (__doc__.split("\n\n", 1)[1].split("Usage::")[0]
             + f"\nBudget {args.budget}, best of {args.rounds} passes per variant, one process.")
    write_report(args.name, rows, notes=notes,
                 columns=["stream", "n", "variant", "cpu s", "us/example", "replay s", "replay share",
                          "replay calls", "replayed steps", "accuracy", "stored"])


if __name__ == "__main__":
    main()
