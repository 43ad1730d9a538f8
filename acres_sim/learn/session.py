"""A learner's own world (ROS-free): a fake game started for it (ports of the system's choosing, ended
with the process that started it) or a game already running, given by its ports (GamePorts: left
running when the session ends); its control channel, episode feed, Vehicle Bridges and, where the
observations need them, its sensor streams; one lockstep step of the agents' commands at a time.
No ROS graph: each socket of the game serves this session alone.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from acres_sim.channels.vehicle import GEAR_DRIVE, GEAR_REVERSE, VehicleCommand, VehicleInfo, VehicleReport
from acres_sim.drive.speed_control import SpeedController
from acres_sim.game.control_client import ControlClient
from acres_sim.game.episode_feed import EpisodeFeed
from acres_sim.game.vehicle_client import VehicleClient
from acres_sim.learn.observations import range_image, resampled
from acres_sim.scenario.judge import Judge
from acres_sim.scenario.model import Pose2D, Scenario
from acres_sim.scenario.processes import GamePorts, GameProcess, SessionFailed, start_fake_game
from acres_sim.scenario.world_setup import prepare_world, wait_for_game
from acres_sim.stream.client import Frame, StreamClient
from acres_sim.stream.protocol import FrameType
from acres_sim.stream.timing import PHYSICS_HZ
from acres_sim.work_dirs import WorkDir

READY_TIMEOUT_S = 120.0
QUIET_FEED_EVENTS = ("episode",)  # a summarised session's feed: one latched message, no step's
ANSWER_TIMEOUT_S = 60.0  # a step request, the vehicles' answers, a step's states and frames
SPEED_KP, SPEED_KI = 1.0, 0.5  # vehicle_bridge's defaults


class _Sensors:
    """One agent's stream: the latest LiDAR range image and camera image, and the barrier's step."""

    def __init__(self, port: int, lidar_columns: int, camera_size: tuple[int, int] | None):
        self.lidar_columns, self.camera_size = lidar_columns, camera_size
        self.lidar: np.ndarray | None = None
        self.camera: np.ndarray | None = None
        self.barrier = -1
        self._new = threading.Condition()
        self.client = StreamClient("127.0.0.1", port, self._on_frame, reconnect_min_s=0.1,
                                   reconnect_max_s=0.5)
        self.client.start()

    def _on_frame(self, frame: Frame) -> None:
        with frame:
            if frame.type == FrameType.LIDAR:
                self.lidar = range_image(frame.data.points, self.lidar_columns)
            elif frame.type == FrameType.CAMERA and self.camera_size is not None:
                self.camera = resampled(frame.data.pixels, *self.camera_size)
            elif frame.type == FrameType.BARRIER:
                with self._new:
                    self.barrier = int(frame.data)
                    self._new.notify_all()

    def wait_barrier(self, step: int, timeout_s: float) -> bool:
        with self._new:
            return self._new.wait_for(lambda: self.barrier >= step, timeout_s)

    def forget(self) -> None:
        with self._new:
            self.barrier = -1


class LearnerSession:
    """The world of one environment. observe: which of "lidar", "camera" the streams must deliver."""

    def __init__(self, scenario: Scenario, observe: Sequence[str], lidar_columns: int,
                 camera_size: tuple[int, int] | None, game_args: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, timeout_s: float = READY_TIMEOUT_S,
                 given: GamePorts | None = None):
        self.scenario = scenario
        self.agents = [a.name for a in scenario.agents]
        self._work = WorkDir("acres_learn_", f"{scenario.name}_")
        self.dir = self._work.path
        self._lock = threading.Lock()
        self._latched: dict[str, dict[str, Any]] = {}
        self.judge = Judge(scenario, math.inf, lambda status: None)
        self.states: dict[str, dict[str, Any]] = {}
        self.contacts = {a: 0 for a in self.agents}
        self.crushed = {a: 0.0 for a in self.agents}
        self._problems: list[str] = []
        self.infos: dict[str, VehicleInfo] = {}
        self.reports: dict[str, VehicleReport] = {}
        self._info_ready = threading.Condition()
        self._vehicle_news = threading.Condition()  # a Vehicle Bridge answered or reached a barrier
        self._vehicle_steps: dict[str, int] = {}  # agent -> the world step of its last barrier
        self.game: GameProcess | None = None
        self.given = given
        self._lost = False  # the control channel failed: the session is over
        self.feed: EpisodeFeed | None = None
        self.vehicles: dict[str, VehicleClient] = {}
        self.sensors: dict[str, _Sensors] = {}
        self.speed = {a: SpeedController(SPEED_KP, SPEED_KI) for a in self.agents}
        self.recording = False
        self.summarised = False  # the game answers each step request with its summary
        try:
            if given is None:
                # the sensors observed, no others: a camera or an INS nobody reads costs the game its step
                carried = ",".join(s for s in ("lidar", "camera") if s in observe)
                self.game = start_fake_game(self.agents, [a.vehicle for a in scenario.agents], scenario.seed,
                                            self.dir, dict(os.environ if env is None else env),
                                            ["--realtime-factor", "0", "--sensors", carried, *game_args],
                                            timeout_s, "fake_game")
                ports = self.game.ports
            else:
                ports = given
            self.control = ControlClient(ports.control_port, timeout_s=ANSWER_TIMEOUT_S)
            try:
                wait_for_game(self.control, timeout_s)
            except (ConnectionError, OSError) as exc:
                raise SessionFailed(f"no game answered on control port {ports.control_port} within "
                                    f"{timeout_s:g} s ({exc}){self._where()}") from None
            # A game with step summaries tells each step request what it did, the judge's bodies
            # included: the feed then only shows that the game is there, not every step's events.
            features = self._call(self.control.features)
            self.summarised = "step_summary" in features
            quiet = self.summarised and "watch_events" in features
            self.feed = EpisodeFeed(ports.control_port, self._on_event, self._problems.append,
                                    events=QUIET_FEED_EVENTS if quiet else None)
            self.feed.start()
            for agent, port in zip(self.agents, ports.vehicle_ports):
                client = VehicleClient(port, on_info=lambda info, a=agent: self._on_info(a, info),
                                       on_report=lambda r, a=agent: self.reports.__setitem__(a, r),
                                       on_barrier=lambda step, t, a=agent: self._on_vehicle_barrier(a, step),
                                       on_answer=self._on_vehicle_answer, reconnect_min_s=0.1,
                                       reconnect_max_s=0.5)
                client.start()
                self.vehicles[agent] = client
            if set(observe) & {"lidar", "camera"}:
                for agent, port in zip(self.agents, ports.ports):
                    camera = camera_size if "camera" in observe else None
                    self.sensors[agent] = _Sensors(port, lidar_columns, camera)
            with self._info_ready:
                if not self._info_ready.wait_for(lambda: len(self.infos) == len(self.agents), timeout_s):
                    raise SessionFailed("the Vehicle Bridges did not describe their vehicles within "
                                        f"{timeout_s:g} s{self._where()}")
            for a, port in zip(scenario.agents, ports.vehicle_ports):
                info = self.infos[a.name]
                if (info.agent, info.vehicle) != (a.name, a.vehicle):
                    raise SessionFailed(f"the Vehicle Bridge on port {port} drives {info.agent} "
                                        f"(a {info.vehicle}); the scenario's {a.name} is a {a.vehicle}"
                                        f"{self._where()}")
            # a given game's liveness is its feed's connection: not watched before it is up
            if not self._wait(lambda: self.feed.connected, timeout_s, watch=given is None):
                raise SessionFailed(f"the game's watch feed did not connect within {timeout_s:g} s"
                                    f"{self._where()}")
        except BaseException:
            self.close()
            raise

    # -- the episode --------------------------------------------------------------------------

    def reset(self, seed: int, starts: Mapping[str, Pose2D] | None = None,
              record: str | None = None) -> float:
        """The world as the scenario starts it, with every random process from `seed` and the agents
        of `starts` at those poses, after one command period with every agent standing (so that every
        sensor has a frame): its world time. `record`: the episode log's path, from the start on."""
        if self.recording:
            self._call(self.control.record_stop)
            self.recording = False
        self._check()
        with self._lock:
            self.judge = Judge(self.scenario, math.inf, lambda status: None)
            for event in ("agents", "objects"):
                if event in self._latched:
                    self.judge.on_event(event, self._latched[event])
        assert self.feed is not None
        self.feed.forget_steps()
        with self._vehicle_news:
            self._vehicle_steps.clear()
        for sensors in self.sensors.values():
            sensors.forget()
        self._call(lambda: self.control.reset("all", seed=seed))
        self._call(lambda: prepare_world(self.control, self.scenario))
        for agent, pose in (starts or {}).items():
            self._call(lambda: self.control.set_state(agent, (pose.x, pose.y, 0.0), pose.quaternion(),
                                                      on_ground=True))
        if record:
            self._call(lambda: self.control.record_start(record))
            self.recording = True
        for controller in self.speed.values():
            controller.reset()
        for agent in self.agents:  # standing, brakes on
            self.vehicles[agent].send(VehicleCommand(brake=1.0))
        t = self.step(self.command_steps)
        with self._lock:
            self.judge.start_s = t
        return t

    @property
    def command_steps(self) -> int:
        return max(1, round(self.scenario.command_period_s * PHYSICS_HZ))

    def command(self, agent: str, speed_mps: float, steer_rad: float, dt: float) -> None:
        """Ask the agent's vehicle for a speed and a road-wheel angle from now on (pedals by the
        speed controller, from its last report; the gear of the speed's sign)."""
        report = self.reports.get(agent)
        measured = report.speed_mps if report is not None else 0.0
        info = self.infos[agent]
        forward = speed_mps >= 0.0
        if (measured < -0.1 and forward) or (measured > 0.1 and not forward):
            throttle, brake = 0.0, 1.0  # the other way first: stop
            self.speed[agent].reset()
        else:
            throttle, brake = self.speed[agent].pedals(info.model, abs(speed_mps), 0.0, abs(measured), dt)
        self.vehicles[agent].send(VehicleCommand(steer_request_rad=steer_rad, throttle=throttle, brake=brake,
                                                 gear=GEAR_DRIVE if forward else GEAR_REVERSE))

    def step(self, steps: int) -> float:
        """Once the game holds every command: `steps` physics steps, their states judged, every
        vehicle's report of the last step and every stream's frames in. The world time reached."""
        self._check()
        if not self._wait_vehicles(lambda: all(v.all_answered for v in self.vehicles.values())):
            raise SessionFailed("the game did not answer the vehicles' commands within "
                                f"{ANSWER_TIMEOUT_S:g} s{self._where()}")
        done = self._call(lambda: self.control.step(steps, summary=self.summarised))
        assert self.feed is not None
        if done.summary is not None:
            with self._lock:
                for event, body in done.summary.get("latched", {}).items():
                    self._latched[event] = body
                    self.judge.on_event(event, body)
                self.judge.on_summary(done.summary)
                self.states = {a["name"]: a for a in done.summary["states"]["agents"]}
        elif not self.feed.wait_handled(done.step, ANSWER_TIMEOUT_S):
            raise SessionFailed(f"the states of step {done.step} did not come{self._where()}")
        # the next command's pedals follow the last step's report: the same every run
        reached = self._vehicle_steps
        if not self._wait_vehicles(lambda: min(reached.get(a, -1) for a in self.agents) >= done.step):
            raise SessionFailed(f"the Vehicle Bridges did not reach step {done.step}{self._where()}")
        with self._lock:  # the steps' contacts and crop as the judge read them
            tally = self.judge.take_tally()
            self.contacts = {a: tally.get(a, (0, 0.0))[0] for a in self.agents}
            self.crushed = {a: tally.get(a, (0, 0.0))[1] for a in self.agents}
        for agent, sensors in self.sensors.items():
            if not sensors.wait_barrier(done.step, ANSWER_TIMEOUT_S):
                raise SessionFailed(f"{agent}'s sensor stream did not reach step {done.step}{self._where()}")
        return done.time_s

    # -- the feed (its own thread) ------------------------------------------------------------------

    def _on_event(self, event: str, body: dict[str, Any]) -> None:
        with self._lock:
            if event in ("agents", "objects"):
                self._latched[event] = body
            elif event == "states":
                self.states = {a["name"]: a for a in body.get("agents", [])}
            self.judge.on_event(event, body)

    def latched_objects(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._latched.get("objects", {}).get("objects", []))

    def _on_vehicle_barrier(self, agent: str, step: int) -> None:
        with self._vehicle_news:
            self._vehicle_steps[agent] = step
            self._vehicle_news.notify_all()

    def _on_vehicle_answer(self) -> None:
        with self._vehicle_news:
            self._vehicle_news.notify_all()

    def _wait_vehicles(self, done: Any) -> bool:
        """Until done() holds after a Vehicle Bridge's news (False after ANSWER_TIMEOUT_S);
        SessionFailed as soon as the game is gone."""
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        with self._vehicle_news:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0.0:
                    return False
                if not self._vehicle_news.wait(min(left, 0.1)):
                    self._check()
        return True

    def _on_info(self, agent: str, info: VehicleInfo) -> None:
        with self._info_ready:
            self.infos[agent] = info
            self._info_ready.notify_all()

    # -- faults ---------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        if self._lost:
            return False
        if self.given is not None:  # not our process to watch: its channel tells
            return self.feed is None or self.feed.connected
        return self.game is not None and self.game.child.alive

    def _check(self) -> None:
        if not self.alive:
            raise SessionFailed(f"the game ended{self._where()}")

    def _wait(self, done: Any, timeout_s: float, watch: bool = True) -> bool:
        """Poll done() until it holds (True) or timeout_s passed (False); with `watch`, SessionFailed as
        soon as the game is gone (not after the whole limit)."""
        deadline = time.monotonic() + timeout_s
        checked = time.monotonic()
        while not done():
            now = time.monotonic()
            if now > deadline:
                return False
            if watch and now - checked > 0.1:
                checked = now
                self._check()
            time.sleep(0.0005)
        return True

    def _where(self) -> str:
        if self.given is not None:
            return f" (the game given on control port {self.given.control_port})"
        return f" (its output: {self.dir / 'fake_game.log'})"

    def _call(self, request: Any) -> Any:
        try:
            return request()
        except (ConnectionError, OSError) as exc:
            self._lost = True
            raise SessionFailed(f"the game's control channel failed: {exc}{self._where()}") from None

    def task(self, status: dict[str, Any]) -> None:
        """A TaskStatus into the episode log (and onto the watch feed)."""
        self._call(lambda: self.control.task(status))

    def close(self) -> None:
        if self.recording and self.alive:
            try:
                self.control.record_stop()  # the log finished, not cut at its last chunk
            except (ConnectionError, OSError):
                pass
            self.recording = False
        for sensors in self.sensors.values():
            sensors.client.stop()
        for client in self.vehicles.values():
            client.stop()
        if self.feed is not None:
            self.feed.stop()
        if getattr(self, "control", None) is not None:
            self.control.close()
        if self.game is not None:  # a given game goes on
            self.game.child.stop()
            self.game = None
        self._work.remove()
