"""The ``onlinemkl`` command.

Commands (``onlinemkl COMMAND --help`` explains every option and its default):

``demo``
    A prequential (test-then-train) pass of OBSCURE over river's bundled
    ImageSegments stream (no download): accuracy, throughput, stored examples,
    kernel weights.
``train SOURCE``
    Learn from a stream (a file, ``-`` for standard input, or ``tcp://host:port``)
    and save the model; ``--checkpoint-every N`` writes atomic checkpoints and
    ``--resume`` continues an interrupted run where its last checkpoint stopped.
``evaluate SOURCE``
    Prequential evaluation with river metrics, a progress bar, a final table and
    ``--plot out.png`` (the learning curve and the kernel weights over time).
``predict MODEL SOURCE``
    Predictions of a saved model, one line per example.
``serve``
    A TCP server answering JSON lines with predictions (and learning from
    labelled lines); see :mod:`onlinemkl.serve`.
``info MODEL``
    What a saved model is: learner, parameters, classes, stored examples,
    kernel weights.

A typical session (not executed here)::

    onlinemkl train data.csv --target label --kernel rbf:gamma_scale=1 --kernel linear \\
        --param budget=2000 --save model.omkl --checkpoint-every 10000 --resume
    onlinemkl info model.omkl
    onlinemkl predict model.omkl new.csv --output predictions.txt
    onlinemkl serve --model model.omkl --port 8765 --save model.omkl

The command is also callable from Python:

>>> from onlinemkl.cli import main, parse_kernel
>>> parse_kernel("rbf:gamma=0.5,group=a|b")
RBF(group=('a', 'b'), normalize=False, gamma=0.5, gamma_scale=1.0)
>>> main(["info", "/nonexistent/model.omkl"])
2

Every command on a small in-memory data set (a temporary csv file):

>>> import contextlib, io, json, os, tempfile
>>> tmp = tempfile.mkdtemp()
>>> csv = os.path.join(tmp, "xor.csv"); model = os.path.join(tmp, "m.omkl")
>>> with open(csv, "w") as f:
...     _ = f.write("a,b,label\\n" + "".join(f"{(i % 7) / 3 - 1:.3f},{(i % 5) / 2 - 1:.3f},"
...                                       f"{'pos' if ((i % 7) / 3 - 1) * ((i % 5) / 2 - 1) > 0 else 'neg'}\\n"
...                                       for i in range(200)))
>>> out = io.StringIO()
>>> with contextlib.redirect_stdout(out):
...     codes = [main(["train", csv, "--target", "label", "--save", model, "--no-progress"]),
...              main(["evaluate", csv, "--target", "label", "--no-progress", "-p", "budget=50"]),
...              main(["predict", model, csv, "--target", "label", "--output", os.path.join(tmp, "p.txt")])]
>>> codes
[0, 0, 0]
>>> info = io.StringIO()
>>> with contextlib.redirect_stdout(info):
...     code = main(["info", model, "--json"])
>>> code
0
>>> sorted(json.loads(info.getvalue())["classes"])
['neg', 'pos']
>>> len(open(os.path.join(tmp, "p.txt")).read().split())
200

Learners are entries of :data:`LEARNERS`; adding one is one
:class:`LearnerSpec` (its river class, its task and its parameters' help).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import signal
import sys
import time
from pathlib import Path

#: Model files written by the command carry this under ``meta["extra"]["train"]``.
TRAIN_KEY = "train"
SOURCE_HELP = ("a file (csv, libsvm or jsonl, optionally .gz/.bz2/.xz), '-' for standard input, "
               "or tcp://HOST:PORT (line-framed text from a socket)")


class CommandError(Exception):
    """An error reported as one line and a non-zero exit code, without a traceback."""


# ----------------------------------------------------------------------------------------
# Learners


@dataclasses.dataclass(frozen=True)
class LearnerSpec:
    """A learner the command line can build: ``--learner NAME --param KEY=VALUE``.

    ``target`` is ``"module:class"`` of the river estimator; ``params`` maps
    each constructor parameter (except ``kernels``, set with ``--kernel``) to
    ``(default, help)`` for ``--help`` (a test checks them against the class).
    """

    name: str
    target: str
    task: str  # "classification" or "regression"
    summary: str
    params: dict

    def load(self):
        module, _, qualname = self.target.partition(":")
        return getattr(importlib.import_module(module), qualname)

    def help(self) -> str:
        import textwrap

        lines = [f"  {self.name}: {self.summary} ({self.task}); kernels with --kernel"]
        for k, (d, h) in self.params.items():
            lines += textwrap.wrap(f"{k}={d}: {h}", 88, initial_indent="    ", subsequent_indent="        ")
        return "\n".join(lines)


LEARNERS = {
    "obscure": LearnerSpec(
        name="obscure",
        target="onlinemkl.river:OBSCUREClassifier",
        task="classification",
        summary="OBSCURE p-norm MKL, online stage 1 then stochastic stage 2 (Orabona, Jie & Caputo 2012)",
        params={
            "p": ("none", "group norm in (1, 2]; near 1: sparse kernel weights; none: q = 2 ln F, p = q/(q-1)"),
            "lam": ("none", "regularisation lambda > 0; none: 1/(C N), N the examples seen when stage 2 starts"),
            "C": ("1.0", "used when lam is none"),
            "eta": ("none", "stage-1 step > 0; none: F^(-2/q)"),
            "switch_after": ("auto", "stage 2 starts after this many examples, 'auto' (once stage-1 updates stop), "
                                     "or none (stage 1 only)"),
            "pegasos": ("false", "stage 2 with s_t = 0 (Pegasos-MKL)"),
            "budget": ("none", "maximum stored examples (none: unbounded, memory grows with the updates)"),
            "eviction": ("oldest", "'oldest' or 'least_impact': what a full buffer drops"),
            "loss": ("multiclass_hinge", "'multiclass_hinge', or 'hinge' (binary, True/False labels)"),
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
    "eta0": (None, "initial step size > 0"),
    "gamma": (None, "projection radius > 0, 'auto' (appendix E, where it applies) or none"),
    "average": (None, "predict with the running average of the iterates (no history stored)"),
    "budget": ("none", "maximum stored examples (none: unbounded, memory grows with the updates)"),
    "eviction": ("least_impact", "'least_impact' or 'oldest' (a sliding window, for drifting streams): what a full "
                                 "buffer drops"),
}


def _proximal_params(cls_defaults: dict, head: dict) -> dict:
    out = dict(head)
    for k, (d, h) in _PROXIMAL_COMMON.items():
        out[k] = (cls_defaults[k] if d is None else d, h)
    return out


LEARNERS["proximal"] = LearnerSpec(
    name="proximal",
    target="onlinemkl.river:ProximalMKLClassifier",
    task="classification",
    summary="online proximal MKL, kernelised FOBOS with group-norm proximal steps (Martins et al. 2011)",
    params=_proximal_params(
        {"lam": "1e-4", "eta0": "1.0", "gamma": "auto", "average": "false"},
        {"explicit_groups": ("none", "explicit linear feature groups next to the kernels: 'all' or names "
                                     "joined by '|', groups by ';', e.g. a|b;c"),
         "loss": ("hinge", "'hinge' (Crammer-Singer) or 'logistic' (multinomial)")}),
)
LEARNERS["proximal-regressor"] = LearnerSpec(
    name="proximal-regressor",
    target="onlinemkl.river:ProximalMKLRegressor",
    task="regression",
    summary="online proximal MKL regression (Martins et al. 2011), targets standardised online",
    params=_proximal_params(
        {"lam": "0.01", "eta0": "0.1", "gamma": "none", "average": "true"},
        {"explicit_groups": ("none", "explicit linear feature groups next to the kernels: 'all' or names "
                                     "joined by '|', groups by ';', e.g. a|b;c"),
         "loss": ("squared", "'squared' or 'epsilon_insensitive'"),
         "epsilon": ("0.1", "the width of loss=epsilon_insensitive (in standardised target units)")}),
)

LEARNERS["polymkl"] = LearnerSpec(
    name="polymkl",
    target="onlinemkl.river:PolyMKLRegressor",
    task="regression",
    summary="polynomial-kernel MKL by randomized mirror descent (Afkanpour et al. 2013), mini-batches",
    params={
        "batch_size": ("32", "examples per mini-batch (learnt when the batch is full)"),
        "degree": ("3", "maximum degree D of the product kernels"),
        "rho": ("none", "priors rho_d per degree 0..D joined by '|', e.g. 1|1|1|1 (none: all 1)"),
        "lam": ("0.1", "ridge parameter of the mean squared loss, > 0"),
        "n_iter": ("50", "solver iterations per mini-batch"),
        "eta": ("1.0", "step multiplier, > 0"),
        "solver": ("stochastic", "'stochastic' (Algorithms 2 + 3), 'ucd' (uniform coordinates) or 'uniform' "
                                 "(the fixed kernel (sum kappa_i)^D)"),
        "iterate": ("average", "'average' or 'last': the iterate the predictor uses"),
        "budget": ("200", "support set: the window of the most recent examples"),
        "constant": ("true", "with the default kernels: add a constant base kernel"),
        "tol": ("1e-06", "relative residual at which conjugate gradients stop"),
        "seed": ("none", "random seed of the sampling"),
    },
)
LEARNERS["nonlinear"] = LearnerSpec(
    name="nonlinear",
    target="onlinemkl.river:NonlinearKRRRegressor",
    task="regression",
    summary="non-linear kernel combination (sum mu_k K_k)^d with KRR (Cortes et al. 2009), mini-batches",
    params={
        "batch_size": ("32", "examples per mini-batch (learnt when the batch is full)"),
        "degree": ("2", "the Hadamard power d, 1..4"),
        "lam": ("0.1", "ridge parameter of the mean squared loss, > 0"),
        "mu0": ("0.0", "centre of the feasible set of mu"),
        "Lambda": ("1.0", "radius of the feasible set, > 0"),
        "norm": ("l2", "'l2' (M_2) or 'l1' (M_1)"),
        "eta": ("1.0", "step multiplier, > 0"),
        "line_search": ("true", "backtracking line search on each projected gradient step"),
        "epsilon": ("0.0001", "stop when ||mu' - mu|| < epsilon"),
        "max_iter": ("20", "projected gradient iterations per mini-batch"),
        "budget": ("200", "support set: the window of the most recent examples"),
        "constant": ("true", "with the default kernels: add a constant base kernel"),
    },
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
    ``scale``, ``h``, ``h_scale``, ``normalize``) and ``group``, feature names
    separated by ``|`` (``group=age|height``).  ``numbered``: the features are
    numbers (LIBSVM sources, numbered from 0), so ``group=0|1`` names features 0 and 1.

    >>> parse_kernel("poly:degree=3,normalize=true")
    Polynomial(group=None, normalize=True, degree=3, offset=1.0, scale=1.0)
    """
    from . import kernels

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


