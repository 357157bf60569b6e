"""Models of the command line: build one from the options, load, save and describe it."""

from __future__ import annotations

import dataclasses
import sys

from ._errors import CommandError
from ._learners import LEARNERS, parse_kernel, parse_params
from ._source import _format_or_none
from ._task import DEFAULT_LEARNERS, choose
from ._warmup import warmup_name

#: Model files written by the command carry this under ``meta["extra"]["train"]``.
TRAIN_KEY = "train"


def build_model(args, learner=None):
    """A new model from ``--learner`` (or ``learner``, or ``--task``'s default learner), ``--param``,
    ``--kernel`` and ``--no-scale``."""
    task = getattr(args, "task", None)
    name = learner or args.learner or DEFAULT_LEARNERS[task or "classification"]
    spec = LEARNERS[name]
    if task is not None and spec.task != task:
        raise CommandError(f"--task {task} contradicts --learner {name}, a {spec.task} learner; drop one of them "
                           f"(--learner {DEFAULT_LEARNERS[task]} is the default {task} learner)")
    params = parse_params(args.param, spec)
    if args.kernel:
        source = getattr(args, "source", None)
        numbered = source is not None and _format_or_none(source, args.format) == "libsvm"
        params["kernels"] = tuple(parse_kernel(k, numbered) for k in args.kernel)
    cls = spec.load()
    try:
        learner = cls(**params)
    except (TypeError, ValueError) as exc:
        raise CommandError(param_message(str(exc), spec, params)) from None
    if spec.task == "sequence":  # it standardises its tokens itself (-p scale=...): no scaler in front
        if args.no_scale:
            raise CommandError("--no-scale: the sequence learner has no scaler in front; it standardises its "
                               "tokens' features itself, -p scale=false turns that off")
        return learner
    if args.no_scale:
        return learner
    from river import preprocessing

    return preprocessing.StandardScaler() | learner


#: Constructor arguments whose command-line spelling differs from ``--param NAME``.
_PARAM_FLAGS = {"kernels": "--kernel", "random_state": "--param seed"}


def param_message(message: str, spec, params=()) -> str:
    """A learner's error about one of its arguments, naming the option that set it.

    >>> from onlinemkl.cli import LEARNERS
    >>> param_message("lam=-1: must be > 0.0", LEARNERS["obscure"], {"lam": -1})
    '--param lam=-1: must be > 0.0 (learner obscure)'
    >>> param_message("random_state='x': expected an integer", LEARNERS["polymkl"], {"seed": "x"})
    "--param seed='x': expected an integer (learner polymkl)"
    """
    import re

    m = re.match(r"(\w+)\b", message)
    name = m.group(1) if m else None
    if name in _PARAM_FLAGS or name in spec.params or name in params:
        flag = _PARAM_FLAGS.get(name, f"--param {name}")
        return f"{flag}{message[len(name):]} (learner {spec.name})"
    return f"--learner {spec.name}: {message}"


def new_model(args, src):
    """``(model, note)``: a new model for ``train``/``evaluate`` of the task and learner chosen by
    :func:`~._task.choose` (the note says which and why), the source's labels typed for that task."""
    task, learner, note = choose(args, src)
    model = build_model(args, learner)
    src.set_task(task)
    return model, note


def final_step(model):
    steps = getattr(model, "steps", None)
    return list(steps.values())[-1] if steps else model


def model_task(model) -> str:
    """The task of a built or loaded model (its final step): classification, regression or sequence."""
    from river import base

    name = warmup_name(final_step(model))
    if name is not None and LEARNERS[name].task == "sequence":
        return "sequence"
    return "regression" if isinstance(final_step(model), base.Regressor) else "classification"


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
    from ..persist import ModelFileError, load_with_meta

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
    from ..persist import save

    try:
        return save(model, path, extra=extra)
    except OSError as exc:
        raise CommandError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    except TypeError as exc:
        raise CommandError(f"cannot save the model: {exc}") from None


def _model_from_args(args, new=True):
    """``(model, meta or None)``: ``--model PATH`` if given, else a new model (``new=False``: None,
    for the commands that choose the task from their source first)."""
    if getattr(args, "model", None):
        _reject_model_options(args, "--model")
        return load_model(args.model)
    return (build_model(args) if new else None), None


def _reject_model_options(args, why):
    given = [opt for opt, val in (("--param", args.param), ("--kernel", args.kernel),
                                  ("--learner", args.learner), ("--task", getattr(args, "task", None)),
                                  ("--no-scale", args.no_scale)) if val]
    if given:
        raise CommandError(f"{', '.join(given)} cannot be combined with {why}: the saved model has its own learner "
                           "and parameters (see onlinemkl info)")


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
    if model_task(learner) == "sequence":
        return labels + ["transitions (label pairs)"]
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


def _train_extra(src, consumed, complete):
    """What a model file written by ``train`` or ``evaluate`` records of its run (``meta["extra"]``):
    examples consumed, the source, its format and label column, whether it was read to its end."""
    info = {"examples_consumed": consumed, "source": src.name, "format": src.format,
            "target": src.resolved_target(), "complete": complete}
    if src.zero_based() is not None:
        info["zero_based"] = src.zero_based()
    if src.categorical:
        info["categorical"] = list(src.categorical)
    if src.format == "conll" and src.conll_drop:
        info["drop"] = list(src.conll_drop)
    return {TRAIN_KEY: info}


def _target_default(args, meta):
    if args.target is None and meta:
        return (meta.get("extra") or {}).get(TRAIN_KEY, {}).get("target")
    return args.target


def target_note(args, src):
    """Which label column a command uses when ``--target`` was not given (else None)."""
    if args.target is not None:
        return None
    if src.target_given:
        return f"target: {src.target!r}, the saved model's training target (--target NAME for another)"
    return src.target_note()


def show_notes(notes, command):
    """The command's notes (target, task) on standard error, one line each."""
    for note in notes:
        if note:
            print(f"onlinemkl {command}: {note}", file=sys.stderr)
