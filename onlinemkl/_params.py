"""Parameter tables: a learner declares each parameter once.

A learner's table is a :class:`Table` of :class:`Param` rows: name, constraint, default and what the
parameter means.  Everything else is built from it:

* each face's ``__init__`` (:func:`face`), with a real signature, as :mod:`dataclasses` builds
  one, so that scikit-learn's ``get_params``/``clone`` and river's ``clone`` read it as usual;
* the numpydoc ``Parameters`` section of each face's docstring (the API reference renders it);
* the validation of the values (:meth:`Table.validated`), which the engine is built from, with
  errors that name the parameter, the rule and the value.

A row may belong to one face only (river's ``batch_size``, scikit-learn's ``random_state``), and
may give the scikit-learn face another default where a batch ``fit`` needs one (``fit_default``);
the docs then show both defaults.  No other difference between the faces exists.
"""

from __future__ import annotations

import keyword
import math
import numbers
from dataclasses import dataclass, field

import numpy as np

__all__ = ["FACES", "Bool", "Choice", "Int", "Param", "Real", "Rule", "Table", "face", "number"]

FACES = ("river", "sklearn")


class _Same:
    def __repr__(self):
        return "SAME"


#: ``fit_default`` of a row whose scikit-learn default is its river default.
SAME = _Same()


# -- constraints: each checks a value (naming the parameter) and describes itself for the docs ---


@dataclass(frozen=True)
class Int:
    """An integer in ``[low, high]`` (either end open-ended when None); ``none``: None allowed too."""
    low: int | None = None
    high: int | None = None
    none: bool = False

    def check(self, name, value):
        if value is None and self.none:
            return None
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name}={value!r}: expected {self.describe()}")
        v = int(value)
        if (self.low is not None and v < self.low) or (self.high is not None and v > self.high):
            raise ValueError(f"{name}={value!r}: expected {self.describe()}")
        return v

    def describe(self):
        if self.low is not None and self.high is not None:
            text = f"int in {self.low}..{self.high}"
        elif self.low is not None:
            text = f"int >= {self.low}"
        elif self.high is not None:
            text = f"int <= {self.high}"
        else:
            text = "int"
        return text + (" or None" if self.none else "")


@dataclass(frozen=True)
class Real:
    """A finite real number within the bounds (``low_open``/``high_open``: strict); ``none``: None too."""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    none: bool = False

    def check(self, name, value):
        if value is None and self.none:
            return None
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name}={value!r}: expected {self.describe()}")
        v = float(value)
        bad = not math.isfinite(v)
        bad = bad or (self.low is not None and (v < self.low or (self.low_open and v == self.low)))
        bad = bad or (self.high is not None and (v > self.high or (self.high_open and v == self.high)))
        if bad:
            raise ValueError(f"{name}={value!r}: expected {self.describe()}")
        return v

    def describe(self):
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        text = "float " + " and ".join(parts) if parts else "float"
        return text + (" or None" if self.none else "")


@dataclass(frozen=True)
class Choice:
    """One of ``options`` (compared with ``==``, type included: ``1`` is not ``'1'``)."""
    options: tuple

    def check(self, name, value):
        for option in self.options:
            if type(value) is type(option) and value == option:
                return value
        raise ValueError(f"{name}={value!r}: choose one of {', '.join(repr(o) for o in self.options)}")

    def describe(self):
        return "{" + ", ".join(repr(o) for o in self.options) + "}"


@dataclass(frozen=True)
class Bool:
    """``True`` or ``False`` (numpy's booleans too)."""

    def check(self, name, value):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name}={value!r}: expected a bool (True or False)")
        return bool(value)

    def describe(self):
        return "bool"


@dataclass(frozen=True)
class Rule:
    """A rule of its own: ``check(name, value)`` returns the value or raises naming ``name``;
    ``text`` is its description for the docs."""
    text: str
    fn: object = field(compare=False)

    def check(self, name, value):
        return self.fn(name, value)

    def describe(self):
        return self.text


def number(text, **bounds):
    """A :class:`Rule` described by ``text`` that checks a number with
    :func:`onlinemkl._validation.check_number` (``low``, ``high``, ``integer``, ``allow_none``,
    ``hint``, ...), whose messages name the parameter, the rule and the fix."""
    from ._validation import check_number

    def check(name, value):
        return check_number(name, value, **bounds)
    return Rule(text, check)


def either(*constraints):
    """A value that one of ``constraints`` accepts (tried in order); the error lists them all."""
    def check(name, value):
        for c in constraints:
            try:
                return c.check(name, value)
            except (TypeError, ValueError):
                pass
        raise ValueError(f"{name}={value!r}: expected {' or '.join(c.describe() for c in constraints)}")
    return Rule(" or ".join(c.describe() for c in constraints), check)