def build_model(args):
    """A new model from ``--learner``, ``--param``, ``--kernel`` and ``--no-scale``."""
    spec = LEARNERS[args.learner]
    params = parse_params(args.param, spec)
    if args.kernel:
        source = getattr(args, "source", None)
        numbered = source is not None and _format_or_none(source, args.format) == "libsvm"
        params["kernels"] = tuple(parse_kernel(k, numbered) for k in args.kernel)
    cls = spec.load()
    try:
        learner = cls(**params)
    except (TypeError, ValueError) as exc:
        raise CommandError(f"--learner {spec.name}: {exc}") from None
    if args.no_scale:
        return learner
    from river import preprocessing

    return preprocessing.StandardScaler() | learner


def final_step(model):
    steps = getattr(model, "steps", None)
    return list(steps.values())[-1] if steps else model


def describe(model) -> str:
    steps = getattr(model, "steps", None)
    if steps:
        return " | ".join(type(s).__name__ for s in steps.values())
    return type(model).__name__


def load_model(path, streaming=True):
    """``(model, meta)`` of a model file, errors as :class:`CommandError`.

    ``streaming``: the model must learn and predict one dict at a time (a river
    model or pipeline), as every command but ``info`` needs.
    """
    from .persist import ModelFileError, load_with_meta

    try:
        model, meta = load_with_meta(path)
    except ModelFileError as exc:
        raise CommandError(str(exc)) from None
    if streaming and not (hasattr(model, "learn_one") and hasattr(model, "predict_one")):
        raise CommandError(f"{path} holds a {type(model).__name__} of the array (scikit-learn) API; the command "
                           "line streams dict examples and needs a river model (onlinemkl.river, or a river "
                           "pipeline); 'onlinemkl info' describes it")
    return model, meta


def save_model(model, path, extra=None):
    from .persist import save

    try:
        return save(model, path, extra=extra)
    except OSError as exc:
        raise CommandError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    except TypeError as exc:
        raise CommandError(f"cannot save the model: {exc}") from None


def _model_from_args(args):
    """``(model, meta or None)``: ``--model PATH`` if given, else a new model."""
    if getattr(args, "model", None):
        _reject_model_options(args, "--model")
        return load_model(args.model)
    return build_model(args), None


def _reject_model_options(args, why):
    given = [opt for opt, val in (("--param", args.param), ("--kernel", args.kernel),
                                  ("--learner", args.learner != DEFAULT_LEARNER), ("--no-scale", args.no_scale)) if val]
    if given:
        raise CommandError(f"{', '.join(given)} cannot be combined with {why}: the saved model has its own learner "
                           "and parameters (see onlinemkl info)")


# ----------------------------------------------------------------------------------------
# Sources (the streams package)


def infer_format(source: str, fmt: str | None) -> str:
    """The format from ``--format`` or the file suffix (compression suffixes ignored).

    >>> infer_format("data.csv.gz", None), infer_format("a.svm", None), infer_format("-", "jsonl")
    ('csv', 'libsvm', 'jsonl')
    """
    if fmt:
        return fmt
    name = source.lower()
    for comp in (".gz", ".bz2", ".xz"):
        if name.endswith(comp):
            name = name[: -len(comp)]
    for suffixes, f in (((".csv", ".tsv"), "csv"), ((".libsvm", ".svm", ".svmlight"), "libsvm"),
                        ((".jsonl", ".ndjson", ".json"), "jsonl")):
        if name.endswith(suffixes):
            return f
    where = "standard input" if source == "-" else (source if not source.startswith("tcp://") else "a socket")
    raise CommandError(f"cannot infer the format of {where} from its name; pass --format csv, libsvm or jsonl")


