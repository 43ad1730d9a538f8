"""A stack taken for quiet (acres_sim.scenario.stack_quiet.wait_quiet, the grace before a tick's
/clock) only once none of its processes works or waits to work: real processes, a shell's child
among them, and CPU hogs that keep a busy one from running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from acres_sim.scenario.stack_quiet import process_tree, wait_quiet

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

SPIN = "while True: pass"
SLEEP = "import time; time.sleep(60)"
WORK_THEN_SLEEP = ("import sys, time\nprint('READY', flush=True)\nt = time.monotonic()\n"
                   "while time.monotonic() - t < 0.4: pass\ntime.sleep(60)")


@pytest.fixture
def processes():
    started: list[subprocess.Popen] = []

    def start(args: list[str], **kwargs) -> subprocess.Popen:
        started.append(subprocess.Popen(args, start_new_session=True, **kwargs))
        return started[-1]

    yield start
    for proc in started:  # each with its children (a shell's python)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def _shell(code: str) -> list[str]:
    """A shell that runs python as its child (not exec'd): the work is a grandchild of ours."""
    return ["bash", "-c", f"{sys.executable} -c '{code}'; true"]


def _tree_of(proc: subprocess.Popen, size: int) -> list[int]:
    deadline = time.monotonic() + 10.0
    while len(tree := process_tree(proc.pid)) < size and time.monotonic() < deadline:
        time.sleep(0.02)
    return tree


def test_a_waiting_stack_is_quiet_and_a_busy_grandchild_is_not(processes):
    sleeping = processes(_shell(SLEEP))
    assert len(_tree_of(sleeping, 2)) == 2  # the shell and its python
    time.sleep(0.3)  # its interpreter has started and sleeps
    assert wait_quiet(sleeping.pid, 2.0) < 1.0
    busy = processes(_shell(SPIN))
    assert len(_tree_of(busy, 2)) == 2
    # the shell itself waits: only its child's work keeps the tree from being quiet
    assert wait_quiet(busy.pid, 0.6) >= 0.6


def test_work_is_waited_for_then_the_quiet_is_seen(processes):
    worker = processes([sys.executable, "-c", WORK_THEN_SLEEP], stdout=subprocess.PIPE, text=True)
    assert worker.stdout.readline().strip() == "READY"
    waited = wait_quiet(worker.pid, 5.0)
    assert 0.3 <= waited < 5.0


def test_a_busy_stack_kept_from_running_is_not_quiet(processes):
    """A hog on every core and the stack at the lowest priority: it runs about 1 % of the time (less
    than an idle middleware's work), and its waits to run are what show it busy."""
    for _ in range(os.cpu_count() or 1):
        processes([sys.executable, "-c", SPIN])
    busy = processes(["nice", "-n", "19", sys.executable, "-c", SPIN])
    time.sleep(0.2)
    assert all(wait_quiet(busy.pid, 0.4) >= 0.4 for _ in range(3))


def test_a_stack_gone_is_quiet_at_once(processes):
    gone = processes([sys.executable, "-c", "pass"])
    gone.wait()
    assert wait_quiet(gone.pid, 2.0) < 1.0
