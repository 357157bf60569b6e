"""What ``onlinemkl.river.Guard`` costs at the head of a river pipeline.

One prequential pass (``predict_proba_one`` then ``learn_one`` per example) over river's Phishing
stream through ``StandardScaler() | OBSCUREClassifier(budget=200)``, with and without ``Guard()``
in front, the two alternating ``--rounds`` times in one process, timed in CPU seconds
(``time.process_time``; the machine may be shared); the report gives the best pass of each, their
ratio, and the Guard's own checks per example (``learn_one`` + ``transform_one`` when learning,
``transform_one`` when predicting) timed alone.

Usage::

    python benchmarks/bench_guard.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import time

from river import datasets, preprocessing

from onlinemkl.river import Guard, OBSCUREClassifier


def one_pass(data, guard: bool) -> float:
    model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=200)
    if guard:
        model = Guard() | model
    t = time.process_time()
    for x, y in data:
        model.predict_proba_one(x)
        model.learn_one(x, y)
    return time.process_time() - t


def guard_checks(data, reps: int = 20) -> float:
    g = Guard()
    t = time.process_time()
    for _ in range(reps):
        for x, _ in data:
            g.transform_one(x)
            g.learn_one(x)
            g.transform_one(x)
    return (time.process_time() - t) / (reps * len(data))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    data = list(datasets.Phishing())
    one_pass(data, False), one_pass(data, True)  # compile, warm caches
    plain, guarded = [], []
    for _ in range(args.rounds):
        plain.append(one_pass(data, False))
        guarded.append(one_pass(data, True))
    n = len(data)
    a, b = min(plain), min(guarded)
    print(f"{n} examples, best of {args.rounds} interleaved passes (CPU s): without Guard {a:.3f} "
          f"({a / n * 1e6:.0f} us/example), with Guard {b:.3f} ({b / n * 1e6:.0f} us/example), ratio {b / a:.3f}")
    print(f"the Guard's three checks per example alone: {guard_checks(data) * 1e6:.2f} us")


if __name__ == "__main__":
    main()
