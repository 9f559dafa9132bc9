"""The output directory of ``report``: checked, locked for one run at a time, and written
atomically (a file appears whole or not at all).

Two runs into one ``--out`` would otherwise both print "wrote" while one silently loses its
claims.  A run holds an exclusive lock on ``DIR/.icl-verify.lock`` (``fcntl.flock``, released by
the system when the process ends, so a killed run leaves no stale lock) from before its first
check to after its PDF; a second run exits 2 saying the directory is in use.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import UsageError

LOCK_NAME = ".icl-verify.lock"


def prepare_out(path: str | os.PathLike) -> Path:
    """The output directory, created and checked writable (UsageError otherwise)."""
    if not str(path).strip():
        raise UsageError("--out '': name a directory for the report (the current directory "
                         "must be named explicitly, as --out .)")
    out = Path(path)
    try:
        (out / "figures").mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".icl-verify-write-test"):
            pass
    except OSError as exc:
        raise UsageError(f"--out {path}: cannot write there ({exc.strerror or exc})") from None
    return out


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold the directory's lock for the block; UsageError if another run holds it."""
    try:
        import fcntl
    except ImportError:  # no flock on this system: the atomic writes still keep files whole
        yield
        return
    try:
        handle = open(out / LOCK_NAME, "a+")
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot lock it ({exc.strerror or exc})") from None
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(f"--out {out} is in use by another icl-verify report run; wait for "
                             f"it to finish or choose another directory") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()  # releases the lock


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``path`` through a temporary file in its directory and an atomic rename."""
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the report from others
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
