"""The driven vehicle of the fake world (ROS-free): what the Vehicle Bridge's commands act on.

One physics step (1/120 s) at a time, as the game's chassis: a steering actuator that follows the
requested road-wheel angle with a first-order lag and a rate limit; kinematic bicycle geometry about
the rear axle (base_footprint), so the yaw rate is v tan(delta) / wheelbase; throttle and brake
(pedals 0-1) through a powertrain with rolling resistance, drag and the terrain's grade; a change of
direction only at standstill (until then the vehicle brakes). The state is plain floats: the same
commands from the same state give the same trajectory, bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from acres_sim.channels.vehicle import GEAR_DRIVE, GEAR_PARK, GEAR_REVERSE, VehicleCommand

GRAVITY = 9.80665
STANDSTILL_MPS = 0.01  # below this a vehicle is at rest: a change of direction may happen


@dataclass(frozen=True)
class VehicleParams:
    """What a client needs to drive the vehicle, and what the model steps with."""

    wheelbase_m: float
    track_m: float
    wheel_radius_m: float
    max_steer_rad: float  # road-wheel angle, either side
    steering_ratio: float  # steering-wheel angle / road-wheel angle
    steer_rate_rad_s: float  # road-wheel angle rate limit of the actuator
    steer_time_constant_s: float  # first-order lag of the actuator
    max_speed_mps: float
    max_reverse_mps: float
    mass_kg: float
    drive_force_n: float  # at full throttle
    brake_force_n: float  # at full brake
    rolling_resistance: float  # coefficient: force = c m g against the motion
    final_drive_ratio: float  # engine revolutions per wheel revolution
    idle_rpm: float
    # The body as an upright box (what collides, acres_sim/bodies.py): length, width, height, and how far
    # it reaches behind base_footprint (the rear axle).
    length_m: float
    width_m: float
    height_m: float
    rear_overhang_m: float

    @property
    def drag_n_s2_m2(self) -> float:
        """Air and driveline drag (force / v^2): full throttle on the level holds the top speed."""
        rolling = self.rolling_resistance * self.mass_kg * GRAVITY
        return (self.drive_force_n - rolling) / self.max_speed_mps ** 2

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


# The Polaris Ranger of the drive-by-wire kit, and the Case IH Maxxum tractor (bodies: the makers'
# overall length, width and height; the Maxxum's length with its front weights).
VEHICLE_PARAMS = {
    "polaris": VehicleParams(
        wheelbase_m=2.08, track_m=1.27, wheel_radius_m=0.33, max_steer_rad=math.radians(34.0),
        steering_ratio=15.0, steer_rate_rad_s=math.radians(40.0), steer_time_constant_s=0.08,
        max_speed_mps=11.0, max_reverse_mps=4.0, mass_kg=900.0, drive_force_n=2700.0,
        brake_force_n=7200.0, rolling_resistance=0.03, final_drive_ratio=12.0, idle_rpm=900.0,
        length_m=3.05, width_m=1.59, height_m=1.98, rear_overhang_m=0.45),
    "maxxum": VehicleParams(
        wheelbase_m=2.69, track_m=1.90, wheel_radius_m=0.80, max_steer_rad=math.radians(50.0),
        steering_ratio=20.0, steer_rate_rad_s=math.radians(30.0), steer_time_constant_s=0.15,
        max_speed_mps=11.1, max_reverse_mps=5.0, mass_kg=6500.0, drive_force_n=20000.0,
        brake_force_n=39000.0, rolling_resistance=0.04, final_drive_ratio=40.0, idle_rpm=850.0,
        length_m=4.77, width_m=2.47, height_m=2.95, rear_overhang_m=0.90),
}


RELEASED = VehicleCommand(brake=1.0)  # what a vehicle without a live client gets: brakes on


@dataclass(frozen=True)
class VehicleState:
    """The chassis after a step: planar pose of base_footprint (rear axle), signed speed along the
    heading, the actuators as they are, the gear engaged."""

    x: float
    y: float
    yaw: float
    speed_mps: float = 0.0
    steer_rad: float = 0.0
    gear: str = GEAR_DRIVE
    yaw_rate: float = 0.0

    @property
    def direction(self) -> int:
        return -1 if self.gear == GEAR_REVERSE else 1


def _clamp(value: float, low: float, high: float) -> float:
    return low if value < low else high if value > high else value


class VehicleModel:
    """Steps one vehicle's chassis; `state` is the latest, `command` the one it applied."""

    def __init__(self, params: VehicleParams, state: VehicleState):
        self.params = params
        self.state = state
        self.command = RELEASED
        # A drifted vehicle (a hardware shift): the steering holds this angle at a zero request, and
        # the drive and the brakes give these shares of their calibrated force.
        self.steering_offset_rad = 0.0
        self.throttle_gain = 1.0
        self.brake_gain = 1.0

    def step(self, command: VehicleCommand, dt: float, grade: float = 0.0) -> VehicleState:
        """One physics step of dt seconds under `command`; `grade`: the terrain's slope along the
        heading (rise over run, + uphill)."""
        p, s = self.params, self.state
        self.command = command
        # Steering: first-order lag towards the request, then the actuator's rate limit.
        request = command.steer_request_rad + self.steering_offset_rad
        target = _clamp(request, -p.max_steer_rad, p.max_steer_rad)
        wanted = (target - s.steer_rad) * min(1.0, dt / p.steer_time_constant_s)
        limit = p.steer_rate_rad_s * dt
        steer = s.steer_rad + _clamp(wanted, -limit, limit)

        # The gear changes only at standstill; until then the vehicle brakes to a stand.
        gear, throttle, brake = s.gear, command.throttle, command.brake
        if command.gear != gear:
            if abs(s.speed_mps) < STANDSTILL_MPS:
                gear = command.gear
            else:
                throttle, brake = 0.0, max(brake, 0.5)
        direction = -1.0 if gear == GEAR_REVERSE else 1.0
        driving = gear in (GEAR_DRIVE, GEAR_REVERSE)
        v = s.speed_mps
        cos_g = 1.0 / math.sqrt(1.0 + grade * grade)
        along = p.mass_kg * GRAVITY * grade * cos_g  # the slope's pull, against +x when uphill
        push = (direction * throttle * self.throttle_gain * p.drive_force_n if driving else 0.0) - along
        # Forces that only ever slow the vehicle down (to rest, never beyond): brake, rolling.
        resist = (brake * self.brake_gain * p.brake_force_n
                  + p.rolling_resistance * p.mass_kg * GRAVITY * cos_g
                  + p.drag_n_s2_m2 * v * v)
        if gear == GEAR_PARK:
            resist += p.brake_force_n
        v_free = v + push / p.mass_kg * dt
        slow = resist / p.mass_kg * dt
        if abs(v) < STANDSTILL_MPS:
            # At rest the resisting forces hold the vehicle until the push overcomes them.
            v_new = 0.0 if abs(push) <= resist else v_free - math.copysign(slow, push)
        else:
            # Moving: they act against the motion, and stop it rather than turn it around.
            v_new = v_free - math.copysign(slow, v)
            if v_new * v < 0.0:
                v_new = 0.0
        v_new = _clamp(v_new, -p.max_reverse_mps, p.max_speed_mps)

        # Kinematic bicycle about the rear axle, integrated along the arc (exact for a constant
        # speed and steer over the step).
        v_mid = 0.5 * (v + v_new)
        yaw_rate = v_mid * math.tan(steer) / p.wheelbase_m
        dyaw = yaw_rate * dt
        if abs(dyaw) < 1e-9:
            dx, dy = v_mid * dt * math.cos(s.yaw + 0.5 * dyaw), v_mid * dt * math.sin(s.yaw + 0.5 * dyaw)
        else:
            radius = v_mid / yaw_rate
            dx = radius * (math.sin(s.yaw + dyaw) - math.sin(s.yaw))
            dy = radius * (math.cos(s.yaw) - math.cos(s.yaw + dyaw))
        self.state = VehicleState(x=s.x + dx, y=s.y + dy, yaw=s.yaw + dyaw, speed_mps=v_new,
                                  steer_rad=steer, gear=gear, yaw_rate=yaw_rate)
        return self.state

    def wheel_speeds(self) -> tuple[float, float, float, float]:
        """Front left, front right, rear left, rear right, rad/s (signed with the motion): each
        wheel rolls along its own circle about the turn's centre (Ackermann geometry)."""
        p, s = self.params, self.state
        k = math.tan(s.steer_rad) / p.wheelbase_m  # curvature of the rear axle's path
        half = 0.5 * p.track_m
        rear_left, rear_right = s.speed_mps * (1.0 - k * half), s.speed_mps * (1.0 + k * half)
        front_left = math.copysign(math.hypot(rear_left, s.speed_mps * k * p.wheelbase_m), s.speed_mps)
        front_right = math.copysign(math.hypot(rear_right, s.speed_mps * k * p.wheelbase_m), s.speed_mps)
        r = p.wheel_radius_m
        return front_left / r, front_right / r, rear_left / r, rear_right / r

    def rpm(self) -> float:
        p = self.params
        wheel_rpm = abs(self.state.speed_mps) / p.wheel_radius_m * 60.0 / (2.0 * math.pi)
        return max(p.idle_rpm, wheel_rpm * p.final_drive_ratio)
