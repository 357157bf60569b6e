"""Every package the library imports is one that ``pip install .`` brings.

A plain install must run every learner and every command.  This reads every ``import`` in
``onlinemkl/`` and ``streams/`` and checks it against ``pyproject.toml``: a third-party
package imported anywhere must be a base dependency, unless it belongs to an optional extra;
those are imported only inside functions (so that importing the library never needs them)
and only by the modules that serve that extra.
"""

import ast
import pathlib
import re
import sys

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("onlinemkl", "streams")

#: Import names that differ from the distribution's name.
DISTRIBUTION = {"sklearn": "scikit-learn", "yaml": "pyyaml"}

#: Optional packages: the extra that installs each, and the modules allowed to import it.
OPTIONAL = {
    "ray": ("ray", {"onlinemkl/distributed/ray.py", "onlinemkl/cli/_distributed.py"}),
    "matplotlib": ("plot", {"onlinemkl/cli/_evaluate.py"}),
}


def _distribution_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _imports():
    """(module path, top-level name, inside a function?) for every absolute import."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(), filename=rel)
            in_function = set()
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    in_function.update(id(n) for n in ast.walk(node) if n is not node)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.append((rel, name.split(".")[0], id(node) in in_function))
    return found


def _third_party(top: str) -> bool:
    return top not in sys.stdlib_module_names and top not in PACKAGES and top != "__future__"


def test_every_imported_package_is_a_declared_dependency():
    project = _project()
    base = {_distribution_name(r) for r in project["dependencies"]}
    extras = {k: {_distribution_name(r) for r in v} for k, v in project["optional-dependencies"].items()}
    missing = []
    for rel, top, in_function in _imports():
        if not _third_party(top) or top == "llvmlite":  # llvmlite: part of numba, imported by it
            continue
        dist = DISTRIBUTION.get(top, top).lower().replace("_", "-")
        if dist in base:
            continue
        if top in OPTIONAL:
            extra, allowed = OPTIONAL[top]
            if dist in extras.get(extra, set()) and rel in allowed and in_function:
                continue
            missing.append(f"{rel}: {top} (optional: extra {extra!r}, imported inside a function of "
                           f"{sorted(allowed)} only)")
            continue
        missing.append(f"{rel}: {top} ({dist} is not in [project] dependencies)")
    assert not missing, "imports that a plain `pip install .` does not satisfy:\n" + "\n".join(missing)


def test_the_check_sees_the_imports_it_must():
    # The check above reads real imports: the river faces' DataFrame path imports pandas.
    tops = {(rel, top) for rel, top, _ in _imports()}
    assert ("onlinemkl/_river_minibatch.py", "pandas") in tops
    assert any(top == "numba" for _, top in tops)
