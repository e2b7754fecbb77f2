"""Replacing a database atomically: one writer at a time, a temporary file beside the target renamed over it,
and clean-up of the temporaries a killed build leaves."""

from __future__ import annotations

import os
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def writer_lock(db_path: Path) -> Iterator[bool]:
    """One build at a time writes next to a database: an exclusive lock on .NAME.lock, held while its temporary
    file exists. The kernel releases it when the holder dies, even by SIGKILL. Temporaries no build holds (left
    by builds that were killed) are removed once it is held."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock, and stale temporaries are left alone
        yield False
        return
    with open(db_path.parent / f".{db_path.name}.lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            for stale in db_path.parent.glob(f".{db_path.name}.*.tmp"):
                stale.unlink(missing_ok=True)
            yield True
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


@contextmanager
def temporary(db_path: Path) -> Iterator[Path]:
    """A temporary file beside db_path, removed on any error (a build that dies leaves it to the next one)."""
    fd, name = tempfile.mkstemp(prefix=f".{db_path.name}.", suffix=".tmp", dir=db_path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def replace(new: Path, db_path: Path) -> None:
    """Sync the new database and rename it over the old one. Freeing the old file's blocks takes a tenth of a
    second for a large database on ext4, inside the rename: the old file is kept under a temporary name first, so
    the rename only swaps names, and a child process removes it while the build returns. Should that child never
    run, the next build's clean-up of temporaries removes it."""
    with open(new, "rb+") as f:
        os.fsync(f.fileno())
    aside = None
    if os.name == "posix" and db_path.exists():
        aside = db_path.parent / f".{db_path.name}.{os.getpid()}-old.tmp"
        try:
            os.link(db_path, aside)
        except OSError:  # no hard links here: the rename frees the blocks itself
            aside = None
    os.replace(new, db_path)
    if aside is not None:
        try:
            subprocess.Popen(["rm", "-f", str(aside)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:
            aside.unlink(missing_ok=True)


def fs_clock(near: Path) -> int:
    """The file system's time now, in ns: the mtime the kernel gives a byte written beside `near` (not utime,
    which a faked clock may rewrite)."""
    with tempfile.TemporaryFile(dir=near.parent) as f:
        f.write(b"\0")
        f.flush()
        return os.fstat(f.fileno()).st_mtime_ns
