"""Classification or regression: chosen by ``--task``, ``--learner`` or ``--model``, else inferred
from the labels at the head of the source, and always printed with the reason.

A numeric label column read as text would otherwise make a classifier with one class per
distinct value (a 214-class "classifier" of house prices).  The rule, on the first
:data:`SAMPLE` labels:

- text that is not a number, or true/false: classification;
- numbers with a fractional part, or more than :data:`MAX_CLASSES` distinct whole numbers:
  regression;
- at most :data:`MAX_CLASSES` distinct whole numbers (0/1, 1..5, digit codes): classification.

>>> infer_task(["pos", "neg", "pos"])[0]
'classification'
>>> infer_task(["0.25", "1.5", "-3"])[0]
'regression'
>>> infer_task([str(i % 3) for i in range(50)])
('classification', '3 distinct whole numbers in the first 50 labels (0, 1, 2): class labels')
>>> infer_task(list(range(30)))[0]
'regression'
"""

from __future__ import annotations

import math

from ._errors import CommandError
from ._learners import LEARNERS

#: Labels looked at before the first update.
SAMPLE = 1000
#: More distinct whole-number labels than this in the sample: a quantity, not classes.
MAX_CLASSES = 20
#: A classifier given labels that are all numbers with more distinct values than this (or with more
#: than half of them distinct, or with fractions) is warned that they look like a quantity.
WARN_CLASSES = 50
#: The learner of each task when neither ``--learner`` nor ``--model`` is given.
DEFAULT_LEARNERS = {"classification": "obscure", "regression": "proximal-regressor", "sequence": "sequence"}
TASKS = ("classification", "regression", "sequence")


def _number(y):
    """``y`` as a float if it is a number (or the text of one), else None; booleans are not numbers."""
    if isinstance(y, bool):
        return None
    if isinstance(y, (int, float)):
        return float(y)
    if isinstance(y, str):
        try:
            return float(y.strip())
        except ValueError:
            return None
    try:  # numpy scalars
        return float(y) if not isinstance(y.item(), bool) else None
    except (AttributeError, TypeError, ValueError):
        return None


def _show(values, k=5):
    shown = ", ".join(f"{v:g}" if isinstance(v, float) else repr(v) for v in values[:k])
    return shown + (", ..." if len(values) > k else "")


def infer_task(labels) -> tuple:
    """``(task, reason)`` from a sample of labels (see the module's rule)."""
    labels = list(labels)
    n = len(labels)
    if not n:
        return "classification", "the source has no labelled example to look at: the default"
    head = f"in the first {n} label{'s' if n != 1 else ''}"
    for y in labels:
        if isinstance(y, bool):
            return "classification", f"the labels are true/false ({head})"
        if _number(y) is None:
            return "classification", f"the labels are text, e.g. {y!r} ({head})"
    values = [v for v in (_number(y) for y in labels) if math.isfinite(v)]
    distinct = sorted(set(values))
    fractional = [v for v in distinct if not v.is_integer()]
    if fractional:
        return "regression", (f"{len(distinct)} distinct numbers {head}, with fractional parts (e.g. "
                              f"{_show(fractional, 3)}): a quantity")
    if len(distinct) > MAX_CLASSES:
        return "regression", (f"{len(distinct)} distinct whole numbers {head} (more than {MAX_CLASSES}, "
                              f"from {distinct[0]:g} to {distinct[-1]:g}): a quantity")
    return "classification", (f"{len(distinct)} distinct whole number{'s' if len(distinct) != 1 else ''} {head} "
                               f"({_show(distinct, 8)}): class labels")


def learner_task(name) -> str:
    return LEARNERS[name].task


