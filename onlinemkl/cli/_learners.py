"""The learners the command line builds (``--learner``, ``--param``) and the kernels (``--kernel``).

Adding a learner is one :class:`LearnerSpec` in :data:`LEARNERS`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib

from ._errors import CommandError


@dataclasses.dataclass(frozen=True)
class LearnerSpec:
    """A learner the command line can build: ``--learner NAME --param KEY=VALUE``.

    ``target`` is ``"module:class"`` of the river estimator.  :attr:`params` maps each constructor
    parameter (except ``kernels``, set with ``--kernel``) to ``(default, help)`` for ``--help``, read
    from the learner's parameter table (``table``, ``"module:attribute"``, imported on first use):
    the first sentence of each row's doc, then the command line's own note on how to write the
    value (``notes``), where it has one.
    """

    name: str
    target: str
    task: str  # "classification" or "regression"
    summary: str
    table: str
    notes: dict = dataclasses.field(default_factory=dict)
    face: str = "river"  # the face whose rows ``table`` gives (the sequence labeller has only its own)

    @functools.cached_property
    def params(self) -> dict:
        module, _, attr = self.table.partition(":")
        rows = getattr(importlib.import_module(module), attr).for_face(self.face)
        return {p.name: (_shown(p.default), " ".join(filter(None, (_first_sentence(p.doc), self.notes.get(p.name)))))
                for p in rows if p.name != "kernels"}

    def load(self):
        module, _, qualname = self.target.partition(":")
        return getattr(importlib.import_module(module), qualname)

    def help(self) -> str:
        import textwrap

        lines = [f"  {self.name}: {self.summary} ({self.task}); kernels with --kernel"]
        for k, (d, h) in self.params.items():
            lines += textwrap.wrap(f"{k}={d}: {h}", 88, initial_indent="    ", subsequent_indent="        ")
        return "\n".join(lines)


def _shown(value) -> str:
    """A default as ``--param`` writes it (:func:`parse_value` reads it back)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _first_sentence(doc: str) -> str:
    """The first sentence of a parameter's doc, on one line, without reST markup (the help's short form)."""
    text = " ".join(doc.replace("``", "").split())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


#: How the command line writes the values of the proximal learners' structured parameters.
_PROXIMAL_NOTES = {
    "explicit_groups": "On the command line: 'all', or names joined by '|' and groups by ';', e.g. a|b;c.",
    "group_weights": "On the command line: numbers joined by '|', one per group, e.g. 1|1|0.5.",
}

LEARNERS = {
    "obscure": LearnerSpec(
        name="obscure",
        target="onlinemkl.river:OBSCUREClassifier",
        task="classification",
        summary="OBSCURE p-norm MKL, online stage 1 then stochastic stage 2 (Orabona, Jie & Caputo 2012)",
        table="onlinemkl.obscure.engine:PARAMS",
    ),
    "proximal": LearnerSpec(
        name="proximal",
        target="onlinemkl.river:ProximalMKLClassifier",
        task="classification",
        summary="online proximal MKL, kernelised FOBOS with group-norm proximal steps (Martins et al. 2011)",
        table="onlinemkl.proximal._setup:CLASSIFIER_PARAMS",
        notes=_PROXIMAL_NOTES,
    ),
    "proximal-regressor": LearnerSpec(
        name="proximal-regressor",
        target="onlinemkl.river:ProximalMKLRegressor",
        task="regression",
        summary="online proximal MKL regression (Martins et al. 2011), targets standardised online",
        table="onlinemkl.proximal._setup:REGRESSOR_PARAMS",
        notes=_PROXIMAL_NOTES,
    ),
}

LEARNERS["sequence"] = LearnerSpec(
    name="sequence",
    target="onlinemkl.sequence.sklearn:SequenceMKLLabeler",
    task="sequence",
    summary="online proximal MKL for sequence labelling, a first-order chain of the tokens' labels "
            "(Martins et al. 2010); reads CoNLL-style files (--format conll), one sequence per example",
    table="onlinemkl.sequence.engine:PARAMS",
    face="sklearn",
    notes={"n_epochs": "The command line learns each sequence once, in order.",
           "random_state": "Unused by the command line.",
           "group_weights": _PROXIMAL_NOTES["group_weights"]},
)

