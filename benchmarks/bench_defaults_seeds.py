"""Issue 16, goal 1, over several replay seeds: is a default's lead on a named set more than one seed's luck?

``bench_defaults.py`` runs each default once, with replay's generator at seed 0, and a named
set's prequential lead over river's best model is often a few examples (Phishing: a tie at
875 examples).  This benchmark repeats the one pass of ``StandardScaler() | OBSCUREClassifier()``
and ``StandardScaler() | ProximalMKLClassifier()`` (defaults, the same 20 data sets and the same
split as ``bench_defaults.py``) with the replay generator seeded ``0 .. --seeds - 1``
(``bench_budget_seeds.seeded_model``: the river faces take no ``random_state``).

The references are read from ``results/defaults.json`` (``--reference``): river's most accurate
model's prequential accuracy and the mean-kernel SVC's held-out accuracy of that run.  They are
accuracies of deterministic passes (no timing), so reading them back is the same number a
re-run gives; run ``bench_defaults.py`` first when the data or river changed.  No timing here.

Reported per learner and data set: the prequential accuracy minus river's best, its minimum,
mean and maximum over the seeds and how many seeds reach river's best (``seeds_ge_river``), and
the held-out accuracy over the SVC's (mean and minimum); per learner, the 20-set summary.

Usage::

    python benchmarks/bench_defaults_seeds.py [--seeds 5] [--datasets Phishing,wine] [--name defaults_seeds]
"""

from __future__ import annotations

import os

os.environ.setdefault("ONLINEMKL_BACKGROUND_COMPILE", "0")  # before onlinemkl is imported

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS, markdown_table, single_thread_blas, write_report  # noqa: E402
from bench_budget_seeds import NAMED, PAIRS, one_pass, seeded_model  # noqa: E402
from bench_defaults import DATASETS, split  # noqa: E402


def references(path):
    """``{dataset: (river best's name, its prequential accuracy, the mean-kernel SVC's held-out)}``."""
    rows = json.loads(Path(path).read_text())["rows"]
    return {r["dataset"]: (r["river_best"], r["river_preq"], r["svc_meank_heldout"]) for r in rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--datasets", default=None, help="comma-separated names from bench_defaults.DATASETS")
    ap.add_argument("--reference", default=str(RESULTS / "defaults.json"))
    ap.add_argument("--name", default="defaults_seeds")
    args = ap.parse_args(argv)
    ref = references(args.reference)
    names = args.datasets.split(",") if args.datasets else list(DATASETS)
    missing = [n for n in names if n not in ref]
    if missing:
        raise SystemExit(f"{args.reference} has no row for {missing}: run bench_defaults.py on them first")
    rows, t0 = [], time.process_time()
    with single_thread_blas():
        for dname in names:
            _, train, test = split(DATASETS[dname](), None)
            river_name, river_preq, svc = ref[dname]
            for learner, cls_name in PAIRS.items():
                runs = [one_pass(seeded_model(cls_name, None, seed), train, test) for seed in range(args.seeds)]
                d = np.array([p - river_preq for p, _ in runs])
                h = np.array([held / svc for _, held in runs])
                rows.append({"dataset": dname, "learner": learner, "named": dname in NAMED, "river_best": river_name,
                             "river_preq": river_preq, "preq_vs_river_min": d.min(), "preq_vs_river_mean": d.mean(),
                             "preq_vs_river_max": d.max(), "seeds_ge_river": int((d >= 0).sum()),
                             "heldout_vs_svc_mean": h.mean(), "heldout_vs_svc_min": h.min(),
                             "preq": [p for p, _ in runs], "heldout": [held for _, held in runs]})
            print(f"{dname}: {time.process_time() - t0:.0f} s CPU", flush=True)
    summary = []
    for learner in PAIRS:
        rs = [r for r in rows if r["learner"] == learner]
        named = [r for r in rs if r["named"]]
        summary.append({"learner": learner, "datasets": len(rs), "seeds": args.seeds,
                        "named_cases_ge_river": f"{sum(r['seeds_ge_river'] for r in named)} of "
                                                f"{len(named) * args.seeds}",
                        "named_sets_ge_river_every_seed": sum(r["seeds_ge_river"] == args.seeds for r in named),
                        "all_cases_ge_river": f"{sum(r['seeds_ge_river'] for r in rs)} of {len(rs) * args.seeds}",
                        "mean_preq_vs_river": float(np.mean([r["preq_vs_river_mean"] for r in rs])),
                        "mean_heldout_vs_svc": float(np.mean([r["heldout_vs_svc_mean"] for r in rs])),
                        "worst_heldout_vs_svc": float(min(r["heldout_vs_svc_min"] for r in rs))})
    table_cols = ["dataset", "learner", "river_best", "river_preq", "preq_vs_river_min", "preq_vs_river_mean",
                  "preq_vs_river_max", "seeds_ge_river", "heldout_vs_svc_mean", "heldout_vs_svc_min"]
    notes = ("\n\n".join(__doc__.split("\n\n")[:4]) + f"\n\nData sets: {len(names)}; seeds 0-{args.seeds - 1}; "
             f"references from `{Path(args.reference).name}`; CPU time {time.process_time() - t0:.0f} s.\n\n"
             "## Per data set and learner\n\n" + markdown_table(rows, table_cols) + "\n## Per learner\n")
    write_report(args.name, summary, columns=list(summary[0]), title="Defaults over replay seeds against river's best",
                 notes=notes, extra={"per_dataset": rows})


if __name__ == "__main__":
    main()