# -- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One parameter: its name, constraint (``rule``: :class:`Int`, :class:`Real`, :class:`Choice`,
    :class:`Bool`, :class:`Rule`), default, and a doc text (what it means and why its default).
    ``faces``: the faces that take it; ``fit_default``: the scikit-learn face's default when it is
    not the river face's (a batch ``fit`` that needs another)."""
    name: str
    rule: object
    default: object
    doc: str
    faces: tuple = FACES
    fit_default: object = SAME

    def default_for(self, face_name):
        if face_name == "sklearn" and self.fit_default is not SAME:
            return self.fit_default
        return self.default


class Table(tuple):
    """A learner's parameters, in signature order (:class:`Param` rows)."""

    def __new__(cls, *params):
        names = [p.name for p in params]
        bad = [n for n in names if not n.isidentifier() or keyword.iskeyword(n)]
        if bad:
            raise ValueError(f"parameter names must be Python identifiers: {bad}")
        if len(set(names)) != len(names):
            raise ValueError(f"a parameter table names a parameter twice: {names}")
        return super().__new__(cls, params)

    def for_face(self, face_name):
        """The rows ``face_name`` takes, in order."""
        if face_name not in FACES:
            raise ValueError(f"face={face_name!r}: one of {FACES}")
        return tuple(p for p in self if face_name in p.faces)

    def __getitem__(self, key):
        if isinstance(key, str):
            for p in self:
                if p.name == key:
                    return p
            raise KeyError(key)
        return super().__getitem__(key)

    def defaults(self, face_name):
        return {p.name: p.default_for(face_name) for p in self.for_face(face_name)}

    def validated(self, obj, face_name=None):
        """``{name: value}`` of ``obj``'s parameters (its attributes), each checked by its rule: the
        rows of ``face_name``, or with None the rows every face takes (what the engine is built from)."""
        rows = self.for_face(face_name) if face_name is not None else [p for p in self if set(FACES) <= set(p.faces)]
        return {p.name: p.rule.check(p.name, getattr(obj, p.name)) for p in rows}

    def doc(self, face_name):
        """The numpydoc ``Parameters`` section of ``face_name``'s docstring."""
        lines = ["Parameters", "----------"]
        for p in self.for_face(face_name):
            default = p.default_for(face_name)
            other = None
            if p.fit_default is not SAME and set(FACES) <= set(p.faces):
                other = p.default if face_name == "sklearn" else p.fit_default
            head = f"{p.name} : {p.rule.describe()}, default={default!r}"
            lines.append(head)
            text = p.doc
            if other is not None:
                where = "the river face" if face_name == "sklearn" else "the scikit-learn face (batch ``fit``)"
                text += f"\nDefault on {where}: ``{other!r}``."
            lines.extend("    " + line if line else "" for line in text.splitlines())
        return "\n".join(lines)


def face(table, face_name, setup=None):
    """Class decorator: ``__init__`` from ``table``'s rows for ``face_name`` (each argument kept as the
    attribute of its name, then ``self.<setup>()`` if given) and the docstring's ``{parameters}``
    filled with :meth:`Table.doc`.  The class records the table as ``_params``."""
    rows = table.for_face(face_name)

    def decorate(cls):
        defaults = {p.name: p.default_for(face_name) for p in rows}
        args = ", ".join(f"{p.name}=_defaults[{p.name!r}]" for p in rows)
        body = "".join(f"    self.{p.name} = {p.name}\n" for p in rows) or "    pass\n"
        if setup is not None:
            body += f"    self.{setup}()\n"
        src = f"def __init__(self, {args}):\n{body}" if rows else f"def __init__(self):\n{body}"
        namespace = {"_defaults": defaults}
        exec(src, namespace)  # noqa: S102 - the source is built from the table's names only
        init = namespace["__init__"]
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        init.__module__ = cls.__module__
        init.__doc__ = f"See :class:`{cls.__name__}`."
        cls.__init__ = init
        cls._params = table
        if cls.__doc__ and "{parameters}" in cls.__doc__:
            indent = _indent_of(cls.__doc__, "{parameters}")
            text = "\n".join(indent + line if line else "" for line in table.doc(face_name).splitlines())
            cls.__doc__ = cls.__doc__.replace(indent + "{parameters}", text)
        return cls

    return decorate


def _indent_of(doc, marker):
    for line in doc.splitlines():
        if line.strip() == marker:
            return line[: len(line) - len(line.lstrip())]
    return ""
