"""The argument parser of the ``onlinemkl`` command: every command, option, default and example."""

from __future__ import annotations

import argparse

from .. import __version__
from .._compile import WARMUPS
from ._demo import _demo
from ._distributed import add_tune_command, add_workers_options
from ._evaluate import DEFAULT_METRICS, DEFAULT_REGRESSION_METRICS, METRICS, _evaluate
from ._info import _info
from ._learners import LEARNERS
from ._predict import _predict
from ._serve import _serve
from ._task import DEFAULT_LEARNERS, MAX_CLASSES
from ._task import SAMPLE as TASK_SAMPLE
from ._train import _train
from ._warmup import _warmup

SOURCE_HELP = ("a file (csv, libsvm, jsonl, or conll for sequences; optionally .gz/.bz2/.xz), '-' for standard input, "
               "or tcp://HOST:PORT (line-framed text from a socket)")


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
    p.add_argument("--format", choices=("csv", "libsvm", "jsonl", "conll"), default=None,
                   help="the format of SOURCE; conll: one token per line, numeric feature columns then the "
                        "label, a blank line between sequences (default: from the file suffix, .conll/.iob/.bio "
                        "for conll; conll for a sequence model; else required for '-' and tcp://)")
    p.add_argument("--target", default=None,
                   help="the label's column (csv) or key (jsonl); libsvm labels are the first field, conll "
                        "labels the last column"
                        + (" (default: the target the model was trained with, ignored if absent)" if predict else
                           " (default: the saved model's training target, else the LAST csv column or the "
                           "jsonl key y; the command prints which)"))
    p.add_argument("--on-error", choices=("raise", "skip", "warn"), default="raise",
                   help="a bad line: stop with an error naming the file and line (raise), skip it silently "
                        "(skip) or with a warning (warn); skipped lines are counted at the end")
    if not predict:
        p.add_argument("--target-type", choices=("str", "int", "float"), default=None,
                       help="csv labels: keep the text (str) or convert it (int, e.g. for 0/1 labels with "
                            "-p loss=hinge; float); json-lines and libsvm labels are typed already (default: "
                            "from the task: the text for classification, float for regression)")
    p.add_argument("--drop", metavar="COLUMN", action="append", default=None,
                   help="a csv column to ignore, e.g. an id; conll: a column number from 1, e.g. --drop 1 for "
                        "the word (repeatable; default: none" + (", conll: the columns dropped in training)"
                                                                  if predict else ")"))
    p.add_argument("--categorical", metavar="COLUMN[,COLUMN...]", action="append", default=None,
                   help="csv columns (jsonl keys) of text categories, read as one indicator feature per value, "
                        "column=value, 1 for the example's value and 0 for the others met so far (repeatable or "
                        "comma-separated; default: "
                        + ("the model's, " if predict else "with --model the model's, else ")
                        + "none: every feature is a number)")
    p.add_argument("--delimiter", metavar="CHAR", default=None,
                   help="the csv field separator: one character, or tab (default: sniffed among , ; tab | "
                        "from the header and the next 20 lines, a socket's from its header; printed when it "
                        "is not a comma)")
    base = p.add_mutually_exclusive_group()
    base.add_argument("--zero-based", dest="zero_based", action="store_const", const=True, default=None,
                      help="libsvm feature indices start at 0 (scikit-learn's dump_svmlight_file) (default: "
                           + ("the model's training source's, else " if predict else "")
                           + "detected: an index 0 in the first 1000 lines means from 0, else from 1; a socket "
                             "is read from 1)")
    base.add_argument("--one-based", dest="zero_based", action="store_const", const=False,
                      help="libsvm feature indices start at 1, the LIBSVM convention (default: see --zero-based)")
    p.add_argument("--timeout", metavar="SECONDS", type=float, default=30.0,
                   help="seconds to wait for a tcp:// source to connect and for each line")


def _add_model(p, new_only=False, serve=False):
    g = p.add_argument_group("model (a new one from these options, or --model PATH)")
    if not new_only:
        g.add_argument("--model", metavar="PATH", default=None,
                       help="start from this saved model (incremental retraining; default: a new model from the "
                            "options below)")
    g.add_argument("--task", choices=("classification", "regression", "sequence"), default=None,
                   help="what the labels are; picks the default learner (classification: "
                        f"{DEFAULT_LEARNERS['classification']}, regression: {DEFAULT_LEARNERS['regression']}, "
                        "sequence: sequence, label sequences of a conll source) "
                        + ("(default: classification; the command prints it)" if serve else
                           f"(default: from --learner, else inferred from the first {TASK_SAMPLE} labels: text "
                           f"or at most {MAX_CLASSES} distinct whole numbers is classification, numbers with "
                           "fractions or more distinct values regression; the command prints the choice and "
                           "why; sequence for a conll source; required for a tcp:// source)"))
    g.add_argument("--learner", choices=sorted(LEARNERS), default=None,
                   help="the learner (the learners and their parameters are listed at the end) (default: "
                        "the task's learner, see --task)")
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


