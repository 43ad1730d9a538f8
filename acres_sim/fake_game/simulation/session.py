"""The fake game's simulation loop over all agents, ROS-free.

Time base: world_clock.py. Every step queues, on each agent's stream, one Clock frame and then the
INS epochs that fell due; LiDAR and camera frames are rendered on a worker pool and queued when
their render is done, after the clock and INS frames of their step (and usually of later steps).

Lockstep. The world starts held; only the Hello goes out until a step request. step(N) runs N
steps, waits until every render those steps started was queued, queues one Barrier on each
connected stream (payload: the world step reached; stamp: the world time of that step) and
returns. With the protocol page's three requests of 12 steps and the Polaris this gives clock 12, ins 10,
lidar 1, camera 1 and a barrier at sequences 25, 50 and 75 (Hello is sequence 0).

Control. reset() takes the world clock back to step 0 (scope "time": every agent goes on from where
it is), every agent back to the start of its route (scope "state"), or both, as launched ("all":
the stream then repeats a fresh start's frames); "spawned" is the owners' alone. A reset, like
every request that changes the world (between_steps), waits for the renders in flight, so that no
frame mixes the world before and after.

Owners. Everything else that happens at a step or a reset (the replay player, the recorder, the
world's changes, the agent states) is a StepOwner (step_owner.py) that the session calls at its
points; the session knows none of them.

Driving. An agent with a Vehicle Bridge drives as driving.py says (AgentDriving: every agent's
vehicle model is stepped before the step's frames); after the frames each step's report goes to the
bridge; in lockstep the bridges get their barrier after the streams'. Renders: render_pool.py.

Vehicle time. Each agent's Clock payload is its own physics time: the world time plus a constant
lead (session_agent.py: VEHICLE_CLOCK_LEAD_S + 100 s x agent index), so the offset (world minus
vehicle time) is non-zero and differs between agents, as in the game where every pawn has its own
physics clock.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from acres_sim.channels.control import NotPaused, SessionEnded, reset_scope, reset_seed, step_count
from acres_sim.fake_game.simulation.driving import AgentDriving
from acres_sim.fake_game.simulation.render_pool import RenderPool
from acres_sim.fake_game.simulation.session_agent import SessionAgent, open_agent
from acres_sim.fake_game.simulation.session_config import SessionConfig
from acres_sim.fake_game.simulation.sinks import LogFn, OpenStream, OpenVehicle, stdout_log
from acres_sim.fake_game.simulation.step_owner import ResetContext, StepContext, StepOwner
from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS
from acres_sim.fake_game.simulation.world_clock import world_time
from acres_sim.fake_game.world.motion import RouteMotion
from acres_sim.stream.protocol import FrameType, encode_barrier, encode_clock, encode_ins
from acres_sim.stream.timing import PHYSICS_HZ

if TYPE_CHECKING:  # the world's numpy work is imported only when a session opens
    from acres_sim.fake_game.world.scene import Scene

_MAX_LAG_S = 1.0  # real-time pacing: further behind than this, give up catching up


class Session:
    """All agents of one fake-game run: streams, the world loop, lockstep requests.

    open() builds the agents (those whose stream opened) and opens their streams, add_owner() adds
    the features that act at the steps, run() starts the world (held in lockstep); step(), reset(),
    pause(), play() and status() are what the control channel calls; stop() ends everything.
    """

    def __init__(self, config: SessionConfig, open_stream: OpenStream, log: LogFn = stdout_log,
                 open_vehicle: OpenVehicle | None = None):
        self.config = config
        self._open_stream = open_stream
        self._open_vehicle = open_vehicle
        self.log = log
        self.agents: list[SessionAgent] = []
        self.scene: Scene | None = None  # the launched world's scene, once open
        self._owners: list[StepOwner] = []
        self._closers: list[Any] = []  # owners with a close(), called at stop
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

    # -- lifecycle ----------------------------------------------------------------------------

    def open(self) -> None:
        try:
            self._open()
        except BaseException:
            self.stop()  # close the streams that did open
            raise

    def _open(self) -> None:
        # Imported here so that the transport and its tests load without the world's numpy work.
        from acres_sim.fake_game.world.scene import default_scene

        cfg = self.config
        self.scene = scene = default_scene(terrain=None) if cfg.flat_ground else default_scene()
        for index, spec in enumerate(cfg.agents):
            agent = open_agent(index, spec, cfg, scene, self._open_stream, lambda: world_time(self._step),
                               self._render_failed(spec.agent))
            if agent is None:
                continue  # the session goes on without this stream
            if spec.vehicle_port is not None and self._open_vehicle is not None:
                bridge = self._open_vehicle(spec.agent, spec.vehicle, spec.vehicle_port,
                                            VEHICLE_PARAMS[spec.vehicle], lambda a=agent: self._state_now(a))
                if bridge is not None:
                    agent.driving = AgentDriving(VEHICLE_PARAMS[spec.vehicle], bridge)
            agent.restart_schedules()
            self.agents.append(agent)
        # In real time one render thread per agent: two renders side by side cost each other 45 %
        # more CPU (shared caches and memory bandwidth) for 10 % less wall time. Faster than real
        # time (lockstep, unpaced) wall time is what counts: two per agent step 30-40 % faster.
        real_time = not cfg.lockstep and 0.0 < cfg.realtime_factor <= 1.0
        workers = cfg.render_workers or min(len(self.agents) * (1 if real_time else 2), os.cpu_count() or 1)
        self._pool = RenderPool(max(1, workers))

    def add_owner(self, owner: StepOwner) -> None:
        """Before run(): owners are called in the order they were added."""
        assert self._thread is None, "owners join before the world runs"
        self._owners.append(owner)
        if callable(getattr(owner, "close", None)):
            self._closers.append(owner)

    def run(self) -> None:
        self._thread = threading.Thread(target=self._run, name="simulation", daemon=True)
        self._thread.start()

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
        for agent in self.agents:
            agent.stream.stop()
            if agent.driving is not None:
                agent.driving.bridge.stop()
        for owner in self._closers:
            owner.close()  # a recording ends with its summary
        self._finished.set()

    # -- what owners use (step_owner.WorldLoop) -------------------------------------------------

    @property
    def step_count(self) -> int:
        return self._step

    @property
    def time_s(self) -> float:
        return world_time(self._step)

    @contextmanager
    def between_steps(self) -> Iterator[None]:
        """Hold the world between two steps with no render in flight (control changes go here)."""
        with self._request_lock:
            with self._state:
                if self._stopping or self._finished.is_set():
                    raise SessionEnded("the session has ended")
            with self._world_lock:
                self._wait_renders()
                yield
                with self._state:
                    self._anchor = None  # real-time pacing counts from here

    def holding(self) -> Any:
        return self._world_lock

    # -- requests (control channel) -----------------------------------------------------------

    def step(self, steps: Any, paused_only: bool = False,
             on_start: Callable[[int], None] | None = None) -> tuple[int, float]:
        """Hold the world, advance it by steps, wait for the renders, queue the barriers.
        paused_only: refuse (NotPaused) when the world is playing instead of holding it; on_start:
        told the world step the request starts from, once the world is held for it."""
        steps = step_count(steps)
        with self._request_lock:
            with self._state:
                if self._stopping or self._finished.is_set():
                    raise SessionEnded("the session has ended")
                if paused_only and not self._paused:
                    raise NotPaused("the world is playing: pause it before stepping")
                self._paused = True  # a step request leaves the world held, as the game does
                self._anchor = None
            with self._world_lock:
                if on_start is not None:
                    on_start(self._step)
                for _ in range(steps):
                    if self._stopping:
                        raise SessionEnded("the session is stopping")
                    self._advance()
                    if self._duration_reached():
                        break
                self._wait_renders()
                step = self._step
                stamp = world_time(step)
                for agent in self.agents:
                    agent.stream.publish(FrameType.BARRIER, stamp, encode_barrier(step))
                    if agent.driving is not None:
                        agent.driving.bridge.barrier(step, stamp + agent.clock_lead_s)
            if self._duration_reached():
                self._finished.set()
            return step, stamp

    def reset(self, scope: Any, seed: Any = None) -> tuple[int, float]:
        """Reset the world clock ("time"), the agents' poses ("state"), both ("all") or the spawned
        objects ("spawned", the owners' alone); seed (all): every random process from it anew."""
        scope = reset_scope(scope)
        seed = reset_seed(scope, seed)
        with self.between_steps():
            self.reset_held(scope, seed=seed)
            return self._step, world_time(self._step)

    def reset_held(self, scope: str, to_step: int = 0, replay_of: str = "", seed: int | None = None) -> None:
        """(between_steps) The reset itself: the owners before and after, the clock and the agents
        in between, then the Vehicle Bridges hear of it (the state now, then a barrier)."""
        clock_back = scope in ("time", "all")
        target = to_step if clock_back else self._step
        before = ResetContext(scope, self._step, target, world_time(target), replay_of, seed)
        for owner in self._owners:
            owner.before_reset(before)
        if clock_back:
            dt = world_time(to_step) - world_time(self._step)
            self._step = to_step
            for agent in self.agents:
                if scope == "all":
                    if seed is not None:
                        agent.simulator.seed = seed
                    agent.simulator.restart()
                    if agent.driving is not None:
                        agent.driving.stop()
                else:
                    agent.simulator.shift_time(dt)
                    if agent.driving is not None:
                        agent.driving.follow_shifted_track(agent.simulator.motion)
                agent.restart_schedules()
                agent.skip_epochs(to_step)  # a replay from a later step: no burst of past epochs
        if scope == "state":
            now = world_time(self._step)
            for agent in self.agents:
                agent.simulator.place(RouteMotion(now))
                if agent.driving is not None:
                    agent.driving.stop()
        now = world_time(self._step)
        after = ResetContext(scope, before.from_step, self._step, now, replay_of, seed)
        for owner in self._owners:
            owner.after_reset(after)
        for agent in self.agents:
            driving = agent.driving
            if driving is not None and driving.bridge.connected:
                driving.bridge.report(agent.vehicle_report(self._step, now, reset=scope))
                driving.bridge.barrier(self._step, now + agent.clock_lead_s)

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
            "agents": [a.status() for a in self.agents],
        }

    # -- the loop -----------------------------------------------------------------------------

    def _duration_reached(self) -> bool:
        d = self.config.duration_s
        return d > 0 and world_time(self._step) >= d

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 -- end the run with a clear line, not a dead thread
            self.log(f"ACRES_FAKE_GAME_FAILED error={exc!r}")
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
        step = StepContext(self._step + 1, world_time(self._step + 1))
        for owner in self._owners:
            owner.begin_step(step)
        with self._state:
            lockstep = self._paused  # held or stepping: the bridge does not brake a slow client
        for agent in self.agents:
            if agent.driving is not None and agent.name not in step.replayed:
                agent.driving.step(agent.simulator, step.t, lockstep)
        for owner in self._owners:
            owner.moved(step)
        for agent in self.agents:
            self._agent_frames(agent, step.step, step.t)
        self._step = step.step
        for owner in self._owners:
            owner.end_step(step)

    def _agent_frames(self, agent: SessionAgent, step: int, t: float) -> None:
        stream = agent.stream
        stream.publish(FrameType.CLOCK, t, encode_clock(t + agent.clock_lead_s))
        if agent.ins is not None:
            for _ in range(agent.ins.due(step)):
                # Without a client only the INS error model goes on (a process in time: the same
                # seed gives the same epochs whenever a client connects); the truth, the UTM and
                # the frame are made for a client alone.
                if stream.connected:
                    stream.publish(FrameType.INS, t, encode_ins(agent.simulator.ins_values(t)))
                else:
                    agent.simulator.skip_ins(t)
        assert self._pool is not None
        for schedule, kind, config in ((agent.lidar, FrameType.LIDAR, agent.hello.lidar),
                                       (agent.camera, FrameType.CAMERA, agent.hello.camera)):
            if schedule is not None:
                for _ in range(schedule.due(step)):
                    agent.renders.submit(self._pool, kind, t, config.payload_size, lambda: self._stopping)
        driving = agent.driving
        if driving is not None and driving.bridge.connected:
            driving.bridge.report(agent.vehicle_report(step, t))

    def _state_now(self, agent: SessionAgent) -> Any:
        """The report of the world as it stands, for a client that connects (a held world sends
        none until its next step)."""
        with self._world_lock:
            return agent.vehicle_report(self._step, world_time(self._step))

    # -- renders ------------------------------------------------------------------------------

    def _render_failed(self, agent: str) -> Any:
        def failed(kind: FrameType, exc: BaseException) -> None:
            self._render_error = exc
            self.log(f"ACRES_FAKE_GAME_RENDER_FAILED agent={agent} type={kind.name.lower()} error={exc!r}")
        return failed

    def _wait_renders(self) -> None:
        for agent in self.agents:
            agent.renders.wait()
