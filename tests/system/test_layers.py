"""The import structure: the contracts of ``[tool.importlinter]`` in pyproject.toml hold, and no
module of ``onlinemkl`` or ``streams`` imports itself through others (no import cycle).

Both read the import graph that grimp builds from the sources, in which an import inside a
function is an edge like any other: a function-level import hides a cycle from Python's import
system, not from the design.  Imports made by name at run time (``importlib.import_module``:
the lazy package namespaces, ``persist``'s class registry, the command line's learner table,
``_lazy.lazy_module``) are not edges.
"""

import pathlib

import grimp
import numpy as np
import pytest
from importlinter import api
from importlinter.cli import lint_imports
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("onlinemkl", "streams")

#: Import cycles that are allowed, each a frozenset of module names with the reason.  None is
#: today; a new entry needs a reason that a move of the shared piece to a lower module cannot meet.
ALLOWED_CYCLES: dict = {}


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def cycles(graph) -> list:
    """The import cycles of ``graph``: its strongly connected components of more than one module
    (a module importing itself is no cycle), each a sorted list of module names."""
    modules = sorted(graph.modules)
    index = {m: i for i, m in enumerate(modules)}
    edges = [(index[a], index[b]) for a in modules for b in graph.find_modules_directly_imported_by(a)]
    rows, cols = np.array(edges, dtype=np.int64).reshape(-1, 2).T
    adjacency = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(modules),) * 2)
    _, labels = connected_components(adjacency, directed=True, connection="strong")
    groups = {}
    for m, label in zip(modules, labels):
        groups.setdefault(label, []).append(m)
    return sorted(g for g in groups.values() if len(g) > 1)


def _describe(graph, cycle) -> str:
    members = set(cycle)
    lines = [f"import cycle of {len(cycle)} modules:"]
    for a in cycle:
        for b in sorted(graph.find_modules_directly_imported_by(a) & members):
            where = ", ".join(f"line {d['line_number']}" for d in graph.get_import_details(importer=a, imported=b))
            lines.append(f"  {a} -> {b} ({where})")
    return "\n".join(lines)


def test_the_contracts_hold(capsys):
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    report = capsys.readouterr().out
    assert code == 0, "lint-imports: a contract of pyproject.toml [tool.importlinter] is broken; move the " \
                      "imported code down to a layer the importer may use (ARCHITECTURE.md):\n" + report


def test_there_is_no_import_cycle(graph):
    found = [c for c in cycles(graph) if frozenset(c) not in ALLOWED_CYCLES]
    assert not found, ("move what the modules of a cycle share into a module that all of them may import:\n"
                       + "\n".join(_describe(graph, c) for c in found))


def test_the_cycle_check_sees_function_level_imports(graph):
    # warmup() imports the learners inside functions; such an edge closes a cycle as any other
    assert graph.direct_import_exists(importer="onlinemkl._compile", imported="onlinemkl.obscure.sklearn")
    closed = grimp.build_graph(*PACKAGES, cache_dir=None)
    closed.add_import(importer="onlinemkl._config", imported="onlinemkl._compile")
    assert any({"onlinemkl._compile", "onlinemkl._config", "onlinemkl.obscure.sklearn"} <= set(c) for c in cycles(closed))


def test_every_module_is_in_a_layer(graph):
    """A new module of onlinemkl (or subpackage) must be placed in a layer, or no contract checks it."""
    config = api.read_configuration(str(ROOT / "pyproject.toml"))
    layers = next(c["layers"] for c in config["contracts_options"] if c["type"] == "layers")
    named = {m.strip() for layer in layers for part in layer.split("|") for m in part.split(":")}
    children = graph.find_children("onlinemkl")
    assert not sorted(children - named), (
        f"modules of onlinemkl in no layer of pyproject.toml [tool.importlinter]: {sorted(children - named)}; "
        "add each to the layer of the modules it imports from and is imported by")
    assert set(PACKAGES) - {"onlinemkl"} <= named
