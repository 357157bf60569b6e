"""``onlinemkl info``: what a saved model is."""

from __future__ import annotations

import json
from pathlib import Path

from ._model import TRAIN_KEY, describe, final_step, group_labels, load_model


def model_info(model, meta, path) -> dict:
    """A JSON-able description of a saved model (what ``onlinemkl info`` prints)."""
    from ..persist import _init_params, encode_value

    learner = final_step(model)
    out = {
        "file": str(path),
        "bytes": Path(path).stat().st_size,
        "format": f"{meta['format']} v{meta['format_version']}",
        "library_version": meta.get("library_version"),
        "model": describe(model),
        "learner": meta["model"]["children"][-1][1]["class"] if meta["model"].get("children")
        else meta["model"]["class"],
        "parameters": {k: _show(v) for k, v in _init_params(learner).items()},
    }
    labels = getattr(learner, "_labels", None)
    if labels is not None and not isinstance(labels, (list, tuple)):
        labels = getattr(labels, "labels", None)  # a LabelIndex (proximal river adapters)
    if hasattr(learner, "classes_"):
        labels = list(learner.classes_)
    elif getattr(learner, "loss", None) == "hinge" and not labels:
        labels = [False, True]
    if labels is not None:
        out["classes"] = [encode_value(v) if not isinstance(v, (str, int, float, bool)) else v for v in
                          (x.item() if hasattr(x, "item") else x for x in labels)]
    features = getattr(getattr(learner, "_features", None), "columns", None)
    if features is not None and not features and getattr(learner, "_array_input", None):
        out["features"] = learner._engine.n_features  # a sequence labeller trained on rows: unnamed columns
    elif features is not None:
        out["features"] = [f if isinstance(f, str) else repr(f) for f in features]
    elif hasattr(learner, "n_features_in_"):
        out["features"] = learner.n_features_in_
    for attr, key in (("n_support_", "stored_examples"), ("stage_", "stage"), ("R_", "R")):
        try:
            out[key] = getattr(learner, attr)
        except Exception:  # unfitted array-API estimator
            pass
    try:
        w = learner.kernel_weights_
        out["kernel_weights"] = [[k, float(v)] for k, v in zip(group_labels(learner), w)]
    except Exception:
        pass
    train = (meta.get("extra") or {}).get(TRAIN_KEY)
    if train:
        out["training"] = train
    return out


def _show(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def _info(args) -> int:
    model, meta = load_model(args.model_file, streaming=False)
    info = model_info(model, meta, args.model_file)
    if args.json:
        print(json.dumps(info, indent=1, default=repr))
        return 0
    kb = info["bytes"] / 1024
    print(f"file             : {info['file']} ({kb:,.1f} KiB, {info['format']}, written by onlinemkl "
          f"{info['library_version']})")
    print(f"model            : {info['model']}")
    print(f"learner          : {info['learner']}")
    print("parameters       : " + ", ".join(f"{k}={v}" if k == "kernels" else f"{k}={v!r}"
                                           for k, v in info["parameters"].items()))
    if "classes" in info:
        cl = info["classes"]
        print(f"classes          : {len(cl)}: {', '.join(map(repr, cl[:20]))}{' ...' if len(cl) > 20 else ''}")
    if "features" in info:
        f = info["features"]
        if isinstance(f, list):
            print(f"features         : {len(f)}: {', '.join(f[:12])}{' ...' if len(f) > 12 else ''}")
        else:
            print(f"features         : {f}")
    for key, label in (("stored_examples", "stored examples"), ("stage", "stage"), ("R", "R")):
        if key in info and info[key] is not None:
            print(f"{label:<17}: {info[key]}")
    if "kernel_weights" in info:
        print("kernel weights   :")
        for k, w in info["kernel_weights"]:
            print(f"  {w:6.3f}  {k}")
    if "training" in info:
        t = info["training"]
        print(f"training         : {t.get('examples_consumed')} examples of {t.get('source')}"
              f" ({'complete' if t.get('complete') else 'checkpoint, incomplete'}; "
              + ("CoNLL-style sequences" if t.get("format") == "conll" else f"target {t.get('target')!r}") + ")")
    return 0
