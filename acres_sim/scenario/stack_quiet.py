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
from collections.abc import Callable

QUIET_FOR_S = 0.015  # no work for this long: the stack waits for more
BUSY_NS = 1_500_000  # CPU time under this within QUIET_FOR_S is an idle middleware's, not work
POLL_S = 0.004


def process_tree(pid: int) -> list[int]:
    """pid and its descendants (a launch file's nodes, a shell's command), while they run."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in _tasks(current):
            try:
                with open(f"{task}/children", "rb") as children:
                    todo.extend(int(child) for child in children.read().split())
            except (OSError, ValueError):
                pass
    return found


def _tasks(pid: int) -> list[str]:
    try:
        return [f"/proc/{pid}/task/{tid}" for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


class TreeUsage:
    """The threads of a process and its descendants, as found when made: the CPU time they have
    used (ns, from schedstat; a thread gone counts 0) and whether one of them is runnable now (its
    stat: R, or D for a wait on a disk). The run queue's own count (schedstat's second field) grows
    only when the thread gets its turn, so it cannot show a thread kept waiting now."""

    def __init__(self, pid: int):
        self.tasks = [task for p in process_tree(pid) for task in _tasks(p)]

    def __call__(self) -> tuple[int, bool]:
        used, runnable = 0, False
        for task in self.tasks:
            try:
                used += int(_read(f"{task}/schedstat").split(maxsplit=1)[0])
                runnable = runnable or _read(f"{task}/stat").rsplit(b")", 1)[1][1:2] in (b"R", b"D")
            except (OSError, ValueError, IndexError):
                continue
        return used, runnable


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1024)
    finally:
        os.close(fd)


def wait_quiet(pid: int, limit_s: float, clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> float:
    """Until the processes of `pid` had no runnable thread at any look and used under BUSY_NS of
    CPU within QUIET_FOR_S, or limit_s went by; the seconds waited."""
    started = clock()
    usage = TreeUsage(pid)
    samples: deque[tuple[float, int, bool]] = deque([(started, *usage())])
    while True:
        sleep(POLL_S)
        now = clock()
        if now - started >= limit_s:
            return now - started
        samples.append((now, *usage()))
        while len(samples) > 1 and now - samples[1][0] >= QUIET_FOR_S:
            samples.popleft()  # the oldest sample that still spans QUIET_FOR_S stays first
        first_t, first_ns, _ = samples[0]
        if (now - first_t >= QUIET_FOR_S and samples[-1][1] - first_ns < BUSY_NS
                and not any(runnable for _, _, runnable in samples)):
            return now - started
