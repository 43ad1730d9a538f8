"""A scenario run from the file to its verdict (`ros2 run acres_sim scenario FILE`, scenario_runner.py).

It checks the file (nothing starts when it is refused), starts the session it describes (the fake
game holding the stepping token, a sim_bridge and a vehicle_bridge per agent, sim_control), puts the
world as the file says (conditions, shifts, objects, every agent standing at its start), records
the episode log, starts the user's stack (--stack) and runs the world:

- lockstep: the world stops at ticks command_period_s apart and says each tick's time on /clock once
  its data is delivered (acres_sim/scenario/pacing.py); the first tick waits until every agent a
  criterion names is under command (at most start_timeout_s, after which those agents fail with "no
  command"); every later step waits until every agent under command holds a command for the tick
  (pacing.CommandRule; a stack silent for stack_timeout_s ends the run, naming what it last sent
  and what was refused), and each step's barriers and states are awaited;
- real time: the world plays; scenario time 0 is when every judged agent is under command, and a
  stack silent for stack_timeout_s of world time ends the run.
Both are pacings of one interface (acres_sim/scenario/pacing.py): this loop does not know which.

Every step's states, contacts and farm events are judged (acres_sim/scenario/judge.py); each judged
agent's TaskStatus goes to the game (the watch feed, /sim/task from sim_control, the log). The run
ends at duration_s (or, with --until-decided, once every criterion is decided), on Ctrl-C, or when a
process of the session dies; it then writes the report (JSON, and JUnit with --junit), prints the
summary and exits 0 (passed), 1 (failed), 2 (refused file, no session, a dead process, a silent
stack) or 130 (interrupted).
"""

from __future__ import annotations

import argparse
import faulthandler
import functools
import math
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acres_sim.nodes.runner_ros import BARRIER_TIMEOUT_S, RunnerRos
from acres_sim.nodes.runner_world import READY_TIMEOUT_S, RunnerWorld
from acres_sim.scenario import report as reports
from acres_sim.scenario.ending import end_step
from acres_sim.scenario.judge import Judge
from acres_sim.scenario.model import Event, Scenario
from acres_sim.scenario.pacing import CommandRule, LockstepPacing, RealTimePacing, Silent
from acres_sim.scenario.stack_quiet import wait_quiet
from acres_sim.scenario.world_setup import prepare_world, wait_for_game
from acres_sim.stream.timing import PHYSICS_HZ
from acres_sim.topics import HELD_AWAITING

DISCOVERY_SETTLE_S = 2.0  # a new participant's endpoints are matched within this on one host
# A warm session's new stack: once this runner's /clock writer has matched every /clock reader in the
# graph (the stack's discovery with this runner is done; with the session's nodes it runs alongside).
STACK_SETTLE_S = 0.3
PROGRESS_EVERY_S = 2.0
INTERRUPT_STACKS_S = 60.0  # a run still going this long after Ctrl-C prints its threads' stacks
WATCH_EVERY_S = 0.5  # how often a long wait looks for Ctrl-C and dead processes


