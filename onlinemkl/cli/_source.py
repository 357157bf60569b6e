"""Sources of examples: the :mod:`streams` readers behind ``SOURCE``, and their errors."""

from __future__ import annotations

import sys

from ._errors import CommandError


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

    @classmethod
    def from_args(cls, args, target, labelled=True):
        """The source of a command's ``SOURCE``, ``--format``, ``--on-error``, ``--timeout``, ``--drop``
        and ``--target-type`` options, with the label column ``target``."""
        return cls(args.source, args.format, target, args.on_error, args.timeout, labelled=labelled, drop=args.drop,
                   target_type=getattr(args, "target_type", "str"))

    def __iter__(self):
        """The ``(x, y)`` pairs; a bad line (with ``on_error="raise"``) or an unreadable source
        ends them with a :class:`CommandError` naming the source and line."""
        errors = source_errors()
        it = iter(self.reader)
        while True:
            try:
                x, y = next(it)
            except StopIteration:
                return
            except errors as exc:
                raise CommandError(_reader_message(exc, self)) from None
            if self._pop is not None:
                x.pop(self._pop, None)
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
