"""Every face on the path users get: background compilation on (the suite otherwise compiles in the
caller's thread, see ``conftest.py``).

A fresh process with ``ONLINEMKL_BACKGROUND_COMPILE=1`` learns a short stream with every river face
and every scikit-learn face, its first calls waiting on compilations (or cache loads) running in the
background; its predictions must be this process's, made with compilation in the foreground, bit
for bit.
"""

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r'''
import itertools, json, sys
import numpy as np
from river.datasets import synth
import onlinemkl, onlinemkl.river as omr

def run():
    out = {}
    cls_rows = list(itertools.islice(synth.Agrawal(seed=1), 120))
    reg_rows = list(itertools.islice(synth.Friedman(seed=1), 120))
    for name, rows in (("OBSCUREClassifier", cls_rows), ("ProximalMKLClassifier", cls_rows),
                       ("ProximalMKLRegressor", reg_rows), ("PolyMKLRegressor", reg_rows),
                       ("NonlinearKRRRegressor", reg_rows)):
        model = getattr(omr, name)(**({"budget": 40} if "Proximal" in name or "OBSCURE" in name else {}))
        preds = []
        for x, y in rows:
            x = {k: float(v) / (1e4 if k in ("salary", "commission", "hvalue", "loan") else 1.0)
                 for k, v in x.items()}
            p = model.predict_proba_one(x) if name.endswith("Classifier") else {"y": model.predict_one(x)}
            preds.append({str(k): float(v).hex() for k, v in sorted(p.items(), key=str)})
            model.learn_one(x, y)
        out["river." + name] = preds
        X = np.array([[float(v) for v in x.values()] for x, _ in rows])
        y = np.array([y for _, y in rows])
        X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
        sk = getattr(onlinemkl, name)(**({"random_state": 0} if name != "NonlinearKRRRegressor" else {}))
        sk.fit(X[:80], y[:80])
        got = sk.decision_function(X[80:]) if name.endswith("Classifier") else sk.predict(X[80:])
        out["sklearn." + name] = [float(v).hex() for v in np.ravel(got)]
    return out

if __name__ == "__main__":
    from onlinemkl import _lazy
    out = run()
    out["jobs"] = len(_lazy._jobs)  # the background jobs this process started
    json.dump(out, sys.stdout)
'''


def test_every_face_gives_the_same_bits_with_background_compilation(tmp_path):
    script = tmp_path / "faces.py"
    script.write_text(SCRIPT)
    # the foreground first: it compiles into the shared cache, which the background jobs then load
    # (compiling every learner twice would cost the suite a minute on an empty cache)
    namespace: dict = {}
    exec(compile(SCRIPT, str(script), "exec"), namespace)  # noqa: S102 - this file's own script
    foreground = namespace["run"]()
    env = dict(os.environ, ONLINEMKL_BACKGROUND_COMPILE="1",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    background = json.loads(proc.stdout)
    assert background.pop("jobs") > 0, "no entry point went through the background path"
    assert set(background) == set(foreground)
    for key in foreground:
        assert background[key] == foreground[key], key
