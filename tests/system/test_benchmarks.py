"""The benchmark suite's layout: one script per question, each with one committed result.

No benchmark runs here (they take minutes and measure the machine); these checks read the
scripts' source and the results directory, and exercise the shared report writer on a temporary
directory, so they take well under a second.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
RESULTS = BENCH / "results"
SCRIPTS = sorted(BENCH.glob("bench_*.py"))
STEMS = [s.stem.removeprefix("bench_") for s in SCRIPTS]


def _common():
    sys.path.insert(0, str(BENCH))
    try:
        import _common
    finally:
        sys.path.remove(str(BENCH))
    return _common


def _committed_results():
    """The files under benchmarks/results that git tracks (the working tree's, when git is missing)."""
    try:
        out = subprocess.run(["git", "-C", str(BENCH.parent), "ls-files", "benchmarks/results"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return sorted(p.name for p in RESULTS.iterdir() if ".quick." not in p.name)
    return sorted(Path(line).name for line in out.splitlines() if line.strip())


def test_bench_one_committed_result_per_script():
    """Exactly ``<stem>.json`` and ``<stem>.md`` per benchmark script (and at most one figure,
    ``<stem>.png``), plus SUMMARY.md: no variants (``_quick``, ``_before``, ...), no results of
    scripts that are gone."""
    expected = sorted({f"{s}.json" for s in STEMS} | {f"{s}.md" for s in STEMS} | {"SUMMARY.md"})
    committed = _committed_results()
    figures = [f for f in committed if f.endswith(".png")]
    assert all(f.removesuffix(".png") in STEMS for f in figures), figures
    assert [f for f in committed if not f.endswith(".png")] == expected


@pytest.mark.parametrize("script", SCRIPTS, ids=STEMS)
def test_bench_script_says_its_question_and_writes_its_stem(script):
    """A module docstring with the question, how to read the result and the usage; ``--quick``;
    a report written under the script's own stem."""
    src = script.read_text()
    doc = ast.get_docstring(ast.parse(src))
    assert doc and "How to read" in doc and "Usage::" in doc, f"{script.name}: docstring incomplete"
    assert "--quick" in src, f"{script.name}: no --quick"
    stem = script.stem.removeprefix("bench_")
    names = {node.args[0].value for node in ast.walk(ast.parse(src))
             if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "write_report"
             and node.args and isinstance(node.args[0], ast.Constant)}
    assert names == {stem}, f"{script.name} writes reports {names}, not {stem!r}"


@pytest.mark.parametrize("stem", STEMS)
def test_bench_committed_report_is_self_contained(stem):
    """Each committed Markdown report starts with a one-line title and the date and machine it was
    measured on, and holds a table; its JSON names the benchmark."""
    md = (RESULTS / f"{stem}.md").read_text().splitlines()
    assert md[0].startswith("# ") and md[1] == "" and md[2].startswith("Measured ")
    assert any(line.startswith("|---") for line in md)
    assert json.loads((RESULTS / f"{stem}.json").read_text())["benchmark"] == stem


def test_bench_quick_report_never_overwrites_the_full_one(tmp_path):
    """A quick run writes ``<name>.quick.*`` (git-ignored), labelled as such in its title and its
    first line; a full run writes ``<name>.*``."""
    common = _common()
    full = common.write_report("x", [{"a": 1.0}], title="T", out_dir=tmp_path)
    quick = common.write_report("x", [{"a": 2.0}], title="T", quick=True, out_dir=tmp_path)
    assert [p.name for p in full] == ["x.json", "x.md"]
    assert [p.name for p in quick] == ["x.quick.json", "x.quick.md"]
    assert json.loads(full[0].read_text())["rows"] == [{"a": 1.0}]
    head = quick[1].read_text().splitlines()
    assert head[0] == "# T (quick run)" and "Quick or partial run" in head[2]
    ignored = subprocess.run(["git", "-C", str(BENCH.parent), "check-ignore", "-q", "benchmarks/results/x.quick.md"])
    assert ignored.returncode == 0


def test_bench_run_all_reports_by_stem():
    sys.path.insert(0, str(BENCH))
    try:
        import run_all
    finally:
        sys.path.remove(str(BENCH))
    assert [run_all.stem(s) for s in run_all.discover("peers,bench_server")] == ["peers", "server"]
    assert run_all.report_of(BENCH / "bench_peers.py", True).name == "peers.quick.md"
    with pytest.raises(SystemExit, match="unknown benchmark.*nope"):
        run_all.discover("nope")


def test_bench_peers_regression_goal():
    """The regression goal of ``bench_peers.py``: river best's MAE or lower, at 3x its throughput, or
    within 5x its time where river's best is its linear model."""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_peers as bp
    finally:
        sys.path.remove(str(BENCH))
    ref = {"preq_mae": 10.0, "cpu_ex_per_s": 1000.0}

    def met(mae, ex_per_s, label):
        return bp.regression_goal_met({"preq_mae": mae, "cpu_ex_per_s": ex_per_s}, ref, label)

    linear, other = "river LinearRegression", "river HATRegressor"
    assert met(10.0, 200.0, linear) and not met(10.0, 199.0, linear) and not met(10.01, 5000.0, linear)
    assert met(9.0, 3000.0, other) and not met(9.0, 2999.0, other) and not met(10.01, 9000.0, other)


def test_bench_markdown_cells_keep_their_pipes():
    """A cell holding ``|`` (a river pipeline's name) stays one cell."""
    table = _common().markdown_table([{"case": "StandardScaler | OBSCURE", "x": 1.0}])
    assert table.splitlines()[2] == r"| StandardScaler \| OBSCURE | 1 |"


def test_bench_sequence_merge_keeps_rows_of_the_same_protocol_only():
    """``bench_sequence.py --rows ... --merge`` keeps the current report's other rows (in the
    table's order, each stamped with when it was measured) and refuses a report of another
    protocol, naming the setting and its option."""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_sequence as bs
    finally:
        sys.path.remove(str(BENCH))
    names = ["A", "B", "C"]
    settings = {"folds": [0, 1], "C": [16.0], "eta0": list(bs.ETA0S), "epochs": 20, "select_epochs": 5,
                "test_words": 1000}
    previous = {"machine": {"date": "earlier"}, "settings": {k: v for k, v in settings.items() if k != "eta0"},
                "rows": [{"kernel": "A", "acc_mean": 0.1}, {"kernel": "B", "acc_mean": 0.2},
                         {"kernel": "CRF peer", "acc_mean": 0.3}]}
    ran = [{"kernel": "C", "acc_mean": 0.4}, {"kernel": "B", "acc_mean": 0.5}]
    rows, kept = bs.merge_previous(previous, "old.json", ran, settings, names, "now")
    assert [(r["kernel"], r["acc_mean"], r["measured"]) for r in rows] == [("A", 0.1, "earlier"), ("B", 0.5, "now"),
                                                                          ("C", 0.4, "now")]
    assert kept == ["A"]
    with pytest.raises(SystemExit, match="test_words=500.*--test-words"):
        bs.merge_previous(previous, "old.json", [], {**settings, "test_words": 500}, names, "now")
    with pytest.raises(SystemExit, match="eta0.*--eta0"):
        bs.merge_previous(previous, "old.json", [], {**settings, "eta0": [1.0]}, names, "now")
    with pytest.raises(SystemExit, match="no earlier report"):
        bs.merge_previous(None, "old.json", [], settings, names, "now")
