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
    parameter (except ``kernels``, set with ``--kernel``) to ``(default, help)`` for ``--help``: read
    from the learner's parameter table (``table``, ``"module:attribute"``, imported on first use),
    or given as ``given_params`` for a learner without one (a test checks them against the class).
    """

    name: str
    target: str
    task: str  # "classification" or "regression"
    summary: str
    given_params: dict = dataclasses.field(default_factory=dict)
    table: str = ""

    @functools.cached_property
    def params(self) -> dict:
        if not self.table:
            return self.given_params
        module, _, attr = self.table.partition(":")
        rows = getattr(importlib.import_module(module), attr).for_face("river")
        return {p.name: (_shown(p.default), _first_sentence(p.doc)) for p in rows if p.name != "kernels"}

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


#: The dict-input learners' cap on feature names (the per-example ones can also hash them).
_FEATURE_CAP = {"max_features": ("100000", "at most this many features: an example bringing new names past it "
                                           "is rejected (none: no cap)")}
_FEATURE_HASHING = {"feature_hashing": ("none", "hash feature names into this many fixed columns (for streams "
                                                "whose names never stop changing)")}

_REPLAY_SEED = {"seed": ("none", "seed of the replay draws, an int (none: 0, so that a run repeats itself)")}

#: The per-example learners' own standardisation of raw inputs.
_SCALE = {"scale": ("auto", "standardise the inputs inside the learner: auto (every feature, once a learnt value "
                            "shows the inputs are not standardised; standardised inputs untouched), true (always) "
                            "or false (never)")}

LEARNERS = {
    "obscure": LearnerSpec(
        name="obscure",
        target="onlinemkl.river:OBSCUREClassifier",
        task="classification",
        summary="OBSCURE p-norm MKL, online stage 1 then stochastic stage 2 (Orabona, Jie & Caputo 2012)",
        given_params={
            "p": ("none", "group norm in (1, 2]; near 1: sparse kernel weights; none: q = 2 ln F, p = q/(q-1)"),
            "lam": ("none", "regularisation lambda > 0; none: 1/(C N), N the examples seen when stage 2 starts"),
            "C": ("1.0", "used when lam is none"),
            "eta": ("none", "stage-1 step > 0; none: F^(-2/q)"),
            "switch_after": ("auto", "stage 2 starts after this many examples, 'auto' (once stage-1 updates stop), "
                                     "or none (stage 1 only)"),
            "pegasos": ("false", "stage 2 with s_t = 0 (Pegasos-MKL)"),
            "budget": ("none", "maximum stored examples (none: unbounded, memory grows with the updates)"),
            "eviction": ("least_impact", "'least_impact' or 'oldest' (a sliding window, for drifting streams): what "
                                         "a full buffer drops, its contribution first projected onto a stored row"),
            "loss": ("multiclass_hinge", "'multiclass_hinge', or 'hinge' (binary, True/False labels)"),
            "replay": ("auto", "after a margin error, this many extra steps on past examples (0: off; "
                               "auto: 5, 10 once more than three classes are known, 0 with a budget and "
                               "eviction oldest; with a budget and more than two classes, on stored examples "
                               "while the buffer has room, "
                               "from the reservoir once it is full)"),
            "replay_window": ("5000", "past examples kept for replay (a uniform sample of the stream)"),
            **_FEATURE_CAP, **_FEATURE_HASHING, **_REPLAY_SEED, **_SCALE,
        },
    ),
}


_PROXIMAL_COMMON = {
    "regularizer": ("sq_l21", "group regulariser: sq_l21 (MKL), weighted_sq_l1, l21 (group lasso), "
                              "sparse_group_lasso, nonsparse (0.5 sum ||theta_k||^q), elastic_net, none"),
    "lam": (None, "regularisation strength >= 0"),
    "q": ("1.5", "the exponent of regularizer=nonsparse, in (1, 2]"),
    "sigma": ("1.0", "the squared l2 weight of regularizer=elastic_net, and the 1/(sigma t) step schedule"),
    "l1_ratio": ("1.0", "within-group l1 weight (relative to lam) of regularizer=sparse_group_lasso"),
    "group_weights": ("none", "per-group weights of regularizer=weighted_sq_l1, one per group: kernels then explicit "
                              "groups, e.g. 1|1|0.5"),
    "schedule": ("invsqrt", "step sizes: invsqrt (eta0/sqrt(t)), constant (eta0), strongly_convex (1/(sigma t))"),
    "eta0": (None, "initial step size > 0 ('auto', classifier: 1.0, or 4.0 past three classes)"),
    "gamma": (None, "projection radius > 0, 'auto' (appendix E, where it applies) or none"),
    "average": (None, "predict with the running average of the iterates (no history stored)"),
    "budget": ("none", "maximum stored examples (none: unbounded, memory grows with the updates)"),
    "eviction": ("least_impact", "'least_impact' or 'oldest' (a sliding window, for drifting streams): what a full "
                                 "buffer drops"),
    "replay": (None, "after a positive loss, this many extra steps on past examples (0: off; auto: 5, or 0 "
                     "with a budget and eviction oldest; with a budget, once the buffer is full)"),
    "replay_window": ("5000", "past examples kept for replay (a uniform sample of the stream)"),
}


def _proximal_params(cls_defaults: dict, head: dict, tail: dict | None = None) -> dict:
    out = dict(head)
    for k, (d, h) in _PROXIMAL_COMMON.items():
        out[k] = (cls_defaults[k] if d is None else d, h)
    return {**out, **_FEATURE_CAP, **_FEATURE_HASHING, **(tail or {})}


LEARNERS["proximal"] = LearnerSpec(
    name="proximal",
    target="onlinemkl.river:ProximalMKLClassifier",
    task="classification",
    summary="online proximal MKL, kernelised FOBOS with group-norm proximal steps (Martins et al. 2011)",
    given_params=_proximal_params(
        {"lam": "1e-4", "eta0": "auto", "gamma": "auto", "average": "false", "replay": "auto"},
        {"explicit_groups": ("none", "explicit linear feature groups next to the kernels: 'all' or names "
                                     "joined by '|', groups by ';', e.g. a|b;c"),
         "loss": ("hinge", "'hinge' (Crammer-Singer) or 'logistic' (multinomial)")},
        {"group_steps": ("norms", "how a step is split among the kernels: 'norms' (a larger share to the kernels "
                                  "with larger norms, the same total step) or 'equal'"), **_REPLAY_SEED, **_SCALE}),
)
LEARNERS["proximal-regressor"] = LearnerSpec(
    name="proximal-regressor",
    target="onlinemkl.river:ProximalMKLRegressor",
    task="regression",
    summary="online proximal MKL regression (Martins et al. 2011), targets standardised online",
    given_params=_proximal_params(
        {"lam": "0.001", "eta0": "0.3", "gamma": "none", "average": "false", "replay": "0"},
        {"explicit_groups": ("none", "explicit linear feature groups next to the kernels: 'all' or names "
                                     "joined by '|', groups by ';', e.g. a|b;c"),
         "loss": ("squared", "'squared' or 'epsilon_insensitive'"),
         "epsilon": ("0.1", "the width of loss=epsilon_insensitive (in standardised target units)")},
        {"group_steps": ("norms", "how a step is split among the kernels: 'norms' (a larger share to the kernels "
                                  "with larger norms, the same total step) or 'equal'"), **_REPLAY_SEED, **_SCALE}),
)

LEARNERS["polymkl"] = LearnerSpec(
    name="polymkl",
    target="onlinemkl.river:PolyMKLRegressor",
    task="regression",
    summary="polynomial-kernel MKL by randomized mirror descent (Afkanpour et al. 2013), mini-batches; "
            "rho as numbers joined by '|', e.g. 1|1|1|1",
    table="onlinemkl.engines.polymkl:PARAMS",
)
LEARNERS["nonlinear"] = LearnerSpec(
    name="nonlinear",
    target="onlinemkl.river:NonlinearKRRRegressor",
    task="regression",
    summary="non-linear kernel combination (sum mu_k K_k)^d with KRR (Cortes et al. 2009), mini-batches",
    table="onlinemkl.engines.nonlinear:PARAMS",
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
