"""Sources of examples: the :mod:`streams` readers behind ``SOURCE``, and their errors."""

from __future__ import annotations

import collections
import math
import sys

from .._feature_check import FeatureCheck
from ._errors import CommandError


def infer_format(source: str, fmt: str | None) -> str:
    """The format from ``--format`` or the file suffix (compression suffixes ignored).

    >>> infer_format("data.csv.gz", None), infer_format("a.svm", None), infer_format("-", "jsonl")
    ('csv', 'libsvm', 'jsonl')
    >>> infer_format("train.conll.gz", None), infer_format("tags.iob", None)
    ('conll', 'conll')
    """
    if fmt:
        return fmt
    name = source.lower()
    for comp in (".gz", ".bz2", ".xz"):
        if name.endswith(comp):
            name = name[: -len(comp)]
    for suffixes, f in (((".csv", ".tsv"), "csv"), ((".libsvm", ".svm", ".svmlight"), "libsvm"),
                        ((".jsonl", ".ndjson", ".json"), "jsonl"), ((".conll", ".iob", ".bio"), "conll")):
        if name.endswith(suffixes):
            return f
    where = "standard input" if source == "-" else (source if not source.startswith("tcp://") else "a socket")
    raise CommandError(f"cannot infer the format of {where} from its name; pass --format csv, libsvm, jsonl or "
                       "conll")


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

    ``format="conll"`` reads sequences (:func:`streams.read_conll`): each item is ``(xs, ys)``, a
    float array of the tokens' features and their labels; ``drop`` holds column numbers from 1,
    and ``n_features`` (a trained model's) lets predict tell a labelled file from an unlabelled one.

    ``categorical`` columns are handed out as indicator features (:class:`_Categories`). The
    columns whose values are missing in each example (empty cells, nulls) are counted per
    column for the commands' final report (:meth:`missing_report`), and those of the example
    last handed out are :meth:`missing_names`, which ``predict`` does not report as absent.
    """

    def __init__(self, source, fmt, target, on_error, timeout, labelled=True, drop=(), target_type="str",
                 delimiter=None, zero_based=None, categorical=(), n_features=None):
        import streams

        self.name = source
        self.format = infer_format(source, fmt)
        self.on_error = on_error
        self.target = target
        self.target_given = target is not None
        self.target_type = target_type
        self._pop = None
        self._it = None
        self._buffer = collections.deque()  # (x, y, position) read ahead by peek()
        self._text_numbers = False  # regression from json lines: labels such as "3.5" read as numbers
        self._from_buffer = None  # the position of the buffered example last handed out
        self._label = _Label() if target_type == "auto" else None
        self.categorical = list(categorical or ())
        # learning commands add the categories they meet; predict knows only the model's
        self._categories = _Categories(self.categorical, grow=labelled) if self.categorical else None
        self.missing = ()  # the columns missing in the example last handed out (empty cells, null)
        self.missing_counts = collections.Counter()  # column -> examples handed out with it missing
        self.n_with_missing = 0
        common = dict(on_error=on_error, timeout=timeout, connect_timeout=timeout)
        self.delimiter_given = delimiter is not None
        self.conll_drop = ()
        if self.categorical and self.format in ("libsvm", "conll"):
            raise CommandError(f"--categorical applies to csv and jsonl sources only ({self.format} features are "
                               "numbers)")
        if zero_based is not None and self.format != "libsvm":
            raise CommandError(f"--{'zero' if zero_based else 'one'}-based applies to libsvm sources only")
        if delimiter is not None and self.format not in ("csv", "conll"):
            raise CommandError("--delimiter applies to csv and conll sources only")
        try:
            if self.format == "csv":
                drop = list(drop or ())
                has_target = labelled
                if not labelled and target is not None:
                    if rereadable(source) and not _csv_has_column(streams, source, target, delimiter):
                        target = None  # no label column in the file
                    else:
                        drop.append(target)
                        target = None
                types = {"str": None, "int": int, "float": float, "auto": self._label}
                if target is not None and target in self.categorical:
                    raise CommandError(f"--categorical {target}: {target!r} is the label column (--target); "
                                       "the label is not a feature; drop it from --categorical")
                self.reader = streams.read_csv(source, target, has_target=has_target, drop=drop,
                                               delimiter=delimiter, categorical=self.categorical,
                                               target_type=types[target_type] if labelled else None, **common)
            elif self.format == "conll":
                self.conll_drop = conll_columns(drop)
                if target is not None:
                    raise CommandError(f"--target {target}: a CoNLL-style file's label is the last column of each "
                                       "token line; drop --target")
                has_target = True if labelled else ("auto" if n_features else False)
                self.reader = streams.read_conll(source, has_target=has_target, n_features=n_features or None,
                                                 delimiter=delimiter, drop=self.conll_drop, **common)
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
                if zero_based is None:  # a socket's lines cannot be held back to look for an index 0
                    zero_based = False if source.startswith("tcp://") else "auto"
                self.reader = streams.read_libsvm(source, zero_based=zero_based, **common)
        except streams.StreamError as exc:
            raise CommandError(cli_wording(str(exc))) from None
        except (TypeError, ValueError) as exc:
            raise CommandError(f"{source}: {cli_wording(str(exc))}") from None

    @classmethod
    def from_args(cls, args, target, labelled=True, task=None, meta=None, model=None):
        """The source of a command's ``SOURCE``, ``--format``, ``--on-error``, ``--timeout``, ``--drop``,
        ``--delimiter``, ``--zero-based``/``--one-based``, ``--categorical`` and ``--target-type``
        options, with the label column ``target``; ``meta``: the saved model's, whose libsvm index
        base and categorical columns are the defaults; ``model``: the saved model, whose categories
        the categorical columns start from.

        ``task`` sets the csv label type when ``--target-type`` is not given: text for
        classification, numbers for regression; ``"auto"`` keeps the text until
        :meth:`set_task` (after :meth:`peek`) decides.
        """
        timeout = args.timeout
        if not timeout > 0:
            raise CommandError(f"--timeout {timeout:g}: must be > 0 seconds")
        target_type = getattr(args, "target_type", None)
        if target_type is None:
            target_type = {"regression": "float", "auto": "auto"}.get(task, "str")
        zero_based = getattr(args, "zero_based", None)
        if zero_based is None and _format_or_none(args.source, args.format) == "libsvm":
            zero_based = trained_zero_based(meta)
        categorical = categorical_option(getattr(args, "categorical", None))
        if categorical is None:
            categorical = (((meta or {}).get("extra") or {}).get("train") or {}).get("categorical") or ()
        fmt = args.format
        train = ((meta or {}).get("extra") or {}).get("train") or {}
        drop = args.drop
        if fmt is None and _format_or_none(args.source, None) is None and "sequence" in (
                task, getattr(args, "task", None), getattr(args, "learner", None)):
            fmt = "conll"  # the one format of sequences
        if (fmt or _format_or_none(args.source, None)) == "conll":
            if getattr(args, "target_type", None) is not None:
                raise CommandError(f"--target-type {args.target_type}: a CoNLL-style file's labels are kept as "
                                   "text; drop --target-type")
            target_type = "str"
            if drop is None:
                drop = [str(c) for c in train.get("drop", ())]  # the columns dropped in training
        src = cls(args.source, fmt, target, args.on_error, timeout, labelled=labelled, drop=drop,
                  target_type=target_type, delimiter=delimiter_option(getattr(args, "delimiter", None)),
                  zero_based=zero_based, categorical=categorical, n_features=_n_features(model))
        if model is not None:
            src.know_model(model)
        if task in ("classification", "regression"):
            src.set_task(task)
        return src

    def know_model(self, model):
        """Start the categorical columns from the categories a saved model knows (its indicator
        features ``column=value``)."""
        if self._categories is not None:
            self._categories.seed(_model_names(model))

    def _next(self):
        """The reader's next ``(x, y, missing columns)`` (StopIteration at the end), its errors as
        :class:`CommandError`."""
        if self._it is None:
            self._it = iter(self.reader)
        try:
            x, y = next(self._it)
        except source_errors() as exc:
            raise CommandError(_reader_message(exc, self)) from None
        missing = tuple(getattr(self.reader, "last_missing", ()))
        if self._pop is not None:
            x.pop(self._pop, None)
            missing = tuple(k for k in missing if k != self._pop)
        if self._categories is not None:
            self._categories.encode(x)
        if self._text_numbers and isinstance(y, str):
            y = _number_or_text(y)
        return x, y, missing

    def peek(self, n):
        """Read up to ``n`` examples ahead (they are handed out first by iteration); returns them."""
        while len(self._buffer) < n:
            try:
                x, y, missing = self._next()
            except StopIteration:
                break
            self._buffer.append((x, y, self._position(), missing))
        return [(x, y) for x, y, _, _ in self._buffer]

    def _hand_out(self, missing):
        self.missing = missing
        if missing:
            self.n_with_missing += 1
            self.missing_counts.update(missing)

    def missing_names(self):
        """The feature names the example last handed out lacks because its values are missing (a
        categorical column's: its indicator features)."""
        if self._categories is None:
            return frozenset(self.missing)
        return frozenset(n for col in self.missing for n in self._categories.names(col))

    def set_task(self, task):
        """Read labels as numbers from now on (and convert those read ahead) if ``task`` is regression."""
        if task == "regression" and self.target_type == "str":
            raise CommandError("--target-type str: a regressor learns numbers; drop --target-type (numbers are "
                               "then read as float) or use --target-type float")
        if task != "regression":
            return
        if self._label is not None:
            self._label.fn = _float_label
        elif self.format == "jsonl":
            self._text_numbers = True
        else:
            return
        # Those read ahead: a label that is not a number is kept as read, for the learner to
        # reject under --on-error at its line.
        self._buffer = collections.deque((x, _number_or_text(y), pos, m) for x, y, pos, m in self._buffer)

    def __iter__(self):
        """The ``(x, y)`` pairs; a bad line (with ``on_error="raise"``) or an unreadable source
        ends them with a :class:`CommandError` naming the source and line."""
        while self._buffer:
            x, y, self._from_buffer, missing = self._buffer.popleft()
            self._hand_out(missing)
            yield x, y
        self._from_buffer = None
        while True:
            try:
                x, y, missing = self._next()
            except StopIteration:
                return
            self._hand_out(missing)
            yield x, y

    def target_note(self):
        """What the label column is and why (when it was not given), or None: printed by the commands."""
        if self.target_given:
            return None
        if self.format == "csv":
            if not getattr(self.reader, "columns", None):
                self.peek(1)  # the header
            if not getattr(self.reader, "columns", None):
                return None
            return (f"target: {self.reader.columns[-1]!r}, the last column of {self.name} "
                    "(--target NAME to choose another)")
        if self.format == "jsonl":
            return f"target: the key {self.target!r} of each line (the default; --target KEY for another)"
        return None

    def delimiter_note(self):
        """The sniffed csv delimiter when it is not a comma (else None): printed by the commands."""
        if self.format != "csv" or self.delimiter_given:
            return None
        if not getattr(self.reader, "columns", None):
            self.peek(1)  # the header
        used = getattr(self.reader, "delimiter_used", None)
        if used in (None, ","):
            return None
        shown = "tab" if used == "\t" else repr(used)
        return f"delimiter: {shown}, sniffed from the first lines of {self.name} (--delimiter CHAR to choose another)"

    def zero_based(self):
        """A libsvm source's index base once read (True: from 0), else None: saved with the model."""
        base = getattr(self.reader, "index_base", None)
        return None if base is None else base == 0

    def resolved_target(self):
        """The label column actually used (csv: the last column when --target is not given)."""
        if self.format == "csv" and self.target is None and getattr(self.reader, "columns", None):
            return self.reader.columns[-1]
        return self.target

    @property
    def position(self) -> str:
        """Where the last example came from, for messages."""
        return self._from_buffer or self._position()

    def _position(self) -> str:
        line = getattr(self.reader, "line_no", None)
        if line:
            return f"{self.reader.source_name} line {line}"
        return f"{self.reader.source_name} example {self.reader.n_read}"

    def skipped_report(self) -> str | None:
        return self.reader.summary() if self.reader.n_skipped else None

    def missing_report(self, verb) -> str | None:
        """How many examples had missing values (empty cells, null), and in which columns, or None."""
        if not self.n_with_missing:
            return None
        n = self.n_with_missing
        cols = ", ".join(f"{c!r} in {k}" for c, k in self.missing_counts.most_common(8))
        more = ", ..." if len(self.missing_counts) > 8 else ""
        return (f"{n} example{'s' if n != 1 else ''} with missing values (empty cells or null) {verb} without "
                f"those features, which the learner reads as 0 (behind the default scaler: the feature's training "
                f"mean): {cols}{more}")

    def unseen_report(self) -> str | None:
        """How many examples had a category the model never learnt (all its indicators 0), or None."""
        c = self._categories
        if c is None or not c.unseen:
            return None
        n = sum(c.unseen.values())
        cols = ", ".join(f"{col!r} in {k}" for col, k in c.unseen.most_common(8))
        return (f"{n} value{'s' if n != 1 else ''} of categorical columns not seen in training, predicted with "
                f"all of the column's indicator features 0: {cols}")


class _Categories:
    """``--categorical`` columns as indicator features: a value ``v`` of column ``c`` becomes
    ``{"c=v": 1.0}`` and ``0.0`` for each other category of ``c`` known so far (the zeros let a
    scaler in front of the learner see the indicator vary; ``grow``: a new value becomes a new
    category, else it counts as unseen and all of the column's indicators are 0)."""

    def __init__(self, columns, grow):
        self.values = {c: {} for c in columns}  # column -> {value text: None}, in the order met
        self.grow = grow
        self.unseen = collections.Counter()

    def seed(self, names):
        for name in names:
            if isinstance(name, str):
                for col, values in self.values.items():
                    if name.startswith(col + "="):
                        values.setdefault(name[len(col) + 1:], None)

    def names(self, col):
        return [f"{col}={v}" for v in self.values.get(col, ())] if col in self.values else [col]

    def encode(self, x):
        for col, values in self.values.items():
            if col not in x:
                continue
            v = _category_text(x.pop(col))
            if v not in values:
                if self.grow:
                    values[v] = None
                else:
                    self.unseen[col] += 1
            for known in values:
                x[f"{col}={known}"] = 1.0 if known == v else 0.0


def _category_text(value):
    """A categorical value as text: ``3.0`` (a json number) is ``"3"``, ``True`` is ``"true"``."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _model_names(model):
    """The feature names a river model (or pipeline) knows, as far as they can be known."""
    known = FeatureCheck(model).known()
    if known:
        return known
    steps = list(getattr(model, "steps", {}).values()) if hasattr(model, "steps") else [model]
    return set(getattr(steps[0], "counts", None) or ()) if len(steps) > 1 else set()


def _n_features(model):
    """The feature columns a trained sequence labeller takes (None: another model, or not trained)."""
    steps = getattr(model, "steps", None)
    model = list(steps.values())[-1] if steps else model
    engine = getattr(model, "_engine", None)
    return getattr(engine, "n_features", None) if getattr(model, "_array_input", None) else None


def conll_columns(values):
    """``--drop``'s CoNLL column numbers (from 1).

    >>> conll_columns(["1", "3"])
    (1, 3)
    """
    out = []
    for v in values or ():
        try:
            c = int(v)
        except ValueError:
            c = 0
        if c < 1:
            raise CommandError(f"--drop {v}: the columns of a CoNLL-style file are numbered from 1 (--drop 1 ignores "
                               "the first, e.g. the word itself)")
        out.append(c)
    return tuple(out)


def categorical_option(values):
    """``--categorical``'s columns (repeatable, each comma-separated), None when not given.

    >>> categorical_option(["city,colour", "shop"]), categorical_option(None)
    (['city', 'colour', 'shop'], None)
    """
    if values is None:
        return None
    out = [c.strip() for v in values for c in v.split(",") if c.strip()]
    if not out:
        raise CommandError("--categorical: expected column names, e.g. --categorical city,colour")
    return out


def trained_zero_based(meta):
    """Whether a saved model's libsvm training source numbered features from 0 (None: not known, or
    not libsvm); a model saved before the index base was recorded was read from 1."""
    info = ((meta or {}).get("extra") or {}).get("train") or {}
    if info.get("format") != "libsvm":
        return None
    return bool(info.get("zero_based", False))


def delimiter_option(text):
    """``--delimiter``'s character (``tab`` or ``\\t`` for a tab), None when not given.

    >>> delimiter_option(";"), delimiter_option("tab"), delimiter_option(None)
    (';', '\\t', None)
    """
    if text is None:
        return None
    if text.lower() in ("tab", "\\t"):
        return "\t"
    if len(text) != 1 or text in "\"\r\n":
        raise CommandError(f"--delimiter {text!r}: expected one character (e.g. --delimiter ';'), or tab")
    return text


def _csv_has_column(streams, source, name, delimiter=None) -> bool:
    """Whether the CSV file's header (its first non-blank line) names ``name`` (``delimiter``: None
    sniffs it as the reader does)."""
    import csv
    import itertools

    lines = streams.open_source(source)
    try:
        texts = [text for _, text in itertools.islice(lines, streams.SNIFF_LINES + 1) if text.strip()]
        if not texts:
            return False
        delimiter = delimiter or streams.sniff_delimiter(texts)
        return name in [c.strip() for c in next(csv.reader([texts[0]], delimiter=delimiter))]
    except (streams.StreamError, csv.Error):
        return True  # let the reader report the problem
    finally:
        lines.close()


def source_errors():
    """Exception classes a reader raises for bad input or an unreadable source."""
    import streams

    return (streams.StreamError, OSError)

def _reader_message(exc, src) -> str:
    if isinstance(exc, OSError) and not str(exc).startswith(src.name):
        return f"{src.name}: {exc.strerror or exc}"
    return cli_wording(str(exc))


#: The readers' messages name their Python arguments; on the command line they name the options.
_WORDING = (
    (r"on_error='(skip|warn|raise)'", r"--on-error \1"),
    (r"\bdrop= column", "--drop column"),
    (r"also in drop=", "also given to --drop"),
    (r"use target_type=float", "use --target-type float"),
    (r" \(or use has_target=False for unlabelled data\)", ""),
    (r", or has_target=False for unlabelled data", ""),
    (r"pass target= with the right key", "pass --target KEY with the right key"),
    (r"a larger connect_timeout=", "a larger --timeout"),
    (r"\(delimiter=(['\"].*?['\"])\)", r"(the delimiter is \1)"),
    (r"pass zero_based=True", "pass --zero-based"),
    (r"(column '([^']*)' = .*?), list the column in categorical= to keep it as a string or in drop= to ignore it",
     r"\1, pass --categorical \2 to read it as categories (one indicator feature per value) or --drop \2 to "
     "ignore it"),
    (r"list the column in categorical= to keep it as a string or in drop= to ignore it",
     "pass the column to --categorical to read it as categories or to --drop to ignore it"),
    (r"\bcategorical= column", "--categorical column"),
    (r"list column (\d+) in drop= to ignore it", r"pass --drop \1 to ignore it"),
    (r", or pass a larger max_sequence_length=", ""),
    (r"n_features=(\d+) means", r"the model's \1 features mean"),
    (r"(feature '([^']*)' = .*? is not a number); encode categorical features \(e\.g\. river's "
     r"preprocessing\.OneHotEncoder\) before the learner",
     r"\1; pass --categorical \2 to read it as categories (one indicator feature per value)"),
    (r"\(zero_based='auto' read them", "(so they were read"),
    (r"pass delimiter='\\t' \(or delimiter=None to sniff it\)", "pass --delimiter tab (or leave --delimiter out to "
                                                              "sniff it)"),
    (r"pass delimiter=(['\"].*?['\"]) \(or delimiter=None to sniff it\)", r"pass --delimiter \1 (or leave "
                                                                        "--delimiter out to sniff it)"),
)


def cli_wording(message: str) -> str:
    """A reader's message with its Python arguments replaced by the command's options.

    >>> cli_wording("data.csv line 3: bad; fix it, or pass on_error='skip' to skip bad lines")
    'data.csv line 3: bad; fix it, or pass --on-error skip to skip bad lines'
    """
    import re

    for pattern, repl in _WORDING:
        message = re.sub(pattern, repl, message)
    return message


def _float_label(text):
    """A csv label read as a number (regression): finite, or a ValueError saying what it is."""
    y = float(text)
    if not math.isfinite(y):
        raise ValueError(f"{text!r} is not a finite number")
    return y


def _number_or_text(y):
    """A text label as a finite number if it is one, else unchanged."""
    if not isinstance(y, str):
        return y
    try:
        return _float_label(y)
    except ValueError:
        return y


class _Label:
    """The csv reader's label converter while the task is undecided: the text, until
    :meth:`Source.set_task` switches it to numbers."""

    def __init__(self):
        self.fn = None

    def __call__(self, text):
        return text if self.fn is None else self.fn(text)


def _report_skips(src, n_rejected, command):
    verb = "predicted" if command == "predict" else "learnt"
    for rep in (src.skipped_report(), src.missing_report(verb), src.unseen_report()):
        if rep:
            print(f"onlinemkl {command}: {rep}", file=sys.stderr)
    if n_rejected:
        print(f"onlinemkl {command}: skipped {n_rejected} example{'s' if n_rejected != 1 else ''} "
              "the learner rejected", file=sys.stderr)
