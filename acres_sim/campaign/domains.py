"""ROS domains leased per host (ROS-free): a run that starts a ROS graph takes a domain no other run
on this host holds, by an exclusive lock on a file of that domain's (flock: the kernel drops it when
its holder ends, even killed, so a lease never outlives its process and never needs cleaning up).

The pool is ACRES_SIM_DOMAINS ("first-last", default 215-232: the IDs ROS 2's documentation calls
safe on Linux above 101, out of the range of ports Linux hands out for outgoing connections); each
run's graph also keeps its discovery on the host (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path

DEFAULT_POOL = (215, 232)
POOL_VARIABLE = "ACRES_SIM_DOMAINS"
WAIT_STEP_S = 0.2


def pool() -> range:
    text = os.environ.get(POOL_VARIABLE, "")
    if not text:
        return range(DEFAULT_POOL[0], DEFAULT_POOL[1] + 1)
    first, sep, last = text.partition("-")
    try:
        low, high = int(first), int(last if sep else first)
    except ValueError:
        raise ValueError(f"{POOL_VARIABLE}={text!r}: give the domains as first-last, e.g. 215-232") from None
    if not 0 <= low <= high <= 232:
        raise ValueError(f"{POOL_VARIABLE}={text!r}: ROS domain IDs are 0 to 232, first <= last")
    return range(low, high + 1)


class DomainLease:
    """`with DomainLease() as domain:` a ROS domain of the pool that no one else on this host holds
    (waits up to timeout_s for one to come free)."""

    def __init__(self, timeout_s: float = 600.0, directory: str | Path | None = None):
        self.timeout_s = timeout_s
        self.directory = Path(directory or Path(tempfile.gettempdir()) / "acres_sim_domains")
        self.domain: int | None = None
        self._fd: int | None = None

    def __enter__(self) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.timeout_s
        domains = pool()
        while True:
            for domain in domains:
                fd = os.open(self.directory / f"domain-{domain}.lock", os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self._fd, self.domain = fd, domain
                return domain
            if time.monotonic() > deadline:
                raise TimeoutError(f"every ROS domain of {domains.start}-{domains.stop - 1} was held for "
                                   f"{self.timeout_s:g} s ({POOL_VARIABLE} widens the pool)")
            time.sleep(WAIT_STEP_S)

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file drops the lock
            self._fd = self.domain = None