def _format_or_none(source, fmt):
    try:
        return infer_format(source, fmt)
    except CommandError:
        return None


def rereadable(source: str) -> bool:
    return source != "-" and not source.startswith("tcp://")


class Source:
    """An iterable of ``(x, y)`` over a :mod:`streams` reader, with the skipped-line report.

    ``labelled=False`` (predict) reads unlabelled examples: a CSV label column
    or JSON-lines label key is dropped when present; libsvm labels are ignored.
    """

    def __init__(self, source, fmt, target, on_error, timeout, labelled=True, drop=(), target_type="str"):
        import streams

        self.name = source
        self.format = infer_format(source, fmt)
        self.on_error = on_error
        self.target = target
        self._pop = None
        common = dict(on_error=on_error, timeout=timeout, connect_timeout=timeout)
        try:
            if self.format == "csv":
                drop = list(drop or ())
                has_target = labelled
                if not labelled and target is not None:
                    if rereadable(source) and not _csv_has_column(streams, source, target):
                        target = None  # no label column in the file
                    else:
                        drop.append(target)
                        target = None
                types = {"str": None, "int": int, "float": float}
                self.reader = streams.read_csv(source, target, has_target=has_target, drop=drop,
                                               target_type=types[target_type] if labelled else None, **common)
            elif self.format == "jsonl":
                kw = {} if target is None else {"target": target}
                self.reader = streams.read_jsonl(source, has_target=labelled, **kw, **common)
                if not labelled:
                    self._pop = target or "y"
                elif target is None:
                    self.target = "y"
            else:
                if drop:
                    raise CommandError("--drop applies to csv sources only")
                self.reader = streams.read_libsvm(source, **common)
        except streams.StreamError as exc:
            raise CommandError(str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise CommandError(f"{source}: {exc}") from None

    def __iter__(self):
        if self._pop is None:
            yield from self.reader
            return
        key = self._pop
        for x, y in self.reader:
            x.pop(key, None)
            yield x, y

    def resolved_target(self):
        """The label column actually used (csv: the last column when --target is not given)."""
        if self.format == "csv" and self.target is None and getattr(self.reader, "columns", None):
            return self.reader.columns[-1]
        return self.target

    @property
    def position(self) -> str:
        """Where the last example came from, for messages."""
        line = getattr(self.reader, "line_no", None)
        if line:
            return f"{self.reader.source_name} line {line}"
        return f"{self.reader.source_name} example {self.reader.n_read}"

    def skipped_report(self) -> str | None:
        return self.reader.summary() if self.reader.n_skipped else None


def _csv_has_column(streams, source, name) -> bool:
    """Whether the CSV file's header (its first non-blank line) names ``name``."""
    import csv

    lines = streams.open_source(source)
    try:
        for _, text in lines:
            if text.strip():
                return name in [c.strip() for c in next(csv.reader([text]))]
        return False
    except (streams.StreamError, csv.Error):
        return True  # let the reader report the problem
    finally:
        lines.close()


def source_errors():
    """Exception classes a reader raises for bad input or an unreadable source."""
    import streams

    return (streams.StreamError, OSError)


# ----------------------------------------------------------------------------------------
# Learning loop helpers


class _Stopped(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class _SignalGuard:
    """SIGINT/SIGTERM never interrupt a model update: during one they are deferred to its end."""

    def __init__(self):
        self.busy = False
        self.pending = None
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._old[sig] = signal.signal(sig, self._handler)
            except ValueError:  # not the main thread
                pass
        return self

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handler(self, signum, frame):
        if self.busy:
            self.pending = signum
        else:
            raise _Stopped(signum)

    def check(self):
        if self.pending is not None:
            raise _Stopped(self.pending)


def learn_checked(model, x, y):
    """``model.learn_one(x, y)``, leaving the model unchanged if the example is rejected.

    onlinemkl learners check an example before changing anything; the steps
    before the learner in a pipeline have already learnt from it by then, so
    a StandardScaler's touched entries are restored (other transformers are
    copied beforehand).
    """
    steps = getattr(model, "steps", None)
    if not steps:
        return model.learn_one(x, y)
    undo = []
    for step in list(steps.values())[:-1]:
        undo.append(_snapshot(step, x))
    try:
        model.learn_one(x, y)
    except Exception:
        for restore in undo:
            restore()
        raise


def _snapshot(step, x):
    from river import preprocessing

    if type(step) is preprocessing.StandardScaler and step.window_size is None:
        saved = []
        for d in (step.counts, step.means, step.vars):
            saved.append((d, {k: d[k] for k in x if k in d}, [k for k in x if k not in d]))

        def restore():
            for d, old, new in saved:
                for k in new:
                    d.pop(k, None)
                for k, v in old.items():  # item by item: Counter.update would add the counts
                    d[k] = v

        return restore
    import copy

    state = copy.deepcopy(step.__dict__)

    def restore():
        step.__dict__.clear()
        step.__dict__.update(state)

    return restore


def _progress(args, total=None):
    from tqdm import tqdm

    return tqdm(total=total, unit="ex", disable=True if args.no_progress else None, file=sys.stderr,
                dynamic_ncols=True, mininterval=0.5)


def kernel_label(k) -> str:
    """A kernel with only its non-default fields: ``RBF(gamma_scale=0.1)``.

    >>> from onlinemkl.kernels import RBF
    >>> kernel_label(RBF(gamma_scale=0.1, group=("a", "b")))
    "RBF(group=('a', 'b'), gamma_scale=0.1)"
    """
    if not dataclasses.is_dataclass(k):
        return repr(k)
    parts = [f"{f.name}={getattr(k, f.name)!r}" for f in dataclasses.fields(k) if getattr(k, f.name) != f.default]
    return f"{type(k).__name__}({', '.join(parts)})"


def _kernels_of(learner):
    """The kernels a learner actually uses (its engine's, so defaults are resolved)."""
    ck = getattr(getattr(learner, "_engine", None), "ck", None)
    if ck is not None:
        return ck.kernels
    return getattr(learner, "_kernels", None) or getattr(learner, "kernels", None)


def group_labels(learner) -> list:
    """One label per group of ``kernel_weights_``: the kernels, then any explicit feature groups."""
    labels = [kernel_label(k) for k in (_kernels_of(learner) or ())]
    explicit = getattr(learner, "explicit_groups", None) or ()
    return labels + ["explicit(all features)" if g is None else f"explicit({'|'.join(map(str, g))})"
                     for g in explicit]


def _print_weights(learner, out=None):
    out = out or sys.stdout
    try:
        weights = learner.kernel_weights_
    except Exception:  # no such attribute, or an unfitted estimator
        return
    labels = group_labels(learner)
    print("kernel weights   :", file=out)
    for i, w in enumerate(weights):
        print(f"  {w:6.3f}  {labels[i] if i < len(labels) else f'group {i}'}", file=out)


def _target_default(args, meta):
    if args.target is None and meta:
        return (meta.get("extra") or {}).get(TRAIN_KEY, {}).get("target")
    return args.target


# ----------------------------------------------------------------------------------------
# demo


def _demo(args) -> int:
    from river import datasets, metrics, preprocessing
    from tqdm import tqdm

    from .river import OBSCUREClassifier

    data = datasets.ImageSegments()
    model = preprocessing.StandardScaler() | OBSCUREClassifier(budget=args.budget)
    clf = model["OBSCUREClassifier"]
    acc = metrics.Accuracy()
    print(f"onlinemkl demo: OBSCURE, prequential pass over river's ImageSegments "
          f"({data.n_samples} examples, {data.n_features} features, {data.n_classes} classes)")
    print("compiling the kernels (cached on disk after the first run)...", flush=True)
    t0 = time.perf_counter()
    x0, y0 = next(iter(data))
    warm = model.clone()  # compile (or load from the cache) outside the timed loop
    warm.learn_one(x0, y0)
    warm.predict_one(x0)
    t_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    n = 0
    bar = tqdm(data, total=data.n_samples, unit="ex", disable=args.no_progress, file=sys.stderr)
    for x, y in bar:
        y_pred = model.predict_one(x)
        if y_pred is not None:  # river's convention: no score before the first label is seen
            acc.update(y, y_pred)
        model.learn_one(x, y)
        n += 1
        if n % 200 == 0:
            bar.set_postfix(accuracy=f"{acc.get():.4f}", stored=clf.n_support_)
    bar.close()
    elapsed = time.perf_counter() - t0
    kernels = clf._kernels
    print(f"prequential accuracy : {acc.get():.4f}")
    print(f"examples per second  : {n / elapsed:,.0f} (predict + learn, scaler included; "
          f"compile/load {t_compile:.1f} s)")
    print(f"stored examples      : {clf.n_support_}")
    print(f"stage                : {clf.stage_}")
    print("kernel weights       :")
    for k, w in zip(kernels, clf.kernel_weights_):
        print(f"  {w:6.3f}  {kernel_label(k)}")
    return 0


# ----------------------------------------------------------------------------------------
# train


def _train_extra(src, consumed, complete):
    return {TRAIN_KEY: {"examples_consumed": consumed, "source": src.name, "format": src.format,
                        "target": src.resolved_target(), "complete": complete}}


def _same_params(a, b) -> str | None:
    """None if two models have the same steps and parameters, else what differs."""
    from .persist import _init_params

    sa = list(a.steps.values()) if hasattr(a, "steps") else [a]
    sb = list(b.steps.values()) if hasattr(b, "steps") else [b]
    if [type(s) for s in sa] != [type(s) for s in sb]:
        return f"the checkpoint is a {describe(b)}, the options build a {describe(a)}"
    for s1, s2 in zip(sa, sb):
        p1, p2 = _init_params(s1), _init_params(s2)
        for k in p1:
            if p1[k] != p2.get(k):
                return f"{type(s1).__name__} parameter {k}: options give {p1[k]!r}, the checkpoint has {p2.get(k)!r}"
    return None


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _train(args) -> int:
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise CommandError(f"--checkpoint-every {args.checkpoint_every}: must be at least 1")
    if (args.checkpoint_every or args.resume) and not args.save:
        raise CommandError("--checkpoint-every and --resume need --save PATH (the checkpoint file)")
    if args.limit is not None and args.limit < 0:
        raise CommandError(f"--limit {args.limit}: must be >= 0")
    skip = 0
    meta = None
    resume = args.resume and Path(args.save).exists()
    if resume and args.model and _same_file(args.model, args.save):
        # --model M --save M --resume: M is a checkpoint of this run if it names this source,
        # else the model this run starts from.
        _, peek = load_model(args.save)
        resume = ((peek.get("extra") or {}).get(TRAIN_KEY) or {}).get("source") == args.source
    if resume:
        model, meta = load_model(args.save)
        info = (meta.get("extra") or {}).get(TRAIN_KEY) or {}
        if not args.model:
            if args.param or args.kernel or args.learner != DEFAULT_LEARNER or args.no_scale:
                diff = _same_params(build_model(args), model)
                if diff:
                    raise CommandError(f"--resume: {args.save} was trained with other parameters ({diff}); "
                                       "use the same options, or another --save path")
        consumed = int(info.get("examples_consumed", 0))
        if info.get("source") not in (None, args.source):
            raise CommandError(f"--resume: {args.save} is a checkpoint of training on {info.get('source')}, not "
                               f"{args.source}; re-run with that source to finish it, or train the saved model "
                               f"on {args.source} with --model {args.save} (without --resume)")
        if rereadable(args.source):
            skip = consumed
            if info.get("complete") and info.get("source") == args.source:
                print(f"{args.save} is complete ({consumed} examples of {args.source}); nothing to resume")
                return 0
        print(f"resuming from {args.save}: {consumed} examples already learnt"
              + (f", skipping them in {args.source}" if skip else " (the source cannot be re-read: continuing)"),
              file=sys.stderr)
        target = _target_default(args, meta)
    else:
        model, meta = _model_from_args(args)
        target = _target_default(args, meta)
    src = Source(args.source, args.format, target, args.on_error, args.timeout, drop=args.drop,
                 target_type=args.target_type)
    learner = final_step(model)
    errors = source_errors()
    n_done = 0  # examples of the source processed (learnt, rejected, or skipped as already learnt)
    n_learnt = 0
    n_rejected = 0
    since_ckpt = 0
    exhausted = False
    bar = _progress(args)
    t0 = time.perf_counter()
    status = 0
    with _SignalGuard() as guard:
        try:
            it = iter(src)
            while args.limit is None or n_learnt < args.limit:
                try:
                    x, y = next(it)
                except StopIteration:
                    exhausted = True
                    break
                except errors as exc:
                    raise CommandError(_reader_message(exc, src)) from None
                # A signal before this line stops the run with this example unprocessed (and uncounted).
                guard.busy = True
                if n_done < skip:
                    n_done += 1
                    guard.busy = False
                    guard.check()
                    continue
                try:
                    learn_checked(model, x, y)
                except (TypeError, ValueError) as exc:
                    if args.on_error == "raise":
                        raise CommandError(f"{src.position}: the learner rejected the example: {exc}") from None
                    n_done += 1
                    n_rejected += 1
                    if args.on_error == "warn":
                        print(f"onlinemkl train: warning: {src.position}: skipped: {exc}", file=sys.stderr)
                    guard.busy = False
                    guard.check()
                    continue
                n_done += 1
                n_learnt += 1
                since_ckpt += 1
                if args.checkpoint_every and since_ckpt >= args.checkpoint_every:
                    save_model(model, args.save, _train_extra(src, n_done, False))
                    since_ckpt = 0
                guard.busy = False
                bar.update(1)
                guard.check()
            finished = True
        except _Stopped as stop:
            guard.busy = True  # a second signal must not interrupt the checkpoint below
            finished = False
            status = 128 + stop.signum
            bar.close()
            name = signal.Signals(stop.signum).name
            if args.save:
                save_model(model, args.save, _train_extra(src, n_done, False))
                print(f"onlinemkl train: {name}: stopped after {n_done} examples; checkpoint written to "
                      f"{args.save} (re-run with --resume to continue)", file=sys.stderr)
            else:
                print(f"onlinemkl train: {name}: stopped after {n_done} examples (no --save: nothing written)",
                      file=sys.stderr)
    bar.close()
    elapsed = time.perf_counter() - t0
    if finished and args.save:
        save_model(model, args.save, _train_extra(src, n_done, exhausted))
    if exhausted and n_done < skip:
        print(f"onlinemkl train: warning: {args.source} has only {n_done} examples, but the checkpoint had "
              f"consumed {skip}: has the file changed?", file=sys.stderr)
    print(f"model            : {describe(model)}")
    print(f"examples learnt  : {n_learnt}" + (f" (after skipping {min(skip, n_done)} already learnt)" if skip else ""))
    print(f"seconds          : {elapsed:.2f} ({n_learnt / elapsed if elapsed > 0 else 0:,.0f} examples/s)")
    if hasattr(learner, "n_support_"):
        print(f"stored examples  : {learner.n_support_}")
    _print_weights(learner)
    _report_skips(src, n_rejected, "train")
    if args.save and finished:
        print(f"saved            : {args.save}")
    elif not args.save:
        print("saved            : no (pass --save PATH to keep the model)")
    return status


def _reader_message(exc, src) -> str:
    if isinstance(exc, OSError) and not str(exc).startswith(src.name):
        return f"{src.name}: {exc.strerror or exc}"
    return str(exc)


def _report_skips(src, n_rejected, command):
    rep = src.skipped_report()
    if rep:
        print(f"onlinemkl {command}: {rep}", file=sys.stderr)
    if n_rejected:
        print(f"onlinemkl {command}: skipped {n_rejected} example{'s' if n_rejected != 1 else ''} "
              "the learner rejected", file=sys.stderr)


# ----------------------------------------------------------------------------------------
# evaluate


METRICS = {
    "accuracy": "Accuracy", "balanced_accuracy": "BalancedAccuracy", "macro_f1": "MacroF1",
    "micro_f1": "MicroF1", "weighted_f1": "WeightedF1", "cohen_kappa": "CohenKappa", "mcc": "MCC",
    "log_loss": "CrossEntropy",
    "mae": "MAE", "rmse": "RMSE", "r2": "R2",
}
REGRESSION_METRICS = frozenset({"mae", "rmse", "r2"})
DEFAULT_METRICS = ("accuracy", "macro_f1")
DEFAULT_REGRESSION_METRICS = ("mae", "rmse", "r2")


def _is_regressor(learner) -> bool:
    from river import base

    return isinstance(learner, base.Regressor)


def _evaluate(args) -> int:
    from river import metrics as rm

    if args.every < 1:
        raise CommandError(f"--every {args.every}: must be at least 1")
    if args.plot:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401
        except ImportError:
            raise CommandError("--plot needs matplotlib: python -m pip install matplotlib") from None
    model, meta = _model_from_args(args)
    regression = _is_regressor(final_step(model))
    names = args.metric or list(DEFAULT_REGRESSION_METRICS if regression else DEFAULT_METRICS)
    wrong = [n for n in names if (n in REGRESSION_METRICS) != regression]
    if wrong:
        raise CommandError(f"--metric {wrong[0]}: not a {'regression' if regression else 'classification'} "
                           f"metric; this model is a {'regressor' if regression else 'classifier'} (choose from "
                           f"{', '.join(n for n in sorted(METRICS) if (n in REGRESSION_METRICS) == regression)})")
    metrics = {name: getattr(rm, METRICS[name])() for name in names}
    need_proba = any(not getattr(m, "requires_labels", True) for m in metrics.values())
    target = _target_default(args, meta)
    src = Source(args.source, args.format, target, args.on_error, args.timeout, drop=args.drop,
                 target_type=args.target_type)
    learner = final_step(model)
    errors = source_errors()
    curve = []  # (n, {metric: value}, kernel weights)
    n = 0
    n_rejected = 0
    bar = _progress(args)
    t0 = time.perf_counter()
    status = 0
    with _SignalGuard() as guard:
        try:
            it = iter(src)
            while args.limit is None or n < args.limit:
                try:
                    x, y = next(it)
                except StopIteration:
                    break
                except errors as exc:
                    raise CommandError(_reader_message(exc, src)) from None
                guard.busy = True
                try:
                    y_pred = model.predict_one(x)
                    proba = model.predict_proba_one(x) if need_proba else None
                    learn_checked(model, x, y)
                except (TypeError, ValueError) as exc:
                    guard.busy = False
                    if args.on_error == "raise":
                        raise CommandError(f"{src.position}: the learner rejected the example: {exc}") from None
                    n_rejected += 1
                    if args.on_error == "warn":
                        print(f"onlinemkl evaluate: warning: {src.position}: skipped: {exc}", file=sys.stderr)
                    guard.check()
                    continue
                # river's convention (evaluate.progressive_val_score): a model that cannot
                # predict yet (no label seen) is not scored on that example.
                if y_pred is not None:
                    for m in metrics.values():
                        m.update(y, y_pred if getattr(m, "requires_labels", True) else proba)
                n += 1
                guard.busy = False
                bar.update(1)
                if n % args.every == 0:
                    w = getattr(learner, "kernel_weights_", None)
                    curve.append((n, {k: m.get() for k, m in metrics.items()}, None if w is None else list(w)))
                    bar.set_postfix({names[0]: f"{metrics[names[0]].get():.4f}"}, refresh=False)
                guard.check()
        except _Stopped as stop:
            guard.busy = True
            status = 128 + stop.signum
            print(f"onlinemkl evaluate: {signal.Signals(stop.signum).name}: stopped after {n} examples",
                  file=sys.stderr)
    bar.close()
    elapsed = time.perf_counter() - t0
    if n and (not curve or curve[-1][0] != n):
        w = getattr(learner, "kernel_weights_", None)
        curve.append((n, {k: m.get() for k, m in metrics.items()}, None if w is None else list(w)))
    rows = [(name, f"{m.get():.4f}") for name, m in metrics.items()]
    rows += [("examples", str(n)), ("seconds", f"{elapsed:.2f}"),
             ("examples/s", f"{n / elapsed if elapsed > 0 else 0:,.0f}")]
    if hasattr(learner, "n_support_"):
        rows.append(("stored examples", str(learner.n_support_)))
    print(f"prequential evaluation (test-then-train) of {describe(model)} on {src.name}")
    for k, v in rows:
        print(f"{k:<17}: {v}")
    _print_weights(learner)
    _report_skips(src, n_rejected, "evaluate")
    if args.plot:
        _plot(curve, learner, args.plot, describe(model), src.name)
        print(f"plot             : {args.plot}")
    if args.save:
        save_model(model, args.save, _train_extra(src, n, status == 0))
        print(f"saved            : {args.save}")
    return status


def _plot(curve, learner, path, title, source):
    import matplotlib.pyplot as plt

    has_w = bool(curve) and curve[-1][2] is not None
    fig, axes = plt.subplots(2 if has_w else 1, 1, figsize=(9, 7 if has_w else 4), sharex=True, squeeze=False)
    xs = [c[0] for c in curve]
    ax = axes[0, 0]
    for name in (curve[0][1] if curve else {}):
        ax.plot(xs, [c[1][name] for c in curve], label=name)
    ax.set_ylabel("prequential metric")
    ax.set_title(f"{title} on {os.path.basename(source)}")
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    if has_w:
        ax = axes[1, 0]
        kernels = _kernels_of(learner)
        W = [c[2] for c in curve]
        for j in range(len(W[0])):
            label = kernel_label(kernels[j]) if kernels is not None and j < len(kernels) else f"kernel {j}"
            ax.plot(xs, [w[j] for w in W], label=label)
        ax.set_ylabel("kernel weight")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    axes[-1, 0].set_xlabel("examples")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    except OSError as exc:
        raise CommandError(f"cannot write the plot {path!r}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)


# ----------------------------------------------------------------------------------------
# predict


def _predict(args) -> int:
    model, meta = load_model(args.model_file)
    if args.proba and not hasattr(model, "predict_proba_one"):
        raise CommandError(f"--proba: {args.model_file} holds a regressor ({describe(model)}); it has no class "
                           "probabilities")
    target = _target_default(args, meta)
    src = Source(args.source, args.format, target, args.on_error, args.timeout, labelled=False, drop=args.drop)
    errors = source_errors()
    out = sys.stdout
    if args.output and args.output != "-":
        try:
            out = open(args.output, "w", encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {args.output!r}: {exc.strerror or exc}") from None
    n = 0
    n_rejected = 0
    try:
        it = iter(src)
        while True:
            try:
                x, _ = next(it)
            except StopIteration:
                break
            except errors as exc:
                raise CommandError(_reader_message(exc, src)) from None
            try:
                pred = model.predict_one(x)
                proba = model.predict_proba_one(x) if args.proba else None
            except (TypeError, ValueError) as exc:
                if args.on_error == "raise":
                    raise CommandError(f"{src.position}: {exc}") from None
                n_rejected += 1
                pred, proba = None, None
            if args.proba:
                from .serve import _jsonable

                rec = {"prediction": _jsonable(pred)}
                if proba is not None:
                    rec["classes"] = [_jsonable(c) for c in proba]
                    rec["proba"] = [float(p) for p in proba.values()]
                out.write(json.dumps(rec) + "\n")
            else:
                out.write(("" if pred is None else str(pred)) + "\n")
            n += 1
    finally:
        if out is not sys.stdout:
            out.close()
        else:
            out.flush()
    _report_skips(src, n_rejected, "predict")
    if args.output and args.output != "-":
        print(f"onlinemkl predict: {n} predictions written to {args.output}", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------------------
# serve


def _serve(args) -> int:
    from .serve import ModelServer

    token = args.token
    if args.token_file:
        try:
            token = Path(args.token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise CommandError(f"--token-file {args.token_file!r}: {exc.strerror or exc}") from None
    if token is None:
        token = os.environ.get("ONLINEMKL_TOKEN") or None
    if token is not None and not token:
        raise CommandError("--token: the token is empty")
    if args.checkpoint_every is not None and (args.checkpoint_every < 1 or not args.save):
        raise CommandError("--checkpoint-every N needs N >= 1 and --save PATH")
    model, meta = _model_from_args(args)
    extra = dict((meta or {}).get("extra") or {})
    from .persist import save

    def save_with_extra(m, path):
        return save(m, path, extra=extra)

    try:
        server = ModelServer(model, host=args.host, port=args.port, token=token,
                             max_line_bytes=args.max_line_bytes, max_clients=args.max_clients,
                             idle_timeout=args.idle_timeout, save_path=args.save,
                             checkpoint_every=args.checkpoint_every, save=save_with_extra, log=sys.stderr)
    except (OSError, ValueError) as exc:
        raise CommandError(str(exc)) from None
    host, port = server.address
    print(json.dumps({"listening": f"{host}:{port}", "host": host, "port": port, "model": describe(model)}),
          flush=True)
    if host not in ("127.0.0.1", "::1", "localhost") and token is None:
        print(f"onlinemkl serve: warning: listening on {host} without --token: anyone who can reach this "
              "address can query and train the model", file=sys.stderr)

    def stop(signum, frame):
        server.request_stop()

    old = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.serve_forever()
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
    server.shutdown()
    print(f"onlinemkl serve: stopped ({server.n_requests} requests, {server.n_learned} learnt, "
          f"{server.n_errors} errors)", file=sys.stderr)
    return 0


# ----------------------------------------------------------------------------------------
# info


def model_info(model, meta, path) -> dict:
    """A JSON-able description of a saved model (what ``onlinemkl info`` prints)."""
    from .persist import _init_params, encode_value

    learner = final_step(model)
    out = {
        "file": str(path),
        "bytes": Path(path).stat().st_size,
        "format": f"{meta['format']} v{meta['format_version']}",
        "library_version": meta.get("library_version"),
        "model": describe(model),
        "learner": meta["model"]["children"][-1][1]["class"] if meta["model"].get("children")
        else meta["model"]["class"],
        "parameters": {k: _show(v) for k, v in _init_params(learner).items()},
    }
    labels = getattr(learner, "_labels", None)
    if labels is not None and not isinstance(labels, (list, tuple)):
        labels = getattr(labels, "labels", None)  # a LabelIndex (proximal river adapters)
    if hasattr(learner, "classes_"):
        labels = list(learner.classes_)
    elif getattr(learner, "loss", None) == "hinge" and not labels:
        labels = [False, True]
    if labels is not None:
        out["classes"] = [encode_value(v) if not isinstance(v, (str, int, float, bool)) else v for v in
                          (x.item() if hasattr(x, "item") else x for x in labels)]
    features = getattr(getattr(learner, "_features", None), "columns", None)
    if features is not None:
        out["features"] = [f if isinstance(f, str) else repr(f) for f in features]
    elif hasattr(learner, "n_features_in_"):
        out["features"] = learner.n_features_in_
    for attr, key in (("n_support_", "stored_examples"), ("stage_", "stage"), ("R_", "R")):
        try:
            out[key] = getattr(learner, attr)
        except Exception:  # unfitted array-API estimator
            pass
    try:
        w = learner.kernel_weights_
        out["kernel_weights"] = [[k, float(v)] for k, v in zip(group_labels(learner), w)]
    except Exception:
        pass
    train = (meta.get("extra") or {}).get(TRAIN_KEY)
    if train:
        out["training"] = train
    return out


def _show(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def _info(args) -> int:
    model, meta = load_model(args.model_file, streaming=False)
    info = model_info(model, meta, args.model_file)
    if args.json:
        print(json.dumps(info, indent=1, default=repr))
        return 0
    kb = info["bytes"] / 1024
    print(f"file             : {info['file']} ({kb:,.1f} KiB, {info['format']}, written by onlinemkl "
          f"{info['library_version']})")
    print(f"model            : {info['model']}")
    print(f"learner          : {info['learner']}")
    print("parameters       : " + ", ".join(f"{k}={v}" if k == "kernels" else f"{k}={v!r}"
                                           for k, v in info["parameters"].items()))
    if "classes" in info:
        cl = info["classes"]
        print(f"classes          : {len(cl)}: {', '.join(map(repr, cl[:20]))}{' ...' if len(cl) > 20 else ''}")
    if "features" in info:
        f = info["features"]
        if isinstance(f, list):
            print(f"features         : {len(f)}: {', '.join(f[:12])}{' ...' if len(f) > 12 else ''}")
        else:
            print(f"features         : {f}")
    for key, label in (("stored_examples", "stored examples"), ("stage", "stage"), ("R", "R")):
        if key in info and info[key] is not None:
            print(f"{label:<17}: {info[key]}")
    if "kernel_weights" in info:
        print("kernel weights   :")
        for k, w in info["kernel_weights"]:
            print(f"  {w:6.3f}  {k}")
    if "training" in info:
        t = info["training"]
        print(f"training         : {t.get('examples_consumed')} examples of {t.get('source')}"
              f" ({'complete' if t.get('complete') else 'checkpoint, incomplete'}; target {t.get('target')!r})")
    return 0


# ----------------------------------------------------------------------------------------
# The parser


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the descriptions' line breaks; adds ``(default: ...)`` where the help does not state it."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default is argparse.SUPPRESS or not action.option_strings:
            return text
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            return text + " (default: off)" if action.default is False else text + " (default: on)"
        return text + " (default: %(default)s)"


def _desc(*paragraphs, example=None) -> str:
    """Wrapped description paragraphs, then an unwrapped example block."""
    import textwrap

    text = "\n\n".join(textwrap.fill(p, 88) for p in paragraphs)
    if example:
        text += "\n\nexample:\n" + "\n".join("  " + line for line in example.splitlines())
    return text


def _learners_epilog() -> str:
    return "learners (--learner NAME) and their parameters (--param KEY=VALUE, default shown):\n" + "\n".join(
        s.help() for s in LEARNERS.values())


def _add_source(p, predict=False):
    p.add_argument("source", metavar="SOURCE", help=SOURCE_HELP + " (required)")
    p.add_argument("--format", choices=("csv", "libsvm", "jsonl"), default=None,
                   help="the format of SOURCE (default: from the file suffix; required for '-' and tcp://)")
    p.add_argument("--target", default=None,
                   help="the label's column (csv) or key (jsonl); libsvm labels are the first field"
                        + (" (default: the target the model was trained with)" if predict else
                           " (default: the saved model's training target, if any)"))
    p.add_argument("--on-error", choices=("raise", "skip", "warn"), default="raise",
                   help="a bad line: stop with an error naming the file and line (raise), skip it silently "
                        "(skip) or with a warning (warn); skipped lines are counted at the end")
    if not predict:
        p.add_argument("--target-type", choices=("str", "int", "float"), default="str",
                       help="csv labels: keep the text (str) or convert it (int, e.g. for 0/1 labels with "
                            "-p loss=hinge; float); json-lines and libsvm labels are typed already")
    p.add_argument("--drop", metavar="COLUMN", action="append", default=None,
                   help="a csv column to ignore, e.g. an id (repeatable; default: none)")
    p.add_argument("--timeout", metavar="SECONDS", type=float, default=30.0,
                   help="seconds to wait for a tcp:// source to connect and for each line")


def _add_model(p, new_only=False):
    g = p.add_argument_group("model (a new one from these options, or --model PATH)")
    if not new_only:
        g.add_argument("--model", metavar="PATH", default=None,
                       help="start from this saved model (incremental retraining; default: a new model from the "
                            "options below)")
    g.add_argument("--learner", choices=sorted(LEARNERS), default=DEFAULT_LEARNER,
                   help="the learner (the learners and their parameters are listed at the end)")
    g.add_argument("--param", "-p", metavar="KEY=VALUE", action="append", default=None,
                   help="a learner parameter (repeatable), e.g. -p budget=2000 -p p=1.1; values none, "
                        "true/false, numbers or strings (default: the learner's defaults, listed at the end)")
    g.add_argument("--kernel", "-k", metavar="KIND[:KEY=VALUE,...]", action="append", default=None,
                   help="a kernel (repeatable): linear, poly, rbf, laplacian or bspline with its fields, e.g. "
                        "-k rbf:gamma_scale=1 -k linear:normalize=true -k 'rbf:gamma=0.5,group=age|height' "
                        "(libsvm features are numbers from 0: group=0|1|2) "
                        "(default: the learner's kernel set: 3 RBF bandwidths, linear, quadratic)")
    g.add_argument("--no-scale", action="store_true",
                   help="no StandardScaler in front of the learner (default: a river StandardScaler, "
                        "saved with the model)")


def build_parser() -> argparse.ArgumentParser:
    from .serve import DEFAULTS

    parser = argparse.ArgumentParser(
        prog="onlinemkl", formatter_class=_Formatter,
        description=_desc("Online multiple kernel learning (OBSCURE, online proximal MKL, ...): learn from "
                          "files, standard input and sockets, evaluate, save, predict and serve. Run "
                          "'onlinemkl COMMAND --help' for a command's options and their defaults."),
    )
    parser.add_argument("--traceback", action="store_true", help="show Python tracebacks of errors (debugging)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser(
        "demo", help="prequential OBSCURE on river's bundled ImageSegments stream", formatter_class=_Formatter,
        description=_desc("Run a prequential (test-then-train) pass of OBSCURE over river's bundled "
                          "ImageSegments stream (no download); print accuracy, examples/s, stored examples "
                          "and kernel weights.", example="onlinemkl demo --budget 500"),
    )
    demo.add_argument("--budget", type=int, default=None,
                      help="maximum stored examples (default: None, unbounded)")
    demo.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    demo.set_defaults(func=_demo)

    train = sub.add_parser(
        "train", help="learn from a file, standard input or a socket and save the model",
        formatter_class=_Formatter, epilog=_learners_epilog(),
        description=_desc(
            "Learn from SOURCE one example at a time and save the model: a river pipeline StandardScaler | "
            "learner in onlinemkl's model format (see onlinemkl.persist). --model PATH continues training a "
            "saved model on new data (incremental retraining).",
            "Crash safety: with --checkpoint-every N the model and the number of examples consumed are "
            "written atomically to --save every N examples; with --resume, re-running the same command loads "
            "that checkpoint and skips the examples it has already learnt (a file is re-read; a socket or "
            "standard input cannot be, so the run continues with the lines that come next). A crash loses at "
            "most the examples since the last checkpoint. SIGINT/SIGTERM finish the current example, write a "
            "checkpoint and exit with 128 + the signal number.",
            example="onlinemkl train data.csv --target label -k rbf:gamma_scale=1 -k linear -p budget=2000 \\\n"
                    "    --save model.omkl --checkpoint-every 10000 --resume\n"
                    "onlinemkl train tcp://127.0.0.1:9000 --format jsonl --target y --save model.omkl"),
    )
    _add_source(train)
    _add_model(train)
    train.add_argument("--save", metavar="PATH", default=None,
                       help="write the model here, atomically; also the checkpoint file (default: none, the "
                            "model is not kept)")
    train.add_argument("--checkpoint-every", metavar="N", type=int, default=None,
                       help="write a checkpoint to --save every N learnt examples (default: only at the end)")
    train.add_argument("--resume", action="store_true",
                       help="if --save exists, continue from it and skip the examples it has consumed (default: "
                            "off, start over and overwrite --save)")
    train.add_argument("--limit", metavar="N", type=int, default=None,
                       help="stop after learning N examples (default: the whole source)")
    train.add_argument("--no-progress", action="store_true",
                       help="hide the progress bar (default: shown when standard error is a terminal)")
    train.set_defaults(func=_train)

    ev = sub.add_parser(
        "evaluate", help="prequential (test-then-train) evaluation with river metrics",
        formatter_class=_Formatter, epilog=_learners_epilog(),
        description=_desc(
            "Predict each example of SOURCE, score the prediction, then learn the example (prequential "
            "evaluation), with a progress bar (examples/s), a final table of the metrics and, with --plot, an "
            "image of the learning curve and of the kernel weights over time.",
            example="onlinemkl evaluate data.csv --target label -p budget=1000 -m accuracy -m cohen_kappa "
                    "--plot curve.png"),
    )
    _add_source(ev)
    _add_model(ev)
    ev.add_argument("--metric", "-m", choices=sorted(METRICS), action="append", default=None,
                    help=f"a river metric (repeatable; default: {', '.join(DEFAULT_METRICS)} for classifiers, "
                         f"{', '.join(DEFAULT_REGRESSION_METRICS)} for regressors); log_loss scores "
                         "predict_proba_one")
    ev.add_argument("--plot", metavar="PNG", default=None,
                    help="write the learning curve and the kernel weights over time to this image (needs "
                         "matplotlib; default: no plot)")
    ev.add_argument("--every", metavar="N", type=int, default=100,
                    help="record a point of the curve (and refresh the progress bar's metric) every N examples")
    ev.add_argument("--limit", metavar="N", type=int, default=None,
                    help="stop after N examples (default: the whole source)")
    ev.add_argument("--save", metavar="PATH", default=None,
                    help="save the model learnt during the evaluation (default: not saved)")
    ev.add_argument("--no-progress", action="store_true",
                    help="hide the progress bar (default: shown when standard error is a terminal)")
    ev.set_defaults(func=_evaluate)

    pr = sub.add_parser(
        "predict", help="predictions of a saved model over a source", formatter_class=_Formatter,
        description=_desc(
            "Predict every example of SOURCE with a saved model, which does not learn: one line per example, "
            "in order, with the predicted label, or with --proba a JSON object {\"prediction\": ..., "
            "\"classes\": [...], \"proba\": [...]}. The label column of SOURCE, if any, is ignored.",
            example="onlinemkl predict model.omkl new.csv --output predictions.txt\n"
                    "cat new.jsonl | onlinemkl predict model.omkl - --format jsonl --proba"),
    )
    pr.add_argument("model_file", metavar="MODEL", help="a model file written by train, evaluate, serve or save()")
    _add_source(pr, predict=True)
    pr.add_argument("--output", "-o", metavar="PATH", default=None, help="write here (default: standard output)")
    pr.add_argument("--proba", action="store_true", help="JSON lines with the class probabilities")
    pr.set_defaults(func=_predict)

    sv = sub.add_parser(
        "serve", help="a TCP server: JSON lines in, predictions out (and learning from labelled lines)",
        formatter_class=_Formatter, epilog=_learners_epilog(),
        description=_desc(
            "Serve a saved (--model) or new model over TCP. Each request is a line with a JSON object: "
            "{\"x\": {...}} to predict, {\"x\": {...}, \"y\": label} to predict then learn, \"proba\": true "
            "to add the class probabilities, \"id\" to have it echoed. Each reply is one JSON line: "
            "{\"prediction\": ...} or {\"error\": ..., \"line\": N}; a bad line leaves the model unchanged "
            "and the connection open. With a token, the first line of a connection must be "
            "{\"token\": \"...\"}.",
            "The first line on standard output is {\"listening\": \"HOST:PORT\", ...}. SIGTERM/SIGINT stop "
            "accepting connections, let each connection finish the line in progress, write --save and exit 0.",
            example="onlinemkl serve --model model.omkl --port 8765 --save model.omkl --token-file token.txt\n"
                    "printf '{\"token\": \"...\"}\\n{\"x\": {\"f1\": 0.3}}\\n' | nc 127.0.0.1 8765"),
    )
    _add_model(sv)
    sv.add_argument("--host", default=DEFAULTS["host"],
                    help=f"the address to listen on (default: {DEFAULTS['host']}, local connections only; "
                         "0.0.0.0 exposes the model to the network: use a token then)")
    sv.add_argument("--port", type=int, default=DEFAULTS["port"], help="the port (0: any free port)")
    sv.add_argument("--token", default=None,
                    help="require {\"token\": TOKEN} as the first line of every connection (default: "
                         "$ONLINEMKL_TOKEN if set, else no token; prefer --token-file: a command line is "
                         "visible to other users)")
    sv.add_argument("--token-file", metavar="PATH", default=None,
                    help="read the token from this file (default: none)")
    sv.add_argument("--max-line-bytes", metavar="N", type=int, default=DEFAULTS["max_line_bytes"],
                    help="longest request line in bytes; a longer one gets an error reply and is skipped")
    sv.add_argument("--max-clients", metavar="N", type=int, default=DEFAULTS["max_clients"],
                    help="most simultaneous connections; more are refused with an error line")
    sv.add_argument("--idle-timeout", metavar="SECONDS", type=float, default=DEFAULTS["idle_timeout"],
                    help="close a connection silent for this long")
    sv.add_argument("--save", metavar="PATH", default=None,
                    help="write the model here at shutdown and every --checkpoint-every learnt examples "
                         "(default: not saved)")
    sv.add_argument("--checkpoint-every", metavar="N", type=int, default=None,
                    help="also write --save every N learnt examples (default: only at shutdown)")
    sv.set_defaults(func=_serve)

    info = sub.add_parser(
        "info", help="what a saved model is", formatter_class=_Formatter,
        description=_desc("Describe a model file: the learner and its parameters, classes, features, stored "
                          "examples, kernel weights, and how it was trained.",
                          example="onlinemkl info model.omkl\nonlinemkl info model.omkl --json"),
    )
    info.add_argument("model_file", metavar="MODEL", help="a model file")
    info.add_argument("--json", action="store_true", help="print a JSON object instead of text")
    info.set_defaults(func=_info)
    return parser


def _one_line_warnings(command):
    """Warnings (e.g. the readers' skipped lines with --on-error warn) as one line each."""

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"onlinemkl {command}: warning: {message}", file=sys.stderr)

    return show


def main(argv=None) -> int:
    import warnings

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(args.command)
            return args.func(args)
    except CommandError as exc:
        print(f"onlinemkl {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"onlinemkl {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (e.g. `| head`): not an error of ours.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:
        if args.traceback:
            raise
        msg = str(exc).splitlines()[0] if str(exc) else ""
        print(f"onlinemkl {args.command}: error: {type(exc).__name__}: {msg} "
              "(run with --traceback for details)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
