"""One agent's driving in the fake world (ROS-free): its Vehicle Bridge's command, stepped through the
vehicle model at every physics step, and the report of each step.

An agent drives its route until its bridge holds a command; from then its VehicleModel is stepped
with the latest command at every physics step (zero-order hold), before that step's frames, and the
sensors follow the driven track (DrivenMotion). A STATE or ALL reset puts the vehicle back on its
route until the next command; a placement by the control channel takes over from the model.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from acres_sim.fake_game.simulation.shifts import CALIBRATED, VehicleShift
from acres_sim.channels.vehicle import GEAR_DRIVE, VehicleReport
from acres_sim.fake_game.simulation.sinks import VehicleSink
from acres_sim.fake_game.simulation.vehicle_model import (
    RELEASED,
    VehicleModel,
    VehicleParams,
    VehicleState,
)
from acres_sim.fake_game.world.motion import DriveKnot, DrivenMotion, Motion
from acres_sim.stream.timing import PHYSICS_HZ

if TYPE_CHECKING:  # the session imports the world's numpy work only when it starts
    from acres_sim.fake_game.simulation.simulation import AgentSimulator

STEP_S = 1.0 / PHYSICS_HZ


class AgentDriving:
    """The vehicle model, the driven track and the stamp of the command applied, of one agent."""

    def __init__(self, params: VehicleParams, bridge: VehicleSink):
        self.params = params
        self.bridge = bridge
        self.model: VehicleModel | None = None  # while driven by its bridge's commands
        self.track: DrivenMotion | None = None
        self.command_stamp_s: float | None = None  # of the command applied in the last step
        self.shift: VehicleShift = CALIBRATED  # its actuator part acts on the vehicle model

    def set_shift(self, shift: VehicleShift) -> None:
        self.shift = shift
        if self.model is not None:
            self._drift(self.model)

    def _drift(self, model: VehicleModel) -> None:
        shift = self.shift
        model.steering_offset_rad = shift.steering_offset_rad
        model.throttle_gain, model.brake_gain = shift.throttle_gain, shift.brake_gain

    @property
    def driven(self) -> bool:
        return self.model is not None

    def step(self, simulator: "AgentSimulator", t: float, lockstep: bool) -> None:
        """Step the vehicle to world time t under the command its bridge holds; the agent's
        simulator follows the driven track from its first command."""
        held = self.bridge.held_command(lockstep)
        if self.model is not None and simulator.motion is not self.track:
            self.model = self.track = None  # placed by the control channel: take over from there
        if self.model is None:
            if held is None:
                return  # it drives its route (or holds) until the first command
            start = simulator.track_knot(t - STEP_S)  # the state the last step left (logged so)
            self.model = VehicleModel(self.params, VehicleState(start.x, start.y, start.yaw,
                                                                speed_mps=start.speed))
            self._drift(self.model)
            self.track = DrivenMotion(start)
            simulator.place(self.track)
        model, track = self.model, self.track
        assert track is not None
        now = model.state
        state = model.step(held.command if held is not None else RELEASED, STEP_S,
                           simulator.grade(now.x, now.y, now.yaw))
        rate = state.speed_mps * math.tan(state.steer_rad) / model.params.wheelbase_m
        track.add(DriveKnot(t, state.x, state.y, state.yaw, state.speed_mps, rate))
        self.command_stamp_s = held.stamp_s if held is not None else None

    def stopped_at(self, t: float, x: float, y: float, yaw: float) -> None:
        """A collision stopped the step to world time t short: the vehicle stands at (x, y, yaw),
        at rest, its steering and gear as they are."""
        model, track = self.model, self.track
        assert model is not None and track is not None
        model.state = dataclasses.replace(model.state, x=x, y=y, yaw=yaw, speed_mps=0.0, yaw_rate=0.0)
        track.replace_latest(DriveKnot(t, x, y, yaw, 0.0, 0.0))

    def stop(self) -> None:
        """Back on the route (a STATE or ALL reset) until the next command."""
        self.model = self.track = None
        self.command_stamp_s = None
        self.bridge.forget()

    def follow_shifted_track(self, motion: Motion) -> None:
        """A TIME reset shifted the agent's motion: a driven vehicle goes on along the shifted track."""
        self.track = motion if isinstance(motion, DrivenMotion) else None

    def report(self, simulator: "AgentSimulator", step: int, t: float, vehicle_time_s: float,
               reset: str | None = None) -> VehicleReport:
        """What the Vehicle Bridge reports of this step."""
        model = self.model
        if model is not None:
            s, c = model.state, model.command
            # the steering's angle sensor drifted with it: it reads the angle less the offset
            return VehicleReport(
                step=step, time_s=t, vehicle_time_s=vehicle_time_s, driven=True,
                command_stamp_s=self.command_stamp_s, steer_rad=s.steer_rad - model.steering_offset_rad,
                steer_request_rad=c.steer_request_rad, throttle=c.throttle, brake=c.brake,
                direction=s.direction, gear=s.gear, speed_mps=s.speed_mps, yaw_rate=s.yaw_rate,
                wheel_speeds_rad_s=model.wheel_speeds(), rpm=model.rpm(), reset=reset)
        # On its route: what the chassis does there, as a model in that state would report it.
        kin = simulator.kinematics(t)
        speed, rate = float(kin.velocity_body[0]), float(kin.angular_rate_body[2])
        steer = math.atan(self.params.wheelbase_m * rate / speed) if abs(speed) > 0.1 else 0.0
        shadow = VehicleModel(self.params, VehicleState(0.0, 0.0, 0.0, speed_mps=speed, steer_rad=steer))
        return VehicleReport(
            step=step, time_s=t, vehicle_time_s=vehicle_time_s, driven=False,
            command_stamp_s=self.command_stamp_s, steer_rad=steer, steer_request_rad=steer, throttle=0.0,
            brake=0.0, direction=1, gear=GEAR_DRIVE, speed_mps=speed, yaw_rate=rate,
            wheel_speeds_rad_s=shadow.wheel_speeds(), rpm=shadow.rpm(), reset=reset)
