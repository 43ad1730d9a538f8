"""One agent of a fake-game session as the session and its owners hold it (ROS-free): its Hello,
simulator, stream, renders, sensor schedules, clock lead and, with a Vehicle Bridge, its driving."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acres_sim.channels.vehicle import VehicleReport
from acres_sim.fake_game.simulation.driving import AgentDriving
from acres_sim.fake_game.simulation.render_pool import AgentRenders
from acres_sim.fake_game.simulation.session_config import AgentSpec
from acres_sim.fake_game.simulation.sinks import FrameSink
from acres_sim.fake_game.simulation.vehicle_model import VEHICLE_PARAMS, VehicleParams
from acres_sim.fake_game.simulation.world_clock import SensorSchedule
from acres_sim.fake_game.world.motion import DrivenMotion
from acres_sim.stream.hello import Hello


@dataclass
class SessionAgent:
    index: int
    spec: AgentSpec
    hello: Hello
    simulator: Any  # simulation.AgentSimulator (imported only when a session starts)
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

    def vehicle_report(self, step: int, t: float, reset: str | None = None) -> VehicleReport:
        assert self.driving is not None
        return self.driving.report(self.simulator, step, t, t + self.clock_lead_s, reset)
