"""Compilation ahead of the stream: onlinemkl._compile.warmup, `onlinemkl warmup`, and the
streaming commands' compile step (outside the throughput clock, reported apart).

No timing thresholds: where the clock matters, a fake compilation moves a fake clock.
"""

import re
import time

import pytest

from onlinemkl import _compile, cli
from onlinemkl.cli._warmup import warmup_name

from test_cli import run, write_csv


def test_warmup_command_compiles_one_learner_and_prints_it(capsys):
    code, out, _ = run(capsys, "warmup", "--learner", "obscure", "--no-progress")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "obscure" in rows and "total" in rows and "cache:" in rows
    assert float(rows["obscure"].split()[1]) >= 0.0
    assert "proximal" not in rows  # only what was asked for


def test_warmup_rejects_an_unknown_learner(capsys):
    with pytest.raises(ValueError, match="unknown learner 'svm'.*obscure"):
        _compile.warmup(["svm"], progress=False)
    with pytest.raises(SystemExit) as exc:
        cli.main(["warmup", "--learner", "svm"])
    assert exc.value.code == 2
    assert "invalid choice: 'svm'" in capsys.readouterr().err


def test_every_command_learner_has_a_warmup():
    for name, spec in cli.LEARNERS.items():
        assert name in _compile.WARMUPS
        assert warmup_name(spec.load()()) == name


@pytest.fixture
def fake_compile(monkeypatch):
    """A compilation that 'takes' 1000 s on the clock the commands read, and takes no real time.

    Had a command started its throughput clock before compiling, its elapsed time would
    include those 1000 s, whatever the machine's speed.
    """
    real = time.perf_counter
    state = {"offset": 0.0, "calls": []}
    monkeypatch.setattr(time, "perf_counter", lambda: real() + state["offset"])

    def warmup(learners=None, progress=True, budget=None):
        state["calls"].append(list(learners))
        state.setdefault("budget", []).append(budget)
        state["offset"] += 1000.0
        return {name: 1000.0 for name in learners}

    monkeypatch.setattr(_compile, "warmup", warmup)
    return state


def test_demo_reports_throughput_and_compile_time_apart(capsys, fake_compile):
    code, out, _ = run(capsys, "demo", "--budget", "50", "--no-progress")
    assert code == 0
    assert fake_compile["calls"] == [["obscure"]]
    assert fake_compile["budget"] == [True]  # the variant with the eviction code, and only that one
    assert re.search(r"^compile seconds\s*: 1000\.0 s \(first run only", out, re.M), out
    rate = re.search(r"^examples per second\s*: ([\d,]+) \(", out, re.M)
    assert rate, out
    # 2310 examples: with the compilation inside the clock the rate would be at most 2310/1000.
    assert float(rate.group(1).replace(",", "")) > 2310 / 1000


def test_demo_without_a_budget_compiles_only_the_variant_without_eviction(capsys, fake_compile):
    code, _, _ = run(capsys, "demo", "--no-progress")
    assert code == 0
    assert fake_compile["calls"] == [["obscure"]] and fake_compile["budget"] == [False]


def test_train_compiles_before_the_clock_starts(capsys, tmp_path, fake_compile):
    src = write_csv(tmp_path / "d.csv", 100)
    code, out, _ = run(capsys, "train", src, "--drop", "id", "-p", "budget=20", "--no-progress")
    assert code == 0
    assert fake_compile["calls"] == [["obscure"]]
    seconds = float(re.search(r"^seconds\s*: ([\d.]+) \(", out, re.M).group(1))
    assert seconds < 1000, out  # the compilation's 1000 s are not in it
    assert re.search(r"^compile seconds\s*: 1000\.0 s", out, re.M), out


def test_evaluate_and_predict_compile_the_models_learner(capsys, tmp_path, fake_compile):
    src = write_csv(tmp_path / "d.csv", 60)
    model = tmp_path / "m.omkl"
    assert cli.main(["train", str(src), "--drop", "id", "--learner", "proximal", "--save", str(model),
                     "--no-progress"]) == 0
    assert cli.main(["evaluate", str(src), "--drop", "id", "--no-progress"]) == 0
    assert cli.main(["predict", str(model), str(src), "--drop", "id", "--output", str(tmp_path / "p.txt")]) == 0
    assert fake_compile["calls"] == [["proximal"], ["obscure"], ["proximal"]]
    out, err = capsys.readouterr()
    assert re.search(r"^compile seconds\s*: 1000\.0 s", out, re.M)  # train, evaluate
    assert "onlinemkl predict: compile seconds: 1000.0 s" in err  # predict: stdout holds predictions


def test_proximal_warmup_takes_replay_steps(monkeypatch):
    """Proximal MKL's replayed steps take many rows in one call (``fobos_run``, a signature of its
    own if the rows' layout differed): the warmup's stream must take some, so that a user's
    first replay never compiles mid-stream."""
    from onlinemkl.proximal.engine import ProximalEngine

    calls = []
    replay_steps = ProximalEngine.replay_steps
    monkeypatch.setattr(ProximalEngine, "replay_steps", lambda self, steps: (calls.append(self.buf.budget),
                                                                             replay_steps(self, steps)))
    _compile.WARMUPS["proximal"][1]()
    assert None in calls and _compile.N_EXAMPLES // 2 in calls  # both variants: without a budget and with one


@pytest.mark.parametrize("step, evicts", [("onlinemkl.obscure._step:obscure_step", "make_room"),
                                          ("onlinemkl.proximal._step:fobos_step", "choose_dense_evictee")])
@pytest.mark.parametrize("budgeted", [False, True])
def test_the_eviction_code_is_compiled_only_for_a_learner_with_a_budget(step, evicts, budgeted):
    """A step's eviction code (more passes over the buffer and a projection: a fifth of a cold
    compilation) is pruned from the variant a learner without a budget compiles: Numba's branch
    pruning on the ``eviction is not None`` test of the step's last argument, run here on the
    step's untyped IR as the compiler runs it (both steps are inlined into their entry points,
    where the compiler prunes again after inlining, on the entry point's argument)."""
    import importlib

    from numba import types
    from numba.core import analysis, compiler, ir

    module, name = step.split(":")
    func = getattr(importlib.import_module(module), name).py_func
    func_ir = compiler.run_frontend(func)
    n_args = func.__code__.co_argcount
    eviction = types.int64 if budgeted else types.none
    analysis.dead_branch_prune(func_ir, (types.int64,) * (n_args - 1) + (eviction,))
    names = {stmt.value.name for block in func_ir.blocks.values() for stmt in block.body
             if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Global)}
    assert (evicts in names) is budgeted


def test_proximal_steps_and_replay_compile_one_entry_point():
    """A new example's step and replay's steps go through one compiled function (``fobos_run``,
    the step inlined into it): Numba re-optimises a function's whole call tree in each compiled
    caller, so a second entry point over the same step cost a second optimisation of all of it.
    Both calls must also type alike, or the one function would compile twice."""
    from numba import types

    from onlinemkl.proximal import _step as fobos

    _compile.WARMUPS["proximal"][1](True)  # with a budget: single steps, replay, predictions
    variants = [sig for sig in fobos.fobos_run.signatures if sig[-1] == types.int64]
    assert len(variants) == 1
    assert not fobos.fobos_step.signatures  # inlined, never compiled on its own
