"""A griffe extension for the API pages: parameter tables filled in, doctest blocks become code blocks.

A face's ``Parameters`` section is built at import time from its learner's parameter table
(``onlinemkl._params``); griffe reads the source, where the docstring holds the placeholder
``{parameters}``, so the extension takes that docstring from the imported class instead.

numpydoc docstrings may hold ``>>>`` examples outside an ``Examples`` section (in the summary
or a parameter's description); Markdown would read their ``>>>`` as nested block quotes. Each
run of doctest lines (a ``>>>`` line, its ``...`` continuations and the output up to a blank
line) is fenced as ``pycon``, so it renders as a console session wherever it stands.
"""

from __future__ import annotations

import re

import griffe

PROMPT = re.compile(r"^(\s*)>>> ?")
FENCE = re.compile(r"^\s*(```|~~~)")


def fence_doctests(text: str) -> str:
    """``text`` with every doctest block wrapped in a ```` ```pycon ```` fence (fenced ones untouched)."""
    lines, out, i, fenced = text.split("\n"), [], 0, False
    while i < len(lines):
        line = lines[i]
        if FENCE.match(line):
            fenced = not fenced
        m = None if fenced else PROMPT.match(line)
        if not m:
            out.append(line)
            i += 1
            continue
        indent = m.group(1)
        j = i
        while j < len(lines) and lines[j].strip():
            j += 1
        out.append(f"{indent}```pycon")
        out.extend(lines[i:j])
        out.append(f"{indent}```")
        i = j
    return "\n".join(out)


def runtime_object(path: str):
    """The object at dotted ``path``, imported."""
    import importlib

    module, _, name = path.rpartition(".")
    while module:
        try:
            obj = importlib.import_module(module)
            break
        except ImportError:
            module, _, head = module.rpartition(".")
            name = f"{head}.{name}"
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def runtime_init(cls_obj, runtime_cls) -> None:
    """Give griffe's class ``cls_obj`` the ``__init__`` signature the imported class has (built from
    its parameter table, so absent from the source)."""
    import inspect

    params = griffe.Parameters()
    for p in inspect.signature(runtime_cls.__init__).parameters.values():
        default = None if p.default is inspect.Parameter.empty else repr(p.default)
        params.add(griffe.Parameter(p.name, kind=griffe.ParameterKind(p.kind.description), default=default))
    init = griffe.Function("__init__", parameters=params, lineno=cls_obj.lineno, endlineno=cls_obj.lineno,
                           parent=cls_obj)
    cls_obj.set_member("__init__", init)


class DoctestFences(griffe.Extension):
    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None and "{parameters}" in obj.docstring.value:
            import inspect

            runtime = runtime_object(obj.path)
            obj.docstring.value = inspect.getdoc(runtime)
            if isinstance(obj, griffe.Class):
                runtime_init(obj, runtime)
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
