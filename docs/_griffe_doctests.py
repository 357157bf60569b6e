"""A griffe extension for the API pages: doctest blocks become code blocks.

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


class DoctestFences(griffe.Extension):
    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
