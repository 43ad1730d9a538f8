"""A session's processes ended together (acres_sim.scenario.processes.stop_together), as a scenario
run ends its bridges and sim_control: every child has its SIGINT before any of them has ended, each
gets one SIGINT only, and one that ignores it is killed once the shared wait is over."""

from __future__ import annotations

import signal
import sys
import time

import pytest

from acres_sim.scenario.processes import Child, stop_together

pytestmark = pytest.mark.ros_free  # no ROS graph nor message: CI runs it on one distribution

# A child that says when each SIGINT arrives and ends 0.3 s after the first (a node's own ending);
# with "ignore" it never ends by itself.
CHILD = """
import signal, sys, time
count = 0
def on_int(_n, _f):
    global count
    count += 1
    print(f"SIGINT {count} {time.monotonic():.6f}", flush=True)
signal.signal(signal.SIGINT, on_int)
print("READY", flush=True)
while count == 0 or sys.argv[1] == "ignore":
    time.sleep(0.01)
time.sleep(0.3)
print(f"ENDING {time.monotonic():.6f}", flush=True)
"""


def _child(tmp_path, name: str, mode: str = "end") -> Child:
    child = Child(name, [sys.executable, "-c", CHILD, mode], {}, tmp_path)
    child.wait_line(r"^READY$", 20.0)
    return child


def test_children_are_interrupted_together_once_each_and_killed_after_the_wait(tmp_path):
    children = [_child(tmp_path, f"node{i}") for i in range(4)]
    stop_together(children)
    assert all(c.proc.returncode == 0 for c in children)
    interrupted = [float(c.wait_line(r"^SIGINT 1 (\S+)$", 1.0).group(1)) for c in children]
    ended = [float(c.wait_line(r"^ENDING (\S+)$", 1.0).group(1)) for c in children]
    assert max(interrupted) < min(ended)  # side by side, not one after the other
    assert not any(line.startswith("SIGINT 2") for c in children for line in c.lines)

    stubborn, polite = _child(tmp_path, "stubborn", "ignore"), _child(tmp_path, "polite")
    stop_together([stubborn, polite], wait_s=2.0)
    assert polite.proc.returncode == 0
    assert stubborn.proc.returncode == -signal.SIGKILL
    assert not any(line.startswith("ENDING") for line in stubborn.lines)


def test_a_child_that_ended_by_itself_is_stopped_without_a_signal(tmp_path):
    child = Child("gone", [sys.executable, "-c", "print('bye')"], {}, tmp_path)
    deadline = time.monotonic() + 20.0
    while child.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    stop_together([child])
    assert child.proc.returncode == 0 and child.lines == ["bye"]


_HOLDER = """
import sys, time
from acres_sim.work_dirs import WorkDir
work = WorkDir(sys.argv[1])
print(work.path, flush=True)
time.sleep(600)
"""


def test_a_work_directory_outlives_its_process_only_until_the_next_one_of_its_family(tmp_path):
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    from acres_sim.work_dirs import WorkDir, remove_abandoned

    family = f"acres_test_work_{os.getpid()}_"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, family], stdout=subprocess.PIPE, text=True)
    foreign = Path(tempfile.mkdtemp(prefix=family))  # no lock file: not one of ours, never removed
    try:
        held = Path(holder.stdout.readline().strip())
        assert held.is_dir() and held.name.startswith(family)
        assert remove_abandoned(family, young_s=0.0) == []  # its holder runs
        holder.kill()  # SIGKILL: the holder cannot remove it
        holder.wait(10)
        assert held.is_dir()
        assert remove_abandoned(family) == []  # too young: it may be a maker's between mkdtemp and lock
        assert remove_abandoned(family, young_s=0.0) == [held]
        assert not held.exists() and foreign.is_dir()
        with WorkDir(family, "named_") as path:  # a context manager, as TemporaryDirectory
            assert path.name.startswith(f"{family}named_") and path.is_dir()
        assert not path.exists()
    finally:
        if holder.poll() is None:
            holder.kill()
        foreign.rmdir()
