"""A worker's warm runner (ROS-free): the scenario runner in --serve mode (acres_sim/nodes/
scenario_runner.py), kept from run to run by the thread that started it (a local pool's, a Ray
worker's), in a ROS domain leased for as long as it lives. A run that does not fit its session
(another agent, vehicle, pace or game argument) gets a new one; one that ended its session (an
error, a timeout, Ctrl-C) leaves the next run a new one too.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from acres_sim.campaign.domains import DomainLease
from acres_sim.scenario.processes import Child
from acres_sim.work_dirs import WorkDir

DONE = re.compile(r"^ACRES_RUN_DONE exit=(-?\d+) more=([01])$")
STOP_S = 90.0  # SIGINT: the run under way writes its report and the session ends; then SIGKILL

_held = threading.local()  # this thread's WarmRunner
_all: set[WarmRunner] = set()
_all_lock = threading.Lock()


class WarmRunner:
    def __init__(self, key: tuple, cwd: str, game_args: list[str]):
        """cwd: the stacks' working directory ("": the runner's own)."""
        self.key = key
        self._lease = DomainLease()
        self.domain = self._lease.__enter__()
        self._work = WorkDir("acres_warm_runner_")
        self.dir = self._work.path
        env = {**os.environ, "ROS_DOMAIN_ID": str(self.domain), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
        args = [sys.executable, "-m", "acres_sim.nodes.scenario_runner", "--serve", "--quiet",
                "--domain", str(self.domain), *[f"--game-arg={a}" for a in game_args]]
        try:
            self.child = Child("runner", args, env, self.dir, cwd=cwd or self.dir, stdin=True)
        except BaseException:
            self.close()
            raise
        self.runs = 0
        with _all_lock:
            _all.add(self)

    @property
    def alive(self) -> bool:
        return hasattr(self, "child") and self.child.alive

    def run(self, scenario: Path, out: Path, stack: str, sets: list[str], keep_stack: bool,
            wait: Callable[[Callable[[], bool]], tuple[str, str]]) -> tuple[str, str, str]:
        """(status, reason, the runner's output of this run): ('', '') once the run ended by itself
        (its report says how), else why it was ended (the runner is then closed). wait(going):
        until going() is False, ('', ''), or why the run is to be ended (run.wait_run)."""
        first = len(self.child.lines)
        request = {"file": str(scenario), "out": str(out), "stack": stack, "set": sets,
                   "keep_stack": keep_stack}
        try:
            assert self.child.proc.stdin is not None
            self.child.proc.stdin.write(json.dumps(request) + "\n")
            self.child.proc.stdin.flush()
        except OSError:
            self.close()
            return "", "", ""
        self.runs += 1

        def done() -> re.Match | None:
            return next((m for m in map(DONE.match, self.child.lines[first:]) if m), None)

        status, reason = wait(lambda: done() is None and self.child.alive)
        ended = done()
        if status or ended is None or ended.group(2) == "0":  # ended by the campaign, dead, or said so
            self.close()
        output = "\n".join(line for line in self.child.lines[first:] if not DONE.match(line))
        return status, reason, output + "\n"

    def close(self) -> None:
        """The runner ended (SIGINT: a run under way is interrupted and reported), its domain freed."""
        child = getattr(self, "child", None)
        if child is not None:
            if child.alive and child.proc.stdin is not None:
                try:
                    child.proc.stdin.close()  # between runs: the runner ends its session and itself
                except OSError:
                    pass
                try:
                    child.proc.wait(1.0)
                except Exception:  # noqa: BLE001 -- still running: a run under way, interrupted below
                    pass
            child.stop(STOP_S)
        self._lease.__exit__()
        self._work.remove()
        with _all_lock:
            _all.discard(self)
        if getattr(_held, "runner", None) is self:
            _held.runner = None


def warm_runner(key: tuple, cwd: str, game_args: list[str]) -> WarmRunner:
    """This thread's warm runner for a session of `key`: the one it holds, or a new one."""
    runner: WarmRunner | None = getattr(_held, "runner", None)
    if runner is not None and (runner.key != key or not runner.alive):
        runner.close()
        runner = None
    if runner is None:
        runner = _held.runner = WarmRunner(key, cwd, game_args)
    return runner


def close_all() -> None:
    """Every warm runner of this process ended (the campaign's end)."""
    with _all_lock:
        runners = list(_all)
    for runner in runners:
        runner.close()
