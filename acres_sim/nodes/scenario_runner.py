"""`ros2 run acres_sim scenario FILE`: a scenario run from the file to its verdict.

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
import math
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from acres_sim.scenario import report as reports
from acres_sim.scenario.ending import end_step
from acres_sim.scenario.judge import Judge
from acres_sim.scenario.model import Event, Scenario
from acres_sim.scenario.pacing import CommandRule, LockstepPacing, RealTimePacing, Silent
from acres_sim.scenario.scenario_file import ScenarioError, load
from acres_sim.scenario.scripted import WaypointDriver, scripted_commands
from acres_sim.scenario.world_setup import prepare_world, wait_for_game
from acres_sim.stream.timing import PHYSICS_HZ
from acres_sim.convert.stamps import stamp_to_sec_nanosec
from acres_sim.topics import (
    ACKERMANN_CMD,
    BRAKE_CMD,
    CLOCK,
    CMD_VEL,
    GEAR_CMD,
    HELD_AWAITING,
    STEERING_CMD,
    THROTTLE_CMD,
    VEHICLE_REFUSED,
)

COMMAND_TOPICS = (ACKERMANN_CMD, CMD_VEL, STEERING_CMD, THROTTLE_CMD, BRAKE_CMD, GEAR_CMD)

READY_TIMEOUT_S = 120.0  # the session's processes up and matched
BARRIER_TIMEOUT_S = 30.0
DISCOVERY_SETTLE_S = 2.0  # a new participant's endpoints are matched within this on one host
CLOCK_AGAIN_S = 0.1  # /clock (best effort) said again while the world waits at a tick
CLOCK_SETTLE_S = 0.02  # between a tick's barriers and its /clock
FIRST_CLOCK_SETTLE_S = 0.5  # ... at the first tick
# What vehicle/held_command's source means, for a message that names what a stack last sent.
SOURCE_INPUTS = {"ackermann": ACKERMANN_CMD, "cmd_vel": CMD_VEL,
                 "dbw": f"drive-by-wire ({STEERING_CMD}, {THROTTLE_CMD}, {BRAKE_CMD})"}
PROGRESS_EVERY_S = 2.0
INTERRUPT_STACKS_S = 60.0  # a run still going this long after Ctrl-C prints its threads' stacks
WATCH_EVERY_S = 0.5  # how often a long wait looks for Ctrl-C and dead processes


class RunEnded(Exception):
    """The run cannot go on: `status` (error, interrupted) and the reason."""

    def __init__(self, status: str, reason: str):
        super().__init__(reason)
        self.status = status


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="scenario",
                                description="Run a scenario file against a stack and judge it.")
    p.add_argument("file", help="the scenario (YAML)")
    p.add_argument("--check", action="store_true", help="check the file and exit (0: it would run)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key for this run (dotted: conditions.dust=0.5, objects.bale1.pose.x=4)")
    p.add_argument("--stack", default="", metavar="CMD",
                   help="start this command line (the stack) in the run's ROS domain once the session is up")
    p.add_argument("--out", default="", metavar="DIR",
                   help="the run's directory (default: a new temporary one)")
    p.add_argument("--report", default="", metavar="OUT.json", help="the report (default: DIR/report.json)")
    p.add_argument("--junit", default="", metavar="OUT.xml",
                   help="also a JUnit XML, a test case per criterion")
    p.add_argument("--log", default="", metavar="OUT.mcap",
                   help="the episode log (default: DIR/episode.mcap)")
    p.add_argument("--domain", type=int, default=None, help="the run's ROS_DOMAIN_ID (default: this one's)")
    p.add_argument("--until-decided", action="store_true", help="end as soon as every criterion is decided")
    p.add_argument("--game-arg", action="append", default=[], metavar="ARG",
                   help="an argument for the fake game, e.g. --game-arg=--cached (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p.parse_args(argv)


class ScenarioRun:
    def __init__(self, scenario: Scenario, args: argparse.Namespace):
        self.scenario = scenario
        self.args = args
        self.run_dir = Path(args.out or tempfile.mkdtemp(prefix=f"acres_scenario_{scenario.name}_")).resolve()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = str(Path(args.log).resolve() if args.log else self.run_dir / "episode.mcap")
        self.report_path = str(Path(args.report).resolve() if args.report else self.run_dir / "report.json")
        self.interrupted = threading.Event()
        self.judge = Judge(scenario, math.inf, self._task)  # judged from the start step on
        self.world_time_s = 0.0
        self._task_client: Any = None
        self._errors: list[str] = []
        self._started = time.monotonic()
        self.timings: dict[str, float | None] = {"first_step_wall_s": None, "first_command_wall_s": None}
        self.rule = CommandRule([a.name for a in scenario.agents], scenario.command_period_s)
        self.abandoned = False  # ROS left open: the process ends without closing it

    # -- the run -------------------------------------------------------------------------------

    def _interrupt(self) -> None:
        """(a signal handler) The run ends at its next check; one still going INTERRUPT_STACKS_S later
        prints every thread's stack to stderr, so that what holds it shows in its output."""
        if not self.interrupted.is_set():
            faulthandler.dump_traceback_later(INTERRUPT_STACKS_S, exit=False)
        self.interrupted.set()

    def execute(self) -> int:
        from acres_sim.scenario.session import RunSession, SessionFailed

        started = self._started = time.monotonic()
        env = dict(os.environ)
        if self.args.domain is not None:
            env["ROS_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"] = str(self.args.domain)
        previous = {sig: signal.signal(sig, lambda _n, _f: self._interrupt())
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        session = RunSession(self.scenario, self.run_dir, env, self.args.game_arg)
        status, reason = "error", ""
        ros = None
        feed = game = None
        try:
            session.start(READY_TIMEOUT_S)
            ros = _Ros(self.scenario)
            from acres_sim.game.control_client import ControlClient
            from acres_sim.game.episode_feed import EpisodeFeed

            game = ControlClient(session.control_port, timeout_s=BARRIER_TIMEOUT_S, token=session.token)
            self._task_client = ControlClient(session.control_port, timeout_s=BARRIER_TIMEOUT_S)
            feed = EpisodeFeed(session.control_port, lambda event, body: self._on_event(ros, event, body),
                               self._errors.append)
            feed.start()
            self._prepare(game)
            self._wait_watchers(game, session)
            game.record_start(self.log_path)
            if self.args.stack:
                session.start_stack(self.args.stack)
            self._run(game, feed, ros, session)
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
            if game is not None:
                try:
                    game.record_stop()
                except Exception as exc:  # noqa: BLE001 -- a dead game: its log ends at its last chunk
                    reason = reason or f"the episode log could not be finished: {exc}"
            if feed is not None:
                end_step("the episode feed", feed.stop)
            # The ROS node is not destroyed: the process ends with it (main). Destroying it while the
            # session's processes end froze the runner for good (Fast DDS 2.14: the participant's
            # destruction spins, holding Python's lock, until a discovery callback of a vanishing
            # peer ends, which waits for a lock the destruction holds).
            self.abandoned = ros is not None
            session.stop()
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

    def _pacing(self, game: Any, feed: Any, ros: _Ros, session: Any) -> Any:
        s = self.scenario
        check = lambda: self._check(session)  # noqa: E731
        if s.pace == "lockstep":
            chunk = max(1, round(s.command_period_s * PHYSICS_HZ))
            return LockstepPacing(game, ros.lockstep, feed.wait_handled, ros.tick, self.rule, chunk,
                                  PHYSICS_HZ, s.stack_timeout_s, check, ros.last_sent, HELD_AWAITING)
        return RealTimePacing(game, ros.lockstep.held, s.stack_timeout_s, check, ros.last_sent)

    def _run(self, game: Any, feed: Any, ros: _Ros, session: Any) -> None:
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
                time.sleep(DISCOVERY_SETTLE_S)
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
    def _why(session: Any) -> str:
        """A process of the session that ended (its socket may close a moment before it is reaped)."""
        deadline = time.monotonic() + 2.0
        while True:
            dead = session.dead()
            if dead or time.monotonic() > deadline:
                return dead
            time.sleep(0.05)

    def _check(self, session: Any) -> None:
        if self.interrupted.is_set():
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

    def _on_event(self, ros: _Ros, event: str, body: dict[str, Any]) -> None:
        self.judge.on_event(event, body)
        if event == "states":
            ros.see(body)  # where the scripted agents are

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


class _Ros:
    """The runner's ROS side: the lockstep watch (barriers and held commands of every agent) and the
    Ackermann commands of the scripted agents, on a node spun by a thread of its own."""

    def __init__(self, scenario: Scenario):
        import rclpy
        from ackermann_msgs.msg import AckermannDriveStamped
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        from std_msgs.msg import String

        from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
        from acres_sim.nodes.lockstep_watch import HELD_QOS, watch_lockstep

        self._rclpy = rclpy
        self._msg = AckermannDriveStamped
        rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node("scenario_runner")
        self._agents = agents = [a.name for a in scenario.agents]
        self.lockstep = watch_lockstep(self.node, agents, True, BARRIER_TIMEOUT_S, 0.0,
                                       lambda text: self.node.get_logger().warning(text))
        self._scripted: dict[str, Any] = {}
        for a in scenario.agents:
            if a.waypoints:
                params = VEHICLE_PARAMS[a.vehicle]
                self._scripted[a.name] = (
                    WaypointDriver(a.waypoints, a.speed_mps, params.wheelbase_m, params.max_steer_rad),
                    self.node.create_publisher(AckermannDriveStamped, f"/{a.name}/{ACKERMANN_CMD}",
                                               10))
        self._starts = {a.name: (a.pose.x, a.pose.y, a.pose.yaw) for a in scenario.agents}
        self._states: dict[str, Any] = {}  # each agent's latest AgentState (the scripted agents' drivers)
        # Lockstep: the ticks' time, said by the runner (the sim_bridges do not publish /clock then).
        from rosgraph_msgs.msg import Clock

        from acres_sim.nodes.sim_bridge import CLOCK_QOS

        self._clock_msg = Clock
        lockstep = scenario.pace == "lockstep"
        self._clock = self.node.create_publisher(Clock, CLOCK, CLOCK_QOS) if lockstep else None
        self._tick: Any = None
        if self._clock is not None:
            self.node.create_timer(CLOCK_AGAIN_S, self._clock_again)
        # What each agent's vehicle_bridge last refused (named when its stack's commands stop counting).
        self.refused: dict[str, str] = {}
        for a in scenario.agents:
            self.node.create_subscription(String, f"/{a.name}/{VEHICLE_REFUSED}",
                                          lambda msg, name=a.name: self.refused.__setitem__(name, msg.data),
                                          HELD_QOS)
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._executor.spin, name="scenario-ros", daemon=True)
        self._thread.start()

    @property
    def scripted(self) -> list[str]:
        return list(self._scripted)

    def tick(self, t: float) -> None:
        """/clock says tick t (its data delivered), now and every CLOCK_AGAIN_S until the next."""
        if self._clock is None:
            return
        # The data are delivered (barriers), but a stack takes its queued messages one per wait of
        # its executor, timers first: a moment's grace lets it read them all before its timers fire
        # (more at the first tick: a stack's first callbacks are slow, and its queue is full).
        time.sleep(CLOCK_SETTLE_S if self._tick is not None else FIRST_CLOCK_SETTLE_S)
        msg = self._clock_msg()
        msg.clock.sec, msg.clock.nanosec = stamp_to_sec_nanosec(t)
        self._tick = msg
        self._clock.publish(msg)

    def _clock_again(self) -> None:
        if self._tick is not None:
            self._clock.publish(self._tick)

    def last_sent(self, agents: list[str]) -> str:
        """What each agent's stack last sent that counts, and what was refused since, in words."""
        _, held = self.lockstep.held.snapshot()
        parts = []
        for agent in agents:
            h = held.get(agent)
            if h is None:
                said = f"{agent}'s vehicle_bridge has not said what it holds"
            elif h[1] in ("", HELD_AWAITING):
                said = f"{agent} holds no command"
            else:
                said = (f"{agent} last held {SOURCE_INPUTS.get(h[1], h[1])} stamped {h[0]:.3f} s, "
                        f"{time.monotonic() - h[2]:.1f} s ago")
            refused = self.refused.get(agent)
            parts.append(said + (f"; refused since: {refused}" if refused else ""))
        return "; ".join(parts)

    def commanding(self) -> set[str]:
        """The agents whose command topics something besides this runner publishes on."""
        out = set()
        for agent in self._agents:
            own = 1 if agent in self._scripted else 0
            if any(self.node.count_publishers(f"/{agent}/{topic}") > (own if topic == ACKERMANN_CMD else 0)
                   for topic in COMMAND_TOPICS):
                out.add(agent)
        return out | set(self._scripted)

    def see(self, states: dict[str, Any]) -> None:
        if self._scripted:  # only the scripted agents' drivers need where they are
            self._states = {agent["name"]: agent for agent in states.get("agents", [])}

    def drive_scripted(self, now: float) -> None:
        """Each scripted agent's command for world time `now` (stamped with it)."""
        drivers = {name: driver for name, (driver, _publisher) in self._scripted.items()}
        for name, (steer, speed) in scripted_commands(drivers, self._states, self._starts).items():
            publisher = self._scripted[name][1]
            msg = self._msg()
            sec = int(now)
            msg.header.stamp.sec, msg.header.stamp.nanosec = sec, int(round((now - sec) * 1e9))
            msg.drive.steering_angle, msg.drive.speed = float(steer), float(speed)
            publisher.publish(msg)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        scenario = load(args.file, args.set)
    except ScenarioError as exc:
        print(f"scenario: refused: {exc}", file=sys.stderr)
        return 2
    if args.check:
        print(f"{args.file}: ok: {scenario.name}, {len(scenario.agents)} agents, "
              f"{len(scenario.objects)} objects, "
              f"{len(scenario.events)} events, {len(scenario.criteria)} criteria, {scenario.duration_s:g} s "
              f"{scenario.pace}")
        return 0
    run = ScenarioRun(scenario, args)
    if Path(run.log_path).exists():
        print(f"scenario: refused: the episode log {run.log_path} exists (a log is never overwritten): "
              "give another --log or --out", file=sys.stderr)
        return 2
    code = run.execute()
    if run.abandoned:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)  # no destructor of rclpy's or Fast DDS's runs (see execute's end)
    return code


if __name__ == "__main__":
    sys.exit(main())
