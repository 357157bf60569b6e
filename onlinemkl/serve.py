"""A line-oriented JSON prediction and learning server over one model (standard library only).

Protocol: each request is one line holding a JSON object, each reply one line
holding a JSON object, in order, on the same connection.

========================================  ===========================================================
request                                   reply
========================================  ===========================================================
``{"x": {"f1": 0.5, "f2": 1}}``           ``{"prediction": "cat"}``
``{"x": {...}, "proba": true}``           ``{"prediction": "cat", "classes": ["cat", "dog"],
                                          "proba": [0.8, 0.2]}``
``{"x": {...}, "y": "dog"}``              ``{"prediction": "cat", "learned": true}`` (predict, then learn)
``{"x": {...}, "id": 17}``                the reply carries ``"id": 17`` too (an error reply as well,
                                          once the line is a valid request)
anything malformed                        ``{"error": "...", "line": 3}``; the model is unchanged and the
                                          connection stays open
========================================  ===========================================================

A sequence labeller (:class:`onlinemkl.SequenceMKLLabeler`) takes one sequence per line instead:
``{"xs": [[0.5, 1.0], [0.1, -2.0]]}`` (one row of numbers per token, every row as long as the
model's) is answered ``{"prediction": ["B", "I"]}``, one label per token; with ``"ys": ["B",
"O"]`` (one JSON string, number or boolean per token) the sequence is predicted, then learnt
(``"learned": true``); ``"id"`` is echoed; a sequence holds at most ``max_sequence_length``
tokens (10 000 by default).  Its rows get the checks of ``x`` below, and a labelled line the
checks of a prediction (the model's number of features) before anything is learnt.

``x`` maps feature names to finite numbers (for a model whose features are
numbers, e.g. trained from LIBSVM files, a key ``"3"`` means feature ``3``);
``y`` is a JSON string, number or boolean, compared with the model's classes by
:func:`onlinemkl.features.label_key` (``1``, ``1.0``, ``"1"`` and ``"1.0"`` are one label, so a
model trained on a CSV file's text labels learns from JSON numbers); a label of a kind the
classes lack (a number for text classes, text that is not a number for numeric classes) is an
error, never a new class.  A labelled line gets the feature check of a prediction (below).
With a token the first line must be ``{"token": "..."}`` (reply ``{"ok": true}``); a wrong
token closes the connection.  The full reference: ``docs/serving.md``.

Several clients are served at once (a thread each); every use of the model
(predict or learn) holds one lock, so the model never sees a torn update and
predictions never read a half-updated state.  A rejected example leaves the
model unchanged: the learners check before they change anything, and the
steps before the learner in a pipeline (e.g. the scaler) are restored if the
learner rejects the example.

An example whose feature names differ from the model's (:class:`onlinemkl._feature_check.FeatureCheck`:
a name never seen, or one present in every training example that is absent) is refused, for
prediction and for learning alike, so a wrong client never teaches the model; setting
:attr:`ModelServer.feature_check` to None (``--allow-feature-mismatch``) predicts and learns
such examples.  A learner's ``max_features`` is enforced on the raw example, before the steps in
front of the learner learn its new names; a prediction leaves no trace of the names it read in
those steps.

Safe defaults: the server binds to 127.0.0.1, reads lines of at most
``max_line_bytes`` (a longer line gets an error reply and is skipped),
serves at most ``max_clients`` connections, and closes a connection idle
for ``idle_timeout`` seconds, one whose unfinished line started more than
``line_timeout`` seconds ago, or (with a token) one not authenticated
within ``auth_timeout`` seconds of connecting: the deadlines run from the
first byte and from the connection, so a client trickling one byte at a
time cannot hold its slot.  Replies are sent at once (``TCP_NODELAY``), so
pipelined requests do not wait for the client's delayed acknowledgement.
:meth:`ModelServer.request_stop` (the command's SIGTERM/SIGINT handler)
stops accepting; every connection then answers the complete requests it
has already received (read without waiting), sends its replies and closes,
and :meth:`ModelServer.shutdown` writes the final checkpoint.

Example (not executed: it opens a socket)::

    from onlinemkl.serve import ModelServer
    server = ModelServer(model, port=0).start()        # a free port on 127.0.0.1
    host, port = server.address
    ...                                                # clients connect, send JSON lines
    server.shutdown()
"""