def choose(args, src) -> tuple:
    """``(task, learner name, note)`` of a new model for ``train``/``evaluate``; the note (what was
    chosen and why) is for standard error.

    ``--task`` or ``--learner`` decide when given (they must agree); otherwise the labels at the
    head of ``src`` are sampled (:meth:`Source.peek`) and :func:`infer_task` decides.  A socket
    is never sampled (its lines cannot be read twice and may come slowly): it needs ``--task``
    or ``--learner``.
    """
    explicit_task = getattr(args, "task", None)
    learner = getattr(args, "learner", None)
    if src.format == "conll" and explicit_task is None and learner is None:
        return "sequence", "sequence", f"task: sequence, learner sequence ({src.name} is a CoNLL-style file)"
    if learner is not None:
        task = learner_task(learner)
        if explicit_task is not None and explicit_task != task:
            raise CommandError(f"--task {explicit_task} contradicts --learner {learner}, a {task} learner; "
                               f"drop one of them (--learner {DEFAULT_LEARNERS[explicit_task]} is the default "
                               f"{explicit_task} learner)")
        why = f"--learner {learner}"
    elif explicit_task is not None:
        task, why = explicit_task, f"--task {explicit_task}"
        learner = DEFAULT_LEARNERS[task]
    else:
        if src.name.startswith("tcp://"):
            raise CommandError(f"{src.name}: pass --task classification or --task regression (or --learner NAME): "
                               "a socket's labels cannot be looked at before learning starts")
        limit = getattr(args, "limit", None)
        sample = src.peek(SAMPLE if limit is None else max(1, min(SAMPLE, limit)))
        task, why = infer_task(y for _, y in sample)
        learner = DEFAULT_LEARNERS[task]
        other = "regression" if task == "classification" else "classification"
        return task, learner, f"task: {task}, learner {learner}: {why} (--task {other} to override)"
    if (task == "sequence") != (src.format == "conll"):
        raise CommandError(sequence_format_message(why, task, src.format))
    return task, learner, f"task: {task}, learner {learner} ({why})"


def sequence_format_message(why, task, fmt) -> str:
    """The error of a sequence model given another format, or of another model given CoNLL sequences."""
    if task == "sequence":
        return (f"{why}: the sequence learner reads CoNLL-style files (one token per line, a blank line between "
                f"sequences): pass --format conll, not {fmt}")
    return (f"{why}: a {task} learner reads examples, not the sequences of a CoNLL-style file; pass --task "
            "sequence (or --learner sequence), or --format csv, libsvm or jsonl for a file of examples")



def quantity_labels(labels):
    """Why numeric labels look like a quantity rather than classes (a reason), or None.

    Numbers with fractional parts, more than :data:`WARN_CLASSES` distinct values, or (in at
    least 20 labels) more than half of them distinct.

    >>> print(quantity_labels([str(i) for i in range(60)]))
    60 distinct numbers in the first 60 labels, from 0 to 59
    >>> quantity_labels(["1", "2", "1", "3"] * 10) is None, quantity_labels(["a", "b"]) is None
    (True, True)
    """
    labels = list(labels)
    values = [_number(y) for y in labels]
    if not values or any(v is None or not math.isfinite(v) for v in values):
        return None
    distinct = sorted(set(values))
    n, k = len(values), len(distinct)
    fractional = [v for v in distinct if not v.is_integer()]
    if not (fractional or k > WARN_CLASSES or (n >= 20 and k > n / 2)):
        return None
    why = f"{k} distinct numbers in the first {n} label{'s' if n != 1 else ''}"
    return why + (f", with fractional parts (e.g. {_show(fractional, 3)})" if fractional else
                  f", from {distinct[0]:g} to {distinct[-1]:g}")


def classifier_warning(args, src, task, from_model=False):
    """A warning (or None) when a classifier is about to learn labels that look like a quantity: it
    would make one class per distinct value.  The labels at the head of ``src`` are sampled (not a
    socket's, which cannot be read twice)."""
    if task != "classification" or src.name.startswith("tcp://"):
        return None
    limit = getattr(args, "limit", None)
    sample = src.peek(SAMPLE if limit is None else max(1, min(SAMPLE, limit)))
    why = quantity_labels(y for _, y in sample)
    if why is None:
        return None
    if from_model:
        fix = ("for regression, train a new model with --task regression (--learner "
               f"{DEFAULT_LEARNERS['regression']}) instead of --model")
    else:
        given = (f"--learner {args.learner}" if getattr(args, "learner", None) else
                 f"--task {getattr(args, 'task', None) or 'classification'}")
        fix = (f"{given} chose a classifier; for regression pass --learner {DEFAULT_LEARNERS['regression']} "
               "(or --task regression)")
    return (f"warning: the labels look like a quantity, not classes ({why}): a classifier learns one class "
            f"per distinct value; {fix}")
