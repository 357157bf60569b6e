"""``onlinemkl serve``: the TCP server of :mod:`onlinemkl.serve` behind the command's options."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from ._errors import CommandError, option_message
from ._model import _model_from_args, describe, final_step
from ._task import DEFAULT_LEARNERS, learner_task
from ._warmup import compile_first, compile_note


#: ModelServer's arguments -> the options that set them.
_SERVER_FLAGS = {"max_line_bytes": "--max-line-bytes", "max_clients": "--max-clients",
                 "idle_timeout": "--idle-timeout", "checkpoint_every": "--checkpoint-every"}


def _serve(args) -> int:
    from ..serve import ModelServer

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
    if not 0 <= args.port <= 65535:
        raise CommandError(f"--port {args.port}: must be 0..65535 (0: any free port)")
    model, meta = _model_from_args(args)
    note = compile_note(compile_first(final_step(model), args))  # before the first client
    if note:
        print(f"onlinemkl serve: compile seconds: {note}", file=sys.stderr)
    extra = dict((meta or {}).get("extra") or {})
    from ..persist import save

    def save_with_extra(m, path):
        return save(m, path, extra=extra)

    try:
        server = ModelServer(model, host=args.host, port=args.port, token=token,
                             max_line_bytes=args.max_line_bytes, max_clients=args.max_clients,
                             idle_timeout=args.idle_timeout, line_timeout=args.line_timeout,
                             auth_timeout=args.auth_timeout, save_path=args.save,
                             checkpoint_every=args.checkpoint_every, save=save_with_extra, log=sys.stderr)
    except (OSError, ValueError) as exc:
        raise CommandError(option_message(str(exc), _SERVER_FLAGS)) from None
    if args.allow_feature_mismatch:
        server.feature_check = None
    if not args.model:
        task = learner_task(args.learner) if args.learner else args.task or "classification"
        why = (f"--learner {args.learner}" if args.learner else f"--task {args.task}" if args.task else
               "the default; --task regression for numeric labels")
        print(f"onlinemkl serve: task: {task}, learner {args.learner or DEFAULT_LEARNERS[task]} ({why})",
              file=sys.stderr)
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
