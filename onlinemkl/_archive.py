"""The model file's container: an atomic, self-cleaning write and a read that trusts nothing.

:mod:`onlinemkl.persist` defines the format (what the component nodes hold);
this module moves bytes.  Reading is bounded by the file itself: every entry
must be *stored* (zip method 0, what the writer uses), so no entry can expand
past the file's size, and each ``.npy`` header's shape and dtype must account
for exactly the entry's bytes before anything is allocated for it.  A zip bomb
(a small file with a deflated entry of gigabytes) or a header asking for an
array larger than the file is refused with :class:`ModelFileError` without reading it: the
arrays of a file take about twice their bytes in the file while loading
(the entry, then the array), and the metadata is at most 64 MiB of JSON.

Writing goes to a temporary file beside the target, named
``.<target>.p<pid>.<random>.tmp`` and held under an advisory lock (POSIX
``flock``) while it is written, then renamed over the target.  A process
killed during a save leaves that file behind; the next save or load of the
same target removes it once its writer is gone (the lock is free and the
process id is not running), so a live save by another process is never
touched.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from . import __version__

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: an open file cannot be deleted there anyway
    fcntl = None

FORMAT_NAME = "onlinemkl-model"
FORMAT_VERSION = 1
META = "meta.json"

#: The dtype kinds a model file may hold (no object arrays: they would need pickle).
ARRAY_KINDS = frozenset("biufcUSMm")
#: meta.json is read in full; a larger one is not a model file of ours.
MAX_META_BYTES = 64 << 20
#: Longest ``.npy`` header accepted (numpy's own default limit).
MAX_NPY_HEADER = 10000
#: A temporary file without a process id in its name (older writers) is stale after this many seconds.
STALE_UNNAMED_SECONDS = 600.0

_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


class ModelFileError(ValueError):
    """A model file that cannot be read: truncated, corrupted, of a newer format, or inconsistent."""


ModelFileError.__module__ = "onlinemkl.persist"  # its public home


# ----------------------------------------------------------------------------------------
# Writing


def add_entry(zf, name: str, data: bytes) -> None:
    """One stored (uncompressed) entry with a fixed time stamp, so equal models give equal files."""
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


def _umask() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def _temp_pattern(path: Path):
    return re.compile(r"^\." + re.escape(path.name) + r"\.(?:p(\d+)\.)?[A-Za-z0-9_]+\.tmp$")


def _pid_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's process, or a platform where we cannot tell: keep its file
    return True


def remove_stale_temporaries(path) -> list:
    """Remove the temporary files a killed save of ``path`` left beside it; returns their paths.

    A file is removed only when no process holds its lock and the process
    named in it is not running (an unnamed one, from an older writer, once it
    is :data:`STALE_UNNAMED_SECONDS` old).  Errors (a read-only directory)
    are ignored: cleaning up is a courtesy, never a reason to fail.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    pattern = _temp_pattern(path)
    removed = []
    try:
        names = [n for n in os.listdir(directory) if pattern.match(n)]
    except OSError:
        return removed
    for name in names:
        tmp = directory / name
        pid = pattern.match(name).group(1)
        try:
            if pid is not None:
                if os.name != "posix" or _pid_running(int(pid)):
                    continue
            elif time.time() - tmp.stat().st_mtime < STALE_UNNAMED_SECONDS:
                continue
            fd = os.open(tmp, os.O_RDONLY)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a live writer holds it: BlockingIOError
                os.unlink(tmp)
                removed.append(tmp)
            finally:
                os.close(fd)
        except OSError:
            continue
    return removed


def write_atomic(path, write) -> Path:
    """Call ``write(binary file)`` on a locked temporary file beside ``path``, then rename it over ``path``.

    The data are flushed and ``fsync``-ed before the rename and the directory
    after it, so a crash leaves either the old file or the new one; stale
    temporary files of earlier killed saves are removed first.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.p{os.getpid()}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)  # released when the file is closed or we die
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        # Closed (Windows renames no open file); our running process id still marks it live.
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return path


# ----------------------------------------------------------------------------------------
# Reading


def _npy_array(data: bytes, fail, name: str) -> np.ndarray:
    """The array of one ``.npy`` entry, after its header's shape and dtype are checked against its size."""
    bio = io.BytesIO(data)
    try:
        major, _ = np.lib.format.read_magic(bio)
        if major == 1:
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(bio, max_header_size=MAX_NPY_HEADER)
        elif major in (2, 3):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(bio, max_header_size=MAX_NPY_HEADER)
        else:
            raise ValueError(f"unknown .npy format version {major}")
    except Exception as exc:
        raise fail(f"entry {name!r} is not a readable .npy array ({exc})") from None
    if dtype.hasobject or dtype.kind not in ARRAY_KINDS:
        raise fail(f"entry {name!r} has dtype {dtype}, which model files never hold")
    if any(not isinstance(n, int) or n < 0 for n in shape):
        raise fail(f"entry {name!r} declares the shape {shape}")
    count = math.prod(shape)
    need = count * dtype.itemsize  # Python integers: an absurd shape cannot overflow here
    if need != len(data) - bio.tell():
        raise fail(f"entry {name!r} declares {shape} of {dtype} ({need} bytes) but holds "
                   f"{len(data) - bio.tell()} bytes of data")
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=bio.tell())
    return np.array(arr.reshape(shape, order="F" if fortran else "C"), order="C", copy=True)


