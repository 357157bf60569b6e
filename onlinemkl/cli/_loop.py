"""The learning loop's helpers: signals deferred past an update, rejected examples undone, progress."""

from __future__ import annotations

import contextlib
import signal
import sys

from .._undo import snapshot as _snapshot
from .._validation import check_example
from ._errors import CommandError
from ._model import _target_default, final_step, model_task, new_model, target_note
from ._source import Source, cli_wording
from ._task import classifier_warning, sequence_format_message
from ._warmup import compile_first


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
        # Recorded first: a signal that lands while Python runs a finalizer (``__del__``, e.g.
        # llvmlite's while a compiled function loads from the cache) has its exception swallowed,
        # and the next check() must still stop the run.
        self.pending = signum
        if not self.busy:
            raise _Stopped(signum)

    def check(self):
        if self.pending is not None:
            raise _Stopped(self.pending)

    @contextlib.contextmanager
    def deferred(self):
        """Signals wait until the block ends, then stop the run: for compiling or loading compiled
        code, where an exception raised by the handler could land in one of llvmlite's callbacks,
        which would swallow it with a printed traceback."""
        self.busy = True
        try:
            yield
        finally:
            self.busy = False
        self.check()


def open_run(args, model=None, meta=None):
    """``(model, source, notes)`` of a train or evaluate run.

    ``model`` given (``--model``, a checkpoint): its task types the labels.  Otherwise the
    source is opened first, so that the task can be inferred from its first labels
    (:func:`~._model.new_model`).  ``notes`` say which label column and task were chosen and
    why, for :func:`~._model.show_notes` once the command's own checks have passed.
    """
    target = _target_default(args, meta)
    new = model is None
    if new:
        src = Source.from_args(args, target, task="auto")
        model, task_note = new_model(args, src)
    else:
        task = model_task(model)
        src = Source.from_args(args, target, task=task, meta=meta, model=model)
        if (task == "sequence") != (src.format == "conll"):
            raise CommandError(sequence_format_message(f"the model {args.model or args.save}", task, src.format))
        task_note = None
    warning = classifier_warning(args, src, model_task(model), from_model=not new)
    return model, src, [src.delimiter_note(), target_note(args, src), task_note, warning]


def start_run(model, args, src):
    """``(learner, compile seconds)`` of a train or evaluate run: the learner is compiled
    (:func:`~._warmup.compile_first`) before the examples are read and the clock starts."""
    learner = final_step(model)
    t_compile = compile_first(learner, args)
    return learner, t_compile


class Examples:
    """The examples of a source for a learning loop, each handed out with ``guard.busy`` set.

    Iterating reads the next example only while ``more()`` is true (a ``--limit`` never reads
    one example too many from a socket or standard input).  A signal before an example is
    handed out stops the run with it unprocessed (and uncounted); from then on the signal
    waits until the loop clears ``guard.busy``.  ``exhausted`` says whether the source ended.
    """

    def __init__(self, src, guard, more):
        self.src, self.guard, self.more = src, guard, more
        self.exhausted = False
        self._it = None  # the source's iterator lives as long as this object (the command's run)

    def __iter__(self):
        self._it = iter(self.src)
        while self.more():
            try:
                x, y = next(self._it)
            except StopIteration:
                self.exhausted = True
                return
            self.guard.busy = True
            yield x, y


def rejected(args, src, exc, command):
    """The learner rejected the example at ``src.position``: stop with ``--on-error raise``, else
    go on (with a warning on standard error for ``--on-error warn``)."""
    exc = cli_wording(str(exc))
    if args.on_error == "raise":
        raise CommandError(f"{src.position}: the learner rejected the example: {exc}") from None
    if args.on_error == "warn":
        print(f"onlinemkl {command}: warning: {src.position}: skipped: {exc}", file=sys.stderr)


def learn_checked(model, x, y):
    """``model.learn_one(x, y)``, leaving the model unchanged if the example is rejected.

    onlinemkl learners check an example before changing anything; the steps
    before the learner in a pipeline have already learnt from it by then, so
    a StandardScaler's touched entries are restored (other transformers are
    copied beforehand).  A sequence ``(xs, ys)`` goes to the sequence labeller as it is: it
    checks every token before it changes anything.
    """
    if not isinstance(x, dict):
        return model.learn_one(x, y)
    check_example(x)  # an overflowing value would poison a scaler's running variance before the learner sees it
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


def _progress(args, total=None):
    from tqdm import tqdm

    return tqdm(total=total, unit="ex", disable=True if args.no_progress else None, file=sys.stderr,
                dynamic_ncols=True, mininterval=0.5)