def _command(sub, name, func, help, *paragraphs, example=None, learners=False):
    """A sub-command: its one-line help, its description (paragraphs and an example) and the
    function it runs; ``learners`` lists the learners and their parameters after the options."""
    p = sub.add_parser(name, help=help, formatter_class=_Formatter,
                       epilog=_learners_epilog() if learners else None,
                       description=_desc(*paragraphs, example=example))
    p.set_defaults(func=func)
    return p


def _add_no_progress(p):
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress bar (default: shown when standard error is a terminal)")


def build_parser() -> argparse.ArgumentParser:
    from ..serve import DEFAULTS

    parser = argparse.ArgumentParser(
        prog="onlinemkl", formatter_class=_Formatter,
        description=_desc("Online multiple kernel learning (OBSCURE, online proximal MKL, ...): learn from "
                          "files, standard input and sockets, evaluate, save, predict and serve. Run "
                          "'onlinemkl COMMAND --help' for a command's options and their defaults."),
    )
    parser.add_argument("--traceback", action="store_true", help="show Python tracebacks of errors (debugging)")
    parser.add_argument("--version", action="version", version=f"onlinemkl {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = _command(sub, "demo", _demo, "prequential OBSCURE on river's bundled ImageSegments stream",
                    "Run a prequential (test-then-train) pass of OBSCURE over river's bundled ImageSegments "
                    "stream (no download); print accuracy, examples/s, stored examples and kernel weights.",
                    example="onlinemkl demo --budget 500")
    demo.add_argument("--budget", type=int, default=None,
                      help="maximum stored examples (default: None, unbounded)")
    demo.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    train = _command(
        sub, "train", _train, "learn from a file, standard input or a socket and save the model",
        "Learn from SOURCE one example at a time and save the model: a river pipeline StandardScaler | "
        "learner in onlinemkl's model format (see onlinemkl.persist). --model PATH continues training a "
        "saved model on new data (incremental retraining).",
        "Crash safety: with --checkpoint-every N the model and the number of examples consumed are "
        "written atomically to --save every N examples; with --resume, re-running the same command loads "
        "that checkpoint and skips the examples it has already learnt (a file is re-read; a socket or "
        "standard input cannot be, so the run continues with the lines that come next). A crash loses at "
        "most the examples since the last checkpoint. SIGINT/SIGTERM finish the current example, write a "
        "checkpoint and exit with 128 + the signal number.",
        "An empty csv cell or a jsonl null is a missing value: the example is learnt without that feature "
        "(read as 0, the training mean behind the default scaler), as evaluate and predict do, and the "
        "number of such examples per column is printed at the end.",
        example="onlinemkl train data.csv --target label -k rbf:gamma_scale=1 -k linear -p budget=2000 \\\n"
                "    --save model.omkl --checkpoint-every 10000 --resume\n"
                "onlinemkl train tcp://127.0.0.1:9000 --format jsonl --target y --task classification \\\n"
                "    --save model.omkl",
        learners=True)
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
    _add_no_progress(train)
    add_workers_options(train)

    ev = _command(
        sub, "evaluate", _evaluate, "prequential (test-then-train) evaluation with river metrics",
        "Predict each example of SOURCE, score the prediction, then learn the example (prequential "
        "evaluation), with a progress bar (examples/s), a final table of the metrics and, with --plot, an "
        "image of the learning curve and of the kernel weights over time. Missing values (empty csv cells, "
        "jsonl nulls) are handled as in train and predict, and counted. A sequence model (--task sequence, a "
        "CoNLL-style SOURCE) is scored per token: each sequence is predicted, its tokens scored, then learnt.",
        example="onlinemkl evaluate data.csv --target label -p budget=1000 -m accuracy -m cohen_kappa "
                "--plot curve.png",
        learners=True)
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
    _add_no_progress(ev)

    pr = _command(
        sub, "predict", _predict, "predictions of a saved model over a source",
        "Predict every example of SOURCE with a saved model, which does not learn: one line per example, "
        "in order, with the predicted label, or with --proba a JSON object {\"prediction\": ..., "
        "\"classes\": [...], \"proba\": [...]}. The label column of SOURCE, if any, is ignored.",
        "--proba's columns: \"classes\" lists the model's classes in the order it first met them in "
        "training (false, true for a binary hinge model), the same list on every line; proba[i] is the "
        "probability of classes[i] (onlinemkl info MODEL prints the classes in that order).",
        "An example whose feature names differ from those the model was trained on (a feature the "
        "model never saw, which it would ignore, or one it knows that is absent, which would read as "
        "0, the training mean after the scaler) stops the run with an error naming them, unless "
        "--allow-feature-mismatch. Absent features are normal in libsvm sources (zeros are left out) "
        "and are not reported there. A missing value (an empty csv cell, a jsonl null) is not an absent "
        "column: as in train and evaluate, the example goes on without that feature, and the count of "
        "such examples per column is printed at the end.",
        "A sequence model (--task sequence) reads a CoNLL-style SOURCE and writes one line per sequence: its "
        "tokens' labels joined by a space (by a tab with --delimiter tab); it drops the columns dropped in "
        "training, and takes labelled and unlabelled token lines alike.",
        example="onlinemkl predict model.omkl new.csv --output predictions.txt\n"
                "cat new.jsonl | onlinemkl predict model.omkl - --format jsonl --proba")
    pr.add_argument("model_file", metavar="MODEL", help="a model file written by train, evaluate, serve or save()")
    _add_source(pr, predict=True)
    pr.add_argument("--output", "-o", metavar="PATH", default=None, help="write here (default: standard output)")
    pr.add_argument("--proba", action="store_true",
                    help="JSON lines with the class probabilities: proba[i] is that of classes[i], the classes in "
                         "the order the model first met them in training, the same on every line")
    pr.add_argument("--allow-feature-mismatch", action="store_true",
                    help="predict examples with unknown or missing feature names (default: an error naming "
                         "them; with --on-error skip/warn the example is skipped)")

    sv = _command(
        sub, "serve", _serve, "a TCP server: JSON lines in, predictions out (and learning from labelled lines)",
        "Serve a saved (--model) or new model over TCP. Each request is a line with a JSON object: "
        "{\"x\": {...}} to predict, {\"x\": {...}, \"y\": label} to predict then learn, \"proba\": true "
        "to add the class probabilities, \"id\" to have it echoed. Each reply is one JSON line: "
        "{\"prediction\": ...} or {\"error\": ..., \"line\": N}; a bad line leaves the model unchanged "
        "and the connection open. With a token, the first line of a connection must be "
        "{\"token\": \"...\"}.",
        "A request whose feature names differ from the model's (with or without \"y\") gets an error "
        "reply naming the unknown and missing ones and is not learnt, unless --allow-feature-mismatch. "
        "The protocol: docs/serving.md. A sequence model (--task sequence) takes one sequence per line instead: "
        "{\"xs\": [[...], ...]} (one row of numbers per token) to label, with \"ys\": [...] (one label per "
        "token) to label, then learn; the reply's prediction is the list of labels.",
        "The first line on standard output is {\"listening\": \"HOST:PORT\", ...}. SIGTERM/SIGINT stop "
        "accepting connections, let each connection finish the line in progress, write --save and exit 0.",
        example="onlinemkl serve --model model.omkl --port 8765 --save model.omkl --token-file token.txt\n"
                "printf '{\"token\": \"...\"}\\n{\"x\": {\"f1\": 0.3}}\\n' | nc 127.0.0.1 8765",
        learners=True)
    _add_model(sv, serve=True)
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
    sv.add_argument("--line-timeout", metavar="SECONDS", type=float, default=DEFAULTS["line_timeout"],
                    help="close a connection whose request line is not finished this long after its first byte")
    sv.add_argument("--auth-timeout", metavar="SECONDS", type=float, default=DEFAULTS["auth_timeout"],
                    help="with a token: close a connection not authenticated this long after it connected")
    sv.add_argument("--allow-feature-mismatch", action="store_true",
                    help="predict and learn requests whose feature names differ from the model's (default: an "
                         "error reply naming the unknown and missing features; nothing is learnt)")
    sv.add_argument("--save", metavar="PATH", default=None,
                    help="write the model here at shutdown and every --checkpoint-every learnt examples "
                         "(default: not saved)")
    sv.add_argument("--checkpoint-every", metavar="N", type=int, default=None,
                    help="also write --save every N learnt examples (default: only at shutdown)")

    info = _command(sub, "info", _info, "what a saved model is",
                    "Describe a model file: the learner and its parameters, classes, features, stored "
                    "examples, kernel weights, and how it was trained.",
                    example="onlinemkl info model.omkl\nonlinemkl info model.omkl --json")
    info.add_argument("model_file", metavar="MODEL", help="a model file")
    info.add_argument("--json", action="store_true", help="print a JSON object instead of text")

    wu = _command(
        sub, "warmup", _warmup, "compile the learners ahead of time (for container images and first installs)",
        "Compile the learners' Numba code and write it to the on-disk cache, then print the seconds per "
        "learner. A new environment otherwise compiles a learner when it meets its first example; run "
        "this once (e.g. when building a container image) and later processes load the compiled code "
        "at once. With a warm cache it only loads it.",
        "The cache is NUMBA_CACHE_DIR if set, else a per-user cache directory, printed at the end. The "
        "names are the --learner names of the other commands, 'sequence', and '*-sklearn' for the "
        "array (scikit-learn) API.",
        example="onlinemkl warmup\nonlinemkl warmup --learner obscure --learner proximal")
    wu.add_argument("--learner", choices=list(WARMUPS), action="append", default=None,
                    help="a learner to compile (repeatable; default: all of them)")
    _add_no_progress(wu)
    add_tune_command(sub, _command, _add_source, _add_model)
    return parser
