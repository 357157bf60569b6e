"""Hostile model files and killed saves: every failure is a ModelFileError,
memory stays bounded by the file's size, and a killed save's temporary file does not outlive the next
save or load."""

import hashlib
import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

from onlinemkl.persist import ModelFileError, load, save
from onlinemkl.river import OBSCUREClassifier

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    model = OBSCUREClassifier(budget=15)
    rng = np.random.default_rng(3)
    for i in range(40):
        model.learn_one({"a": float(rng.normal()), "b": float(rng.normal())}, "xy"[i % 2])
    return save(model, tmp_path_factory.mktemp("good") / "good.omkl")


def craft(src, dst, edit=None, deflate=(), raw_meta=None):
    """Rewrite a model file: ``edit(meta, entries)`` may change anything; checksums are recomputed, so the
    file is what an attacker would write, not a corrupted one; entries named in ``deflate`` are compressed."""
    with zipfile.ZipFile(src) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(entries.pop("meta.json"))
    if edit:
        edit(meta, entries)
    for name, data in entries.items():
        meta["entries"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    with zipfile.ZipFile(dst, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED)
        z.writestr("meta.json", raw_meta if raw_meta is not None else json.dumps(meta))
    return dst


def npy(arr_or_header, data=b""):
    buf = io.BytesIO()
    if isinstance(arr_or_header, np.ndarray):
        np.save(buf, arr_or_header)
        return buf.getvalue()
    np.lib.format.write_array_header_1_0(buf, arr_or_header)
    return buf.getvalue() + data


def _entry(meta, array):
    return meta["model"]["arrays"][array]


def run_load(path, cap_mib=None):
    """Load ``path`` in a fresh process: (exception class name, message, peak RSS growth in MiB)."""
    code = textwrap.dedent(f"""
        import json, resource, sys
        import onlinemkl.persist as persist
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            persist.load({str(path)!r})
            out = ["loaded", ""]
        except BaseException as exc:
            out = [type(exc).__name__, str(exc)]
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps(out + [(after - before) / 1024]))
    """)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_zip_bomb_is_refused_before_inflating(good, tmp_path):
    """A deflated 256 MiB entry (a 250 kB file) with metadata edited to match: refused, memory flat."""
    n = 256 << 20

    def edit(meta, entries):
        entries[_entry(meta, "scores")] = npy(np.zeros(n // 8))

    path = craft(good, tmp_path / "bomb.omkl", edit, deflate={"arrays/0/scores.npy"})
    assert path.stat().st_size < 2 << 20
    kind, msg, grown = run_load(path)
    assert kind == "ModelFileError", (kind, msg)
    assert "compressed" in msg and "scores.npy" in msg
    assert grown < 64, f"loading a refused file grew the process by {grown:.0f} MiB"


def test_npy_header_asking_for_more_than_the_entry_is_refused(good, tmp_path):
    """A stored entry whose header declares 16 GiB of float64 but holds 16 bytes: refused before allocating."""
    def edit(meta, entries):
        entries[_entry(meta, "scores")] = npy({"descr": "<f8", "fortran_order": False, "shape": (1 << 31,)},
                                              b"\0" * 16)

    with pytest.raises(ModelFileError, match=r"scores\.npy.*declares \(2147483648,\).*17179869184 bytes.*16 bytes"):
        load(craft(good, tmp_path / "shape.omkl", edit))


def test_entry_size_records_larger_than_the_file_are_refused(good, tmp_path):
    def edit(meta, entries):
        entries[_entry(meta, "scores")] = npy(np.zeros(4))

    path = craft(good, tmp_path / "size.omkl", edit)
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    meta = json.loads(members["meta.json"])
    meta["entries"][_entry(meta, "scores")]["size"] = 1 << 40
    path2 = craft(path, tmp_path / "size2.omkl", raw_meta=json.dumps(meta))
    with pytest.raises(ModelFileError, match="scores.npy.*expected 1099511627776"):
        load(path2)


@pytest.mark.parametrize("krow", [[5, 10 ** 10], [5, 1e400]], ids=["huge", "inf"])
def test_state_asking_for_absurd_memory_is_refused(good, tmp_path, krow):
    """A scratch shape in the state of 373 GiB (a MemoryError if allocated) or infinite (OverflowError)."""
    def edit(meta, entries):
        meta["model"]["state"]["engine"]["krow_shape"] = krow

    path = craft(good, tmp_path / "krow.omkl", edit)
    with pytest.raises(ModelFileError, match="krow|OverflowError"):
        load(path)


def test_deep_nesting_and_huge_numbers_in_the_metadata_are_model_file_errors(good, tmp_path):
    deep = '{"format": "onlinemkl-model", "format_version": 1, "extra": ' + "[" * 100000 + "]" * 100000 + "}"
    with pytest.raises(ModelFileError, match="meta.json is not valid JSON.*Recursion"):
        load(craft(good, tmp_path / "deep.omkl", raw_meta=deep))
    digits = '{"format": "onlinemkl-model", "format_version": ' + "9" * 5000 + "}"
    with pytest.raises(ModelFileError, match="meta.json is not valid JSON"):
        load(craft(good, tmp_path / "digits.omkl", raw_meta=digits))



def test_a_file_whose_metadata_names_another_learner_class_fails_clearly(good, tmp_path):
    def edit(meta, entries):
        meta["model"]["class"] = "onlinemkl.OBSCUREClassifier"  # the array API's class, fitted=False by default

    with pytest.raises(ModelFileError, match="another learner class"):
        load(craft(good, tmp_path / "other.omkl", edit))


# -- killed saves --------------------------------------------------------------------------------


def killed_save(path):
    """Save in a child process that is killed (SIGKILL) just before the rename: its temporary file stays."""
    code = textwrap.dedent(f"""
        import os, signal
        import onlinemkl._archive as archive
        from onlinemkl.persist import save
        from onlinemkl.river import OBSCUREClassifier
        m = OBSCUREClassifier()
        m.learn_one({{"a": 1.0}}, "x")
        archive.os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
        save(m, {str(path)!r})
    """)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == -9, res.stderr[-2000:]


def temporaries(directory):
    return sorted(n for n in os.listdir(directory) if n.endswith(".tmp"))


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_temporary_files_of_a_killed_save_are_removed_by_the_next_save_or_load(tmp_path):
    target = tmp_path / "m.omkl"
    model = OBSCUREClassifier()
    model.learn_one({"a": 1.0}, "x")
    save(model, target)
    killed_save(target)
    assert len(temporaries(tmp_path)) == 1
    save(model, target)  # the next save
    assert temporaries(tmp_path) == []
    killed_save(target)
    assert len(temporaries(tmp_path)) == 1
    load(target)  # resuming
    assert temporaries(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="process ids and flock")
def test_a_live_save_s_temporary_file_is_never_removed(tmp_path):
    import fcntl

    import onlinemkl._archive as archive

    target = tmp_path / "m.omkl"
    live = tmp_path / f".m.omkl.p{os.getppid()}.abc.tmp"  # a running process (our parent)
    live.write_bytes(b"partial")
    locked = tmp_path / ".m.omkl.p999999999.def.tmp"  # no such process, but someone holds the lock
    locked.write_bytes(b"partial")
    other = tmp_path / ".n.omkl.p999999999.ghi.tmp"  # another target's
    other.write_bytes(b"partial")
    with open(locked, "rb") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        assert archive.remove_stale_temporaries(target) == []
    assert archive.remove_stale_temporaries(target) == [locked]
    assert temporaries(tmp_path) == sorted([live.name, other.name])
