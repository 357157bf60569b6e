"""Opening sources and framing them into numbered text lines.

Every line-based reader goes through :func:`open_source`, so paths, ``-``,
open file objects, iterables of lines and ``tcp://host:port`` behave the same
way in all of them.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import lzma
import os
import socket
import sys
import zlib
from typing import Any, Callable, Iterable, Iterator, Optional, Tuple
from urllib.parse import urlsplit

from ._errors import StreamError

__all__ = ["open_source", "DEFAULT_TIMEOUT", "DEFAULT_MAX_LINE_BYTES"]

#: Default connect and read timeout (seconds) of ``tcp://`` sources.
DEFAULT_TIMEOUT = 10.0
#: Default longest accepted line, in bytes (characters for text sources): 1 MiB.
DEFAULT_MAX_LINE_BYTES = 1 << 20

_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open, ".lzma": lzma.open}
_TCP = "tcp://"
# errors a (possibly compressed) file can raise while being read
_READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)

#: ``on_bad(line_no, problem, fix)`` -- called for a line that cannot be framed
#: or decoded; returns to skip the line, raises to stop.
BadLineHandler = Callable[[int, str, Optional[str]], None]


class _Spec:
    """A resolved (not yet opened) source: its kind, display name and target."""

    __slots__ = ("kind", "name", "target", "host", "port")

    def __init__(self, kind: str, name: str, target: Any = None,
                 host: str | None = None, port: int | None = None):
        self.kind = kind        # 'path' | 'stdin' | 'file' | 'lines' | 'tcp'
        self.name = name
        self.target = target
        self.host = host
        self.port = port

    def __repr__(self) -> str:
        return f"<source {self.name}>"


def _parse_tcp(address: str) -> _Spec:
    hint = "expected tcp://host:port, e.g. tcp://127.0.0.1:9000"
    try:
        parts = urlsplit(address)
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise StreamError(f"bad TCP address {address!r} ({exc}); {hint}") from None
    if not host or port is None or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise StreamError(f"bad TCP address {address!r}; {hint}")
    shown = f"[{host}]" if ":" in host else host
    return _Spec("tcp", f"tcp://{shown}:{port}", host=host, port=port)


def resolve_source(source: Any) -> _Spec:
    """Classify ``source`` without opening it (errors in its *form* are raised now)."""
    if isinstance(source, _Spec):
        return source
    if isinstance(source, str) and source == "-":
        return _Spec("stdin", "<stdin>")
    if isinstance(source, str) and source[:len(_TCP)].lower() == _TCP:
        return _parse_tcp(source)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        return _Spec("path", path, target=path)
    if isinstance(source, (bytes, bytearray, memoryview)):
        raise TypeError("source is bytes: pass a path as str (or pathlib.Path), or wrap "
                        "in-memory data in io.BytesIO / io.StringIO")
    if callable(getattr(source, "readline", None)):
        name = getattr(source, "name", None)
        return _Spec("file", name if isinstance(name, str) else "<stream>", target=source)
    if isinstance(source, Iterable):
        return _Spec("lines", "<lines>", target=source)
    raise TypeError(f"cannot read from {type(source).__name__!r}: pass a path, '-' for "
                    "standard input, 'tcp://host:port', an open file object or an "
                    "iterable of lines")


def open_source(source: Any, *, encoding: str = "utf-8",
                timeout: float | None = DEFAULT_TIMEOUT,
                connect_timeout: float | None = DEFAULT_TIMEOUT,
                max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                on_bad: BadLineHandler | None = None) -> Iterator[Tuple[int, str]]:
    """Lazily yield ``(line_no, line)`` pairs from a path, ``-``, a file or a socket.

    The shared framing layer of every line-based reader. Nothing is opened
    until the first line is requested; files opened here (and sockets) are
    closed when the iterator is exhausted or closed (``close()``, or garbage
    collection after an early ``break``); file objects passed in and standard
    input are left open.

    Parameters
    ----------
    source : str, os.PathLike, file object or iterable of lines
        * a path; ``.gz``, ``.bz2``, ``.xz`` (and ``.lzma``) suffixes are
          decompressed on the fly (gzip / bz2 / lzma from the standard library);
        * ``"-"``: standard input (its binary buffer when it has one);
        * ``"tcp://host:port"``: connect to that address and read newline
          framed text until the peer closes the connection;
        * an open file object, text or binary (anything with
          ``readline(size)``); it is not decompressed and not closed;
        * any other iterable of ``str`` / ``bytes`` lines (one item = one line).
    encoding : str, default "utf-8"
        Encoding of binary sources, decoded one complete line at a time (so a
        multi-byte character split between two network packets is fine). Must
        be ASCII compatible (newline = byte ``0x0A``). A UTF-8 byte order mark
        at the start of the first line is removed.
    timeout : float or None, default 10.0
        ``tcp://`` only: seconds to wait for more data before failing with a
        :class:`StreamError`; ``None`` waits forever.
    connect_timeout : float or None, default 10.0
        ``tcp://`` only: seconds to wait for the connection to be accepted.
    max_line_bytes : int, default 1 MiB
        Longest accepted line (bytes for binary sources, characters for text).
        A longer line is reported as a bad line as soon as it passes the limit
        (so with ``on_bad`` raising, a line without end is not read further),
        then read to its end in bounded pieces and discarded, so an endless
        line cannot exhaust memory.
    on_bad : callable or None
        ``on_bad(line_no, problem, fix)`` is called for a line that is too long
        or cannot be decoded; if it returns, the line is skipped. ``None``
        raises a :class:`StreamError`.

    Yields
    ------
    line_no : int
        1-based physical line number (lines that were skipped still count).
    line : str
        The decoded line without its ``\\n`` / ``\\r\\n`` terminator. Blank
        lines are yielded too.

    Raises
    ------
    StreamError
        Cannot open the file, cannot connect (the message names the address),
        read timeout, corrupt compressed data, or a bad line with ``on_bad=None``.

    Examples
    --------
    >>> import io
    >>> from streams import open_source
    >>> list(open_source(io.BytesIO(b"a,b\\r\\n1,2\\n\\n3,4")))
    [(1, 'a,b'), (2, '1,2'), (3, ''), (4, '3,4')]
    >>> for n, line in open_source("tcp://127.0.0.1:9000", timeout=60):  # doctest: +SKIP
    ...     print(n, line)
    """
    spec = resolve_source(source)
    if not isinstance(max_line_bytes, int) or max_line_bytes < 1:
        raise ValueError(f"max_line_bytes must be a positive int, got {max_line_bytes!r}")
    codecs.lookup(encoding)  # unknown encodings fail now, not at the first line
    return _lines(spec, encoding, timeout, connect_timeout, max_line_bytes, on_bad)


def _raise_bad(name: str) -> BadLineHandler:
    def on_bad(line_no: int, problem: str, fix: str | None) -> None:
        fix = fix or "fix the line"
        raise StreamError(f"{name} line {line_no}: {problem}; {fix}",
                          source=name, line_no=line_no, reason=problem)
    return on_bad


def _connect(spec: _Spec, timeout, connect_timeout) -> socket.socket:
    try:
        sock = socket.create_connection((spec.host, spec.port), timeout=connect_timeout)
    except socket.gaierror as exc:
        raise StreamError(f"cannot connect to {spec.name}: unknown host "
                          f"({exc.strerror or exc}); check the address",
                          source=spec.name) from exc
    except TimeoutError as exc:
        raise StreamError(f"cannot connect to {spec.name}: no answer within "
                          f"{connect_timeout} s; check that the sender is listening "
                          f"or pass a larger connect_timeout=", source=spec.name) from exc
    except OSError as exc:
        raise StreamError(f"cannot connect to {spec.name}: {exc.strerror or exc}",
                          source=spec.name) from exc
    sock.settimeout(timeout)
    return sock


def _lines(spec: _Spec, encoding, timeout, connect_timeout, max_line_bytes,
           on_bad) -> Iterator[Tuple[int, str]]:
    name = spec.name
    on_bad = on_bad or _raise_bad(name)
    to_close: list = []
    try:
        if spec.kind == "path":
            suffix = os.path.splitext(spec.target)[1].lower()
            opener = _COMPRESSED.get(suffix, open)
            try:
                stream = opener(spec.target, "rb")
            except OSError as exc:
                raise StreamError(f"cannot open {name}: {exc.strerror or exc}",
                                  source=name) from exc
            to_close.append(stream)
        elif spec.kind == "stdin":
            if sys.stdin is None:
                raise StreamError("cannot read <stdin>: there is no standard input",
                                  source=name)
            stream = getattr(sys.stdin, "buffer", sys.stdin)
        elif spec.kind == "tcp":
            sock = _connect(spec, timeout, connect_timeout)
            to_close.append(sock)
            stream = sock.makefile("rb")
            to_close.insert(0, stream)
        else:
            stream = spec.target
        if spec.kind == "lines":
            pieces = _from_iterable(stream, max_line_bytes)
        else:
            pieces = _from_readline(stream.readline, max_line_bytes)
        yield from _decode(pieces, spec, encoding, timeout, max_line_bytes, on_bad)
    finally:
        for obj in to_close:
            try:
                obj.close()
            except Exception:  # pragma: no cover - closing must not mask errors
                pass


def _from_readline(readline, limit: int) -> Iterator[Tuple[Any, bool]]:
    """Yield ``(raw_line, too_long)``; a too long line is drained in pieces."""
    while True:
        raw = readline(limit + 1)
        if not raw:
            return
        nl, cr = ("\n", "\r") if isinstance(raw, str) else (b"\n", b"\r")
        if len(raw) > limit and not raw.endswith(nl):
            if len(raw) == limit + 1 and raw.endswith(cr):
                more = readline(1)  # exactly `limit` characters + CRLF: accept
                if more == nl:
                    yield raw + more, False
                    continue
                if not more:
                    yield raw, False
                    continue
            # Report first (on_error="raise" stops here, so a line without end is not read forever),
            # then drain the rest of the line without keeping it.
            yield raw[:0], True
            while True:
                more = readline(65536)
                if not more or more.endswith(nl):
                    break
        else:
            yield raw, False


def _from_iterable(items, limit: int) -> Iterator[Tuple[Any, bool]]:
    for raw in items:
        if not isinstance(raw, (str, bytes, bytearray)):
            raise TypeError(f"an iterable source must yield str or bytes lines, "
                            f"got {type(raw).__name__}")
        yield raw, len(raw.rstrip(b"\r\n" if not isinstance(raw, str) else "\r\n")) > limit


def _decode(pieces, spec: _Spec, encoding, timeout, limit, on_bad) -> Iterator[Tuple[int, str]]:
    name = spec.name
    first_encoding = "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding
    line_no = 0
    it = iter(pieces)
    while True:
        try:
            raw, too_long = next(it)
        except StopIteration:
            return
        except TimeoutError as exc:
            raise StreamError(f"{name}: read timed out after {timeout} s waiting for "
                              f"line {line_no + 1}; the sender is idle or stalled, pass "
                              f"a larger timeout= (or timeout=None to wait forever)",
                              source=name, line_no=line_no + 1) from exc
        except _READ_ERRORS as exc:
            what = "connection failed" if spec.kind == "tcp" else "cannot read"
            hint = ("" if spec.kind == "tcp" else
                    "; check that the file is complete and not corrupt")
            raise StreamError(f"{name} line {line_no + 1}: {what} ({exc}){hint}",
                              source=name, line_no=line_no + 1) from exc
        line_no += 1
        if too_long:
            on_bad(line_no, f"line is longer than max_line_bytes={limit}",
                   "split the record or pass a larger max_line_bytes=")
            continue
        if isinstance(raw, str):
            text = raw[1:] if line_no == 1 and raw.startswith("\ufeff") else raw
        else:
            try:
                text = bytes(raw).decode(first_encoding if line_no == 1 else encoding)
            except UnicodeDecodeError as exc:
                bad = bytes(raw[exc.start:exc.end])
                on_bad(line_no, f"bytes are not valid {encoding} ({bad!r} at byte "
                       f"{exc.start + 1}: {exc.reason})",
                       f"re-encode the data as {encoding} (e.g. iconv -f latin1 -t "
                       f"utf-8) or pass the right encoding=")
                continue
        if text.endswith("\n"):
            text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
        yield line_no, text