from __future__ import annotations

import hmac
import json
import math
import selectors
import socket
import sys
import threading
import time

from ._feature_check import FeatureCheck
from ._undo import undo_steps
from ._validation import MAX_ABS_VALUE, TOO_LARGE

__all__ = ["ModelServer", "DEFAULTS"]

#: Defaults of the server's limits (the command line shows them in ``--help``).
DEFAULTS = {
    "host": "127.0.0.1",
    "port": 8765,
    "max_line_bytes": 1 << 20,
    "max_clients": 32,
    "idle_timeout": 300.0,
    "line_timeout": 30.0,
    "auth_timeout": 10.0,
    "max_sequence_length": 10_000,
}

_POLL = 0.1  # seconds between checks of the stop flag
_KEYS = frozenset({"x", "y", "proba", "id"})
_SEQUENCE_KEYS = frozenset({"xs", "ys", "id"})
#: The registry name (:mod:`onlinemkl.persist`) of the learner that takes sequence requests.
_SEQUENCE_LEARNER = "onlinemkl.SequenceMKLLabeler"


class RequestError(ValueError):
    """A request the server answers with an error reply."""


def _json_object(line: bytes, example: str) -> dict:
    """The request line decoded: a JSON object, or a :class:`RequestError` that shows one."""
    try:
        req = json.loads(line)
    except UnicodeDecodeError:
        raise RequestError("the line is not UTF-8 text") from None
    except ValueError as exc:
        raise RequestError(f"malformed JSON ({exc})") from None
    if not isinstance(req, dict):
        raise RequestError(f"a request is a JSON object such as {example}")
    return req


def _check_value(v, where: str) -> None:
    """A feature value is a finite JSON number of magnitude at most ``MAX_ABS_VALUE``."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (type(v) is float and not math.isfinite(v)):
        raise RequestError(f"{where} = {v!r} is not a finite number")
    if not -MAX_ABS_VALUE <= v <= MAX_ABS_VALUE:
        raise RequestError(f"{where} = {v!r} {TOO_LARGE}")


def _label_ok(y) -> bool:
    if isinstance(y, (bool, str)):
        return True
    if isinstance(y, int):
        return True
    return isinstance(y, float) and math.isfinite(y)


def _jsonable(value):
    """A prediction or label as JSON (tuples become lists; unknown objects their repr)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    try:  # numpy scalars
        return _jsonable(value.item())
    except AttributeError:
        return repr(value)


