"""One agent of a fake-game session as the session and its owners hold it (ROS-free): its Hello,
simulator, stream, renders, sensor schedules, clock lead and, with a Vehicle Bridge, its driving."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acres_sim.channels.vehicle import VehicleReport
from acres_sim.fake_game.simulation.driving import AgentDriving
from acres_sim.fake_game.simulation.render_pool import AgentRenders, frame_renderer
from acres_sim.fake_game.simulation.session_config import AgentSpec, SessionConfig
from acres_sim.fake_game.simulation.sinks import FrameSink, OpenStream
from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS, VehicleParams
from acres_sim.fake_game.simulation.world_clock import SensorSchedule
from acres_sim.fake_game.world.motion import DrivenMotion
from acres_sim.stream.hello import Hello

if TYPE_CHECKING:  # the world's numpy work is imported only when a session opens
    from acres_sim.fake_game.simulation.simulation import AgentSimulator
    from acres_sim.fake_game.world.scene import Scene

VEHICLE_CLOCK_LEAD_S = 1234.5  # vehicle time minus world time of agent 0
AGENT_SPACING_M = 40.0  # distance along the loop between the start places of the agents


@dataclass
class SessionAgent:
    index: int
    spec: AgentSpec
    hello: Hello
    simulator: AgentSimulator
    stream: FrameSink
    renders: AgentRenders
    clock_lead_s: float  # its vehicle time minus world time
    camera_on: bool
    ins: SensorSchedule | None = None
    lidar: SensorSchedule | None = None
    camera: SensorSchedule | None = None
    driving: AgentDriving | None = None  # with a Vehicle Bridge
    replay_track: DrivenMotion | None = None  # while it follows an episode log

    @property
    def name(self) -> str:
        return self.spec.agent

    @property
    def params(self) -> VehicleParams:
        return VEHICLE_PARAMS[self.spec.vehicle]

    def restart_schedules(self) -> None:
        """Sensor epochs from world time 0: at the start and after a TIME reset."""
        hello = self.hello
        self.ins = SensorSchedule(hello.ins.hz) if hello.ins.enabled else None
        self.lidar = SensorSchedule(hello.lidar.hz) if hello.lidar.enabled else None
        self.camera = SensorSchedule(hello.camera.hz) if self.camera_on else None

    def skip_epochs(self, step: int) -> None:
        """The epochs due up to this step are past: the world starts there."""
        for schedule in (self.ins, self.lidar, self.camera):
            if schedule is not None:
                schedule.due(step)

    def status(self) -> dict[str, Any]:
        """What the control channel's status says of the agent."""
        driving = self.driving
        return {"agent": self.name, "vehicle": self.spec.vehicle, "port": self.stream.port,
                "connected": self.stream.connected,
                "vehicle_port": driving.bridge.port if driving is not None else None,
                "driven": driving is not None and driving.driven}

    def vehicle_report(self, step: int, t: float, reset: str | None = None) -> VehicleReport:
        assert self.driving is not None
        return self.driving.report(self.simulator, step, t, t + self.clock_lead_s, reset)


def open_agent(index: int, spec: AgentSpec, cfg: SessionConfig, scene: Scene, open_stream: OpenStream,
               world_time_now: Callable[[], float], on_render_failure: Any) -> SessionAgent | None:
    """The agent's simulator, then its stream (None: its port could not be opened)."""
    from acres_sim.fake_game.simulation.simulation import AgentSimulator
    from acres_sim.fake_game.simulation.vehicles import vehicle_hello

    hello = vehicle_hello(spec.vehicle, agent=spec.agent, georeferenced=cfg.georeferenced, flavor=cfg.flavor,
                          sensors=cfg.sensors)
    # The simulator exists before the port opens: a client is accepted only once the agent's
    # sensors are set up (the protocol page's "the game accepts a client only when the sensor
    # recorder knows its layout"). Agents differ by name inside the simulator's seeding, so every
    # agent gets the user's seed; they start at different places.
    # Cached: a few sweeps, cast by the arrays in less time than the compiled caster takes to load.
    simulator = AgentSimulator(hello, seed=cfg.seed, noise=cfg.noise, start_offset_m=AGENT_SPACING_M * index,
                               scene=scene, compiled_lidar=not cfg.cached)
    simulator.prepare()  # the camera's ray table takes over a second: not at the first client
    stream = open_stream(spec.agent, spec.port, hello, world_time_now)
    if stream is None:
        return None
    return SessionAgent(
        index=index, spec=spec, hello=hello, simulator=simulator, stream=stream,
        renders=AgentRenders(stream, frame_renderer(simulator), cached=cfg.cached,
                             on_failure=on_render_failure),
        clock_lead_s=VEHICLE_CLOCK_LEAD_S + 100.0 * index,
        camera_on=hello.camera.enabled and cfg.flavor != "core")
