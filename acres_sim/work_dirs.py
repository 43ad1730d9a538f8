"""Temporary working directories that are removed even when their process is killed (ROS-free).

A learner's session, a campaign's run and a warm runner keep their processes' logs in a directory
of the system's temporary folder and remove it when they end. A process that is killed cannot: a
Ray worker at its job's end, a learner stopped with SIGKILL, a runner its campaign killed. So each
directory holds an exclusive lock (flock) on a file of its own for as long as it is in use; the
kernel drops the lock when its holder ends, however it ends, and the next directory made with the
same family removes those whose lock is free. A directory is left to its maker for its first
YOUNG_S (made and not yet locked).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

LOCK_NAME = ".in_use"
YOUNG_S = 60.0


class WorkDir:
    """A new directory `family``name`XXXX in the temporary folder, held until remove() or its
    process ends; the family's abandoned ones removed first. A context manager, as
    tempfile.TemporaryDirectory."""

    def __init__(self, family: str, name: str = ""):
        remove_abandoned(family)
        self.path = Path(tempfile.mkdtemp(prefix=family + name))
        self._fd: int | None = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)  # new: no one else holds it

    def remove(self) -> None:
        if self._fd is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self.remove()


def remove_abandoned(family: str, young_s: float = YOUNG_S) -> list[Path]:
    """Remove the directories of `family` whose lock no process holds; those removed."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{family}*"):
        try:
            if time.time() - path.stat().st_mtime < young_s:
                continue
            fd = os.open(path / LOCK_NAME, os.O_RDWR)
        except OSError:  # not one of ours (no lock file), or gone meanwhile
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # in use
        finally:
            os.close(fd)  # a lock taken is dropped with the file's last descriptor
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
