"""A speed controller of our own (ROS-free): signed speed and acceleration in, pedals out.

Feed-forward from the vehicle's own parameters (the game's hello: mass, drive and brake force,
rolling resistance, top speed) gives the pedal that holds a speed on the level; a PI term on the
speed error takes up the rest (grade, lag). Anti-windup: the integral does not grow while the pedal
is saturated in the direction the error pushes. An acceleration limit ramps the reference speed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

GRAVITY = 9.80665


def feedforward_pedal(model: Mapping[str, float], speed: float, accel: float) -> float:
    """The pedal (+ throttle, - brake, in -1..1) that moves the vehicle at `speed` (a magnitude)
    with acceleration `accel` on the level; 0 where the game did not give the numbers."""
    try:
        mass, drive, brake = model["mass_kg"], model["drive_force_n"], model["brake_force_n"]
        rolling, top = model["rolling_resistance"], model["max_speed_mps"]
    except KeyError:
        return 0.0
    resist = rolling * mass * GRAVITY
    drag = (drive - resist) / (top * top)
    moving = speed > 0.05 or accel > 0.0
    need = mass * accel + (resist + drag * speed * speed if moving else 0.0)
    pedal = need / drive if need >= 0.0 else need / brake
    return max(-1.0, min(1.0, pedal))


@dataclass
class SpeedController:
    """PI with feed-forward on the speed magnitude along the gear's direction."""

    kp: float  # pedal per m/s of error
    ki: float  # pedal per m of integrated error
    integral: float = 0.0
    reference: float | None = None  # the ramped target speed (magnitude)

    def reset(self) -> None:
        self.integral = 0.0
        self.reference = None

    def pedals(self, model: Mapping[str, float], target: float, accel_limit: float, measured: float,
               dt: float) -> tuple[float, float]:
        """Throttle and brake (0..1) towards `target` m/s (>= 0) from `measured` (>= 0 along the
        gear's direction); accel_limit > 0 ramps the reference at that rate, 0 jumps to the target."""
        if self.reference is None:
            self.reference = measured
        ramp_accel = 0.0
        if accel_limit > 0.0 and dt > 0.0:
            step = accel_limit * dt
            change = max(-step, min(step, target - self.reference))
            ramp_accel = change / dt
            self.reference += change
        else:
            self.reference = target
        error = self.reference - measured
        feedforward = feedforward_pedal(model, self.reference, ramp_accel)
        raw = feedforward + self.kp * error + self.ki * self.integral
        pushing_up, pushing_down = raw >= 1.0 and error > 0.0, raw <= -1.0 and error < 0.0
        if dt > 0.0 and not (pushing_up or pushing_down):
            self.integral += error * dt
        pedal = max(-1.0, min(1.0, raw))
        if not math.isfinite(pedal):  # cannot happen with finite inputs; never forward a NaN
            pedal = -1.0
        return (pedal, 0.0) if pedal >= 0.0 else (0.0, -pedal)
