"""The world a scenario run runs in: the session's processes (acres_sim/scenario/session.py), the
runner's ROS side, its control clients and its episode feed. A run made afresh uses it once; a warm
runner (`scenario --serve`) keeps it from run to run and resets it to each run's scenario: the world
as launched with the run's seed, every vehicle_bridge released to its route, the clocks and watches
forgotten, so that the run sees what a session just started would show it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from acres_sim.nodes.runner_ros import BARRIER_TIMEOUT_S, RunnerRos
from acres_sim.scenario.model import Scenario
from acres_sim.scenario.session import RunSession, session_key

READY_TIMEOUT_S = 120.0  # the session's processes up and matched
RELEASE_TIMEOUT_S = 10.0  # the vehicle_bridges say they hold nothing after a reset and vehicle/disable
STACK_GONE_TIMEOUT_S = 5.0  # a stopped stack's publishers leave the graph

OnEvent = Callable[[str, dict[str, Any]], None]


class RunnerWorld:
    """One session and what the runner holds of it; runs() of them so far."""

    def __init__(self, scenario: Scenario, session_dir: Path, env: Mapping[str, str], game_args: list[str]):
        self.key = session_key(scenario, game_args)
        self.session = RunSession(scenario, session_dir, env, game_args)
        self.ros: RunnerRos | None = None
        self.game: Any = None  # the control client holding the stepping token
        self.tasks: Any = None  # a control client of its own for the tasks' statuses
        self.feed: Any = None
        self.runs = 0
        self.stack_command = ""  # the command line of the stack running (or last run)
        self._listener: OnEvent = lambda event, body: None
        self._latched: dict[str, dict[str, Any]] = {}  # agents and objects: said once, kept for a new judge

    def open(self, on_problem: Callable[[str], None]) -> None:
        from acres_sim.game.control_client import ControlClient
        from acres_sim.game.episode_feed import EpisodeFeed

        s = self.session.scenario
        self.session.start(READY_TIMEOUT_S)
        self.ros = RunnerRos([a.name for a in s.agents], s.pace == "lockstep")
        port, token = self.session.control_port, self.session.token
        self.game = ControlClient(port, timeout_s=BARRIER_TIMEOUT_S, token=token)
        self.tasks = ControlClient(port, timeout_s=BARRIER_TIMEOUT_S)
        self.feed = EpisodeFeed(port, self._on_event, on_problem)
        self.feed.start()

    def fits(self, scenario: Scenario, game_args: list[str]) -> bool:
        return session_key(scenario, game_args) == self.key

    def listen(self, on_event: OnEvent) -> None:
        """The feed's events go to on_event from now on (a new run's judge), the latched ones first."""
        self._listener = on_event
        for event, body in self._latched.items():
            on_event(event, body)

    def _on_event(self, event: str, body: dict[str, Any]) -> None:
        if event in ("agents", "objects"):
            self._latched[event] = body
        self._listener(event, body)

    def reset_for(self, scenario: Scenario, check: Callable[[], None], release: bool = True) -> None:
        """(a warm run, before the world is set up) The world as launched, from the run's seed;
        steps counted afresh; with `release`, every vehicle_bridge released (holding nothing, as a
        fresh one; not for a stack kept from the last run, which may command at once)."""
        assert self.ros is not None
        lockstep = self.ros.lockstep
        self.feed.forget_steps()
        lockstep.reset("all", lambda: self.game.reset("all", seed=scenario.seed).step, lambda: None)
        if not release:
            return
        self.ros.release()
        deadline = time.monotonic() + RELEASE_TIMEOUT_S
        while True:
            held = lockstep.held.snapshot()[1]
            if all(h is not None and h[1] == "" for h in held.values()):
                return
            check()
            if time.monotonic() > deadline:
                raise RuntimeError(f"the vehicle_bridges did not release their vehicles within "
                                   f"{RELEASE_TIMEOUT_S:g} s of the reset: {self.ros.last_sent(list(held))}")
            time.sleep(0.01)

    def kept_stack(self, command: str) -> bool:
        """Whether the stack of the last run, `command`, runs on (a run that keeps it need not start it)."""
        stack = self.session.stack
        return stack is not None and stack.alive and self.stack_command == command

    def start_stack(self, command: str, run_dir: Path, keep: bool) -> None:
        """The run's stack; one to keep from run to run writes into the session's directory (each
        run gets its part, as of the other processes)."""
        self.session.start_stack(command, None if keep else run_dir)
        self.stack_command = command

    def end_run(self, keep_stack: bool = False) -> None:
        """(a warm run's end) The world kept; its stack stopped and gone from the graph, or kept."""
        if keep_stack:
            return
        self.session.stop_stack()
        assert self.ros is not None
        deadline = time.monotonic() + STACK_GONE_TIMEOUT_S
        scripted = set(self.ros.scripted)
        while self.ros.commanding() - scripted and time.monotonic() < deadline:
            time.sleep(0.02)

    def _logged(self) -> list[Any]:
        """The processes whose output goes to the session's directory (a kept stack's too)."""
        stack = self.session.stack
        kept = stack is not None and Path(stack.log_path).parent == self.session.run_dir
        return self.session.children + ([stack] if kept else [])

    def log_marks(self) -> dict[str, int]:
        """Where each process's output file ends now."""
        marks = {}
        for child in self._logged():
            path = self.session.run_dir / f"{child.name}.log"
            marks[child.name] = path.stat().st_size if path.exists() else 0
        return marks

    def copy_logs(self, marks: Mapping[str, int], run_dir: Path) -> None:
        """What each process wrote since `marks` (a process not in them: all), into run_dir."""
        for child in self._logged():
            path = self.session.run_dir / f"{child.name}.log"
            if path.exists():
                with open(path, "rb") as source:
                    source.seek(marks.get(child.name, 0))
                    (run_dir / f"{child.name}.log").write_bytes(source.read())

    def stop_feed(self) -> None:
        if self.feed is not None:
            self.feed.stop()
