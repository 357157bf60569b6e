"""``onlinemkl predict``: predictions of a saved model, one line per example."""

from __future__ import annotations

import json
import sys

from .._feature_check import FeatureCheck
from .._validation import check_example
from ._errors import CommandError
from ._model import _target_default, describe, final_step, load_model, model_task
from ._task import sequence_format_message
from ._source import Source, _report_skips, cli_wording
from ._warmup import compile_first, compile_note


def _predict(args) -> int:
    model, meta = load_model(args.model_file)
    sequence = model_task(model) == "sequence"
    if args.proba and sequence:
        raise CommandError(f"--proba: {args.model_file} holds a sequence learner ({describe(model)}); it predicts "
                           "labels, not class probabilities")
    if args.proba and not hasattr(model, "predict_proba_one"):
        raise CommandError(f"--proba: {args.model_file} holds a regressor ({describe(model)}); it has no class "
                           "probabilities")
    note = compile_note(compile_first(final_step(model), args))  # before the source is read
    if note:
        print(f"onlinemkl predict: compile seconds: {note}", file=sys.stderr)
    target = _target_default(args, meta)
    src = Source.from_args(args, target, labelled=False, meta=meta, model=model,
                           task="sequence" if sequence else None)
    if sequence != (src.format == "conll"):
        raise CommandError(sequence_format_message(f"the model {args.model_file}", model_task(model), src.format))
    # a sequence: its labels on one line, joined by the file's delimiter (a space for blank-separated columns)
    joiner = getattr(src.reader, "delimiter", None) or " "
    note = src.delimiter_note()
    if note:
        print(f"onlinemkl predict: {note}", file=sys.stderr)
    sparse = True if src.format == "libsvm" else None  # LIBSVM leaves zeros out: absent is normal
    check = None if args.allow_feature_mismatch or sequence else FeatureCheck(model, sparse=sparse)
    classes = None  # --proba: the class order of the first line, kept for every line
    out = sys.stdout
    if args.output and args.output != "-":
        try:
            out = open(args.output, "w", encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot write {args.output!r}: {exc.strerror or exc}") from None
    n = 0
    n_rejected = 0
    try:
        it = iter(src)
        while True:
            try:
                x, _ = next(it)
            except StopIteration:
                break
            try:
                if sequence:  # the labeller checks the tokens' values and their number of features
                    pred = model.predict_one(x)
                    out.write(joiner.join("" if p is None else str(p) for p in pred) + "\n")
                    n += 1
                    continue
                check_example(x)
                # a missing value (an empty cell, null) is not a missing column: it is predicted without it
                bad = check.message(x, src.missing_names()) if check is not None else None
                if bad:
                    raise ValueError(f"{bad}; check the source's columns, or pass --allow-feature-mismatch")
                pred = model.predict_one(x)
                proba = model.predict_proba_one(x) if args.proba else None
            except (TypeError, ValueError) as exc:
                if args.on_error == "raise":
                    raise CommandError(f"{src.position}: {cli_wording(str(exc))}") from None
                n_rejected += 1
                pred, proba = None, None
            if args.proba:
                from ..serve import _jsonable

                rec = {"prediction": _jsonable(pred)}
                if proba is not None:
                    if classes is None or set(proba) != set(classes):
                        classes = list(proba)
                    rec["classes"] = [_jsonable(c) for c in classes]
                    rec["proba"] = [float(proba[c]) for c in classes]
                out.write(json.dumps(rec) + "\n")
            else:
                out.write(("" if pred is None else str(pred)) + "\n")
            n += 1
    finally:
        if out is not sys.stdout:
            out.close()
        else:
            out.flush()
    _report_skips(src, n_rejected, "predict")
    if args.output and args.output != "-":
        print(f"onlinemkl predict: {n} predictions written to {args.output}", file=sys.stderr)
    return 0
