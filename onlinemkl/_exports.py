"""Public names imported on first use (PEP 562), for the packages that name a learner's classes.

``onlinemkl``, ``onlinemkl.river`` and each learner's folder list their public names and the module
that defines each; a name is imported when first read, so a process pays only for what it uses
(the river faces never import scikit-learn, an engine imports neither face).
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: dict, names: list):
    """``(__getattr__, __dir__)`` for the package named ``package``: ``where`` maps each public
    name to the module defining it (relative to the package, or absolute); ``names`` is the
    package's ``__all__``.  A name read once is kept in the package, so later reads skip this."""

    def __getattr__(name):
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