def _check_container(zf, file_size: int, fail) -> None:
    """Every entry stored, not compressed, and all of them together within the file."""
    total = 0
    for info in zf.infolist():
        if info.compress_type != zipfile.ZIP_STORED:
            raise fail(f"entry {info.filename!r} is compressed (zip method {info.compress_type}); onlinemkl "
                       "stores every entry uncompressed, so this file was not written by onlinemkl")
        if info.compress_size != info.file_size or info.file_size > file_size:
            raise fail(f"entry {info.filename!r} declares {info.file_size} bytes in a file of {file_size}")
        total += info.file_size
    if total > file_size:
        raise fail(f"the entries declare {total} bytes in a file of {file_size}")


def read_verified(path: Path):
    """(meta, arrays by entry name) after every container, version, size and checksum check."""
    def fail(msg):
        return ModelFileError(f"cannot load model file {str(path)!r}: {msg}")

    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise fail("no such file") from None
    except IsADirectoryError:
        raise fail("it is a directory") from None
    except OSError as exc:
        raise fail(exc.strerror or str(exc)) from None
    with fh:
        file_size = os.fstat(fh.fileno()).st_size
        try:
            zf = zipfile.ZipFile(fh)
        except zipfile.BadZipFile as exc:
            raise fail(f"not an onlinemkl model file, or truncated ({file_size} bytes; the zip container is "
                       f"damaged: {exc})") from None
        except Exception as exc:  # OSError, ValueError, EOFError, NotImplementedError (bad header fields)
            raise fail(f"the zip container is damaged ({type(exc).__name__}: {exc})") from None
        with zf:
            _check_container(zf, file_size, fail)
            try:
                names = zf.namelist()
                if META not in names:
                    raise fail(f"no {META} in the archive: not an onlinemkl model file")
                info = zf.getinfo(META)
                if info.file_size > MAX_META_BYTES:
                    raise fail(f"{META} is {info.file_size} bytes, larger than any model's metadata")
                raw = zf.read(META)
            except ModelFileError:
                raise
            except Exception as exc:  # BadZipFile (CRC), OSError, EOFError and friends: a damaged file
                raise fail(f"{META} is corrupted ({type(exc).__name__}: {exc})") from None
            try:
                meta = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, a 5000-digit number, nested too deep
                raise fail(f"{META} is not valid JSON ({type(exc).__name__}: {exc})") from None
            _check_meta(meta, fail, __version__)
            entries = meta["entries"]
            listed, present = set(entries), set(names) - {META}
            if listed - present:
                raise fail(f"entries missing from the archive: {sorted(listed - present)[:5]}")
            if present - listed:
                raise fail(f"unexpected entries in the archive: {sorted(present - listed)[:5]}")
            if len(names) != len(set(names)):
                raise fail("duplicate entries in the archive")
            arrays = {}
            for name, spec in entries.items():
                try:
                    size, digest = int(spec["size"]), str(spec["sha256"])
                except (TypeError, KeyError, ValueError, OverflowError):
                    raise fail(f"bad checksum record for {name!r}") from None
                stored = zf.getinfo(name).file_size
                if size != stored:
                    raise fail(f"entry {name!r} is {stored} bytes, expected {size}")
                try:
                    with zf.open(name) as member:
                        data = member.read(size + 1)
                except Exception as exc:  # BadZipFile (CRC), OSError, EOFError
                    raise fail(f"entry {name!r} is corrupted ({type(exc).__name__}: {exc})") from None
                if len(data) != size:
                    raise fail(f"entry {name!r} is {len(data)} bytes, expected {size}")
                if hashlib.sha256(data).hexdigest() != digest:
                    raise fail(f"entry {name!r} fails its SHA-256 checksum (the file is corrupted)")
                arrays[name] = _npy_array(data, fail, name)
    return meta, arrays


def _check_meta(meta, fail, version_here) -> None:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        got = meta.get("format") if isinstance(meta, dict) else None
        raise fail(f"not an onlinemkl model file ({META} names the format {got!r}, not {FORMAT_NAME!r})")
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise fail(f"bad format_version {version!r} in {META}")
    if version > FORMAT_VERSION:
        raise fail(
            f"written in model format version {version} by onlinemkl {meta.get('library_version', '?')}; "
            f"this onlinemkl {version_here} reads format version {FORMAT_VERSION} at most: upgrade onlinemkl"
        )
    if not isinstance(meta.get("entries"), dict) or not isinstance(meta.get("model"), dict):
        raise fail(f"{META} lacks its 'entries' or 'model' section")
