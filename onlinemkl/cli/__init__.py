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
``tune SOURCE --grid KEY=V1,V2``
    Every candidate of a parameter grid prequential over SOURCE, in parallel on Ray when
    installed; ``train --workers N`` learns on N Ray workers (:mod:`onlinemkl.distributed`).
``warmup``
    Compile the learners ahead of time (for container images and first
    installs) and print the seconds per learner.

The streaming commands compile their learner (or load it from the on-disk
cache) before they read their source, with a progress bar on a first run, and
report that time apart from the throughput.

Nothing is guessed silently: a new model's task (``--task``) is the
``--learner``'s or is inferred from the first labels of the source
(:mod:`._task`), the label column defaults to the last csv column, and both
are printed on standard error with the reason (so is a sniffed csv delimiter other than a
comma; a libsvm source's index base, detected or given, is saved with the model); a missing
value (an empty cell, a jsonl null) is handled and counted the same way by ``train``,
``evaluate`` and ``predict``; ``predict`` and ``serve``
refuse examples whose feature names differ from the model's
(``--allow-feature-mismatch`` to predict anyway); errors name the options.
``onlinemkl --version`` prints the version; ``python -m onlinemkl`` is the
same command.

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

The package follows the command's seams: ``_args`` (the parser), one module per command
(``_demo``, ``_train``, ``_evaluate``, ``_predict``, ``_serve``, ``_info``, ``_warmup``), and what they
share: ``_learners`` (learners, parameters, kernels), ``_task`` (classification or regression),
``_model`` (build, load, save, describe), ``_source`` (the readers) and ``_loop`` (signals,
rejected examples, progress).
"""

from __future__ import annotations

import os
import sys

from ._args import SOURCE_HELP, build_parser
from ._errors import CommandError
from ._evaluate import DEFAULT_METRICS, DEFAULT_REGRESSION_METRICS, METRICS, REGRESSION_METRICS
from ._info import model_info
from ._learners import (DEFAULT_LEARNER, KERNEL_KINDS, LEARNERS, LearnerSpec, parse_kernel, parse_params,
                        parse_value)
from ._loop import learn_checked
from ._model import (TRAIN_KEY, build_model, describe, final_step, group_labels, kernel_label, load_model,
                     save_model)
from ._source import Source, infer_format, rereadable, source_errors

__all__ = [
    "main", "build_parser", "CommandError", "LearnerSpec", "LEARNERS", "DEFAULT_LEARNER", "KERNEL_KINDS",
    "parse_value", "parse_params", "parse_kernel", "build_model", "final_step", "describe", "load_model",
    "save_model", "kernel_label", "group_labels", "model_info", "Source", "infer_format", "rereadable",
    "source_errors", "learn_checked", "METRICS", "REGRESSION_METRICS", "DEFAULT_METRICS",
    "DEFAULT_REGRESSION_METRICS", "TRAIN_KEY", "SOURCE_HELP",
]


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

