"""The fake game's simulation loop over all agents, ROS-free.

Time base. The world advances in physics steps of exactly 1/120 s. The world starts at step 0
(time 0) and produces nothing there; step n is the step that brings the world to time n/120
(computed as n / 120.0, never accumulated), so the first step is step 1 at 1/120 s. Every step
queues, on each agent's stream, one Clock frame and then the INS epochs that fell due. A sensor
at rate hz has its epoch k (k = 1, 2, ...) due at k / hz and produces it at the first step at or
after that time: the smallest n with n * hz >= 120 * k, evaluated in exact rational arithmetic.
All frames of a step are stamped with the world time of that step. So at 100 Hz the INS
intervals are 1/120 s or 2/120 s; steps 1..12 hold 12 clocks, 10 INS epochs (due 0.01 .. 0.10),
and one LiDAR scan and one camera image (due 0.1, produced at step 12, stamped 0.1 = the end of
the sweep). LiDAR and camera frames are rendered on a worker pool and queued when their render is
done, i.e. after the clock and INS frames of their step (and usually of some later steps).

Lockstep. The world starts held; only the Hello goes out until a step request. step(N) runs N
steps, waits until every render those steps started was queued, queues one Barrier on each
connected stream (payload: the world step reached; stamp: the world time of that step) and
returns. With the protocol page's three requests of 12 steps and the Polaris this gives clock 12, ins 10,
lidar 1, camera 1 and a barrier at sequences 25, 50 and 75 (Hello is sequence 0).

Control. reset() takes the world clock back to step 0 (scope "time": every agent goes on from where
it is), every agent back to the start of its route (scope "state"), or both, as launched ("all":
the stream then repeats a fresh start's frames). set_entity_state() places an agent, which holds
that pose (or moves on with the twist it was given) until a state reset. Both wait for the renders
in flight, so that no frame mixes the world before and after.

Driving. An agent with a Vehicle Bridge drives as driving.py says (AgentDriving: its vehicle model
is stepped before the step's frames); after the frames each step's report goes to the bridge; in
lockstep the bridges get their barrier after the streams'. Renders: render_pool.py (AgentRenders).

Vehicle time. Each agent's Clock payload is its own physics time: the world time plus a constant
lead of VEHICLE_CLOCK_LEAD_S + 100 s x agent index, so the offset (world minus vehicle time) is
non-zero and differs between agents, as in the game where every pawn has its own physics clock.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from acres_sim.episode.log_file import CONDITIONS, OBJECTS, SHIFTS, WORLD, Topic, read_episode
from acres_sim.fake_game.simulation.agent_states import (
    CONTROL_DRIVEN,
    CONTROL_PLACED,
    CONTROL_ROUTE,
    EnergyLedger,
    agent_state,
    knot_of,
    wheel_ground,
)
from acres_sim.fake_game.simulation.driving import AgentDriving
from acres_sim.fake_game.simulation.entities import (
    WORLD_HALF_EXTENT_M,
    EntityState,
    InvalidPose,
    UnknownAgent,
    finite_vector,
    float_triple,
)
from acres_sim.fake_game.simulation.episode_hub import (
    EpisodeHub,
    EpisodeListener,
    Replay,
    agent_states,
    header,
)
from acres_sim.fake_game.simulation.farm_marks import FarmMarks
from acres_sim.fake_game.simulation.render_pool import AgentRenders, RenderPool
from acres_sim.fake_game.simulation.session_config import AgentSpec, SessionConfig
from acres_sim.fake_game.simulation.sinks import (
    FrameSink,
    LogFn,
    OpenStream,
    OpenVehicle,
    VehicleStepReport,
    stdout_log,
)
from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
from acres_sim.fake_game.simulation.world_changes import WorldChanges
from acres_sim.fake_game.simulation.world_clock import SensorSchedule, world_time
from acres_sim.fake_game.world.motion import DrivenMotion, HeldMotion, RouteMotion
from acres_sim.rotations import quaternion_to_matrix
from acres_sim.stream.hello import Hello
from acres_sim.stream.protocol import (
    FrameType,
    encode_barrier,
    encode_camera,
    encode_clock,
    encode_ins,
    encode_lidar,
)
from acres_sim.stream.timing import PHYSICS_HZ

RESET_SCOPES = ("time", "state", "all", "spawned")
WORLD_NAME = "acres_farm_loop"  # the fake world's one map
VEHICLE_CLOCK_LEAD_S = 1234.5  # vehicle time minus world time of agent 0
MAX_STEPS_PER_REQUEST = 1_000_000
AGENT_SPACING_M = 40.0  # distance along the loop between the start places of the agents
_MAX_LAG_S = 1.0  # real-time pacing: further behind than this, give up catching up


class NotPaused(Exception):
    """A step request that asked for a paused world found it playing."""


@dataclass
class _Agent:
    index: int
    spec: AgentSpec
    hello: Hello
    simulator: Any  # simulation.AgentSimulator
    stream: FrameSink
    renders: AgentRenders
    clock_lead_s: float
    ins: SensorSchedule | None = None
    lidar: SensorSchedule | None = None
    camera: SensorSchedule | None = None
    driving: AgentDriving | None = None  # with a Vehicle Bridge
    ledger: EnergyLedger = dataclasses.field(default_factory=EnergyLedger)
    replay_track: DrivenMotion | None = None  # while it follows an episode log

    def restart_schedules(self, camera_on: bool) -> None:
        """Sensor epochs from world time 0: at the start and after a TIME reset."""
        hello = self.hello
        self.ins = SensorSchedule(hello.ins.hz) if hello.ins.enabled else None
        self.lidar = SensorSchedule(hello.lidar.hz) if hello.lidar.enabled else None
        self.camera = SensorSchedule(hello.camera.hz) if camera_on else None

    def skip_epochs(self, step: int) -> None:
        """The epochs due up to this step are past: the world starts there."""
        for schedule in (self.ins, self.lidar, self.camera):
            if schedule is not None:
                schedule.due(step)


class Session:
    """All agents of one fake-game run: streams, simulation loop, lockstep requests.

    start() opens the streams and (unless lockstep) starts the world; step(), pause(), play()
    and status() are what the control channel calls; stop() ends everything and logs STOP.
    """

    def __init__(self, config: SessionConfig, open_stream: OpenStream, log: LogFn = stdout_log,
                 open_vehicle: OpenVehicle | None = None):
        self.config = config
        self._open_stream = open_stream
        self._open_vehicle = open_vehicle
        self._log = log
        self._agents: list[_Agent] = []
        self._step = 0
        self._world_lock = threading.RLock()  # one step at a time, by the loop or a request
        self._request_lock = threading.Lock()  # one step request at a time
        self._state = threading.Condition()
        self._paused = config.lockstep
        self._stopping = False
        self._finished = threading.Event()
        self._pool: RenderPool | None = None
        self._thread: threading.Thread | None = None
        self._anchor: tuple[float, int] | None = None  # (monotonic, step) the pacing counts from
        self._render_error: BaseException | None = None
        self._hub = EpisodeHub("fake_game", WORLD_NAME, config.seed, log)
        self._world: WorldChanges | None = None  # once started
        self._farm = FarmMarks()

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.stop()  # close the streams that did open
            raise

    def _start(self) -> None:
        # Imported here so that the transport and its tests load without the world's numpy work.
        from acres_sim.fake_game.simulation.simulation import AgentSimulator
        from acres_sim.fake_game.simulation.vehicles import vehicle_hello
        from acres_sim.fake_game.world.scene import default_scene

        cfg = self.config
        scene = default_scene(terrain=None) if cfg.flat_ground else default_scene()  # one for all agents
        for index, spec in enumerate(cfg.agents):
            hello = vehicle_hello(spec.vehicle, agent=spec.agent, georeferenced=cfg.georeferenced,
                                  flavor=cfg.flavor)
            # The simulator exists before the port opens: a client is accepted only once the
            # agent's sensors are set up (the protocol page's "the game accepts a client only when the
            # sensor recorder knows its layout"). Agents differ by name inside the simulator's
            # seeding, so every agent gets the user's seed; they start at different places.
            simulator = AgentSimulator(hello, seed=cfg.seed, noise=cfg.noise,
                                       start_offset_m=AGENT_SPACING_M * index, scene=scene)
            simulator.prepare()  # the camera's ray table takes over a second: not at the first client
            stream = self._open_stream(spec.agent, spec.port, hello, lambda: world_time(self._step))
            if stream is None:
                continue  # the session goes on without this stream
            agent = _Agent(
                index=index, spec=spec, hello=hello, simulator=simulator, stream=stream,
                renders=AgentRenders(stream, self._renderer(simulator), cached=cfg.cached,
                                     on_failure=self._render_failed(spec.agent)),
                clock_lead_s=VEHICLE_CLOCK_LEAD_S + 100.0 * index)
            if spec.vehicle_port is not None and self._open_vehicle is not None:
                bridge = self._open_vehicle(spec.agent, spec.vehicle, spec.vehicle_port,
                                            VEHICLE_PARAMS[spec.vehicle], lambda a=agent: self._state_now(a))
                if bridge is not None:
                    agent.driving = AgentDriving(VEHICLE_PARAMS[spec.vehicle], bridge)
            agent.restart_schedules(self._camera_on(hello))
            self._agents.append(agent)
        # In real time one render thread per agent: two renders side by side cost each other 45 %
        # more CPU (shared caches and memory bandwidth) for 10 % less wall time. Faster than real
        # time (lockstep, unpaced) wall time is what counts: two per agent step 30-40 % faster.
        real_time = not cfg.lockstep and 0.0 < cfg.realtime_factor <= 1.0
        workers = cfg.render_workers or min(len(self._agents) * (1 if real_time else 2), os.cpu_count() or 1)
        self._pool = RenderPool(max(1, workers))
        self._world = WorldChanges(scene, self.agents)
        self._open_episode(cfg)
        self._thread = threading.Thread(target=self._run, name="simulation", daemon=True)
        self._thread.start()

    def _camera_on(self, hello: Hello) -> bool:
        return hello.camera.enabled and self.config.flavor != "core"

    def _open_episode(self, cfg: SessionConfig) -> None:
        """The episode as the session starts: its agents, their states at step 0; the replay and the
        recording the command line asks for (a bad file stops the start with its error)."""
        hub = self._hub
        hub.set_agents([self._agent_info(a) for a in self._agents], 0.0)
        hub.new_episode(0.0)
        self._publish_world(0.0, WORLD)
        hub.latest = agent_states(0, 0.0, self._states(0, 0.0, {}, count=False))
        if cfg.episode_replay:
            self._begin_replay(self._load_replay(cfg.episode_replay))
        if cfg.episode_log:
            hub.start_recording(cfg.episode_log, world_time(self._step))

    @staticmethod
    def _agent_info(agent: _Agent) -> dict[str, Any]:
        params = VEHICLE_PARAMS[agent.spec.vehicle]
        origin = agent.hello.body_origin_flu_m
        return {"name": agent.spec.agent, "vehicle": agent.spec.vehicle,
                "body_origin_flu_m": {"x": float(origin[0]), "y": float(origin[1]), "z": float(origin[2])},
                "wheelbase_m": params.wheelbase_m, "track_m": params.track_m,
                "wheel_radius_m": params.wheel_radius_m, "mass_kg": params.mass_kg}

    @property
    def agents(self) -> list[str]:
        """The agents whose streams listen (an agent whose port could not be opened is left out)."""
        return [a.spec.agent for a in self._agents]

    @property
    def ports(self) -> dict[str, int]:
        """The port each listening agent got (useful with port 0)."""
        return {a.spec.agent: a.stream.port for a in self._agents}

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the run ended by itself (duration reached or a render failed)."""
        return self._finished.wait(timeout)

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    def stop(self) -> None:
        with self._state:
            self._stopping = True
            self._state.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._pool is not None:
            # Renders not yet started are cancelled; running ones finish on their own (and publish
            # nothing once the servers are stopped): stop does not wait for a busy renderer.
            self._pool.shutdown()
            self._pool = None
        for agent in self._agents:
            agent.stream.stop()
            if agent.driving is not None:
                agent.driving.bridge.stop()
        self._hub.close()  # a recording ends with its summary
        self._finished.set()

    # -- requests (control channel) -----------------------------------------------------------

    @property
    def time_s(self) -> float:
        return world_time(self._step)

    def step(self, steps: int, paused_only: bool = False) -> tuple[int, float]:
        """Hold the world, advance it by steps, wait for the renders, queue the barriers.
        paused_only: refuse (NotPaused) when the world is playing instead of holding it."""
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS_PER_REQUEST:
            raise ValueError(f"steps must be an integer from 1 to {MAX_STEPS_PER_REQUEST}, got {steps!r}")
        with self._request_lock:
            with self._state:
                if self._stopping or self._finished.is_set():
                    raise RuntimeError("the session has ended")
                if paused_only and not self._paused:
                    raise NotPaused("the world is playing: pause it before stepping")
                self._paused = True  # a step request leaves the world held, as the game does
                self._anchor = None
            with self._world_lock:
                for _ in range(steps):
                    if self._stopping:
                        raise RuntimeError("the session is stopping")
                    self._advance()
                    if self._duration_reached():
                        break
                self._wait_renders()
                step = self._step
                stamp = world_time(step)
                for agent in self._agents:
                    agent.stream.publish(FrameType.BARRIER, stamp, encode_barrier(step))
                    if agent.driving is not None:
                        agent.driving.bridge.barrier(step, stamp + agent.clock_lead_s)
            if self._duration_reached():
                self._finished.set()
            return step, stamp

    def reset(self, scope: str) -> tuple[int, float]:
        """Reset the world clock ("time"), the agents' poses ("state") or both ("all")."""
        if scope not in RESET_SCOPES:
            raise ValueError(f"scope must be one of {', '.join(RESET_SCOPES)}, got {scope!r}")
        with self._between_steps():
            self._reset_locked(scope)
            return self._step, world_time(self._step)

    def _reset_locked(self, scope: str, to_step: int = 0, replay_of: str = "") -> None:
        hub = self._hub
        if scope == "spawned":  # the objects leave; nothing else changes
            if self._world_changes().clear_objects():
                self._apply_world(world_time(self._step), (OBJECTS,))
        else:
            self._end_replay(f"reset {scope}")
            self._farm.forget()
        if scope in ("time", "all"):
            if hub.recording and to_step < self._step:  # the log time never goes back: it ends here
                hub.stop_recording(f"reset {scope}")
            dt = world_time(to_step) - world_time(self._step)
            self._step = to_step
            for agent in self._agents:
                if scope == "all":
                    agent.simulator.restart()
                    agent.ledger = EnergyLedger()
                    if agent.driving is not None:
                        agent.driving.stop()
                else:
                    agent.simulator.shift_time(dt)
                    if agent.driving is not None:
                        agent.driving.follow_shifted_track(agent.simulator.motion)
                agent.restart_schedules(self._camera_on(agent.hello))
                agent.skip_epochs(to_step)  # a replay from a later step: no burst of past epochs
        if scope == "state":
            now = world_time(self._step)
            for agent in self._agents:
                agent.simulator.place(RouteMotion(now))
                if agent.driving is not None:
                    agent.driving.stop()
        now = world_time(self._step)
        if scope == "all":
            hub.new_episode(now, replay_of)
            self._world_changes().as_launched()
            self._apply_world(now, WORLD)
        hub.latest = agent_states(self._step, now, self._states(self._step, now, {}, count=False))
        # The Vehicle Bridges hear of it before the answer: the state now, then a barrier.
        for agent in self._agents:
            driving = agent.driving
            if driving is not None and driving.bridge.connected:
                driving.bridge.report(self._vehicle_report(agent, self._step, now, reset=scope))
                driving.bridge.barrier(self._step, now + agent.clock_lead_s)

    def _agent(self, name: Any) -> _Agent:
        for agent in self._agents:
            if agent.spec.agent == name:
                return agent
        objects = list(self._world.objects) if self._world is not None else []
        raise UnknownAgent(f"no entity {name!r}; the agents are {', '.join(self.agents) or 'none'}, the "
                           f"objects {', '.join(objects) or 'none'}")

    # -- entities: the agents and the spawned objects (control channel) ----------------------

    @property
    def entities(self) -> list[str]:
        with self._world_lock:
            return self.agents + list(self._world_changes().objects)

    def spawnables(self) -> list[dict[str, Any]]:
        return WorldChanges.spawnables()

    def spawn(self, name: Any, uri: Any, position: Any, orientation: Any, allow_renaming: Any = False
              ) -> EntityState:
        """An object from the catalogue, standing on the ground at (x, y), seen from the next render."""
        if not isinstance(allow_renaming, bool):
            raise ValueError(f"allow_renaming must be true or false, got {allow_renaming!r}")
        with self._between_steps():
            placed = self._world_changes().spawn(name, uri, position, orientation, allow_renaming)
            self._apply_world(world_time(self._step), (OBJECTS,))
            self._log(f"ACRES_FAKE_GAME_SPAWNED name={placed.name} uri={placed.kind.uri} "
                      f"x={placed.x:.3f} y={placed.y:.3f} z={placed.z:.3f} yaw={placed.yaw:.4f}")
        return self.entity_state(placed.name)

    def delete(self, name: Any) -> None:
        with self._between_steps():
            self._world_changes().delete(name)
            self._apply_world(world_time(self._step), (OBJECTS,))
            self._log(f"ACRES_FAKE_GAME_DELETED name={name}")

    def set_conditions(self, values: Any) -> dict[str, Any]:
        with self._between_steps():
            t = world_time(self._step)
            conditions = self._world_changes().set_conditions(values)
            self._apply_world(t, (CONDITIONS,))
            return conditions.message(header(t))

    def set_shift(self, agent: Any, values: Any) -> dict[str, Any]:
        with self._between_steps():
            shift = self._world_changes().set_shift(agent, values)
            self._apply_world(world_time(self._step), (SHIFTS,))
            return shift.message(agent)

    def _world_changes(self) -> WorldChanges:
        if self._world is None:
            raise RuntimeError("the session has not started")
        return self._world

    def _apply_world(self, t: float, changed: tuple[Topic, ...]) -> None:
        """(world lock held, no render in flight) The agents' sensors and vehicles see the world as
        it now is; the changed messages go to the listeners and the log."""
        world = self._world_changes()
        for agent in self._agents:
            simulator = agent.simulator
            simulator.scene = world.scene
            simulator.conditions = world.conditions
            simulator.shift = world.shifts[agent.spec.agent]
            if agent.driving is not None:
                agent.driving.set_shift(simulator.shift)
            agent.renders.forget_cache()
        self._publish_world(t, changed)

    def _publish_world(self, t: float, changed: tuple[Topic, ...]) -> None:
        world = self._world_changes()
        for topic in changed:
            self._hub.set_latched(topic, world.message(topic, header(t)))

    def entity_state(self, name: Any) -> EntityState:
        placed = self._world_changes().objects.get(name) if isinstance(name, str) else None
        if placed is not None:
            with self._world_lock:
                step = self._step
            return EntityState(agent=placed.name, step=step, time_s=world_time(step),
                               position=(placed.x, placed.y, placed.z),
                               orientation=placed.quaternion,
                               linear_velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0),
                               linear_acceleration=(0.0, 0.0, 0.0), held=True)
        agent = self._agent(name)
        with self._world_lock:  # not in the middle of a step
            step = self._step
            t = world_time(step)
            simulator = agent.simulator
            held = isinstance(simulator.motion, HeldMotion)
            kin = simulator.kinematics(t)
        rotation = kin.rotation
        return EntityState(
            agent=agent.spec.agent, step=step, time_s=t,
            position=float_triple(kin.position),
            orientation=tuple(float(v) for v in kin.quaternion),  # type: ignore[arg-type]
            linear_velocity=float_triple(rotation @ kin.velocity_body),
            angular_velocity=float_triple(rotation @ kin.angular_rate_body),
            linear_acceleration=float_triple(rotation @ kin.acceleration_body),
            held=held,
        )

    def set_entity_state(self, name: Any, position: Any, orientation: Any,
                         linear_velocity: Any = (0.0, 0.0, 0.0),
                         angular_velocity: Any = (0.0, 0.0, 0.0)) -> EntityState:
        """Place an agent: it holds this pose (moving on with the given world-frame twist) from the
        current world time until a state reset. Move an object: it stands on the ground there (a
        twist is refused: objects do not move by themselves)."""
        if isinstance(name, str) and name in self._world_changes().objects:
            twist = finite_vector("linear_velocity", linear_velocity, 3) + finite_vector(
                "angular_velocity", angular_velocity, 3)
            if any(twist):
                raise InvalidPose(f"{name} is an object: it stands still (give a zero twist)")
            with self._between_steps():
                self._world_changes().move(name, position, orientation)
                self._apply_world(world_time(self._step), (OBJECTS,))
            return self.entity_state(name)
        agent = self._agent(name)
        position = finite_vector("position", position, 3)
        velocity = finite_vector("linear_velocity", linear_velocity, 3)
        spin = finite_vector("angular_velocity", angular_velocity, 3)
        if max(abs(v) for v in position) > WORLD_HALF_EXTENT_M:
            raise InvalidPose(f"position {position} is off the world (|x|, |y|, |z| at most "
                              f"{WORLD_HALF_EXTENT_M:.0f} m)")
        quaternion = finite_vector("orientation", orientation, 4)
        if math.hypot(*quaternion) < 1e-6:
            raise InvalidPose(f"orientation {quaternion} is no rotation (a zero quaternion)")
        rotation = quaternion_to_matrix(quaternion)
        with self._between_steps():
            agent.simulator.place(HeldMotion(world_time(self._step), position, rotation, velocity, spin))
        return self.entity_state(name)

    @contextmanager
    def _between_steps(self) -> Iterator[None]:
        """Hold the world between two steps with no render in flight (control changes go here)."""
        with self._request_lock:
            with self._state:
                if self._stopping or self._finished.is_set():
                    raise RuntimeError("the session has ended")
            with self._world_lock:
                self._wait_renders()
                yield
                with self._state:
                    self._anchor = None  # real-time pacing counts from here

    def pause(self) -> None:
        with self._state:
            self._paused = True
            self._anchor = None

    def play(self) -> None:
        with self._state:
            self._paused = False
            self._anchor = None
            self._state.notify_all()

    def status(self) -> dict[str, Any]:
        with self._state:
            paused = self._paused
        return {
            "step": self._step,
            "time_s": world_time(self._step),
            "paused": paused,
            "lockstep": self.config.lockstep,
            "realtime_factor": self.config.realtime_factor,
            "flavor": self.config.flavor,
            "agents": [
                {"agent": a.spec.agent, "vehicle": a.spec.vehicle, "port": a.stream.port,
                 "connected": a.stream.connected,
                 "vehicle_port": a.driving.bridge.port if a.driving is not None else None,
                 "driven": a.driving is not None and a.driving.driven}
                for a in self._agents
            ],
        }

    # -- the episode (control channel) --------------------------------------------------------

    def watch(self, listener: EpisodeListener) -> None:
        """listener gets the episode, the agents, the recording and every step's agent states."""
        with self._world_lock:  # its first states are those of the step the world is at
            self._hub.add_listener(listener)

    def unwatch(self, listener: EpisodeListener) -> None:
        self._hub.remove_listener(listener)

    def start_recording(self, path: Any) -> dict[str, Any]:
        path = _file_name(path)
        with self._between_steps():
            return self._hub.start_recording(path, world_time(self._step))

    def stop_recording(self) -> dict[str, Any]:
        with self._between_steps():
            return self._hub.stop_recording()

    def start_replay(self, path: Any) -> dict[str, Any]:
        """Replay an episode log from its first step: the world goes to that step as at a fresh
        start there (sensor epochs and the INS error process from time 0, as a reset ALL), the
        logged agents follow their states step by step. Refused for agents this session lacks."""
        log = self._load_replay(_file_name(path))  # read before holding the world: it takes a moment
        with self._between_steps():
            self._begin_replay(log)
            return self._hub.replay_status(world_time(self._step))

    def stop_replay(self) -> dict[str, Any]:
        with self._between_steps():
            if self._hub.replay is None:
                raise ValueError("not replaying")
            self._end_replay("stopped")
            return self._hub.replay_status(world_time(self._step))

    def episode_status(self) -> dict[str, Any]:
        with self._world_lock:
            t = world_time(self._step)
            return {"episode_id": self._hub.episode.get("episode_id", ""),
                    "recording": self._hub.recording_status(), "replay": self._hub.replay_status(t)}

    def _load_replay(self, path: str) -> Replay:
        log = read_episode(path)  # EpisodeLogError says what is wrong with the file
        unknown = [name for name in log.agent_names if name not in self.agents]
        if unknown:
            raise ValueError(f"{path}: agents {', '.join(unknown)} are not in this session "
                             f"(it has {', '.join(self.agents)})")
        return Replay.of(log)

    def _begin_replay(self, replay: Replay) -> None:
        """(world lock held) The world at the log's first step, the logged agents on its states."""
        first = replay.first_step
        self._reset_locked("all", to_step=first, replay_of=str(replay.log.path))
        t = world_time(first)
        states = replay.by_step[first]
        for agent in self._agents:
            state = states.get(agent.spec.agent)
            if state is not None:
                agent.replay_track = DrivenMotion(knot_of(state, t))
                agent.simulator.place(agent.replay_track)
        self._hub.replay = replay
        self._replay_world(replay, t)
        self._hub.latest = agent_states(first, t, self._states(first, t, states))
        self._log(f"ACRES_FAKE_GAME_REPLAY path={replay.log.path} steps={first}..{replay.last_step}")
        self._hub.replay_event(t)

    def _end_replay(self, reason: str) -> None:
        """(world lock held) The agents stay where the replay left them, simulated from there."""
        replay = self._hub.replay
        if replay is None:
            return
        t = world_time(self._step)
        for agent in self._agents:
            if agent.replay_track is not None:
                self._hold(agent, t)
                agent.replay_track = None
        self._hub.replay = None
        self._log(f"ACRES_FAKE_GAME_REPLAY_STOPPED path={replay.log.path} reason={reason}")
        self._hub.replay_event(t)

    def _replay_world(self, replay: Replay, t: float) -> None:
        """(world lock held) The logged objects, shifts and conditions due by world time t."""
        world = self._world_changes()
        due = round(t * 1e9)
        changed: list[Topic] = []
        while replay.world_next < len(replay.log.world) and replay.log.world[replay.world_next][0] <= due:
            _ns, topic, message = replay.log.world[replay.world_next]
            replay.world_next += 1
            world.apply_logged(topic, message)
            if topic not in changed:
                changed.append(topic)
        if changed:
            self._apply_world(t, tuple(changed))

    def _hold(self, agent: _Agent, t: float) -> None:
        pose = agent.simulator.body_pose(t)
        agent.simulator.place(HeldMotion(t, (float(pose.position[0]), float(pose.position[1]),
                                             float(pose.position[2])), pose.rotation))

    def _replay_step(self, step: int, t: float) -> dict[str, dict[str, Any]]:
        """(world lock held) The logged states of this step, their knots added to the tracks the
        sensors follow; past the log's end the agents hold its last state."""
        replay = self._hub.replay
        if replay is None:
            return {}
        self._replay_world(replay, t)
        logged = replay.by_step.get(step)
        if logged is None:
            last = replay.by_step[replay.last_step]
            if not replay.ended:
                replay.ended = True
                for agent in self._agents:
                    if agent.replay_track is not None:
                        self._hold(agent, world_time(replay.last_step))
                self._log(f"ACRES_FAKE_GAME_REPLAY_ENDED path={replay.log.path} step={replay.last_step}")
                self._hub.replay_event(t)
            return {name: _standing(state) for name, state in last.items()}
        for agent in self._agents:
            state = logged.get(agent.spec.agent)
            if state is not None and agent.replay_track is not None:
                agent.replay_track.add(knot_of(state, t))
        return logged

    def _states(self, step: int, t: float, replayed: dict[str, dict[str, Any]],
                count: bool = True) -> list[dict[str, Any]]:
        """Every agent's AgentState after this step: a replayed one as logged; count: add the
        step's energy to the ledgers (not for a state read again)."""
        states = []
        for agent in self._agents:
            name = agent.spec.agent
            if name in replayed:
                logged = replayed[name]
                states.append(logged)
                if count:
                    self._farm.observe(agent.simulator.scene, name, agent.spec.vehicle,
                                       VEHICLE_PARAMS[agent.spec.vehicle], knot_of(logged, t),
                                       logged["steer_rad"], agent.simulator.conditions.wetness,
                                       logged["surface_class"], logged["field_id"])
                continue
            simulator = agent.simulator
            params = VEHICLE_PARAMS[agent.spec.vehicle]
            kin = simulator.kinematics(t)
            knot = simulator.track_knot(t, kin)
            surfaces, fields = wheel_ground(simulator.scene, params, knot)
            driving = agent.driving
            model = driving.model if driving is not None and driving.driven else None
            if model is not None:
                control, steer = CONTROL_DRIVEN, model.state.steer_rad
            else:
                control = CONTROL_PLACED if isinstance(simulator.motion, HeldMotion) else CONTROL_ROUTE
                speed = knot.speed
                steer = math.atan(params.wheelbase_m * knot.yaw_rate / speed) if abs(speed) > 0.1 else 0.0
            if count and step > 0:
                agent.ledger.add(params, knot.speed, knot.yaw_rate, simulator.grade(knot.x, knot.y, knot.yaw),
                                 surfaces, 1.0 / PHYSICS_HZ, model)
            state = agent_state(name, kin, knot, steer, surfaces, fields, agent.ledger, control)
            states.append(state)
            if count:
                self._farm.observe(simulator.scene, name, agent.spec.vehicle, params, knot,
                                   state["steer_rad"], simulator.conditions.wetness, surfaces, fields)
        return states

    # -- the loop -----------------------------------------------------------------------------

    def _duration_reached(self) -> bool:
        d = self.config.duration_s
        return d > 0 and world_time(self._step) >= d

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 -- end the run with a clear line, not a dead thread
            self._log(f"ACRES_FAKE_GAME_FAILED error={exc!r}")
            self._finished.set()

    def _loop(self) -> None:
        rate = PHYSICS_HZ * self.config.realtime_factor  # steps per wall-clock second; 0 = no pacing
        while True:
            with self._state:
                while self._paused and not self._stopping:
                    self._state.wait()
                if self._stopping:
                    return
                if rate > 0:
                    now = time.monotonic()
                    if self._anchor is None:
                        self._anchor = (now, self._step)
                    target = self._anchor[0] + (self._step + 1 - self._anchor[1]) / rate
                    if target - now > 0:
                        # Sleep on the condition so that stop and pause wake us at once.
                        self._state.wait(target - now)
                        continue
                    if now - target > _MAX_LAG_S:
                        self._anchor = (now, self._step)  # far behind: run on from here
            with self._world_lock:
                with self._state:
                    if self._paused or self._stopping:
                        continue
                self._advance()
                if self._duration_reached():
                    self._finished.set()
                    with self._state:
                        self._paused = True
            if self._render_error is not None:
                self._finished.set()
                return

    def _advance(self) -> None:
        """One physics step for every agent (caller holds the world lock)."""
        step = self._step + 1
        t = world_time(step)
        replayed = self._replay_step(step, t)
        for agent in self._agents:
            self._agent_step(agent, step, t, agent.spec.agent in replayed)
        self._step = step
        states = self._states(step, t, replayed)
        self._hub.step(step, t, states, *self._farm.take(header(t)))

    def _agent_step(self, agent: _Agent, step: int, t: float, replayed: bool) -> None:
        driving = agent.driving
        if driving is not None and not replayed:
            with self._state:
                lockstep = self._paused  # held or stepping: the bridge does not brake a slow client
            driving.step(agent.simulator, t, lockstep)
        stream = agent.stream
        stream.publish(FrameType.CLOCK, t, encode_clock(t + agent.clock_lead_s))
        if agent.ins is not None:
            for _ in range(agent.ins.due(step)):
                # Computed with or without a client: the INS error model is a process in time,
                # and the same seed must give the same epochs whenever a client connects.
                values = agent.simulator.ins_values(t)
                stream.publish(FrameType.INS, t, encode_ins(values))
        assert self._pool is not None
        for schedule, kind, config in ((agent.lidar, FrameType.LIDAR, agent.hello.lidar),
                                       (agent.camera, FrameType.CAMERA, agent.hello.camera)):
            if schedule is not None:
                for _ in range(schedule.due(step)):
                    agent.renders.submit(self._pool, kind, t, config.payload_size, lambda: self._stopping)
        if driving is not None and driving.bridge.connected:
            driving.bridge.report(self._vehicle_report(agent, step, t))

    def _state_now(self, agent: _Agent) -> VehicleStepReport:
        """The report of the world as it stands, for a client that connects (a held world sends
        none until its next step)."""
        with self._world_lock:
            return self._vehicle_report(agent, self._step, world_time(self._step))

    @staticmethod
    def _vehicle_report(agent: _Agent, step: int, t: float, reset: str | None = None) -> VehicleStepReport:
        assert agent.driving is not None
        return agent.driving.report(agent.simulator, step, t, t + agent.clock_lead_s, reset)

    # -- renders ------------------------------------------------------------------------------

    @staticmethod
    def _renderer(simulator: Any) -> Any:
        def render(kind: FrameType, t: float) -> bytes:
            if kind == FrameType.LIDAR:
                return encode_lidar(simulator.lidar_points(t))
            return encode_camera(simulator.camera_image(t))
        return render

    def _render_failed(self, agent: str) -> Any:
        def failed(kind: FrameType, exc: BaseException) -> None:
            self._render_error = exc
            self._log(f"ACRES_FAKE_GAME_RENDER_FAILED agent={agent} type={kind.name.lower()} error={exc!r}")
        return failed

    def _wait_renders(self) -> None:
        for agent in self._agents:
            agent.renders.wait()


def _file_name(path: Any) -> str:
    if not isinstance(path, str) or not path:
        raise ValueError(f"path must be a file name, got {path!r}")
    return path


def _standing(state: dict[str, Any]) -> dict[str, Any]:
    """A logged state held after the log's end: where it was, not moving."""
    zero = {"x": 0.0, "y": 0.0, "z": 0.0}
    return {**state, "twist": {"linear": zero, "angular": zero}, "speed_mps": 0.0, "yaw_rate_rad_s": 0.0}
