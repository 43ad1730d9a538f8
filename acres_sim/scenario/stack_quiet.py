"""When a stack has read what it was sent (ROS-free): its processes wait, using no CPU.

The runner says a tick on /clock once the tick's data are delivered, with a moment's grace for the
stack to read them: an rclpy or rclcpp executor takes ready timers before ready subscriptions, so
a /clock that came while the data still waited would fire the stack's timers on the last tick's
data. The grace was a fixed wait (0.5 s at the first tick, 20 ms after). A stack whose threads
were never runnable and used (almost) no CPU for QUIET_FOR_S after the delivery has read its
queue and waits for more: the tick is said then, and the fixed wait stays the longest it waits.
A runnable thread counts as work, so a stack that the machine's other work keeps from running is
not taken for a quiet one.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterable

QUIET_FOR_S = 0.015  # no work for this long: the stack waits for more
BUSY_NS = 1_500_000  # CPU time under this within QUIET_FOR_S is an idle middleware's, not work
POLL_S = 0.004


def process_tree(pid: int) -> list[int]:
    """pid and its descendants (a launch file's nodes, a shell's command), while they run."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in threads(current):
            try:
                todo.extend(int(child) for child in _read(f"{task}/children").split())
            except (OSError, ValueError):
                pass
    return found


def threads(pid: int) -> list[str]:
    """The /proc directories of a process's threads (none once it is gone)."""
    try:
        return [f"/proc/{pid}/task/{tid}" for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def cpu_ns(tasks: Iterable[str]) -> int:
    """The CPU time the threads have run, in ns (their schedstat: the tick-based utime + stime of
    stat resolve only 10 ms); a thread gone in between counts 0."""
    total = 0
    for task in tasks:
        try:
            total += int(_read(f"{task}/schedstat").split(maxsplit=1)[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def _runnable(task: str) -> bool:
    """R, or D (a wait on a disk); a thread gone is not."""
    try:
        return _read(f"{task}/stat").rsplit(b")", 1)[1][1:2] in (b"R", b"D")
    except (OSError, IndexError):
        return False


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


class TreeUsage:
    """The threads of a process and its descendants, as found when made: the CPU time they have
    used (ns) and whether one of them is runnable now. The run queue's own count (schedstat's
    second field) grows only when the thread gets its turn, so it cannot show a thread kept
    waiting now."""

    def __init__(self, pid: int):
        self.tasks = [task for p in process_tree(pid) for task in threads(p)]

    def __call__(self) -> tuple[int, bool]:
        return cpu_ns(self.tasks), any(_runnable(task) for task in self.tasks)


def wait_quiet(pid: int, limit_s: float) -> float:
    """Until the processes of `pid` had no runnable thread at any look and used under BUSY_NS of
    CPU within QUIET_FOR_S, or limit_s went by; the seconds waited."""
    started = time.monotonic()
    usage = TreeUsage(pid)
    samples: deque[tuple[float, int, bool]] = deque([(started, *usage())])
    while True:
        time.sleep(POLL_S)
        now = time.monotonic()
        if now - started >= limit_s:
            return now - started
        samples.append((now, *usage()))
        while len(samples) > 1 and now - samples[1][0] >= QUIET_FOR_S:
            samples.popleft()  # the oldest sample that still spans QUIET_FOR_S stays first
        first_t, first_ns, _ = samples[0]
        if (now - first_t >= QUIET_FOR_S and samples[-1][1] - first_ns < BUSY_NS
                and not any(runnable for _, _, runnable in samples)):
            return now - started