class ModelServer:
    """Serve ``model`` (a river classifier or pipeline) over TCP, JSON lines in and out.

    Parameters
    ----------
    model
        Anything with river's ``predict_one``/``learn_one`` (``predict_proba_one`` for
        ``"proba": true``).
    host, port
        Where to listen; ``port=0`` picks a free port (see :attr:`address`).
        The default host is the loopback interface: other machines cannot connect.
    token
        If given, the first line of every connection must be ``{"token": token}``.
    max_line_bytes, max_clients, idle_timeout, line_timeout, auth_timeout, max_sequence_length
        The limits described in the module docstring.
    save_path, checkpoint_every
        Write the model to ``save_path`` (atomically) every ``checkpoint_every``
        learned examples and on :meth:`shutdown`.
    save
        ``save(model, path)``; default :func:`onlinemkl.persist.save`.
    log
        A file for one-line event messages (default: standard error; None: silent).
    """

    #: Set TCP_NODELAY on every connection (a benchmark turns it off to measure what it buys).
    nodelay = True

    def __init__(self, model, *, host=DEFAULTS["host"], port=0, token=None,
                 max_line_bytes=DEFAULTS["max_line_bytes"], max_clients=DEFAULTS["max_clients"],
                 idle_timeout=DEFAULTS["idle_timeout"], line_timeout=DEFAULTS["line_timeout"],
                 auth_timeout=DEFAULTS["auth_timeout"], save_path=None, checkpoint_every=None, save=None,
                 log=sys.stderr, max_sequence_length=DEFAULTS["max_sequence_length"]):
        if max_line_bytes < 16:
            raise ValueError(f"max_line_bytes={max_line_bytes}: must be at least 16")
        if max_clients < 1:
            raise ValueError(f"max_clients={max_clients}: must be at least 1")
        for name, value in (("idle_timeout", idle_timeout), ("line_timeout", line_timeout),
                            ("auth_timeout", auth_timeout)):
            if not value > 0:
                raise ValueError(f"{name}={value}: must be > 0 seconds")
        if checkpoint_every is not None and checkpoint_every < 1:
            raise ValueError(f"checkpoint_every={checkpoint_every}: must be at least 1")
        if max_sequence_length < 1:
            raise ValueError(f"max_sequence_length={max_sequence_length}: must be at least 1")
        self.model = model
        #: whether requests are sequences (``xs``/``ys``): the model is a sequence labeller
        self.sequences = _labels_sequences(model)
        self.max_sequence_length = int(max_sequence_length)
        self.token = token
        self.max_line_bytes = int(max_line_bytes)
        self.max_clients = int(max_clients)
        self.idle_timeout = float(idle_timeout)
        self.line_timeout = float(line_timeout)
        self.auth_timeout = float(auth_timeout)
        self.save_path = save_path
        self.checkpoint_every = checkpoint_every
        if save is None:
            from .persist import save
        self._save = save
        self._log_file = log
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._clients: set = set()
        self._clients_lock = threading.Lock()
        self._thread = None
        self.n_requests = 0
        self.n_learned = 0
        self.n_errors = 0
        self._since_checkpoint = 0
        # JSON keys are strings; a model whose features are numbers (LIBSVM, arrays) reads "3" as 3.
        self._check_features = getattr(_final(model), "check_features", None)  # max_features (dict learners)
        cols = getattr(getattr(_final(model), "_features", None), "columns", None)
        self.numbered_features = bool(cols) and all(isinstance(k, int) and not isinstance(k, bool) for k in cols)
        self.feature_check = FeatureCheck(model)  # None: predict examples whose feature names differ
        try:
            self._sock = socket.create_server((host, port), family=_family(host), backlog=64)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self._sock.setblocking(False)
        self.address = self._sock.getsockname()[:2]

    # -- life cycle ----------------------------------------------------------------------

    def _log(self, msg):
        if self._log_file is not None:
            print(f"onlinemkl serve: {msg}", file=self._log_file, flush=True)

    def start(self):
        """Serve in a background thread; returns ``self``."""
        self._thread = threading.Thread(target=self.serve_forever, name="onlinemkl-serve", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self):
        """Accept connections until :meth:`request_stop`; then stop listening."""
        sel = selectors.DefaultSelector()
        sel.register(self._sock, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                if not sel.select(timeout=_POLL):
                    continue
                try:
                    conn, addr = self._sock.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    if self._stop.is_set():
                        break
                    raise
                self._admit(conn, addr)
        finally:
            sel.close()
            self._sock.close()

    def _admit(self, conn, addr):
        conn.setblocking(True)
        if self.nodelay:  # a reply goes out at once, not after the client's delayed ACK (~40 ms)
            try:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # pragma: no cover - not a TCP socket
                pass
        conn.settimeout(self.idle_timeout)  # bounds a send to a client that does not read
        with self._clients_lock:
            if len(self._clients) >= self.max_clients:
                self._send(conn, {"error": f"server busy: {self.max_clients} clients connected (--max-clients)"})
                _close(conn)
                return
            t = threading.Thread(target=self._serve_client, args=(conn, addr), daemon=True,
                                 name=f"onlinemkl-client-{addr[1]}")
            self._clients.add(t)
        t.start()

    def request_stop(self):
        """Stop accepting connections; connections finish the line in progress, then close."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def shutdown(self, timeout: float = 30.0):
        """Stop, wait for the connections to finish their lines, write the final checkpoint."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)
        deadline = time.monotonic() + timeout
        while True:
            with self._clients_lock:
                alive = [t for t in self._clients if t.is_alive()]
            if not alive or time.monotonic() > deadline:
                break
            alive[0].join(max(0.0, min(_POLL, deadline - time.monotonic())))
        if self.save_path is not None:
            with self.lock:
                self._save(self.model, self.save_path)
            self._log(f"saved the model to {self.save_path} ({self.n_learned} examples learnt while serving)")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()

    # -- one connection --------------------------------------------------------------------

    def _send(self, conn, obj) -> bool:
        try:
            conn.sendall(json.dumps(obj, default=repr).encode("utf-8") + b"\n")
            return True
        except OSError:
            return False

    def _serve_client(self, conn, addr):
        sel = selectors.DefaultSelector()
        c = _Connection(authed=self.token is None, now=time.monotonic())
        try:
            sel.register(conn, selectors.EVENT_READ)
            while True:
                if self._stop.is_set():
                    self._drain(conn, c)  # answer the requests the client already sent, then close
                    return
                ready = sel.select(timeout=_POLL)
                now = time.monotonic()
                why = self._overdue(c, now)  # checked on every turn: a byte now and then does not reset it
                if why:
                    self.n_errors += 1
                    self._send(conn, {"error": why})
                    self._log(f"closed {addr[0]}:{addr[1]}: {why}")
                    return
                if not ready:
                    continue
                try:
                    chunk = conn.recv(65536)
                except (socket.timeout, BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    return
                if not chunk:
                    return  # the client closed; a partial line is dropped unprocessed
                c.last = now
                if not self._feed(conn, c, chunk, now):
                    return
        finally:
            sel.close()
            _close(conn)
            with self._clients_lock:
                self._clients.discard(threading.current_thread())

    def _overdue(self, c, now):
        """Why the connection must close now (a deadline passed), or None."""
        if not c.authed and now - c.connected > self.auth_timeout:
            return (f"no token within {self.auth_timeout:g} s of connecting: closing (--auth-timeout)")
        if c.line_start is not None and now - c.line_start > self.line_timeout:
            return (f"line {c.line_no + 1} not finished within {self.line_timeout:g} s of its first byte: "
                    "closing (--line-timeout)")
        if now - c.last > self.idle_timeout:
            return f"idle for {self.idle_timeout:g} s: closing (--idle-timeout)"
        return None

    def _drain(self, conn, c):
        """On stop: read what the client has already sent (without waiting), answer every complete line,
        then close gracefully so that the replies reach the client."""
        got = 0
        try:
            conn.settimeout(0.0)
            while got <= self.max_line_bytes + (1 << 20):
                try:
                    chunk = conn.recv(65536)
                except (BlockingIOError, InterruptedError, socket.timeout):
                    break
                if not chunk:
                    break
                got += len(chunk)
                c.buf += chunk
            conn.settimeout(self.idle_timeout)
        except OSError:
            return
        if c.buf and not self._feed(conn, c, b"", time.monotonic()):
            return
        try:  # our FIN after the replies; read (and drop) what still comes for a moment, so no RST cuts them
            conn.shutdown(socket.SHUT_WR)
            conn.settimeout(0.2)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline and conn.recv(65536):
                pass
        except OSError:
            pass

    def _feed(self, conn, c, chunk: bytes, now: float) -> bool:
        """Answer every complete line in the buffer (all of them, even while stopping); False: close."""
        buf = c.buf
        buf += chunk
        completed = False
        while True:
            i = buf.find(b"\n")
            if c.discarding:
                if i < 0:
                    buf.clear()
                    break
                del buf[: i + 1]
                c.discarding = False
                completed = True
                continue
            if i < 0:
                if len(buf) > self.max_line_bytes:
                    c.line_no += 1
                    self.n_errors += 1
                    buf.clear()
                    c.discarding = True
                    if not self._send(conn, {"error": f"line longer than {self.max_line_bytes} bytes "
                                                      "(--max-line-bytes): skipped", "line": c.line_no}):
                        return False
                break
            line = bytes(buf[:i])
            del buf[: i + 1]
            completed = True
            c.line_no += 1
            if len(line) > self.max_line_bytes:
                self.n_errors += 1
                if not self._send(conn, {"error": f"line longer than {self.max_line_bytes} bytes "
                                                  "(--max-line-bytes): skipped", "line": c.line_no}):
                    return False
                continue
            if not line.strip():
                c.line_no -= 1
                continue
            if not c.authed:
                if self._check_token(line):
                    c.authed = True
                    if not self._send(conn, {"ok": True}):
                        return False
                    continue
                self._send(conn, {"error": "authentication failed: the first line must be "
                                           '{"token": "..."} with the server\'s token'})
                return False
            reply = self.handle_line(line)
            if "error" in reply:
                reply["line"] = c.line_no
            if not self._send(conn, reply):
                return False
        # The deadline of a line runs from its first byte: a new partial line starts now.
        if buf or c.discarding:
            c.line_start = now if completed or c.line_start is None else c.line_start
        else:
            c.line_start = None
        return True

    def _check_token(self, line: bytes) -> bool:
        try:
            obj = json.loads(line)
        except Exception:  # malformed, not UTF-8, nested too deeply
            return False
        tok = obj.get("token") if isinstance(obj, dict) else None
        if not isinstance(tok, str):
            return False
        return hmac.compare_digest(tok.encode("utf-8"), self.token.encode("utf-8"))

    # -- one request -----------------------------------------------------------------------

    def handle_line(self, line: bytes) -> dict:
        """The reply to one request line (never raises for a bad request)."""
        self.n_requests += 1
        req = None
        try:
            if self.sequences:
                req = self.parse_sequence(line, self.max_sequence_length)
                reply = self.handle_sequence(req)
            else:
                req = self.parse(line)
                reply = self.handle(req)
        except RequestError as exc:
            reply = {"error": str(exc)}
        except Exception as exc:  # the model rejected the example (its message says why)
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        else:
            return reply
        self.n_errors += 1
        if req is not None and "id" in req:  # a valid request the model refused: its id, as a reply's
            reply["id"] = req["id"]
        return reply

    @staticmethod
    def parse(line: bytes) -> dict:
        """A validated request: ``x`` a dict of finite numbers of magnitude at most 1e50 (checked here,
        before a scaler in front of the learner learns from them), ``y`` a JSON scalar, ``proba`` a bool."""
        req = _json_object(line, '{"x": {"f1": 0.5}} or {"x": {...}, "y": "a"}')
        unknown = set(req) - _KEYS
        if unknown:
            raise RequestError(f"unknown keys {sorted(unknown)}; a request has x, and optionally y, proba, id")
        x = req.get("x")
        if not isinstance(x, dict):
            raise RequestError('"x" must be a JSON object mapping feature names to numbers')
        for k, v in x.items():  # before the pipeline's running statistics see them
            _check_value(v, f"feature {k!r}")
        if "y" in req and not _label_ok(req["y"]):
            raise RequestError(f'"y" = {req["y"]!r}: a label is a JSON string, number or boolean')
        if not isinstance(req.get("proba", False), bool):
            raise RequestError('"proba" must be true or false')
        return req

    @staticmethod
    def parse_sequence(line: bytes, max_tokens: int = DEFAULTS["max_sequence_length"]) -> dict:
        """A validated sequence request: ``xs`` a list of at most ``max_tokens`` rows of finite numbers of
        magnitude at most 1e50, all of one length; ``ys`` (optional) one JSON scalar per row."""
        req = _json_object(line, '{"xs": [[0.5, 1.0], [0.1, 2.0]]} or {"xs": [...], "ys": ["B", "I"]}')
        unknown = set(req) - _SEQUENCE_KEYS
        if unknown:
            raise RequestError(f"unknown keys {sorted(unknown)}; this model labels sequences: a request has xs (one "
                               "row of numbers per token), and optionally ys (one label per token) and id")
        xs = req.get("xs")
        if not isinstance(xs, list):
            raise RequestError('"xs" must be a JSON array with one row of numbers per token, e.g. [[0.5, 1.0], '
                               '[0.1, 2.0]]')
        if len(xs) > max_tokens:
            raise RequestError(f'"xs" has {len(xs)} tokens, more than {max_tokens} (max_sequence_length); split '
                               "the sequence")
        for i, row in enumerate(xs):
            if not isinstance(row, list) or not row:
                raise RequestError(f'xs[{i}] must be a non-empty JSON array of numbers (the token\'s features)')
            if len(row) != len(xs[0]):
                raise RequestError(f"xs[{i}] has {len(row)} numbers but xs[0] has {len(xs[0])}; every token needs "
                                   "the same features")
            for j, v in enumerate(row):
                _check_value(v, f"xs[{i}][{j}]")
        if "ys" in req:
            ys = req["ys"]
            if not isinstance(ys, list) or len(ys) != len(xs):
                raise RequestError(f'"ys" must be a JSON array of one label per token ({len(xs)} here)')
            for i, y in enumerate(ys):
                if not _label_ok(y):
                    raise RequestError(f"ys[{i}] = {y!r}: a label is a JSON string, number or boolean")
        return req

    def handle_sequence(self, req: dict) -> dict:
        """Label the sequence (and learn it when ``ys`` is given) under the model lock."""
        xs = [[float(v) for v in row] for row in req["xs"]]
        with self.lock:
            # the prediction runs the labeller's checks (the model's number of features) before any learning
            reply = {"prediction": _jsonable(self.model.predict_one(xs))}
            if "ys" in req:
                self.model.learn_one(xs, req["ys"])  # checks every token before it changes anything
                if xs:  # an empty sequence teaches nothing
                    self._learned()
                reply["learned"] = True
        if "id" in req:
            reply["id"] = req["id"]
        return reply

    def handle(self, req: dict) -> dict:
        """Predict (and learn when ``y`` is given) under the model lock."""
        x = {k: float(v) for k, v in req["x"].items()}
        if self.numbered_features:
            x = {_number(k): v for k, v in x.items()}
        reply = {}
        if req.get("proba") and not hasattr(_final(self.model), "predict_proba_one"):  # a pipeline has the method
            raise RequestError('"proba": this model is a regressor and has no class probabilities')
        with self.lock:
            bad = None if self.feature_check is None else self.feature_check.message(x)
            if bad:  # a labelled line too: the model must not learn what it would refuse to predict
                what = "not learnt" if "y" in req else "not predicted"
                raise RequestError(f"{bad}: {what}; send the model's features, or serve with "
                                   "--allow-feature-mismatch")
            if "y" in req and self._check_features is not None:
                try:  # the learner's max_features, before the steps in front of it learn the new names
                    self._check_features(x)
                except ValueError as exc:
                    raise RequestError(str(exc)) from None
            added = _added_by_predict(self.model, x)
            try:
                reply["prediction"] = _jsonable(self.model.predict_one(x))
                if req.get("proba"):
                    proba = self.model.predict_proba_one(x)
                    reply["classes"] = [_jsonable(c) for c in proba]
                    reply["proba"] = [float(p) for p in proba.values()]
            finally:
                for d, keys in added:
                    for k in keys:
                        d.pop(k, None)
            if "y" in req:
                self._learn(x, req["y"])
                reply["learned"] = True
        if "id" in req:
            reply["id"] = req["id"]
        return reply

    def _learn(self, x, y):
        """learn_one, with the steps before the learner restored if the learner rejects the example."""
        undo = undo_steps(self.model, x)  # a scaler: only x's entries (a whole copy grows with the features)
        try:
            self.model.learn_one(x, y)
        except Exception:
            for restore in undo:
                restore()
            raise
        self._learned()

    def _learned(self):
        """Count a learnt example (or sequence) and write the checkpoint when it is due."""
        self.n_learned += 1
        self._since_checkpoint += 1
        if self.save_path is not None and self.checkpoint_every and self._since_checkpoint >= self.checkpoint_every:
            self._save(self.model, self.save_path)
            self._since_checkpoint = 0


def _added_by_predict(model, x):
    """``[(dict, names)]``: the names of ``x`` missing from each dict attribute of the steps before the
    learner, to remove after a prediction.  river's ``StandardScaler.transform_one`` reads its
    ``defaultdict`` of variances, which adds every unseen name: without this, predictions on
    endless new feature names would grow the server's memory without bound."""
    steps = getattr(model, "steps", None)
    if not steps:
        return []
    out = []
    for step in list(steps.values())[:-1]:
        for d in vars(step).values():
            if isinstance(d, dict):
                new = [k for k in x if k not in d]
                if new:
                    out.append((d, new))
    return out


class _Connection:
    """What the server tracks of one connection: its buffer, line count and deadlines."""

    __slots__ = ("buf", "discarding", "authed", "line_no", "connected", "last", "line_start")

    def __init__(self, authed: bool, now: float):
        self.buf = bytearray()
        self.discarding = False  # skipping the rest of an over-long line
        self.authed = authed
        self.line_no = 0
        self.connected = self.last = now
        self.line_start = None  # when the first byte of the unfinished line arrived


def _labels_sequences(model) -> bool:
    """Whether ``model`` (its final step) is the sequence labeller, by its name in the model file registry."""
    from .persist import registered_name

    try:
        return registered_name(_final(model)) == _SEQUENCE_LEARNER
    except TypeError:  # a class the registry does not know: not ours
        return False


def _final(model):
    steps = getattr(model, "steps", None)
    return list(steps.values())[-1] if steps else model


def _number(key: str):
    try:
        return int(key)
    except ValueError:
        return key


def _family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _close(conn):
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()