class RunEnded(Exception):
    """The run cannot go on: `status` (error, interrupted) and the reason."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status


class ScenarioRun:
    def __init__(self, scenario: Scenario, args: argparse.Namespace):
        self.scenario = scenario
        self.args = args
        self.run_dir = Path(args.out or tempfile.mkdtemp(prefix=f"acres_scenario_{scenario.name}_")).resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = str(Path(args.log).resolve() if args.log else self.run_dir / "episode.mcap")
        self.report_path = str(Path(args.report).resolve() if args.report else self.run_dir / "report.json")
        self.interrupted = False  # set by a signal's handler: a flag, no lock (see _interrupt)
        self.judge = Judge(scenario, math.inf, self._task)  # judged from the start step on
        self.world_time_s = 0.0
        self._task_client: Any = None
        self._errors: list[str] = []
        self._started = time.monotonic()
        self.timings: dict[str, float | None] = {"first_step_wall_s": None, "first_command_wall_s": None}
        self.rule = CommandRule([a.name for a in scenario.agents], scenario.command_period_s)
        self.abandoned = False  # ROS left open: the process ends without closing it
        self.ros: RunnerRos | None = None
        self.world: RunnerWorld | None = None  # kept for the next run (execute's keep)

    # -- the run -------------------------------------------------------------------------------

    def _interrupt(self) -> None:
        """(a signal handler) The run ends at its next check; one still going INTERRUPT_STACKS_S later
        prints every thread's stack to stderr, so that what holds it shows in its output."""
        # No lock here (an Event's set takes one): a second signal landing while the first handler
        # held it would wait for itself for good.
        if not self.interrupted:
            faulthandler.dump_traceback_later(INTERRUPT_STACKS_S, exit=False)
        self.interrupted = True

    def execute(self, world: RunnerWorld | None = None, keep: bool = False) -> int:
        """The run to its report; its exit code. `world`: a warm runner's, kept from its last run
        (None: one made here, in the run's directory); `keep`: the world is left up for a next run
        when this one ended with a verdict (self.world then holds it, else None)."""
        from acres_sim.scenario.session import SessionFailed

        started = self._started = time.monotonic()
        env = dict(os.environ)
        if self.args.domain is not None:
            env["ROS_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"] = str(self.args.domain)
        previous = {sig: signal.signal(sig, lambda _n, _f: self._interrupt())
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        if world is None:
            world = RunnerWorld(self.scenario, self.run_dir, env, self.args.game_arg)
        warm = world.runs > 0
        marks = world.log_marks()  # a warm world's logs go on: this run's part is copied at its end
        session = world.session
        status, reason = "error", ""
        keep_stack = False
        try:
            if not warm:
                world.open(self._errors.append)
            self.ros = ros = world.ros
            game, feed, self._task_client = world.game, world.feed, world.tasks
            ros.begin(self.scenario)
            world.listen(self._on_event)
            keep_stack = bool(getattr(self.args, "keep_stack", False)) and bool(self.args.stack)
            kept = warm and keep_stack and world.kept_stack(self.args.stack)
            if warm:
                if not kept:
                    session.stop_stack()  # one kept by an earlier run for another command line
                world.reset_for(self.scenario, lambda: self._check(session), release=not kept)
            world.runs += 1
            self._prepare(game)
            self._wait_watchers(game, session)
            game.record_start(self.log_path)
            if self.args.stack and not kept:
                world.start_stack(self.args.stack, self.run_dir, keep_stack)
            joined = "session" if not warm else "" if kept or not self.args.stack else "stack"
            self._run(game, feed, ros, session, joined)
            self.judge.finish()
            status = "passed" if self.judge.passed else "failed"
        except RunEnded as exc:
            status, reason = exc.status, str(exc)
        except SessionFailed as exc:
            status, reason = "error", str(exc)
        except Exception as exc:  # noqa: BLE001 -- a refused request, a lockstep failure: the report says it
            status, reason = "error", self._why(session) or f"{type(exc).__name__}: {exc}"
        finally:
            # Each step of the end on its own: whatever fails, the session's processes are stopped.
            if status in ("error", "interrupted"):
                end_step("the tasks' last status", lambda: self.judge.abort(reason))
            if world.game is not None:
                try:
                    world.game.record_stop()
                except Exception as exc:  # noqa: BLE001 -- a dead game: its log ends at its last chunk
                    reason = reason or f"the episode log could not be finished: {exc}"
            world.listen(lambda event, body: None)
            if keep and status in ("passed", "failed"):
                end_step("the stack", lambda: world.end_run(keep_stack=keep_stack))
                self.world = world
            else:
                end_step("the episode feed", world.stop_feed)
                # The ROS node is not destroyed: the process ends with it (main). Destroying it while
                # the session's processes end froze the runner for good (Fast DDS 2.14: the
                # participant's destruction spins, holding Python's lock, until a discovery callback
                # of a vanishing peer ends, which waits for a lock the destruction holds).
                self.abandoned = world.ros is not None
                session.stop()
                self.world = None
            if session.run_dir != self.run_dir:
                end_step("the processes' logs", lambda: world.copy_logs(marks, self.run_dir))
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        files = {"report": self.report_path, "log": self.log_path, "run directory": str(self.run_dir)}
        if self.args.junit:
            files["junit"] = str(Path(self.args.junit).resolve())
        extra: dict[str, Any] = dict(self.timings)
        if self.scenario.pace == "lockstep":  # how each step's wait for the stack ended (pacing.CommandRule)
            extra["steps_accepted"] = dict(self.rule.counts)
        result = reports.report(self.judge, status, reason, time.monotonic() - started, files, extra)
        reports.write_json(self.report_path, result)
        if self.args.junit:
            reports.write_junit(self.args.junit, result)
        print(reports.summary(result), flush=True)
        faulthandler.cancel_dump_traceback_later()
        return reports.EXIT_CODES[status]

    def _prepare(self, game: Any) -> None:
        """The world as the file says, the agents standing at their start, before the first step."""
        status = wait_for_game(game, READY_TIMEOUT_S)
        prepare_world(game, self.scenario)
        self.world_time_s = float(status["time_s"])

    def _wait_watchers(self, game: Any, session: Any) -> None:
        """Until sim_control hears the episode too (this run's feed and its): the states it publishes
        when it connects are then out before the stack starts, so the stack's first states are always
        the start step's."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while game.request({"op": "status"}).get("watchers", 0) < 2:
            self._check(session)
            if time.monotonic() > deadline:
                raise RunEnded("error", f"sim_control did not connect to the game's episode feed within "
                                        f"{READY_TIMEOUT_S:g} s")
            time.sleep(0.05)

    def _pacing(self, game: Any, feed: Any, ros: RunnerRos, session: Any) -> Any:
        s = self.scenario
        check = lambda: self._check(session)  # noqa: E731
        if s.pace == "lockstep":
            chunk = max(1, round(s.command_period_s * PHYSICS_HZ))
            settle = functools.partial(self._settle, session)
            tick = lambda t: ros.tick(t, settle)  # noqa: E731
            return LockstepPacing(game, ros.lockstep, feed.wait_handled, tick, self.rule, chunk,
                                  PHYSICS_HZ, s.stack_timeout_s, check, ros.last_sent, HELD_AWAITING)
        return RealTimePacing(game, ros.lockstep.held, s.stack_timeout_s, check, ros.last_sent)

    def _run(self, game: Any, feed: Any, ros: RunnerRos, session: Any, joined: str = "session") -> None:
        """joined: what joined the graph for this run ("session": every process, given
        DISCOVERY_SETTLE_S to match; "stack": the stack alone, on a warm session; "": nothing)."""
        s = self.scenario
        pacing = self._pacing(game, feed, ros, session)
        waited = time.monotonic()
        judged = set(s.judged_agents)
        held = ros.lockstep.held
        if s.pace == "lockstep":
            # The stack is up once it publishes on a command topic of every judged agent; its
            # subscriptions are matched within DISCOVERY_SETTLE_S of that.
            while not (judged <= ros.commanding() and held.known()):
                self._check(session)
                if time.monotonic() - waited > s.start_timeout_s:
                    break
                time.sleep(0.05)
            else:
                if joined == "session":
                    time.sleep(DISCOVERY_SETTLE_S)
                elif joined == "stack":
                    ros.wait_clock_matched(DISCOVERY_SETTLE_S)
                    time.sleep(STACK_SETTLE_S)
        start = self.world_time_s = pacing.begin(self.world_time_s)
        self.judge.start_s = start
        self.timings["first_step_wall_s"] = time.monotonic() - self._started
        events = list(s.events)
        ros.drive_scripted(start)
        # The start: every judged agent under command, or start_timeout_s gone by.
        while not judged <= held.commanded():
            self._check(session)
            moved = pacing.while_starting(not held.commanded(), not ros.scripted)
            if moved is not None:  # scenario time 0 moves with the world
                start = self.world_time_s = self.judge.start_s = moved
            if time.monotonic() - waited > s.start_timeout_s:
                silent = sorted(judged - held.commanded())
                self.judge.no_command(silent, {a: ros.refused[a] for a in silent if a in ros.refused})
                self._say(f"no command from {', '.join(silent)} within {s.start_timeout_s:g} s: "
                          f"{ros.last_sent(silent)}")
                break
            ros.drive_scripted(pacing.now())
            time.sleep(0.02)
        if self.judge.all_decided:
            return
        self.timings["first_command_wall_s"] = time.monotonic() - self._started
        moved = pacing.started() if judged <= held.commanded() else None
        if moved is not None:
            start = self.judge.start_s = moved
        last_said = time.monotonic()
        try:
            while True:
                self._check(session)
                now = self.world_time_s = pacing.now()
                t = now - start
                if t >= s.duration_s - 1e-9 or (self.args.until_decided and self.judge.all_decided):
                    break
                while events and events[0].at_s <= t + 1e-9:
                    self._apply(game, events.pop(0))
                ros.drive_scripted(now)
                pacing.advance(now, s.duration_s - t)
                if not self.args.quiet and time.monotonic() - last_said > PROGRESS_EVERY_S:
                    last_said = time.monotonic()
                    decided = sum(c.decided for c in self.judge.criteria)
                    failed = sum(c.verdict.passed is False for c in self.judge.criteria)
                    self._say(f"{s.name}: world time {t:6.2f} / {s.duration_s:g} s, "
                              f"{decided}/{len(self.judge.criteria)} criteria decided, {failed} failed")
        except Silent as exc:
            raise RunEnded("error", str(exc)) from None
        self.world_time_s = pacing.end()
        feed.wait_handled(round(self.world_time_s * PHYSICS_HZ), BARRIER_TIMEOUT_S)

    @staticmethod
    def _settle(session: Any, limit_s: float) -> None:
        """The grace before a tick's /clock: until the stack the runner started has read its data
        (its processes idle: acres_sim/scenario/stack_quiet.py), at most limit_s; a stack started
        elsewhere gets all of it."""
        stack = session.stack
        if stack is not None and stack.alive:
            wait_quiet(stack.proc.pid, limit_s)
        else:
            time.sleep(limit_s)

    @staticmethod
    def _why(session: Any) -> str:
        """A process of the session that ended (its socket may close a moment before it is reaped)."""
        deadline = time.monotonic() + 2.0
        while True:
            dead = session.dead()
            if dead or time.monotonic() > deadline:
                return dead
            time.sleep(0.05)

    def _check(self, session: Any) -> None:
        if self.interrupted:
            raise RunEnded("interrupted", "interrupted (Ctrl-C)")
        dead = session.dead()
        if dead:
            raise RunEnded("error", dead)

    def _apply(self, game: Any, event: Event) -> None:
        body = event.body
        if event.kind == "spawn":
            p = body["pose"]
            game.spawn(body["name"], body["uri"], (p.x, p.y, 0.0), p.quaternion())
        elif event.kind == "delete":
            game.delete(body["name"])
        elif event.kind == "move":
            p = body["pose"]
            game.set_state(body["name"], (p.x, p.y, 0.0), p.quaternion())
        elif event.kind == "conditions":
            game.set_conditions(body)
        else:
            for agent, shift in body.items():
                game.set_shift(agent, shift)

    def _on_event(self, event: str, body: dict[str, Any]) -> None:
        self.judge.on_event(event, body)
        if event == "states" and self.ros is not None:
            self.ros.see(body)  # where the scripted agents are

    def _task(self, status: dict[str, Any]) -> None:
        """A judged agent's TaskStatus: to the game (the feed, /sim/task, the log)."""
        if self._task_client is not None:
            try:
                self._task_client.task(status)
            except Exception as exc:  # noqa: BLE001 -- a game going away; the report has the verdict
                self._errors.append(f"task status not published: {exc}")

    def _say(self, line: str) -> None:
        if not self.args.quiet:
            print(f"scenario: {line}", file=sys.stderr, flush=True)