LEARNERS["polymkl"] = LearnerSpec(
    name="polymkl",
    target="onlinemkl.river:PolyMKLRegressor",
    task="regression",
    summary="polynomial-kernel MKL by randomized mirror descent (Afkanpour et al. 2013), mini-batches; "
            "rho as numbers joined by '|', e.g. 1|1|1|1",
    table="onlinemkl.polymkl.engine:PARAMS",
)
LEARNERS["nonlinear"] = LearnerSpec(
    name="nonlinear",
    target="onlinemkl.river:NonlinearKRRRegressor",
    task="regression",
    summary="non-linear kernel combination (sum mu_k K_k)^d with KRR (Cortes et al. 2009), mini-batches",
    table="onlinemkl.nonlinear.engine:PARAMS",
)

DEFAULT_LEARNER = "obscure"


def parse_value(text: str):
    """A ``--param``/``--kernel`` value: none, true/false, an int, a float, else the string.

    >>> [parse_value(v) for v in ("none", "True", "3", "0.5", "1e-3", "auto")]
    [None, True, 3, 0.5, 0.001, 'auto']
    """
    low = text.strip().lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_params(items, spec: LearnerSpec) -> dict:
    """``["budget=500", "p=1.2"]`` -> ``{"budget": 500, "p": 1.2}``; unknown keys are an error."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CommandError(f"--param {item!r}: expected KEY=VALUE, e.g. --param budget=500")
        if key == "kernels":
            raise CommandError("set kernels with --kernel KIND[:key=value,...], not --param kernels=...")
        if key not in spec.params:
            raise CommandError(f"--param {key}: learner {spec.name!r} has no parameter {key!r}; "
                               f"its parameters are {', '.join(spec.params)}")
        out[key] = _TUPLE_PARAMS[key](value) if key in _TUPLE_PARAMS and value.strip().lower() != "none" \
            else parse_value(value)
    return out


def _parse_groups(text: str):
    """``all`` -> ``(None,)`` (one group of every feature); ``a|b;c`` -> ``(("a", "b"), ("c",))``."""
    return tuple(None if g.strip().lower() == "all" else tuple(n.strip() for n in g.split("|") if n.strip())
                 for g in text.split(";") if g.strip())


def _parse_floats(text: str):
    """``1|2.5|3`` -> ``(1.0, 2.5, 3.0)``."""
    try:
        return tuple(float(v) for v in text.split("|"))
    except ValueError:
        raise CommandError(f"{text!r}: expected numbers separated by '|', e.g. 1|0.5|2") from None


#: Parameters whose values are tuples on the command line.
_TUPLE_PARAMS = {"explicit_groups": _parse_groups, "group_weights": _parse_floats, "rho": _parse_floats}


KERNEL_KINDS = {"linear": "Linear", "polynomial": "Polynomial", "poly": "Polynomial", "rbf": "RBF",
                "gaussian": "RBF", "laplacian": "Laplacian", "bspline": "BSpline"}


def parse_kernel(text: str, numbered: bool = False):
    """``KIND[:key=value,...]`` -> a kernel of :mod:`onlinemkl.kernels`.

    KIND is linear, poly(nomial), rbf (gaussian), laplacian or bspline; keys
    are the kernel's fields (``gamma``, ``gamma_scale``, ``degree``, ``offset``,
    ``scale``, ``scale_scale``, ``h``, ``h_scale``, ``normalize``) and ``group``, feature names
    separated by ``|`` (``group=age|height``).  ``numbered``: the features are
    numbers (LIBSVM sources, numbered from 0), so ``group=0|1`` names features 0 and 1.

    >>> parse_kernel("poly:degree=3,normalize=true")
    Polynomial(group=None, normalize=True, degree=3, offset=1.0, scale=1.0, scale_scale=1.0)
    """
    from .. import kernels

    kind, _, rest = text.partition(":")
    name = KERNEL_KINDS.get(kind.strip().lower())
    if name is None:
        raise CommandError(f"--kernel {text!r}: unknown kind {kind!r}; use one of {', '.join(KERNEL_KINDS)}")
    cls = getattr(kernels, name)
    fields = {f.name for f in dataclasses.fields(cls)}
    kw = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in fields:
            raise CommandError(f"--kernel {text!r}: {item!r} is not KEY=VALUE with KEY one of {', '.join(sorted(fields))}")
        if key == "group":
            names = [v for v in value.split("|") if v]
            if numbered:
                try:
                    names = [int(v) for v in names]
                except ValueError:
                    raise CommandError(f"--kernel {text!r}: LIBSVM features are numbers (from 0); "
                                       f"group={value!r} names others") from None
            kw[key] = None if value.strip().lower() == "none" else tuple(names)
        else:
            kw[key] = parse_value(value)
    try:
        return cls(**kw)
    except (TypeError, ValueError) as exc:
        raise CommandError(f"--kernel {text!r}: {exc}") from None
