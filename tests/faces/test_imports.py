"""Lazy package namespaces: a process imports only the learners it uses."""

import subprocess
import sys

import pytest

import onlinemkl
import onlinemkl.river


def _run(code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_river_obscure_does_not_import_sklearn():
    # (river.preprocessing itself imports part of scikit-learn; the adapter adds nothing)
    out = _run(
        "import sys\n"
        "from onlinemkl.river import OBSCUREClassifier\n"
        "m = OBSCUREClassifier(switch_after=None)\n"
        "for i in range(20):\n"
        "    m.learn_one({'a': float(i % 3), 'b': -float(i % 2)}, i % 2)\n"
        "print(m.predict_one({'a': 1.0, 'b': 0.0}), 'sklearn' in sys.modules)\n"
    )
    assert out.split() == [out.split()[0], "False"] and out.split()[0] in ("0", "1")


def test_top_level_names_resolve_lazily_and_once():
    out = _run(
        "import sys, onlinemkl\n"
        "print('onlinemkl.proximal' in sys.modules)\n"
        "C = onlinemkl.ProximalMKLClassifier\n"
        "print('onlinemkl.proximal' in sys.modules, C is onlinemkl.ProximalMKLClassifier)\n"
    )
    assert out.split() == ["False", "True", "True"]


@pytest.mark.parametrize("module", [onlinemkl, onlinemkl.river])
def test_every_public_name_resolves_and_unknown_names_raise(module):
    for name in module.__all__:
        assert getattr(module, name) is not None
        assert name in dir(module)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchLearner'"):
        module.NoSuchLearner
    from onlinemkl import OBSCUREClassifier  # the from-import form

    assert OBSCUREClassifier.__name__ == "OBSCUREClassifier"


ADAPTERS = {
    "OBSCUREClassifier": ("obscure", "m.learn_one(x, i % 2)"),
    "ProximalMKLClassifier": ("proximal", "m.learn_one(x, i % 2)"),
    "ProximalMKLRegressor": ("proximal", "m.learn_one(x, float(i))"),
    "PolyMKLRegressor": ("polymkl", "m.learn_one(x, float(i))"),
    "NonlinearKRRRegressor": ("nonlinear", "m.learn_one(x, float(i))"),
}


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_river_adapters_import_neither_sklearn_nor_other_learners(name):
    """Each river adapter, learning and predicting, loads no scikit-learn and no other learner's engine
    or adapter (river itself imports part of scikit-learn only through river.preprocessing)."""
    own, learn = ADAPTERS[name]
    out = _run(
        "import sys\n"
        f"from onlinemkl.river import {name}\n"
        f"m = {name}()\n"
        "for i in range(40):\n"
        "    x = {'a': float(i % 3), 'b': -float(i % 2)}\n"
        f"    {learn}\n"
        "m.predict_one({'a': 1.0, 'b': 0.0})\n"
        "print(sorted(k for k in sys.modules if k == 'sklearn' or k.startswith(('sklearn.', 'onlinemkl.'))))\n"
    )
    loaded = eval(out)
    assert not [m for m in loaded if m.startswith("sklearn")]
    learners = {"obscure", "proximal", "sequence", "polymkl", "nonlinear"}
    folders = {m.split(".")[1] for m in loaded if m.count(".") >= 1 and m.split(".")[1] in learners}
    assert folders == {own}, folders  # its own learner's folder, no other learner's
    assert not [m for m in loaded if m.endswith(".sklearn")], loaded  # no scikit-learn face
