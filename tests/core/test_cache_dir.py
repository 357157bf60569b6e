"""Where Numba's on-disk cache goes (onlinemkl/_config.py), in fresh processes.

(a) With ``NUMBA_CACHE_DIR`` unset the cache lands in the per-user cache directory
    (``platformdirs``), in a folder named after the onlinemkl and Numba versions, and never
    next to the package's sources.
(b) A read-only install run by an unprivileged user whose home is not writable: importing
    and using a learner works, with compiled code not cached and one warning saying so.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import onlinemkl
from onlinemkl import _config

PACKAGE = Path(onlinemkl.__file__).resolve().parent
WARNING = "compiled code will not be cached"


def _cache_files(root: Path) -> set:
    return {p for p in root.rglob("*") if p.suffix in (".nbi", ".nbc")}


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "ONLINEMKL_NO_CACHE", "ONLINEMKL_WRAP_CALLEES")}
    env.update(extra)
    return env


def test_resolve_cache_dir_rules(tmp_path):
    assert _config.resolve_cache_dir({"ONLINEMKL_NO_CACHE": "1", "NUMBA_CACHE_DIR": str(tmp_path)}) == (None, None)
    stamp = f"core-{_config._core_stamp()}"
    assert _config.resolve_cache_dir({"NUMBA_CACHE_DIR": str(tmp_path / "nc")}) == (str(tmp_path / "nc" / stamp), None)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    where, problem = _config.resolve_cache_dir({"NUMBA_CACHE_DIR": str(blocker / "nc")})
    assert where is None and str(blocker) in problem


def test_an_edit_of_the_compiled_sources_means_a_fresh_cache(tmp_path, monkeypatch):
    """A cached function holds the code of what it calls from other files, and Numba checks it
    against its own file only: an edited ``_core`` file must not meet a cache of the old sources."""
    core = tmp_path / "onlinemkl" / "_core"
    core.mkdir(parents=True)
    (core / "kernels.py").write_text("x = 1\n")
    (core / "scores.py").write_text("y = 2\n")
    monkeypatch.setattr(_config, "__file__", str(tmp_path / "onlinemkl" / "_config.py"))
    before = _config._core_stamp()
    (core / "kernels.py").write_text("x = 2\n")
    after = _config._core_stamp()
    assert before != after and len(after) == 12
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "nc"))
    suffix = "-wrapped" if _config.WRAP_CALLEES else ""  # the suite's own folder (conftest.py)
    assert _config.resolve_cache_dir()[0] == str(tmp_path / "nc" / f"core-{after}{suffix}")


def test_a_cache_dir_lost_after_start_up_means_no_cache_not_one_next_to_the_sources(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(_config, "CACHE_DIR", str(blocker / "nc"))  # can no longer be created
    monkeypatch.setattr(_config, "_warned", False)
    here = Path(__file__).parent
    before = _cache_files(here)

    def twice(x):
        return 2.0 * x

    with pytest.warns(_config.CacheWarning, match="will not be cached.*NUMBA_CACHE_DIR"):
        compiled = _config.njit(twice)
    assert compiled(1.5) == 3.0
    assert _cache_files(here) == before  # Numba's next locator would have used this folder's __pycache__


def test_cache_goes_to_the_user_cache_dir_not_the_package(tmp_path):
    before = _cache_files(PACKAGE)
    child = (
        "import json, platformdirs, numba, onlinemkl\n"
        "from onlinemkl import _config\n"
        "from onlinemkl.proximal._losses import log1pexp\n"
        "log1pexp(0.5)\n"
        "print(json.dumps({'dir': _config.CACHE_DIR, 'user': platformdirs.user_cache_dir('onlinemkl'),\n"
        "                  'sub': f'onlinemkl-{onlinemkl.__version__}-numba-{numba.__version__}'}))\n"
    )
    env = _clean_env(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "xdg"),
                     PYTHONPATH=os.pathsep.join([str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert WARNING not in out.stderr
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["user"] == str(tmp_path / "xdg" / "onlinemkl")
    assert info["dir"] == os.path.join(info["user"], info["sub"], f"core-{_config._core_stamp()}")
    assert _cache_files(Path(info["dir"])), "no cache files in the per-user cache directory"
    assert _cache_files(PACKAGE) == before, "cache files were written next to the package's sources"


# -- (b) a read-only install, an unprivileged user, an unwritable home -----------------------


def _link_or_copy(src, dst):
    """A hard link where the file is readable by everyone (no bytes copied), else a readable copy.

    Never changes the source file: a chmod on a hard link would change the original too.
    """
    mode = os.stat(src).st_mode
    if mode & stat.S_IROTH and (not mode & stat.S_IXUSR or mode & stat.S_IXOTH):
        try:
            os.link(src, dst)
            return dst
        except OSError:  # another file system, or links not allowed
            pass
    shutil.copy2(src, dst)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IROTH | (stat.S_IXOTH if mode & stat.S_IXUSR else 0))
    return dst


def _tree(src, dst, skip=()):
    ignore = shutil.ignore_patterns("*.pth", "__editable__*", "onlinemkl*", "streams", *skip)
    shutil.copytree(src, dst, symlinks=True, ignore=ignore, copy_function=_link_or_copy)


def _private_python(root: Path):
    """This interpreter, its standard library and its site-packages, readable by any user.

    CI runs the suite as root in a virtual environment under a private temporary
    directory, and the base interpreter may live in root's home: an unprivileged user can
    reach neither.  Rather than opening those directories, the test builds a copy (hard
    links where possible) under its own world-readable temporary directory.  Returns the
    executable, the extra ``PYTHONPATH`` entries and the library directory.
    """
    exe = Path(os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable))
    ver = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    base = Path(sys.base_prefix)
    (root / "bin").mkdir(parents=True)
    new_exe = Path(_link_or_copy(exe, root / "bin" / exe.name))
    libdir = root / "lib"
    _tree(base / "lib" / ver, libdir / ver,
          skip=("site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip"))
    shared = sysconfig.get_config_var("LDLIBRARY") if sysconfig.get_config_var("Py_ENABLE_SHARED") else None
    if shared:
        for so in Path(sysconfig.get_config_var("LIBDIR")).glob(shared + "*"):
            _link_or_copy(so, libdir / so.name)
    paths = []
    for i, sp in enumerate(p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)):
        _tree(sp, root / f"site{i}")
        paths.append(str(root / f"site{i}"))
    return new_exe, paths, libdir


def _can_switch_user() -> str | None:
    if not sys.platform.startswith("linux"):
        return "needs Linux (setpriv)"
    if shutil.which("setpriv") is None:
        return "needs setpriv (util-linux) to run a child as an unprivileged user"
    if os.geteuid() != 0:
        return ("needs root, to run the child as uid 65534 (as a non-root user the test cannot show "
                "that nothing is written: the install may be writable by that user)")
    return None


def test_read_only_install_unwritable_home_unprivileged_user():
    reason = _can_switch_user()
    if reason:
        pytest.skip(reason)
    root = Path(tempfile.mkdtemp(prefix="onlinemkl-readonly-"))
    try:
        os.chmod(root, 0o755)  # our own directory, so that uid 65534 can reach the copies in it
        python, site_paths, libdir = _private_python(root / "python")
        install = root / "install"
        shutil.copytree(PACKAGE, install / "onlinemkl", ignore=shutil.ignore_patterns("__pycache__"))
        home = root / "home"
        home.mkdir()
        for p in [install, *install.rglob("*"), home]:  # read-only for everyone, the owner included
            os.chmod(p, os.stat(p).st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        child = (
            "import json, onlinemkl\n"
            "from onlinemkl import _config\n"
            # The learner that compiles fastest (a few functions): the point is where the compiled
            # code goes, not which learner it is.
            "from onlinemkl.river import NonlinearKRRRegressor\n"
            "m = NonlinearKRRRegressor(batch_size=2)\n"
            "m.learn_one({'a': 0.5, 'b': -1.0}, 1.0); m.learn_one({'a': -0.5, 'b': 1.0}, 2.0)\n"
            "print(json.dumps({'pred': m.predict_one({'a': 0.5, 'b': -1.0}), 'file': onlinemkl.__file__,\n"
            "                  'cache': _config.CACHE}))\n"
        )
        env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
               "LD_LIBRARY_PATH": str(libdir), "PYTHONPATH": os.pathsep.join([str(install), *site_paths])}
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(python), "-s", "-c", child]
        out = subprocess.run(cmd, env=env, cwd=str(home), capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        info = json.loads(out.stdout.strip().splitlines()[-1])
        assert info["file"].startswith(str(install)), info["file"]
        assert 1.0 <= info["pred"] <= 2.0 and info["cache"] is False
        warning_lines = [line for line in out.stderr.splitlines() if WARNING in line]
        assert len(warning_lines) == 1, out.stderr
        assert "NUMBA_CACHE_DIR" in warning_lines[0]
        assert not _cache_files(install) and not list(home.iterdir())
    finally:
        # Only the real copies were made read-only (the hard links share the originals' modes).
        for p in [root / "home", root / "install", *(root / "install").rglob("*")]:
            if p.exists():
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
        shutil.rmtree(root, ignore_errors=True)


def test_every_compiled_module_is_in_the_cache_stamp():
    """A compiled module left out of :data:`onlinemkl._config.COMPILED_SOURCES` would keep a stale
    cache after an edit of a file it calls: every module that uses the Numba decorators is listed."""
    import pathlib
    import re

    package = pathlib.Path(_config.__file__).parent
    decorated = {p.resolve() for p in package.rglob("*.py")
                 if re.search(r"^from \.+_config import \(?[^)]*\bnjit", p.read_text(), re.M)}
    listed = {pathlib.Path(p).resolve() for p in _config.compiled_source_files()}
    assert decorated, "no compiled module found: the pattern above is out of date"
    assert decorated <= listed, sorted(str(p.relative_to(package)) for p in decorated - listed)
